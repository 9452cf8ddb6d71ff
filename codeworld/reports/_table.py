"""The closing table of a run that synthesizes, scores and plans (``codeworld demo``): a row per
figure, what could not be measured, and the record saved beside the run (``demo.json``), from the
run's result, its best program's scores (`codeworld.experiments._cwmb_job.score_program`) and its
planning returns (`codeworld.planning.evaluate`).
"""

from __future__ import annotations

import contextlib
import traceback
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from codeworld.reports._text import best_origin


class ResultTable:
    """Collects the rows of the closing table, what could not be measured, and the record
    (``data``) the demo saves as ``demo.json``."""

    def __init__(self):
        self.rows: list[tuple[str, str]] = []
        self.missing: list[str] = []
        self.data: dict = {}

    def add(self, name: str, value: str) -> None:
        self.rows.append((name, value))

    def text(self) -> str:
        width = max((len(n) for n, _ in self.rows), default=0)
        lines = [f"  {n:<{width}}  {v}" for n, v in self.rows]
        lines += [f"  not measured: {m}" for m in self.missing]
        return "\n".join(lines)

    @contextlib.contextmanager
    def measuring(self, what: str) -> Iterator[None]:
        """A step whose failure is reported, not raised: its traceback on stderr, and
        ``"<what> failed: ExcType: message"`` among what could not be measured."""
        try:
            yield
        except Exception as exc:  # noqa: BLE001 - the demo reports what it could not measure
            traceback.print_exc()
            self.missing.append(f"{what} failed: {type(exc).__name__}: {exc}")

    def close(self, minutes: float, run_dir: Path) -> None:
        """The total time's row, and the record saved as ``demo.json`` in `run_dir` (if it was made)."""
        self.add("total time", f"{minutes:.1f} min")
        self.data["minutes"] = minutes
        self.data["missing"] = self.missing
        if run_dir.is_dir():
            from codeworld.synthesis import RunDir

            RunDir(run_dir).save_record("demo.json", self.data)


def _fmt(x) -> str:
    return "n/a" if x is None else f"{x:.4f}"


def add_synthesis(table: ResultTable, result: Any, *, budget: int, time_limit: float, best_model: Any) -> None:
    """The synthesis' rows: calls and tokens, the best program (saved as `best_model`), its
    composition, constant fit and speed step."""
    from codeworld.worlds.cwmb._finish import compose_verdict

    acc = result.accounting
    limit = (f", stopped at the {time_limit:g}-minute limit" if acc.stopped_by_time_limit
             else "")
    table.add("LLM calls", f"{acc.calls} of {budget} ({acc.cached_calls} from cache, "
                           f"{acc.replayed_calls} saved{limit}): {acc.new_programs} new "
                           f"programs, {acc.duplicates} copies, {acc.buggy_programs} buggy"
                           + (f" ({acc.resamples} copies asked again within their calls)"
                              if acc.resamples else ""))
    table.add("tokens", f"{acc.tokens:,} (prompt {acc.prompt_tokens:,}, completion "
                        f"{acc.completion_tokens:,})")
    table.data.update(calls=acc.calls, stopped_by_time_limit=acc.stopped_by_time_limit,
                      tokens=acc.tokens, prompt_tokens=acc.prompt_tokens,
                      completion_tokens=acc.completion_tokens, llm_seconds=acc.llm_seconds,
                      calls_by_outcome={"new": acc.new_programs, "copy": acc.duplicates,
                                        "buggy": acc.buggy_programs},
                      resamples=acc.resamples)
    if result.best_program is None:
        table.missing.append("no program was written")
        return
    ev = result.best_evaluation
    table.add("best program", f"{best_origin(result)}, "
                              + ("buggy" if ev.buggy else f"search score {ev.score:.4f}")
                              + f": {best_model}")
    table.data.update(best_call=None if result.best_seed else result.best_call + 1,
                      best_seed=result.best_seed, best_buggy=ev.buggy,
                      search_score=None if ev.buggy else ev.score)
    compose = result.finish.compose
    if compose:
        table.add("composition", compose_verdict(compose))
        table.data["compose"] = compose
    fit = result.finish.fit
    if fit and "accepted" in fit:
        verdict = ("kept" + (", now the best program" if fit.get("became_best") else "")
                   if fit["accepted"] else "not kept")
        table.add("constant fit", f"held-out score "
                                  f"{_fmt(fit.get('heldout_before'))} -> {_fmt(fit.get('heldout_after'))}"
                                  f" ({verdict})")
        table.data["fit"] = {k: fit.get(k) for k in ("accepted", "became_best", "heldout_before",
                                                       "heldout_after", "score_before", "score_after")}
    speed = result.finish.speed
    if speed and "compiled" in speed:
        rate = speed.get("steps_per_s")
        table.add("speed", ("compiled" if speed["compiled"] else "Python path")
                  + (f" ({speed['how'].replace('_', ' ')})" if speed.get("how") else "")
                  + (f", {rate:,.0f} model steps/s" if rate else ""))
        table.data["speed"] = {"compiled": speed["compiled"], "steps_per_second": rate}


def add_scores(table: ResultTable, scores: dict) -> None:
    """The best program's accuracy rows, both modes, held out and training
    (`codeworld.experiments._cwmb_job.score_program`'s record)."""
    where = "held-out" if scores["heldout"] else "whole buffer"
    for mode in ("sound", "paper"):
        for part, summary in ((where, scores[mode]), ("training", scores["training"][mode])):
            if part == "training" and not scores["heldout"]:
                continue
            status = "" if summary["status"] == "ok" else (
                f"  ({summary['status']}: {summary['message']})")
            table.add(f"accuracy ({mode}, {part})",
                      f"model {summary['score']:.4f}   strict {summary['strict']:.4f}   "
                      f"floor {_fmt(summary['floor'])}   ceiling {_fmt(summary['ceiling'])}   "
                      f"normalized {_fmt(summary['normalized'])}   "
                      f"({summary['n_transitions']} transitions)" + status)
        table.data[f"score_{mode}"] = {
            "model": scores[mode]["score"], "floor": scores[mode]["floor"],
            "ceiling": scores[mode]["ceiling"], "strict": scores[mode]["strict"],
            "normalized": scores[mode]["normalized"], "status": scores[mode]["status"],
            "heldout": scores["heldout"], "training": scores["training"][mode]}


def add_planning(table: ResultTable, ev: Any, *, episodes: int, max_steps: int) -> None:
    """The returns of the random policy, the oracle and the model, and the normalized return
    (a `codeworld.planning.PlanEvaluation` of `episodes` episodes of at most `max_steps` steps)."""
    r = ev.to_dict()
    table.add("returns", f"random {_fmt(r['return_random'])}   oracle "
                         f"{_fmt(r['return_oracle'])}   model {_fmt(r['return_model'])}"
                         f"   ({episodes} episodes, <= {max_steps} steps)")
    norm = ev.normalized_return
    table.add("normalized return", f"{norm:.4f}" if norm is not None else str(ev.normalized_note))
    table.data["planning"] = {"episodes": episodes, "max_steps": max_steps,
                              "return_random": r["return_random"],
                              "return_oracle": r["return_oracle"],
                              "return_model": r["return_model"], "normalized_return": norm,
                              "note": ev.normalized_note}
