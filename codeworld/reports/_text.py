"""Run summaries as text: the closing lines of a synthesis run (``codeworld synthesize``,
``demo``), its training and held-out figures, and a run directory's summary as ``codeworld show``
prints it (`codeworld.reports._summaries` reads the data).
"""

from __future__ import annotations

from codeworld.reports._progress import copied_what


def _figures(summary: dict) -> str:
    def num(key: str) -> str:
        value = summary.get(key)
        return "n/a" if value is None else f"{value:.4f}"

    return (f"{num('score')}  strict {num('strict')}  floor {num('floor')}  "
            f"ceiling {num('ceiling')}  normalized {num('normalized')}")


def score_lines(report: dict) -> list[str]:
    """The best program's training and held-out figures (score, strict, floor, ceiling,
    floor-normalised), from its evaluation report; empty for a report without them."""
    from codeworld.scoring._report import normalized_score

    if not report or report.get("score") is None or report.get("n_transitions") is None:
        return []  # not a report of the scorer (an agent's check, an APPS test run)
    floor, ceiling = report.get("floor") or {}, report.get("ceiling") or {}
    train = {"score": report["score"], "strict": report.get("strict"),
             "floor": floor.get("score"), "ceiling": ceiling.get("score"),
             "normalized": normalized_score(report["score"], floor.get("score"),
                                            ceiling.get("score"))}
    held = report.get("heldout")
    part = "training:     " if held else "whole buffer: "
    lines = [f"  {part} {_figures(train)}  ({report.get('n_transitions')} transitions)"]
    if held:
        lines.append(f"  held-out:      {_figures(held)}  ({held.get('n_transitions')} transitions)")
        from codeworld.scoring._scorer import FEW_REWARD_VALUES

        rare = held.get("rare") or {}
        rewards = rare.get("reward") or {}
        if len(rewards) > FEW_REWARD_VALUES:  # a record from before rare meant few-valued
            rewards = {}
        parts = [f"reward {v} right on {a:.0%}" for v, a in rewards.items()]
        if rare.get("done_on_ends") is not None:
            parts.append(f"done right on {rare['done_on_ends']:.0%} of {rare['n_ends']} episode ends")
        if parts:
            lines.append(f"  rare, held-out: {'; '.join(parts)}")
    exact = report.get("exact")
    if exact and not exact.get("exact"):
        lines.append(f"  not exact:     {exact['wrong']} training transitions off by more than "
                     f"1e-5 (largest {exact['max_error']:.3g} in {exact['where']})")
    return lines


def best_origin(result) -> str:
    """Where the run's best program came from: ``call N``, or the skeleton when every program
    the search wrote was buggy."""
    if (result.finish.floor or {}).get("became_best"):
        return "the skeleton (every program the search wrote was buggy)"
    if getattr(result, "best_seed", None):
        from codeworld.reports._summaries import SEED_NAMES

        return f"{SEED_NAMES.get(result.best_seed, result.best_seed)} (no call)"
    return f"call {result.best_call + 1}"


def summary_text(result) -> str:
    """The closing lines of a run: best score, where the model is, what it cost."""
    acc = result.accounting
    lines = []
    if result.best_evaluation is None:
        lines.append("no program was written")
    else:
        ev = result.best_evaluation
        state = "buggy" if ev.buggy else f"score {ev.score:.4f}"
        lines.append(f"best program: {best_origin(result)}, {state}")
        lines.extend(score_lines(ev.report))
    compose = result.finish.compose
    if compose:
        from codeworld.worlds.cwmb._finish import compose_verdict

        lines.append(f"  composition:   {compose_verdict(compose)}")
    fit = result.finish.fit
    if fit and "skipped" in fit:
        lines.append(f"  constant fit:  skipped, {fit['skipped']}")
    elif fit:
        verdict = "kept" if fit["accepted"] else "not kept"
        if fit["heldout_before"] is not None and fit["heldout_after"] is not None:
            verdict += (f" (held-out {fit['heldout_before']:.4f} -> {fit['heldout_after']:.4f}"
                        f"{', now the best program' if fit['became_best'] else ''})")
        lines.append(f"  constant fit:  {verdict}")
    speed = result.finish.speed
    if speed:
        how = {"as_written": "compiled as written", "python": "Python path (no compiled form)"}.get(
            speed["how"], f"compiled after a port ({speed['how']})")
        rate = f", {speed['steps_per_s']:,.0f} model steps/s" if speed["steps_per_s"] else ""
        lines.append(f"  speed:         {how}{rate}")
    if result.run_dir is not None:
        lines.append(f"  best model:    {result.run_dir.path / 'best_model.py'}")
        lines.append(f"  run directory: {result.run_dir.path}")
    lines.append(f"  calls {acc.calls} ({acc.new_calls} new, {acc.replayed_calls} saved, "
                 f"{acc.cached_calls} from cache, {acc.duplicates} copies), tokens {acc.tokens:,}, "
                 f"{acc.wall_seconds / 60:.1f} min")
    lines.append(f"  calls by outcome: {acc.new_programs} new program(s), {acc.duplicates} "
                 f"copies, {acc.buggy_programs} buggy")
    return "\n".join(lines)


def format_summary(summary: dict) -> str:
    """A synthesis run's summary (`codeworld.reports.summarize`) as ``codeworld show`` prints it."""
    lines = [f"{summary['run_dir']}: {summary['method']} on {summary.get('target') or summary['env_id']} with "
             f"{summary['llm']}, seed {summary['seed']}, {summary['status']}"]
    acc = summary["accounting"]
    lines.append(f"calls {summary['calls']}/{summary['budget']}"
                 + (f", tokens {acc.get('tokens', 0):,} (prompt {acc.get('prompt_tokens', 0):,}"
                    f" + completion {acc.get('completion_tokens', 0):,}),"
                    f" LLM {acc.get('llm_seconds', 0):.0f} s" if acc else ""))
    if len(summary.get("llms") or []) > 1:  # switched on a resume (--switch-llm)
        lines.append("LLM switched during the run: " + "; then ".join(
            f"calls {s['first']}-{s['last']} by {s['llm']}" for s in summary["llms"]))
    best = summary["best"]
    if best:
        from codeworld.reports._summaries import best_label

        state = "buggy" if best["buggy"] else f"{best['score']:.4f}"
        searched = next((row for row in summary["per_call"] if row["call"] == best["call"]), None)
        if best.get("seed"):  # a program the world wrote before the search
            from codeworld.reports._summaries import SEED_NAMES

            state += f" ({SEED_NAMES.get(best['seed'], best['seed'])})"
        elif best.get("origin"):  # composed, fitted or the skeleton: not a call's program as written
            state += f" ({best_label(best)})"
        elif searched and not best["buggy"] and f"{searched['score']:.4f}" != state:
            # best_report.json holds the final evaluation (the whole buffer, or the composed or
            # fitted program); the table below has the score the search gave the call.
            state += f" (call {best['call']}; the search scored it {searched['score']:.4f})"
        else:
            state += f" (call {best['call']})"
        lines.append(f"best score {state}: {best['path']}")
        lines.extend(line[2:] for line in score_lines(best.get("report") or {}))
    split = summary.get("split")
    if split and split.get("n_heldout"):
        lines.append(f"held out: episodes {', '.join(str(e) for e in split['heldout_episodes'])} "
                     f"of {split['n_episodes']} ({split['n_heldout']} transitions, never shown "
                     f"to the search; seed {split['seed']})")
    from codeworld.reports._summaries import SEED_NAMES

    for seed in summary.get("seeds") or []:
        held = "" if seed.get("heldout") is None else f", held out {seed['heldout']:.4f}"
        score = "buggy" if seed["buggy"] else f"{seed['score']:.4f}"
        lines.append(f"{SEED_NAMES.get(seed['label'], seed['label'])} (no call): score {score}"
                     f"{held}{', the search starts from it' if seed.get('start') else ''}")
    outcomes = summary.get("outcomes") or {}
    if outcomes.get("new") is not None:
        lines.append(f"calls by outcome: {outcomes['new']} new program(s), {outcomes['copy']} "
                     f"copies, {outcomes['buggy']} buggy")
    mix = ", ".join(f"{a} {c['calls']} ({c['buggy']} buggy)"
                    for a, c in sorted(summary["action_mix"].items()))
    lines.append(f"actions: {mix or 'none'}")
    lines.append("best score per call:")
    heldout = any(row.get("heldout") is not None for row in summary["per_call"])
    lines.append("  call  action    parent  score    best" + ("     held-out" if heldout else ""))
    for row in summary["per_call"]:
        parent = "root" if row["parent"] is None else str(row["parent"])
        score = "buggy " if row["buggy"] else f"{row['score']:.4f}"
        held = "" if row.get("heldout") is None else f"{row['heldout']:.4f}"
        if row.get("duplicate_of") is not None:
            held += f"  (a copy of {copied_what(row['duplicate_of'])})"
        lines.append(f"  {row['call']:>4}  {row['action']:<8}  {parent:>6}  {score:<7}  "
                     f"{row['best']:.4f}   {held}".rstrip())
    return "\n".join(lines)
