"""The small interfaces through which a search meets the world, and the records it exchanges.

A search never calls an LLM or runs code itself: it hands out `Request` records (which action on
which program) and receives `Outcome` records (the program the LLM wrote and its `ProgramEvaluation`).
The driver (`codeworld.synthesis._runner`) does the calls, through objects that satisfy the
protocols below, so the search logic is tested with a scripted LLM and a fake evaluator.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field, replace
from typing import TYPE_CHECKING, Any, Callable, ClassVar, Protocol, runtime_checkable

if TYPE_CHECKING:
    from codeworld.synthesis._checks import StaticProblem
    from codeworld.synthesis.config import AssistConfig, SamplingConfig

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


class MethodConfig(Protocol):
    """A synthesis method's frozen config dataclass (`GifMctsConfig`, `RexConfig`,
    `ZeroShotConfig`): each has the sampling of its calls and the assists."""

    @property
    def sampling(self) -> SamplingConfig: ...

    @property
    def assist(self) -> AssistConfig: ...


@dataclass(frozen=True)
class FitNote:
    """What a program's evaluation says when the search replaced the program by its constants
    fitted to the data (`Evaluator.refine`; `ProgramEvaluation.fit_note`).

    Attributes:
        score_before: the score of the program as the LLM wrote it.
        constants: how many constants the fit changed.
    """

    score_before: float
    constants: int = 0

    KEY: ClassVar[str] = "fitted"  # the note's key in the evaluation's report (its JSON form)

    def to_json(self) -> dict:
        return {"score_before": self.score_before, "constants": self.constants}

    @classmethod
    def from_json(cls, data: dict) -> "FitNote":
        """The note `to_json` wrote."""
        return cls(score_before=float(data["score_before"]), constants=int(data.get("constants", 0)))


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

    @property
    def fit_note(self) -> FitNote | None:
        """The note of a program the search replaced by its constants fitted to the data (its
        report's ``"fitted"``); None for a program as the LLM wrote it."""
        data = self.report.get(FitNote.KEY)
        return FitNote.from_json(data) if data else None

    def with_fit_note(self, note: FitNote) -> "ProgramEvaluation":
        """This evaluation with `note` in its report (a fitted program's evaluation)."""
        return replace(self, report={**self.report, FitNote.KEY: note.to_json()})

    @classmethod
    def from_json(cls, data: dict) -> "ProgramEvaluation":
        return cls(score=float(data["score"]), buggy=bool(data["buggy"]),
                   feedback=data.get("feedback", ""), mispredicted=data.get("mispredicted"),
                   report=data.get("report", {}))


class Evaluator:
    """Scores a program (in a sandbox: the program is untrusted) and explains what is wrong.

    The runner calls the three methods in order on each program an LLM call wrote: `prepare`
    (mechanical repairs, recorded, never an LLM call), `evaluate`, then `refine` (a healthy
    program may be replaced by a better one, e.g. with its constants fitted to the data). An
    evaluator overrides `evaluate` and whichever of the other two it has a use for.

    Attributes:
        skeleton: the program the prompts start from, when they give one: an answer equal to it
            (up to comments and layout) is recorded as a copy (with `detect_copies`).
        detect_copies: whether the runner scores a copy of an earlier program again (False) or
            hands back the earlier evaluation with a note that it changes nothing (True).
    """

    skeleton: str | None = None
    detect_copies: bool = False

    def prepare(self, program: str, parent: str = "") -> tuple[str, list[dict]]:
        """The program after mechanical repairs, and the repairs as JSON-ready records (empty
        when nothing changed). ``parent`` is the program a fix or improve call was given ("" for
        a generate call). The default changes nothing."""
        return program, []

    def evaluate(self, program: str) -> ProgramEvaluation:
        """The program's score, whether it is buggy, and feedback for the next prompt."""
        raise NotImplementedError

    def refine(self, program: str, evaluation: ProgramEvaluation
               ) -> tuple[str, ProgramEvaluation, dict] | None:
        """A better program to put in the search in place of ``program`` (no LLM call): its
        source, evaluation and a JSON-ready record of how it was made; None (the default) keeps
        the program."""
        return None


@dataclass(frozen=True)
class FinishRecord:
    """What a world's finish step did to a run's best program (`World.finish`; a CWMB world's:
    `codeworld.worlds.cwmb._finish.finish_run`). Each step's summary is the JSON-ready data that
    step keeps (its full record is a file of the run directory); a step that did not run is None.

    Attributes:
        call: the call that wrote the best program the steps started from.
        skipped: why no step ran (``"no program"``); None when they could.
        floor: the skeleton in place of a buggy best (``skeleton_score``, ``became_best``), or
            why not (``skipped``).
        compose: the composition (``status``, ``calls``, ``best_before``, ``score``,
            ``became_best``).
        fit: the constant fit (``accepted``, ``became_best``, ``heldout_before``,
            ``heldout_after``, ``score_before``, ``score_after``), or why not (``skipped``).
        speed: the speed step (``compiled``, ``ported``, ``how``, ``steps_per_s``).
    """

    call: int | None = None
    skipped: str | None = None
    floor: dict | None = None
    compose: dict | None = None
    fit: dict | None = None
    speed: dict | None = None

    def to_json(self) -> dict:
        """The record as JSON data: the fields that are set (an empty record is ``{}``)."""
        return {k: v for k, v in (("skipped", self.skipped), ("call", self.call), ("floor", self.floor),
                                  ("compose", self.compose), ("fit", self.fit), ("speed", self.speed))
                if v is not None}

    @classmethod
    def from_json(cls, data: dict) -> "FinishRecord":
        """The record `to_json` wrote (a key it does not know is left out)."""
        return cls(**{k: data[k] for k in ("call", "skipped", "floor", "compose", "fit", "speed")
                      if k in data})


# The call id of a world's k-th seed program (`Seed`): below -1, which means "from scratch".
SEED_CALL = -2


def seed_call(k: int) -> int:
    """The call id the searches give a world's ``k``-th seed (no call wrote it): -2, -3, ..."""
    return SEED_CALL - k


@dataclass(frozen=True)
class Seed:
    """A program a world writes before the search, with no LLM call: a node of the search
    (GIF-MCTS: a child of the root; REx: in the initial pool) scored like any program, and a
    candidate for the best program.

    Attributes:
        label: its name in the run's records (``"data"``: the data model; ``"floor"``: the
            do-nothing model).
        program: the program.
        start: the search starts from it (its first calls refine it, and the root writes
            nothing from scratch) when it runs and scores higher on the training episodes than
            every seed that is not a start; else it is only a candidate for the best program.
        prefix_lines: how many of its first lines a *generate* from it continues.
        record: how it was made (JSON-ready), saved beside it in the run directory.
    """

    label: str
    program: str
    start: bool = True
    prefix_lines: int = 0
    record: dict = field(default_factory=dict)


class Assists(Protocol):
    """The help a kind of world gives every search, built from its spec and its data (never from
    its name). Every kind of world in `codeworld.worlds` implements all five; one it lacks answers
    None or nothing.
    """

    def skeleton(self) -> str | None:
        """The program the prompts start from (well formed, it predicts nothing new)."""

    def data_section(self) -> str:
        """What the recorded data shows, as the prompts show it ("" for none)."""

    def data_model(self) -> Seed | None:
        """A complete program built from the training data without the LLM (None: not built)."""

    def static_problems(self, source: str) -> list[StaticProblem]:
        """What static checks find wrong in ``source`` against the world's contract before it
        runs (empty when nothing is, or the checks are off)."""

    def compose(self, programs: list[tuple[int, str]]) -> str | None:
        """One program made from the best parts of ``programs`` (``(call, source)``, best
        first) without an LLM call; None when there is none to make."""


@dataclass
class World:
    """What a synthesis run searches against: how requests become prompts, how programs are
    scored, and what is done with the best program after the search. Each kind of world is
    built by its factory (`codeworld.worlds.make_world`).

    Attributes:
        prompts: turns requests into messages and completions into programs.
        evaluator: scores programs.
        finish: ``finish(result, config, run_dir) -> FinishRecord`` after the search (a CWMB world
            composes, fits and speeds up its best program: `codeworld.worlds.cwmb._finish`); None
            when the world has no such step.
        seeds: programs the world wrote before the search (the data model, the floor), which
            the search scores and builds on before its first call (`Seed`).
        assists: the world's `Assists` (None: a world made without them).
    """

    prompts: "PromptBuilder"
    evaluator: Evaluator
    finish: Callable[..., FinishRecord] | None = None
    seeds: tuple[Seed, ...] = ()
    assists: Assists | None = None


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


def made_no_progress(action: str, buggy: bool, score: float, parent_buggy: bool,
                     parent_score: float) -> bool:
    """Whether a program is an improvement that left the score of the (healthy) program it
    improved where it was: the searches count these and say so in the next improve request."""
    return (action == IMPROVE and not buggy and not parent_buggy
            and abs(score - parent_score) <= 1e-12)


def with_no_progress_note(feedback: str, stalls: int, score: float) -> str:
    """The feedback of an improve request of a program scoring `score`, with `no_progress_note`
    when `stalls` earlier improvements of it made no progress."""
    if not stalls or not feedback:
        return feedback
    return f"{feedback}\n\n{no_progress_note(stalls, score)}"


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
        """The best program so far: (call, source, evaluation); a seed's call is `seed_call`."""

    def seed(self, k: int, seed: Seed, evaluation: ProgramEvaluation, start: bool) -> None:
        """Take the world's ``k``-th seed program before the first call (optional: a search
        without this method ignores seeds): a node or pool entry of its own, refined first
        when ``start``."""

    def programs(self) -> list[dict]:
        """The programs written so far, in a form every method shares (``codeworld show`` and the
        report page read it): ``{call, parent_call, action, score, buggy}``, where
        ``parent_call`` is the call that wrote the program refined (-1: from scratch)."""

    def to_json(self) -> dict:
        """The search state for the run directory (the tree or pool)."""
