"""The command line's side of a synthesis run: its flags, a line per call while it runs, its
figures at the end.

Shared by the commands that run or show a synthesis run (``synthesize``, ``demo``, ``show``).
"""

from __future__ import annotations

import argparse
import sys
import time

from codeworld.commands import positive_float, positive_int


def add_run_arguments(parser: argparse.ArgumentParser, *, budget: int, out: str,
                      time_limit: float | None = None, resumable: bool = False) -> None:
    """The flags of any synthesis run: ``--budget``, ``--seed``, ``--out``, ``--set``,
    ``--parallel``, ``--time-limit``, ``--quiet`` (and ``--resume``).

    Args:
        parser: the command's parser.
        budget: the default budget of LLM calls.
        out: the default run directory, as the help text shows it.
        time_limit: the default time limit in minutes (None: none).
        resumable: the command has ``--resume`` (the budget's default is then the saved one).
    """
    saved = "; on --resume, the saved budget unless given" if resumable else ""
    parser.add_argument("--budget", type=positive_int, default=None if resumable else budget,
                        help=f"LLM calls in the whole run (default {budget}{saved})")
    parser.add_argument("--seed", type=int, default=0, help="run seed (default 0)")
    parser.add_argument("--out", default=None, metavar="RUN_DIR", help=f"run directory (default {out})")
    if resumable:
        parser.add_argument("--resume", action="store_true",
                            help="continue the run in --out (method, env, seed and config from it)")
    parser.add_argument("--set", action="append", default=[], metavar="FIELD=VALUE",
                        help="change a config field, e.g. --set ucb_c=0.2 --set allow_fix=false "
                             "--set sampling.temperature=0.7 (repeatable)")
    parser.add_argument("--parallel", type=positive_int, default=None, metavar="K",
                        help="LLM calls at once per wave (default: the method's config)")
    parser.add_argument("--time-limit", type=positive_float, default=time_limit, metavar="MIN",
                        help="start no new LLM call after this many minutes (resume later to go on)"
                             + (f"; default {time_limit:g}" if time_limit is not None else ""))
    parser.add_argument("--quiet", action="store_true", help="no progress lines")


def add_world_arguments(parser: argparse.ArgumentParser) -> None:
    """The flags of a run on an environment's replay buffer: the scoring mode, the buffer, the
    held-out share, the program timeout, and the steps after the search."""
    from codeworld.envs.buffers import HELDOUT_FRACTION
    from codeworld.model_worker import PROGRAM_TIMEOUT_S

    parser.add_argument("--mode", default="sound", choices=["sound", "paper"],
                        help="scoring mode used as the search signal (default sound)")
    parser.add_argument("--buffer", default=None, metavar="FILE.npz|paper",
                        help="replay buffer file, or 'paper' for the paper's buffer (default: the committed one)")
    parser.add_argument("--heldout", type=_fraction, default=None, metavar="FRACTION",
                        help="share of the buffer's episodes held out from the search, scored "
                             f"apart (default {HELDOUT_FRACTION:g}; 0 holds nothing out; on --resume, the saved split)")
    parser.add_argument("--timeout", type=positive_float, default=PROGRAM_TIMEOUT_S, metavar="S",
                        help=f"seconds one program may take over the whole buffer (default {PROGRAM_TIMEOUT_S:g})")
    parser.add_argument("--no-fit", action="store_true",
                        help="fit no constants to the buffer (neither in the search nor after it)")
    parser.add_argument("--no-compose", action="store_true",
                        help="do not compose the best programs component by component after the search")
    parser.add_argument("--no-floor", action="store_true",
                        help="keep a buggy best program (by default, when every program is buggy, "
                             "the skeleton, the do-nothing model, becomes the best)")
    parser.add_argument("--no-speed-step", action="store_true",
                        help="do not compile or port the best program and measure its speed")


def _fraction(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a number: {text!r}") from None
    if not 0.0 <= value < 1.0:
        raise argparse.ArgumentTypeError(f"must be in [0, 1), not {text}")
    return value


def progress_printer(budget: int, stream=None, started: float | None = None):
    """A progress callback printing one line per call: calls used, action, score, best, tokens."""
    stream = stream or sys.stdout
    started = time.perf_counter() if started is None else started

    def show(event: dict) -> None:
        status = "buggy" if event["buggy"] else f"{event['score']:.4f}"
        tag = " (saved)" if event["replayed"] else ""
        if event.get("duplicate_of") is not None:
            tag += f"  (a copy of {'the skeleton' if event['duplicate_of'] == 'skeleton' else 'call ' + str(event['duplicate_of'])})"
        if event.get("fitted_from") is not None:
            tag += f"  (constants fitted: {event['fitted_from']:.4f} before)"
        print(f"  call {event['call'] + 1:>3}/{budget}  {event['action']:<8} -> {status:<7}"
              f" best {event['best']:.4f}  tokens {event['tokens']:>7,}"
              f"  {time.perf_counter() - started:6.0f}s{tag}", file=stream, flush=True)

    return show


def _figures(summary: dict) -> str:
    def num(key: str) -> str:
        value = summary.get(key)
        return "n/a" if value is None else f"{value:.4f}"

    return (f"{num('score')}  strict {num('strict')}  floor {num('floor')}  "
            f"ceiling {num('ceiling')}  normalized {num('normalized')}")


def score_lines(report: dict) -> list[str]:
    """The best program's training and held-out figures (score, strict, floor, ceiling,
    floor-normalised), from its evaluation report; empty for a report without them."""
    from codeworld.scoring.report import normalized_score

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
        rare = held.get("rare") or {}
        parts = [f"reward {v} right on {a:.0%}" for v, a in (rare.get("reward") or {}).items()]
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
    if (result.finish.get("floor") or {}).get("became_best"):
        return "the skeleton (every program the search wrote was buggy)"
    if getattr(result, "best_seed", None):
        from codeworld.reports.summaries import SEED_NAMES

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
    compose = result.finish.get("compose")
    if compose:
        from codeworld.worlds.cwmb.finish import compose_verdict

        lines.append(f"  composition:   {compose_verdict(compose)}")
    fit = result.finish.get("fit")
    if fit and "skipped" in fit:
        lines.append(f"  constant fit:  skipped, {fit['skipped']}")
    elif fit:
        verdict = "kept" if fit["accepted"] else "not kept"
        if fit["heldout_before"] is not None and fit["heldout_after"] is not None:
            verdict += (f" (held-out {fit['heldout_before']:.4f} -> {fit['heldout_after']:.4f}"
                        f"{', now the best program' if fit['became_best'] else ''})")
        lines.append(f"  constant fit:  {verdict}")
    speed = result.finish.get("speed")
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
