"""The agent's levels as worlds of their own: a level named ``family:level`` recorded by random
play, for `codeworld synthesize --world objects` (the ``objects`` kind of
`codeworld.worlds.make_world`), with the agent's settings for checking programs.

The level families live in the agent (`codeworld.agent.envs`); the object world itself
(`codeworld.worlds.objects._world`) knows levels only by their rules and data.
"""

from __future__ import annotations

import random
from typing import TYPE_CHECKING

from codeworld.agent._config import AgentConfig
from codeworld.agent.envs import make_object_env
from codeworld.sandbox import Sandbox
from codeworld.synthesis.types import World
from codeworld.worlds.objects._world import ObjectLevel, ObjectSettings, make_object_world

if TYPE_CHECKING:
    from codeworld.synthesis.run import Run

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


def level_target(name: str) -> str:
    """``name`` when it names a level (the ``objects`` kind's check of a command line's target).

    Raises:
        KeyError: an unknown family or level.
        ValueError: a generated level whose seed is not a whole number.
    """
    make_object_env(name).close()
    return name


def make_level_world(level: ObjectLevel | str, assists: bool | None = None, split: None = None,
                     *, sandbox: Sandbox | None = None, settings: ObjectSettings | None = None,
                     run: "Run | None" = None, heldout_fraction: float | None = None) -> World:
    """The world of one object level (`codeworld.worlds.objects._world.make_object_world`).

    Args:
        level: the level's rules and data; or a level's name (``codeworld synthesize --world
            objects sokoban:corridor``), recorded with `record_level` and the run's seed.
        assists: whether the assists are on (None: on).
        split: must be None (an object world searches on all its data).
        sandbox: where programs run (default: a sandbox of the world's own).
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
        c = AgentConfig()
        settings = ObjectSettings(optimism=False, max_nodes=c.plan_max_nodes,
                                  max_depth=c.plan_max_depth, timeout_s=c.eval_timeout_s,
                                  examples=c.prompt_examples)
    return make_object_world(level, assists, split, settings=settings, sandbox=sandbox)
