"""The object world of one level: its prompts, its evaluator and its assists, from the level's
rules and the data recorded on it (the WorldCoder agent's rewrites build theirs here).

`make_object_world` is the ``objects`` kind of `codeworld.worlds.make_world`; `object_evaluator`
is its evaluator alone (the agent checks its current program with it between rewrites).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass
from typing import TYPE_CHECKING

from codeworld.sandbox import Sandbox
from codeworld.synthesis.checks import StaticProblem
from codeworld.synthesis.types import World
from codeworld.worlds.objects.evaluate import AgentEvaluator
from codeworld.worlds.objects.prompting import AgentPrompts, PromptContext
from codeworld.worlds.objects.states import (effects_text, object_problems, schema_text,
                                             skeleton_program, state_schema)

if TYPE_CHECKING:
    from codeworld.synthesis.run import Run


@dataclass(frozen=True)
class ObjectLevel:
    """What an object world is built for: a level's rules and the data recorded on it.

    Attributes:
        description: the environment's rules in prose.
        action_names: the name of each action.
        n_actions: the number of actions.
        data: the recorded transitions ``{state, action, next_state, reward, done, mission}``.
        starts: ``{state, mission}`` from which the planner must reach reward (optimism).
        missions: what the prompts say about the missions (the current one, the known ones).
    """

    description: str
    action_names: tuple[str, ...]
    n_actions: int
    data: list[dict]
    starts: list[dict]
    missions: str = ""


@dataclass(frozen=True)
class ObjectSettings:
    """How an object world checks programs.

    Attributes:
        optimism: whether the planner must reach reward from the start states.
        max_nodes, max_depth: the planner's limits.
        timeout_s: wall-clock limit of one check.
        examples: recorded transitions a *generate* prompt shows in full.
    """

    optimism: bool
    max_nodes: int
    max_depth: int
    timeout_s: float
    examples: int = 4


def object_evaluator(level: ObjectLevel, sandbox: Sandbox, settings: ObjectSettings,
                     assists: bool = True) -> AgentEvaluator:
    """The evaluator of ``level``'s world; with ``assists``, it knows the state's schema read
    from every state recorded (starts and next states), for its repairs and static checks."""
    schema = None
    if assists:
        schema = state_schema([s["state"] for s in level.starts]
                              + [t["next_state"] for t in level.data])
    return AgentEvaluator(sandbox, level.data, level.starts, level.n_actions, level.action_names,
                          optimism=settings.optimism, max_nodes=settings.max_nodes,
                          max_depth=settings.max_depth, timeout_s=settings.timeout_s,
                          schema=schema)


class ObjectAssists:
    """The object world's `codeworld.synthesis.types.Assists`, all read off the recorded data: the
    skeleton that changes nothing, the data section of each action's effects, the static checks
    against the contract and the schema, and the composition of the best ``transition`` with
    the best ``reward``. No data model yet.

    Args:
        evaluator: the world's evaluator (its schema None: the assists are off).
        context: what the prompts show (its skeleton and data section).
    """

    def __init__(self, evaluator: AgentEvaluator, context: PromptContext):
        self.evaluator = evaluator
        self.context = context

    def skeleton(self) -> str | None:
        return self.context.skeleton or None

    def data_section(self) -> str:
        return self.context.effects

    def data_model(self) -> None:
        return None

    def static_problems(self, source: str) -> list[StaticProblem]:
        if self.evaluator.schema is None:
            return []
        return object_problems(source, self.evaluator.schema)

    def compose(self, programs: list[tuple[int, str]]) -> str | None:
        """The best ``transition`` of ``programs`` and of those checked before joined with the
        best ``reward`` (`AgentEvaluator.compose`); each program not checked yet is checked."""
        for _, source in programs:
            if source not in self.evaluator.sources:
                self.evaluator.check(source)
        joined = self.evaluator.compose()
        return None if joined is None else joined[0]


RECORDED_EPISODES = 4
"""Episodes recorded on a level named by its name (`record_level`)."""
RECORDED_STEPS = 30
"""The most steps of one recorded episode."""


def record_level(name: str, seed: int = 0, episodes: int = RECORDED_EPISODES,
                 steps: int = RECORDED_STEPS) -> ObjectLevel:
    """The level ``name`` (``family:level``, `codeworld.agent.make_object_env`) with the
    transitions of ``episodes`` episodes of uniformly random actions as its data (episode ``i``
    reset with ``seed + i``, the actions drawn with ``seed``: the same data for the same seed).

    Raises:
        KeyError: an unknown family or level.
    """
    import random

    from codeworld.agent.envs import make_object_env

    env = make_object_env(name)
    rng = random.Random(seed)
    data: list[dict] = []
    starts: list[dict] = []
    missions: list[str] = []
    try:
        for episode in range(episodes):
            state, mission = env.reset(seed=seed + episode)
            starts.append({"state": state, "mission": mission})
            missions += [mission] if mission not in missions else []
            for _ in range(min(steps, env.max_steps)):
                action = rng.randrange(env.n_actions)
                next_state, reward, terminated, truncated = env.step(action)
                data.append({"state": state, "action": action, "next_state": next_state,
                             "reward": float(reward), "done": bool(terminated),
                             "mission": mission})
                state = next_state
                if terminated or truncated:
                    break
    finally:
        env.close()
    return ObjectLevel(env.description, tuple(env.action_names), env.n_actions, data, starts,
                       "The missions: " + "; ".join(f'"{m}"' for m in missions) + ".")


def make_object_world(level: ObjectLevel | str, assists: bool | None = None, split: None = None,
                      *, sandbox: Sandbox | None = None, settings: ObjectSettings | None = None,
                      run: "Run | None" = None, heldout_fraction: float | None = None) -> World:
    """The world of one object level: REx's prompts and the sandboxed evaluator over the
    recorded data, with (``assists``, default on) the state's schema, the data section and the
    skeleton in the prompts, and copies of the skeleton recognised.

    Args:
        level: the level's rules and data; or a level's name (``codeworld synthesize --world
            objects sokoban:corridor``), recorded with `record_level` and the run's seed.
        assists: whether the assists are on (None: on).
        split: unused (an object world searches on all its data); must be None.
        sandbox: where programs run (one worker, restarted after a timeout; default: a
            sandbox of the world's own, closed with its evaluator).
        settings: how programs are checked (default: the agent's defaults, without optimism:
            the program explains the recorded data).
        run: the `codeworld.synthesis.run.Run` the world is for (its seed draws the data).
        heldout_fraction: must be None (nothing is held out).

    Raises:
        ValueError: a split or a held-out share was given.
        KeyError: an unknown level name.
    """
    if split is not None or heldout_fraction is not None:
        raise ValueError("an object world searches on all its recorded data: no split")
    if isinstance(level, str):
        level = record_level(level, seed=0 if run is None else run.spec.seed)
    if settings is None:
        from codeworld.agent.config import AgentConfig

        c = AgentConfig()
        settings = ObjectSettings(optimism=False, max_nodes=c.plan_max_nodes,
                                  max_depth=c.plan_max_depth, timeout_s=c.eval_timeout_s,
                                  examples=c.prompt_examples)
    own = sandbox is None
    if own:
        from codeworld.sandbox import SandboxLimits

        sandbox = Sandbox(SandboxLimits(seccomp=True))
    assists = True if assists is None else assists
    evaluator = object_evaluator(level, sandbox, settings, assists)
    if own:  # the sandbox's worker ends with the world's evaluator (or the process)
        weakref.finalize(evaluator, sandbox.close)
    context = PromptContext(level.description, tuple(level.action_names), level.missions,
                            level.data, settings.examples)
    if evaluator.schema is not None:
        context.schema = schema_text(evaluator.schema, len(level.starts) + len(level.data))
        context.effects = effects_text(level.data, tuple(level.action_names))
        context.skeleton = evaluator.skeleton = skeleton_program(evaluator.schema)
        evaluator.detect_copies = True
    return World(AgentPrompts(context), evaluator, assists=ObjectAssists(evaluator, context))
