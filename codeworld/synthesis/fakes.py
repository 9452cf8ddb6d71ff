"""Test doubles for the synthesis interfaces: a scripted LLM, an echo prompt builder, a fake scorer.

They let a search be run step by step without a model or a sandbox: a "program" is any text whose
first line says how it scores, ``# score=0.6`` or ``# bug: NameError on line 3``. They are used by
codeworld's tests and are handy for trying a new search method.
"""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass
from typing import Callable, Sequence

from codeworld.synthesis.types import Evaluator, ProgramEvaluation, Request


@dataclass(frozen=True)
class FakeCompletion:
    """A completion with the fields the runner reads."""

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    cached: bool = False


class ScriptedLLM:
    """Answers call ``i`` (the ``sample`` sampling argument) with ``script[i]``.

    Args:
        script: the completions, by call index; or a function ``(call, messages) -> text``.
        fail_after: raise `Interrupted` on the call after this many answered calls (to simulate
            a run killed mid-way); None never fails.
    """

    class Interrupted(RuntimeError):
        """Raised by a `ScriptedLLM` told to fail."""

    def __init__(self, script: Sequence[str] | Callable[[int, list], str],
                 fail_after: int | None = None):
        self.script = script
        self.fail_after = fail_after
        self.calls: list[int] = []
        self._lock = threading.Lock()

    def complete(self, messages: list[dict], **sampling) -> FakeCompletion:
        call = int(sampling.get("sample", len(self.calls)))
        with self._lock:
            if self.fail_after is not None and len(self.calls) >= self.fail_after:
                raise ScriptedLLM.Interrupted(f"scripted failure at call {call}")
            self.calls.append(call)
        text = self.script(call, messages) if callable(self.script) else self.script[call]
        words = sum(len(m["content"].split()) for m in messages)
        return FakeCompletion(text, prompt_tokens=words, completion_tokens=len(text.split()),
                              latency_s=0.0)


class EchoPrompts:
    """Messages that spell out the request; the completion text is the program (empty: no code)."""

    def messages(self, request: Request) -> list[dict]:
        content = json.dumps({k: v for k, v in request.to_json().items() if k != "call"},
                             sort_keys=True)
        return [{"role": "user", "content": content}]

    def program(self, request: Request, completion_text: str) -> str | None:
        return completion_text if completion_text.strip() else None


class FakeEvaluator(Evaluator):
    """Scores a program by its first line: ``# score=X`` (healthy) or ``# bug: MESSAGE`` (buggy).

    A healthy program's feedback is its second line when that starts with ``# feedback:``.
    Every evaluated program is appended to `seen`.
    """

    def __init__(self):
        self.seen: list[str] = []
        self._lock = threading.Lock()

    def evaluate(self, program: str) -> ProgramEvaluation:
        with self._lock:
            self.seen.append(program)
        lines = program.splitlines() or [""]
        head = lines[0].strip()
        if head.startswith("# bug:"):
            message = head[len("# bug:"):].strip()
            return ProgramEvaluation(0.0, True, message, {"status": "exception", "message": message})
        if head.startswith("# score="):
            score = float(head[len("# score="):])
            feedback = ""
            if len(lines) > 1 and lines[1].startswith("# feedback:"):
                feedback = lines[1][len("# feedback:"):].strip()
            return ProgramEvaluation(score, False, feedback, {"status": "ok", "score": score})
        return ProgramEvaluation(0.0, True, "not a fake program", {"status": "invalid_output"})


def fake_program(score: float | None = None, *, bug: str | None = None, feedback: str = "",
                 lines: int = 6, tag: str = "") -> str:
    """A program text for `FakeEvaluator`, with ``lines`` numbered body lines."""
    head = f"# bug: {bug}" if bug is not None else f"# score={score!r}"
    body = [head]
    if feedback:
        body.append(f"# feedback: {feedback}")
    body += [f"x{i} = {i}  # {tag}" for i in range(lines)]
    return "\n".join(body) + "\n"
