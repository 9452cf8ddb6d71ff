"""The settings every synthesis method shares: sampling, the assists, the steps after the search.

Each method's own config lives beside its search (`codeworld.synthesis._gif_mcts.GifMctsConfig`,
`codeworld.synthesis._rex.RexConfig`, `codeworld.synthesis._rex.ZeroShotConfig`) and holds a
`SamplingConfig` and an `AssistConfig`; `ASSIST_ABLATIONS` are the variants every such method
has.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, ClassVar

if TYPE_CHECKING:
    from codeworld.fitting import FitConfig


@dataclass(frozen=True)
class SamplingConfig:
    """How each LLM call samples.

    Attributes:
        temperature: sampling temperature of every call.
        max_tokens: the longest completion asked for.
        seed_per_call: pass ``seed = run seed + call index`` to the backend, so that a fresh run
            with the same seed asks for the same samples (backends that ignore seeds still work).
        copy_resamples: a call whose answer is a copy (the world recognises copies:
            ``assist.copies``) of the skeleton, a seed or an earlier call's program, the program
            it was given among them, asks again within the same call, with another seed, at
            most this many times, and keeps the first answer that is no copy (else the first
            answer); the call's record lists the copies it asked again for (``resampled``).
            Not at temperature 0 (greedy decoding repeats itself), not after the session's
            time limit; 0 (the default): never (its cost and effect, measured:
            ``docs/synthesis.md``).
    """

    temperature: float = 1.0
    max_tokens: int = 1500
    seed_per_call: bool = True
    copy_resamples: int = 0

    # What a saved config without these (older) fields was made with.
    ABSENT_IN_OLDER_RUNS: ClassVar[dict] = {"copy_resamples": 0}

    def __post_init__(self) -> None:
        if not 0 <= self.temperature < float("inf"):  # NaN too
            raise ValueError(f"sampling.temperature must be 0 or more, not {self.temperature}")
        if self.max_tokens < 1:
            raise ValueError(f"sampling.max_tokens must be at least 1, not {self.max_tokens}")
        if self.copy_resamples < 0:
            raise ValueError(f"sampling.copy_resamples must be 0 or more, not {self.copy_resamples}")


@dataclass(frozen=True)
class AssistConfig:
    """What every search method adds around the LLM to help a small model (each can be ablated).

    Attributes:
        scaffold: prompts show the state's named components, the action and a skeleton program
            built from the env's spec and description; requests that write from scratch start
            the answer with the skeleton's head (`codeworld.worlds.cwmb._scaffold`).
        checks: static checks (undefined names, state unpacking and indexing against the state
            length, a missing ``step``) and a smoke run in the sandbox before the full scoring
            pass, and mechanical repairs that need no LLM (`codeworld.worlds.cwmb._checks`,
            `codeworld.synthesis._repairs`).
        smoke_transitions: how many of the buffer's first transitions the smoke run steps.
        error_summary: *improve* prompts summarize the errors over the whole buffer (per state
            component, reward, done, a few transitions from different error groups) instead of
            showing one mispredicted transition (`codeworld.worlds.cwmb._feedback`).
        summary_tokens: the error summary's budget, in tokens (about 4 characters each).
        summary_examples: at most this many mispredicted transitions in the summary.
        fit_constants: every healthy, imperfect program the search writes gets its numeric
            literals fitted to the buffer (`codeworld.fitting`); the fitted program replaces it
            when the held-out score improves, so the search builds on the better constants.
        fit_seconds: the cap of one such fit's optimizer loop.
        relations: prompts show what the buffer shows: for each state component, a
            least-squares fit of its change that is right on most transitions or explains most
            of the change, and the recorded rewards and episode ends with an example of each
            rare one (`codeworld.worlds.cwmb._relations`).
        structure: the data section's fits go beyond sparse linear ones: a term library
            (sin/cos, squares, products, abs, sign), clips at bounds, wraps, decision-list
            exceptions for whole-number rules, and a reward formula
            (`codeworld.worlds.cwmb._relations.term_library`).
        form_from_data: the scaffold reads a component whose recorded values are all whole
            numbers as an int, and its reward line says the recorded default is not the rule.
        copies: a program equal (up to comments and layout) to the skeleton or to an earlier
            call's program is recognised as a copy: recorded as one, not scored again, not
            expanded again by the search (`codeworld.synthesis._runner.normalized`); the
            requests that follow copies, or improvements that made no progress, say so.
        beyond_data: a program that runs on the recorded transitions is also stepped where
            planning will take it (every recorded state with every action, or with sampled
            actions, and rollouts from the recorded first states); one that raises or returns
            a non-finite value there goes to *fix*.
        beyond_steps: the length of those rollouts; None: as far as the environment's planner
            looks ahead (`codeworld.planning.registry.lookahead`), since a model that leaves the
            finite numbers within that many steps fails the plan.
        compact_tables: the environment's description has its documentation's tables compacted
            (`codeworld.envs._descriptions.compact_tables`).
        reward_from_old: the data section's reward formula may use the state the step started
            from as well as the new one, and the angle of a cosine-sine pair of components
            (`codeworld.worlds.cwmb._relations.angle_pairs`): a cost on an angle's size or on the
            mean of two speeds becomes a term.
        angles: the data section may fit a cosine-sine pair of components through their angle
            (`codeworld.worlds.cwmb._relations.cos_sin_pairs`): the angle's change, each component
            the cosine or sine of the new angle.
        regression: the data section's fit of a real component that no sparse linear fit
            gets right on every transition may be a symbolic regression
            (`codeworld.fitting._regression`, with the ``regression`` extra; skipped without
            it), where that is right on more transitions and lowers the error on held-out
            training episodes; it may read the new values of components fitted exactly.
        regression_seconds: the wall-clock budget of one component's regression.
        data_model: before the first call, the world writes a complete program from the
            training episodes (each component's fitted rule, the reward and done rules:
            `codeworld.worlds.cwmb._data_model`) and the search starts from it where it scores
            above the do-nothing model; both are candidates for the best program, so the best
            is never below the floor on the training episodes (`codeworld.synthesis.types.Seed`).
        described_rewards: a program exact on every training transition is not yet perfect
            where the description states a reward the training episodes never show (a few-valued
            reward; `codeworld.worlds.cwmb._feedback.unseen_rewards`) and the program returns
            it on no recorded state with any action: the search goes on, its improve requests
            ask for those rewards with the description's sentences, and of programs exact on
            the data it prefers the one that returns more of them.
        described_ends: the data model takes the episode's end as the description states it
            in an equation (a comparison of the state's components, the angles of their
            cosine-sine pairs included: `codeworld.worlds.cwmb._relations.described_ends`)
            where that condition is right on every training transition; where the training
            episodes never end that way and the description ties one reward it states and the
            data never shows to the end (`_feedback.end_rewards`), that reward comes with it.
        bounded_data_model: a data model whose approximate real-valued rules run away where
            planning takes it (`beyond_data`'s check fails) is written again with those
            components held to their recorded range, widened by its width on both sides, and
            that one is the seed where it runs everywhere (`codeworld.worlds.cwmb._data_model.
            world_seeds`).
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
    beyond_steps: int | None = None
    compact_tables: bool = True
    reward_from_old: bool = True
    angles: bool = True
    regression: bool = True
    regression_seconds: float = 10.0
    data_model: bool = True
    described_rewards: bool = True
    described_ends: bool = True
    bounded_data_model: bool = True

    # What a saved config without these (older) fields was made with.
    ABSENT_IN_OLDER_RUNS: ClassVar[dict] = {"relations": False, "structure": False,
                                            "form_from_data": False, "copies": False,
                                            "beyond_data": False, "beyond_steps": 30,
                                            "compact_tables": False,
                                            "reward_from_old": False, "angles": False,
                                            "regression": False,
                                            "data_model": False,
                                            "described_rewards": False,
                                            "described_ends": False,
                                            "bounded_data_model": False}

    def __post_init__(self) -> None:
        if self.fit_seconds <= 0:
            raise ValueError("fit_seconds must be positive")
        if not self.regression_seconds > 0:
            raise ValueError("regression_seconds must be positive")
        if self.beyond_steps is not None and self.beyond_steps < 1:
            raise ValueError("beyond_steps must be at least 1 (or None: the planner's lookahead)")
        if self.smoke_transitions < 1:
            raise ValueError("smoke_transitions must be at least 1")
        if self.summary_tokens < 50:
            raise ValueError("summary_tokens must be at least 50")
        if self.summary_examples < 0:
            raise ValueError("summary_examples must be non-negative")


def _default_fit_config() -> FitConfig:
    from codeworld.fitting import FitConfig

    return FitConfig()


@dataclass(frozen=True)
class FinishConfig:
    """What is done to a run's best program once the search ends (`codeworld.worlds.cwmb._finish`).

    Attributes:
        fit_constants: fit the best program's float literals to the buffer
            (`codeworld.fitting`); the fitted program is scored like any other and becomes the
            best when the fit is kept (held-out score up) and it scores higher on the buffer.
        speed_step: compile the best program, or port it (kept only if it predicts the same on
            every transition), and measure its steps per second (`codeworld._speed`).
        fit: the fit's settings (optimizer, evaluation and time caps, held-out share).
        compose: before the fit, take each output component (next-state dimension, reward, done)
            from the run's program that predicts it best (`codeworld.worlds.cwmb._compose`); the
            composed program becomes the best when it scores higher.
        compose_programs: how many of the run's best programs may take part.
        floor: first, when every program of the search is buggy, the skeleton the prompts start
            from (the do-nothing model) becomes the best: a run ends with a program that runs.
            (Not when a healthy best scores below it: such a model may still plan well.)
    """

    fit_constants: bool = True
    speed_step: bool = True
    fit: FitConfig = field(default_factory=_default_fit_config)
    compose: bool = True
    compose_programs: int = 4
    floor: bool = True

    def __post_init__(self):
        if self.compose_programs < 2:
            raise ValueError(f"compose_programs must be at least 2, got {self.compose_programs}")


# Variants that switch off one of codeworld's aids to a small model, for any method whose config
# has an `AssistConfig` (the scaffold in the prompts, the static checks with the smoke run and the
# mechanical repairs, the error summary in improve prompts, the constant fit, the composition, the
# data section's fitted relations, their nonlinear structure). A ``finish.`` field belongs to the
# run's `FinishConfig`, the others to the method's config.
ASSIST_ABLATIONS: dict[str, dict] = {
    "no-scaffold": {"assist.scaffold": False},
    "no-checks": {"assist.checks": False},
    "no-summary": {"assist.error_summary": False},
    "no-fit": {"assist.fit_constants": False, "finish.fit_constants": False},
    "no-compose": {"finish.compose": False},
    "no-floor": {"finish.floor": False},
    "no-relations": {"assist.relations": False},
    # the data section off altogether, and on with plain linear fits only (no term library,
    # clips, wraps, exceptions or reward formula)
    "no-data": {"assist.relations": False},
    "no-structure": {"assist.structure": False},
    # the data section without symbolic regression (sparse linear fits only)
    "no-regression": {"assist.regression": False},
    # no data model and no floor program in the search: it starts from the skeleton, as before
    "no-data-model": {"assist.data_model": False},
    # a program exact on the training episodes is perfect even where the description states
    # rewards the episodes never show (no calls are spent asking for them)
    "no-described-rewards": {"assist.described_rewards": False},
    # the data model's end and its reward from the data alone, not from the description's
    # stated condition for the end
    "no-described-ends": {"assist.described_ends": False},
    # a data model that runs away beyond the recorded data stays as built (buggy), not held to
    # the recorded range
    "no-bounded-data-model": {"assist.bounded_data_model": False},
}
