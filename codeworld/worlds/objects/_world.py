"""The object world of one level: its prompts, its evaluator and its assists, from the level's
rules and the data recorded on it (the WorldCoder agent's rewrites build theirs here).

`make_object_world` is the ``objects`` kind of `codeworld.worlds.make_world`; `object_evaluator`
is its evaluator alone (the agent checks its current program with it between rewrites).
"""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from codeworld.sandbox import Sandbox
from codeworld.synthesis._checks import StaticProblem
from codeworld.synthesis.types import World
from codeworld.worlds.objects._evaluate import AgentEvaluator
from codeworld.worlds.objects._prompting import AgentPrompts, PromptContext
from codeworld.worlds.objects._states import (effects_text, object_problems, schema_text,
                                             skeleton_program, state_schema)



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


def make_object_world(level: ObjectLevel, assists: bool | None = None, split: None = None,
                      *, settings: ObjectSettings, sandbox: Sandbox | None = None,
                      heldout_fraction: float | None = None) -> World:
    """The world of one object level: REx's prompts and the sandboxed evaluator over the
    recorded data, with (``assists``, default on) the state's schema, the data section and the
    skeleton in the prompts, and copies of the skeleton recognised.

    The ``objects`` kind of `codeworld.worlds.make_world` is `codeworld.agent._levels.make_level_world`,
    which also takes a level by its name and fills in the agent's settings, then builds here.

    Args:
        level: the level's rules and data.
        assists: whether the assists are on (None: on).
        split: unused (an object world searches on all its data); must be None.
        settings: how programs are checked.
        sandbox: where programs run (one worker, restarted after a timeout; default: a
            sandbox of the world's own, closed with its evaluator).
        heldout_fraction: must be None (nothing is held out).

    Raises:
        ValueError: a split or a held-out share was given.
    """
    if split is not None or heldout_fraction is not None:
        raise ValueError("an object world searches on all its recorded data: no split")
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
