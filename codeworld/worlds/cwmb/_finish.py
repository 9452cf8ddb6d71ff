"""After the search: compose the best programs, fit the constants, make it fast (checked); record all.

`finish_run` is the finish step of a CWMB world (`codeworld.worlds.cwmb._cwmb.make_cwmb_world`):
`codeworld.synthesis.run.Run` calls it once after the search, with the run's `FinishConfig`.
Files it writes to the run directory (through `RunDir`):

    floor.json          the skeleton's score, when it replaced a search whose every program was buggy
    compose.json        which program each output component came from, the scores, the verdict
    composed_model.py   the composed program (kept or not)
    fit.json            constants before and after, held-out and whole-buffer scores, verdict
    fitted_model.py     the fitted program (kept or not)
    speed.json          compiled or not, how (as written, mechanical port), steps per second
    best_model_fast.py  the kept port, when the best program needed one

First, when every program the search wrote is buggy, the skeleton the prompts start from (the
do-nothing model) becomes the best (``floor.json``). When the composed program scores higher than
the search's best, it becomes the run's best, and the fit starts from it; when the fit is kept and
the fitted program scores higher, it becomes the best.
Either way ``best_model.py`` and ``best_report.json`` (with ``"composed_from"`` or ``"fitted_from"``)
are rewritten.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from codeworld.synthesis.config import FinishConfig
from codeworld.synthesis.types import FinishRecord

if TYPE_CHECKING:
    from codeworld.scoring._scorer import Scorer
    from codeworld.synthesis._run_dir import RunDir
    from codeworld.synthesis._runner import SynthesisResult
    from codeworld.synthesis.types import ProgramEvaluation
    from codeworld.worlds.cwmb._cwmb import ScorerEvaluator

FLOOR_FILE = "floor.json"
COMPOSE_FILE = "compose.json"
COMPOSED_MODEL_FILE = "composed_model.py"
FIT_FILE = "fit.json"
FITTED_MODEL_FILE = "fitted_model.py"
SPEED_FILE = "speed.json"
FAST_MODEL_FILE = "best_model_fast.py"


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


def _floor(result: SynthesisResult, evaluator: ScorerEvaluator, run_dir: RunDir | None) -> dict:
    """The skeleton replaces a best program that is buggy (the search's best is buggy only when
    every program is): a search whose every answer failed ends at the do-nothing model, which
    runs, rather than with a program that cannot be scored or planned with. A healthy best that
    scores below the skeleton is kept: its reward or dynamics may still plan well."""
    before = result.best_evaluation
    if not before.buggy:
        return {"skipped": "the best program runs"}
    skeleton = getattr(evaluator, "skeleton", None)
    if not skeleton:
        return {"skipped": "no skeleton (the scaffold is off)"}
    evaluation = evaluator.evaluate(skeleton)
    record = {"skeleton_score": None if evaluation.buggy else evaluation.score, "became_best": False}
    if not evaluation.buggy:
        result.best_program = skeleton
        result.best_evaluation = evaluation
        record["became_best"] = True
        if run_dir is not None:
            run_dir.save_best(result.best_call, skeleton, evaluation, {"floor": "skeleton"})
    if run_dir is not None:
        run_dir.save_record(FLOOR_FILE, record)
    return record


def _compose(result: SynthesisResult, evaluator: ScorerEvaluator, scorer: Scorer,
             config: FinishConfig, timeout_s: float, run_dir: RunDir | None) -> dict:
    """Compose the run's best programs; the composition replaces the best when it scores higher."""
    from codeworld.worlds.cwmb._compose import compose_programs
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
        compose_record["became_best"] = _take_if_better(
            result, composition.source, evaluation, run_dir, {"composed_from": composition.calls})
        if run_dir is not None:
            run_dir.save_text(COMPOSED_MODEL_FILE, composition.source)
    if run_dir is not None:
        run_dir.save_record(COMPOSE_FILE, compose_record)
    return {k: compose_record[k] for k in ("status", "calls", "best_before", "score", "became_best")}



def _take_if_better(result: SynthesisResult, source: str, evaluation: ProgramEvaluation,
                    run_dir: RunDir | None, note: dict) -> bool:
    """Make ``source`` the run's best program when it is healthy and scores higher than the
    best, saved with ``note`` (what it was made from); whether it became the best."""
    if evaluation.buggy or evaluation.score <= result.best_evaluation.score:
        return False
    result.best_program, result.best_evaluation = source, evaluation
    if run_dir is not None:
        run_dir.save_best(result.best_call, source, evaluation, note)
    return True

def finish_run(result: SynthesisResult, evaluator: ScorerEvaluator, config: FinishConfig,
               run_dir: RunDir | None = None) -> FinishRecord:
    """Fit and speed up `result`'s best program in place; returns what each step did.

    Args:
        result: the `SynthesisResult` (its best program and evaluation may be replaced).
        evaluator: the CWMB world's `ScorerEvaluator`; its ``scorer`` gives the environment and
            the training episodes, its ``timeout_s`` the limit of one scoring pass.
        config: which steps to run, and the fit's settings.
        run_dir: the run directory to write into, if any.
    """
    if result.best_program is None or result.best_evaluation is None:
        return FinishRecord(skipped="no program")
    scorer, timeout_s = evaluator.scorer, evaluator.timeout_s
    record: dict = {"call": result.best_call}

    if config.floor:
        record["floor"] = _floor(result, evaluator, run_dir)
    if config.compose and not result.best_evaluation.buggy:
        record["compose"] = _compose(result, evaluator, scorer, config, timeout_s, run_dir)

    if config.fit_constants and result.best_evaluation.fit_note:
        # the search already replaced this program by its fit: fitting it again repeats the work
        record["fit"] = {"skipped": "its constants were fitted in the search"}
    elif config.fit_constants and not result.best_evaluation.buggy:
        from codeworld.fitting import fit_constants

        fit = fit_constants(result.best_program, scorer, config.fit, timeout_s=timeout_s)
        fit_record = {"call": result.best_call, **fit.to_json(), "became_best": False}
        if fit.accepted:
            evaluation = evaluator.evaluate(fit.source)
            fit_record["evaluation_score"] = evaluation.score
            fit_record["became_best"] = _take_if_better(
                result, fit.source, evaluation, run_dir, {"fitted_from": result.best_call})
        if run_dir is not None:
            run_dir.save_record(FIT_FILE, fit_record)
            if fit.fitted_source is not None:
                run_dir.save_text(FITTED_MODEL_FILE, fit.fitted_source)
        record["fit"] = {k: fit_record[k] for k in ("accepted", "became_best", "heldout_before",
                                                     "heldout_after", "score_before", "score_after")}

    if config.speed_step and not result.best_evaluation.buggy:
        from codeworld._speed import speed_step

        buffer = scorer.buffer
        speed = speed_step(result.best_program, buffer.obs, buffer.actions,
                           discrete=scorer.spec.discrete, timeout_s=timeout_s)
        speed_record = {"call": result.best_call, **speed.to_json()}
        if run_dir is not None:
            run_dir.save_record(SPEED_FILE, speed_record)
            if speed.ported:
                run_dir.save_text(FAST_MODEL_FILE, speed.source)
        if speed.ported:
            result.fast_program = speed.source
        record["speed"] = {k: speed_record[k] for k in ("compiled", "ported", "how", "steps_per_s")}
    return FinishRecord(**record)
