"""The small interfaces through which a search meets the world, and the records it exchanges.

A search never calls an LLM or runs code itself: it hands out `Request` records (which action on
which program) and receives `Outcome` records (the program the LLM wrote and its `ProgramEvaluation`).
The driver (`codeworld.synthesis.runner`) does the calls, through objects that satisfy the
protocols below, so the search logic is tested with a scripted LLM and a fake evaluator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Protocol, runtime_checkable

GENERATE = "generate"
IMPROVE = "improve"
FIX = "fix"
ACTIONS = (GENERATE, IMPROVE, FIX)


@runtime_checkable
class ChatModel(Protocol):
    """Anything with ``complete(messages, **sampling)`` returning an object with ``.text``.

    Token counts (``prompt_tokens``, ``completion_tokens``) and ``latency_s`` are read when the
    completion has them.
    """

    def complete(self, messages: list[dict], **sampling: Any) -> Any: ...


@dataclass(frozen=True)
class ProgramEvaluation:
    """What the scorer says about one program, reduced to what the search needs.

    Attributes:
        score: the search signal in [0, 1] (0 for a buggy program).
        buggy: the program raised, timed out, or returned invalid output.
        feedback: text for the next prompt: the error with its line for a buggy program (fix),
            one mispredicted transition otherwise (improve); empty when nothing is wrong.
        mispredicted: the first mispredicted transition (state, action, expected and predicted
            outcome) for an *improve* prompt; None when there is none.
        report: the scorer's full report as JSON-ready data, saved in the run directory.
    """

    score: float
    buggy: bool
    feedback: str = ""
    mispredicted: dict | None = None
    report: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "ProgramEvaluation":
        return cls(score=float(data["score"]), buggy=bool(data["buggy"]),
                   feedback=data.get("feedback", ""), mispredicted=data.get("mispredicted"),
                   report=data.get("report", {}))


class Evaluator(Protocol):
    """Scores a program (in a sandbox: the program is untrusted) and explains what is wrong.

    An evaluator may also have ``prepare(program, parent) -> (program, repairs)``: mechanical
    repairs made before scoring (a list of JSON-ready records, empty when nothing changed);
    ``parent`` is the program the call was asked to fix or improve ("" for a generate call). The
    runner calls it when present, keeps the repaired program and records the repairs.
    """

    def evaluate(self, program: str) -> ProgramEvaluation: ...


def copies_note(copies: int) -> str:
    """What a *generate* request says after earlier answers to it were copies (of the skeleton
    or of an earlier program): the request is changed, not sent again as it was."""
    answers = "answer" if copies == 1 else "answers"
    return (f"Note: {copies} earlier {answers} to this request handed back the skeleton or an "
            "earlier program unchanged, which predicts nothing new. Replace the placeholder "
            "comment with the environment's rules: how each component changes, the reward and "
            "when the episode ends.")


def no_progress_note(stalls: int, score: float) -> str:
    """What an *improve* request says after earlier improvements of the same program left its
    score where it was: change what is asked, not ask again."""
    tries = "improvement" if stalls == 1 else "improvements"
    return (f"Note: {stalls} earlier {tries} of this program left its score at {score:.4f}. "
            "Do not rewrite what it already gets right: change the rule of the component the "
            "summary above lists as most often wrong, using the recorded data.")


@dataclass(frozen=True)
class Request:
    """One LLM call a search asks for.

    Attributes:
        call: the call's index in the run (0-based); also the id of the node it will create.
        action: ``"generate"``, ``"improve"`` or ``"fix"``.
        parent: the node (GIF-MCTS) or pool entry (REx) refined; -1 for the root / from scratch.
        program: the program to improve or fix (empty for generate).
        prefix: the partial program a generate call continues (may be empty).
        feedback: the parent's evaluation feedback (error or mispredicted transition as text);
            for a generate request, a note (`copies_note`) when earlier answers were copies.
        mispredicted: the parent's first mispredicted transition (improve), as the scorer gave it.
    """

    call: int
    action: str
    parent: int
    program: str = ""
    prefix: str = ""
    feedback: str = ""
    mispredicted: dict | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class Outcome:
    """The answer to a `Request`: the program written (None if no code came back) and its score."""

    program: str | None
    evaluation: ProgramEvaluation


class PromptBuilder(Protocol):
    """Turns a request into chat messages, and a completion back into a program."""

    def messages(self, request: Request) -> list[dict]: ...

    def program(self, request: Request, completion_text: str) -> str | None: ...


class Search(Protocol):
    """A synthesis method's pure state machine (GIF-MCTS, REx, zero-shot)."""

    calls: int

    def propose(self, max_requests: int) -> list[Request]:
        """Select up to ``max_requests`` expansions to run at once (empty when the search is over)."""

    def apply(self, request: Request, outcome: Outcome) -> None:
        """Record the outcome of a proposed request (in proposal order)."""

    @property
    def finished(self) -> bool: ...

    def best(self) -> tuple[int, str, ProgramEvaluation] | None:
        """The best program so far: (call, source, evaluation)."""

    def to_json(self) -> dict:
        """The search state for the run directory (the tree or pool)."""
