"""The synthesis interfaces wired to codeworld's own parts: CWMB prompts and the sandboxed scorer.

`CwmbPrompts` fills the LLM layer's templates (``generate``, ``improve``, ``fix``, ``zero_shot``)
for one environment's description and takes programs out of completions with its extractor.
`ScorerEvaluator` scores a program with `codeworld.scoring.Scorer` (in a sandbox worker) and
reduces the report to what the search needs: the score, whether the program is buggy, the error
with its line for *fix*, the first mispredicted transition for *improve*.
"""

from __future__ import annotations

from typing import Any

from codeworld.synthesis.types import FIX, GENERATE, IMPROVE, Evaluation, Request


class CwmbPrompts:
    """Prompts for one environment, from the LLM layer's templates.

    A generate request continues the node's partial program (``generate`` template, with the
    partial program as the assistant's prefill); a generate from nothing outside a tree (REx's
    seed, zero-shot) uses ``zero_shot``. *Improve* shows one mispredicted transition, *fix* the
    error.

    Args:
        description: the environment's description (`codeworld.envs.descriptions.describe`).
    """

    def __init__(self, description: str):
        self.description = description

    def messages(self, request: Request) -> list[dict]:
        from codeworld.llm import format_value, render

        d = self.description
        if request.action == GENERATE:
            if request.parent < 0:
                return render("zero_shot", description=d)
            return render("generate", description=d, partial_program=request.prefix)
        if request.action == IMPROVE and request.mispredicted and "expected" in request.mispredicted:
            mis = request.mispredicted
            expected, predicted = mis["expected"], mis["predicted"]
            return render(
                "improve", description=d, program=request.program,
                state=format_value(mis["state"]), action=format_value(mis["action"]),
                true_next_state=format_value(expected["next_state"]),
                true_reward=format_value(expected["reward"]),
                true_done=format_value(bool(expected["done"])),
                predicted_next_state=format_value(predicted["next_state"]),
                predicted_reward=format_value(predicted["reward"]),
                predicted_done=format_value(bool(predicted["done"])))
        if request.action in (IMPROVE, FIX):
            error = request.feedback or "The program's predictions do not match the recorded data."
            return render("fix", description=d, program=request.program, error=error)
        raise ValueError(f"unknown action {request.action!r}")

    def program(self, request: Request, completion_text: str) -> str | None:
        from codeworld.llm import CodeExtractionError, extract_code
        from codeworld.llm.types import prefill_of

        prefill = prefill_of(self.messages(request))
        try:
            return extract_code(completion_text, prefill) + "\n"
        except CodeExtractionError:
            return None


def error_feedback(report: dict, program: str) -> str:
    """The text a *fix* prompt shows: the error, its line of code, and the step it happened on."""
    message = report.get("message") or report.get("status") or "the program failed"
    parts = [str(message)]
    line = report.get("line")
    lines = program.splitlines()
    if isinstance(line, int) and 1 <= line <= len(lines) and f"line {line}" not in parts[0]:
        parts.append(f"The failing line is line {line}: {lines[line - 1].strip()}")
    err = report.get("first_error") or {}
    if "state" in err and "action" in err:
        parts.append(f"It happened on step(state={err['state']}, action={err['action']}).")
    return "\n".join(parts)


class ScorerEvaluator:
    """Scores programs for the search with a `codeworld.scoring.Scorer`.

    Args:
        scorer: the scorer of the environment and buffer (its mode sets the search signal).
        timeout_s: wall-clock limit of one program's predictions over the buffer.
    """

    def __init__(self, scorer: Any, timeout_s: float = 60.0):
        self.scorer = scorer
        self.timeout_s = timeout_s

    def evaluate(self, program: str) -> Evaluation:
        report = self.scorer.score_source(program, timeout_s=self.timeout_s)
        data = report.to_dict()
        if not report.ok:
            return Evaluation(0.0, True, error_feedback(data, program), None, data)
        mispredicted = data.get("first_error")
        feedback = ""
        if mispredicted:
            feedback = (f"transition {mispredicted.get('index')}: state {mispredicted.get('state')}, "
                        f"action {mispredicted.get('action')}: expected {mispredicted.get('expected')}, "
                        f"predicted {mispredicted.get('predicted')}")
        return Evaluation(float(report.score), False, feedback, mispredicted, data)


def make_cwmb_world(env_id: str, *, buffer: Any = None, mode: str = "sound",
                    compile: bool = False, timeout_s: float = 60.0) -> tuple[CwmbPrompts, ScorerEvaluator]:
    """The prompts and the evaluator for one CWMB environment.

    Args:
        env_id: codeworld's or the paper's id.
        buffer: a replay buffer or its path (default: the committed buffer).
        mode: ``"sound"`` or ``"paper"`` scoring as the search signal.
        compile: let the scorer compile candidates with Numba (slower per candidate; the
            scores are the same).
        timeout_s: wall-clock limit of one program's predictions.
    """
    from codeworld.envs.descriptions import describe
    from codeworld.scoring import Scorer

    scorer = Scorer(env_id, buffer, mode=mode, compile=compile)
    return CwmbPrompts(describe(scorer.spec.env_id)), ScorerEvaluator(scorer, timeout_s)
