"""Planning with code world models: MCTS and CEM configs and agents, the oracle, evaluation by return.

The kernels live in csrc/ (C++) and codeworld/kernels/ (Numba twins, references); this package
turns them into agents, runs them on a model inside the sandbox, on the true simulator, and on the
real environment, and wraps a model as a Gymnasium environment.
"""

from codeworld.planning.config import CemConfig, MctsConfig, make_config
from codeworld.planning.evaluate import Evaluation, ReturnStats, evaluate, normalized_return
from codeworld.planning.oracle import OracleModel
from codeworld.planning.planners import PLANNERS, CemPlanner, MctsPlanner, ModelAccess, make_planner

__all__ = [
    "PLANNERS",
    "CemConfig",
    "CemPlanner",
    "CodeWorldEnv",
    "CodeWorldVectorEnv",
    "Evaluation",
    "MctsConfig",
    "MctsPlanner",
    "ModelAccess",
    "OracleModel",
    "ReturnStats",
    "WorldModelError",
    "evaluate",
    "make_config",
    "make_planner",
    "normalized_return",
]

_GYM_NAMES = ("CodeWorldEnv", "CodeWorldVectorEnv", "WorldModelError")


def __getattr__(name: str):
    # The Gymnasium wrappers import gymnasium; sandbox workers import this package and need not.
    if name in _GYM_NAMES:
        from codeworld.planning import gym_env

        return getattr(gym_env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
