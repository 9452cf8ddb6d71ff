"""After the search: compose the best programs, fit the constants, make it fast (checked); record all.

`finish_run` is called once by `codeworld.synthesis.runner.synthesize` when a `FinishConfig` is
given. It needs an evaluator that scores with a `codeworld.scoring.Scorer` (``evaluator.scorer``);
with any other evaluator it records that it was skipped. Files written to the run directory:

    compose.json        which program each output component came from, the scores, the verdict
    composed_model.py   the composed program (kept or not)
    fit.json            constants before and after, held-out and whole-buffer scores, verdict
    fitted_model.py     the fitted program (kept or not)
    speed.json          compiled or not, how (as written, mechanical port), steps per second
    best_model_fast.py  the kept port, when the best program needed one

When the composed program scores higher than the search's best, it becomes the run's best, and the
fit starts from it; when the fit is kept and the fitted program scores higher, it becomes the best.
Either way ``best_model.py`` and ``best_report.json`` (with ``"composed_from"`` or ``"fitted_from"``)
are rewritten.
"""

from __future__ import annotations

import json
from typing import Any

from codeworld.model_worker import PROGRAM_TIMEOUT_S
from codeworld.synthesis.config import FinishConfig

COMPOSE_FILE = "compose.json"
COMPOSED_MODEL_FILE = "composed_model.py"
FIT_FILE = "fit.json"
FITTED_MODEL_FILE = "fitted_model.py"
SPEED_FILE = "speed.json"
FAST_MODEL_FILE = "best_model_fast.py"


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, default=str) + "\n"


_COMPOSE_STATUS = {"one_program": "not needed, one program is best at every component",
                   "too_few": "not needed, fewer than two programs ran",
                   "not_functional": "not made, the programs are not all a module-level step"}


def compose_verdict(compose: dict) -> str:
    """One line on what the composition did (for the CLI's summaries)."""
    if compose.get("status") != "composed":
        return _COMPOSE_STATUS.get(compose.get("status"), str(compose.get("status")))
    calls = ", ".join(str(c + 1) for c in compose.get("calls", []))
    score = compose.get("score")
    outcome = "buggy" if score is None else f"score {score:.4f}"
    return (f"calls {calls} -> {outcome} (best was {compose['best_before']:.4f}), "
            + ("now the best program" if compose.get("became_best") else "not kept"))


def _write_best(run_dir: Any, source: str, origin: dict, evaluation: Any) -> None:
    from codeworld.synthesis.run_dir import BEST_MODEL_FILE, BEST_REPORT_FILE, write_atomic

    write_atomic(run_dir.path / BEST_MODEL_FILE, source)
    write_atomic(run_dir.path / BEST_REPORT_FILE, _dump(
        {**origin, "program": BEST_MODEL_FILE, **evaluation.to_json()}))


def _compose(result: Any, evaluator: Any, scorer: Any, config: FinishConfig, timeout_s: float,
             run_dir: Any) -> dict:
    """Compose the run's best programs; the composition replaces the best when it scores higher."""
    from codeworld.synthesis.compose import compose_programs
    from codeworld.synthesis.run_dir import write_atomic

    ranked = sorted(result.programs, key=lambda p: -p[2])
    candidates = [(result.best_call, result.best_program)]
    seen = {result.best_program}
    for call, program, _ in ranked:
        if program not in seen:
            seen.add(program)
            candidates.append((call, program))
    composition = compose_programs(candidates, scorer, timeout_s=timeout_s,
                                   max_programs=config.compose_programs)
    compose_record = {**composition.to_json(), "best_before": result.best_evaluation.score,
                      "score": None, "became_best": False}
    if composition.source is not None:
        evaluation = evaluator.evaluate(composition.source)
        compose_record["score"] = None if evaluation.buggy else evaluation.score
        if not evaluation.buggy and evaluation.score > result.best_evaluation.score:
            result.best_program = composition.source
            result.best_evaluation = evaluation
            compose_record["became_best"] = True
            if run_dir is not None:
                _write_best(run_dir, composition.source,
                            {"call": result.best_call, "composed_from": composition.calls}, evaluation)
        if run_dir is not None:
            write_atomic(run_dir.path / COMPOSED_MODEL_FILE, composition.source)
    if run_dir is not None:
        write_atomic(run_dir.path / COMPOSE_FILE, _dump(compose_record))
    return {k: compose_record[k] for k in ("status", "calls", "best_before", "score", "became_best")}


def finish_run(result: Any, evaluator: Any, config: FinishConfig, run_dir: Any = None) -> dict:
    """Fit and speed up `result`'s best program in place; returns the record saved in the run.

    Args:
        result: the `SynthesisResult` (its best program and evaluation may be replaced).
        evaluator: the run's evaluator; its ``scorer`` gives the environment and buffer.
        config: which steps to run, and the fit's settings.
        run_dir: the run directory to write into, if any.
    """
    from codeworld.synthesis.run_dir import write_atomic

    scorer = getattr(evaluator, "scorer", None)
    if result.best_program is None or result.best_evaluation is None:
        return {"skipped": "no program"}
    if scorer is None:
        return {"skipped": "the evaluator has no scorer"}
    record: dict = {"call": result.best_call}
    timeout_s = getattr(evaluator, "timeout_s", PROGRAM_TIMEOUT_S)

    if config.compose and not result.best_evaluation.buggy:
        record["compose"] = _compose(result, evaluator, scorer, config, timeout_s, run_dir)

    if config.fit_constants and result.best_evaluation.report.get("fitted"):
        # the search already replaced this program by its fit: fitting it again repeats the work
        record["fit"] = {"skipped": "its constants were fitted in the search"}
    elif config.fit_constants and not result.best_evaluation.buggy:
        from codeworld.fitting import fit_constants

        fit = fit_constants(result.best_program, scorer, config.fit, timeout_s=timeout_s)
        fit_record = {"call": result.best_call, **fit.to_json(), "became_best": False}
        if fit.accepted:
            evaluation = evaluator.evaluate(fit.source)
            fit_record["evaluation_score"] = evaluation.score
            if not evaluation.buggy and evaluation.score > result.best_evaluation.score:
                result.best_program = fit.source
                result.best_evaluation = evaluation
                fit_record["became_best"] = True
                if run_dir is not None:
                    _write_best(run_dir, fit.source, {"call": result.best_call,
                                                      "fitted_from": result.best_call}, evaluation)
        if run_dir is not None:
            write_atomic(run_dir.path / FIT_FILE, _dump(fit_record))
            if fit.fitted_source is not None:
                write_atomic(run_dir.path / FITTED_MODEL_FILE, fit.fitted_source)
        record["fit"] = {k: fit_record[k] for k in ("accepted", "became_best", "heldout_before",
                                                     "heldout_after", "score_before", "score_after")}

    if config.speed_step and not result.best_evaluation.buggy:
        from codeworld.speed import speed_step

        buffer = scorer.buffer
        speed = speed_step(result.best_program, buffer.obs, buffer.actions,
                           discrete=scorer.spec.discrete, timeout_s=timeout_s)
        speed_record = {"call": result.best_call, **speed.to_json()}
        if run_dir is not None:
            write_atomic(run_dir.path / SPEED_FILE, _dump(speed_record))
            if speed.ported:
                write_atomic(run_dir.path / FAST_MODEL_FILE, speed.source)
        if speed.ported:
            result.fast_program = speed.source
        record["speed"] = {k: speed_record[k] for k in ("compiled", "ported", "how", "steps_per_s")}
    return record
