"""Frozen configurations of the synthesis methods, defaulting to the published values.

GIF-MCTS values are those of Dainese et al., "Generating Code World Models with Large Language
Models Guided by Monte Carlo Tree Search" (NeurIPS 2024, arXiv 2405.15383) as restated in
codeworld's DESIGN.md: UCT constant 0.1, priors for unexpanded actions 0.5 (generate), 0.55
(improve), 0.5 (fix) each worth two observations, fix chains of at most 3 with temporary values
0.99, 0.66, 0.33, then 0, and L = 2 new lines kept per generate step. REx values are those of
Tang et al., "Code Repair with LLMs gives an Exploration-Exploitation Tradeoff" (arXiv
2405.17503), used by WorldCoder: C = 5.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, ClassVar


@dataclass(frozen=True)
class SamplingConfig:
    """How each LLM call samples.

    Attributes:
        temperature: sampling temperature of every call.
        max_tokens: the longest completion asked for.
        seed_per_call: pass ``seed = run seed + call index`` to the backend, so that a fresh run
            with the same seed asks for the same samples (backends that ignore seeds still work).
    """

    temperature: float = 1.0
    max_tokens: int = 1500
    seed_per_call: bool = True


@dataclass(frozen=True)
class AssistConfig:
    """What every search method adds around the LLM to help a small model (each can be ablated).

    Attributes:
        scaffold: prompts show the state's named components, the action and a skeleton program
            built from the env's spec and description; requests that write from scratch start
            the answer with the skeleton's head (`codeworld.synthesis.scaffold`).
        checks: static checks (undefined names, state unpacking and indexing against the state
            length, a missing ``step``) and a smoke run in the sandbox before the full scoring
            pass, and mechanical repairs that need no LLM (`codeworld.synthesis.checks`).
        smoke_transitions: how many of the buffer's first transitions the smoke run steps.
        error_summary: *improve* prompts summarize the errors over the whole buffer (per state
            component, reward, done, a few transitions from different error groups) instead of
            showing one mispredicted transition (`codeworld.synthesis.feedback`).
        summary_tokens: the error summary's budget, in tokens (about 4 characters each).
        summary_examples: at most this many mispredicted transitions in the summary.
        fit_constants: every healthy, imperfect program the search writes gets its numeric
            literals fitted to the buffer (`codeworld.fitting`); the fitted program replaces it
            when the held-out score improves, so the search builds on the better constants.
        fit_seconds: the cap of one such fit's optimizer loop.
        relations: prompts show what the buffer shows: for each state component, a
            least-squares fit of its change that is right on most transitions or explains most
            of the change, and the recorded rewards and episode ends with an example of each
            rare one (`codeworld.synthesis.relations`).
        structure: the data section's fits go beyond sparse linear ones: a term library
            (sin/cos, squares, products, abs, sign), clips at bounds, wraps, decision-list
            exceptions for whole-number rules, and a reward formula
            (`codeworld.synthesis.relations.term_library`).
        form_from_data: the scaffold reads a component whose recorded values are all whole
            numbers as an int, and its reward line says the recorded default is not the rule.
        copies: a program equal (up to comments and layout) to the skeleton or to an earlier
            call's program is recognised as a copy: recorded as one, not scored again, not
            expanded again by the search (`codeworld.synthesis.runner.normalized`); the
            requests that follow copies, or improvements that made no progress, say so.
        beyond_data: a program that runs on the recorded transitions is also stepped where
            planning will take it (every recorded state with every action, or with sampled
            actions, and rollouts from the recorded first states); one that raises or returns
            a non-finite value there goes to *fix*.
        beyond_steps: the length of those rollouts.
    """

    scaffold: bool = True
    checks: bool = True
    smoke_transitions: int = 1
    error_summary: bool = True
    summary_tokens: int = 700
    summary_examples: int = 3
    fit_constants: bool = True
    fit_seconds: float = 15.0
    relations: bool = True
    structure: bool = True
    form_from_data: bool = True
    copies: bool = True
    beyond_data: bool = True
    beyond_steps: int = 30

    # What a saved config without these (older) fields was made with.
    ABSENT_IN_OLDER_RUNS: ClassVar[dict] = {"relations": False, "structure": False,
                                            "form_from_data": False, "copies": False,
                                            "beyond_data": False}

    def __post_init__(self) -> None:
        if self.fit_seconds <= 0:
            raise ValueError("fit_seconds must be positive")
        if self.smoke_transitions < 1:
            raise ValueError("smoke_transitions must be at least 1")
        if self.summary_tokens < 50:
            raise ValueError("summary_tokens must be at least 50")
        if self.summary_examples < 0:
            raise ValueError("summary_examples must be non-negative")


@dataclass(frozen=True)
class GifMctsConfig:
    """GIF-MCTS (generate, improve, fix) over programs; one simulation is one LLM call.

    Attributes:
        ucb_c: exploration constant of UCT, ``Q + c * sqrt(ln N(parent) / (n + 1))``; paper: 0.1.
        prior_generate: initial value of an unexpanded *generate* action; paper: 0.5.
        prior_improve: initial value of an unexpanded *improve* action; paper: 0.55.
        prior_fix: initial value of an unexpanded *fix* action; paper: 0.5.
        prior_count: how many observations each initial prior is worth in the running mean of
            the values that expansions of that action type produced; paper: 2.
        fix_limit: fixes tried in a row on a buggy program before it is given up (value 0);
            paper: f = 3.
        bug_values: the temporary value of a buggy node after 0, 1, ..., fix_limit failed fixes;
            paper: 0.99, 0.66, 0.33, 0 (evenly spaced from 0.99 down to 0).
        lines_per_generate: L, how many more lines of its program a generate node keeps for its
            own generate children to continue; paper: 2.
        allow_generate: ablation switch; off, only the root's first generate is offered.
        allow_improve: ablation switch; off, no improve action is offered.
        allow_fix: ablation switch; off, a buggy program is a dead end with value 0.
        parallel: k, LLM calls issued at once per wave, with virtual loss in selection; 1 is the
            paper's sequential algorithm.
        virtual_loss: the value a pending expansion counts with while its call runs.
        perfect_tolerance: the search stops once a program scores at least ``1 - tolerance``.
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
    """

    ucb_c: float = 0.1
    prior_generate: float = 0.5
    prior_improve: float = 0.55
    prior_fix: float = 0.5
    prior_count: float = 2.0
    fix_limit: int = 3
    bug_values: tuple[float, ...] = (0.99, 0.66, 0.33, 0.0)
    lines_per_generate: int = 2
    allow_generate: bool = True
    allow_improve: bool = True
    allow_fix: bool = True
    parallel: int = 1
    virtual_loss: float = 0.0
    perfect_tolerance: float = 1e-6
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)

    def __post_init__(self) -> None:
        if len(self.bug_values) != self.fix_limit + 1:
            raise ValueError(f"bug_values needs fix_limit + 1 = {self.fix_limit + 1} entries, "
                             f"got {len(self.bug_values)}")
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")
        if self.lines_per_generate < 0:
            raise ValueError("lines_per_generate must be non-negative")


@dataclass(frozen=True)
class RexConfig:
    """REx (WorldCoder's program search): Thompson sampling over a pool of programs to refine.

    Each call samples ``Beta(1 + C*h, 1 + C*(1 - h) + N)`` for every program in the pool (h its
    score, N how often it was refined), refines the program with the largest sample (fix if it is
    buggy, improve otherwise) and adds the result to the pool. An empty pool is seeded by a
    generation from scratch.

    Attributes:
        c: the constant C; REx paper: 5.
        parallel: programs refined at once per wave (each pick counts in N immediately).
        perfect_tolerance: the search stops once a program scores at least ``1 - tolerance``.
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
    """

    c: float = 5.0
    parallel: int = 1
    perfect_tolerance: float = 1e-6
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")


@dataclass(frozen=True)
class ZeroShotConfig:
    """Independent generations from scratch; the best is kept.

    Attributes:
        parallel: generations issued at once per wave.
        stop_on_perfect: stop once a program scores at least ``1 - perfect_tolerance``.
        perfect_tolerance: see `stop_on_perfect`.
        sampling: sampling settings of every call.
        assist: scaffold, checks and repairs, error summaries (shared by every method).
    """

    parallel: int = 1
    stop_on_perfect: bool = True
    perfect_tolerance: float = 1e-6
    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)

    def __post_init__(self) -> None:
        if self.parallel < 1:
            raise ValueError("parallel must be at least 1")


def _default_fit_config():
    from codeworld.fitting import FitConfig

    return FitConfig()


@dataclass(frozen=True)
class FinishConfig:
    """What is done to a run's best program once the search ends (`codeworld.synthesis.finish`).

    Attributes:
        fit_constants: fit the best program's float literals to the buffer
            (`codeworld.fitting`); the fitted program is scored like any other and becomes the
            best when the fit is kept (held-out score up) and it scores higher on the buffer.
        speed_step: compile the best program, or port it (kept only if it predicts the same on
            every transition), and measure its steps per second (`codeworld.speed`).
        fit: the fit's settings (optimizer, evaluation and time caps, held-out share).
        compose: before the fit, take each output component (next-state dimension, reward, done)
            from the run's program that predicts it best (`codeworld.synthesis.compose`); the
            composed program becomes the best when it scores higher.
        compose_programs: how many of the run's best programs may take part.
    """

    fit_constants: bool = True
    speed_step: bool = True
    fit: Any = field(default_factory=_default_fit_config)
    compose: bool = True
    compose_programs: int = 4

    def __post_init__(self):
        if self.compose_programs < 2:
            raise ValueError(f"compose_programs must be at least 2, got {self.compose_programs}")
