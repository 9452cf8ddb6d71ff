"""Planning with code world models: the planner registry, MCTS and CEM, the oracle, evaluation by return.

The kernels live in csrc/ (C++) and codeworld/kernels/ (Numba twins, references); this package
turns them into agents, runs them on a model inside the sandbox, on the true simulator, and on the
real environment, and wraps a model as a Gymnasium environment.
"""

from typing import TYPE_CHECKING

from codeworld.planning._cem import CemConfig, CemPlanner
from codeworld.planning.evaluate import PlanEvaluation, ReturnStats, evaluate, normalized_return
from codeworld.planning._mcts import MctsConfig, MctsPlanner
from codeworld.planning._oracle import OracleModel
from codeworld.planning.planners import ModelAccess, Planner
from codeworld.planning.registry import (
    PLANNERS,
    PlannerEntry,
    get_planner,
    make_config,
    make_planner,
    register_planner,
)

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "CemConfig",
    "CodeWorldEnv",
    "CodeWorldVectorEnv",
    "MctsConfig",
    "PlanEvaluation",
    "PlannerEntry",
    "evaluate",
    "register_planner",
]

_GYM_NAMES = ("CodeWorldEnv", "CodeWorldVectorEnv", "WorldModelError")

if TYPE_CHECKING:  # for type checkers and the API page; at run time `__getattr__` loads them
    from codeworld.planning._gym_env import CodeWorldEnv, CodeWorldVectorEnv, WorldModelError


def __getattr__(name: str):
    # The Gymnasium wrappers import gymnasium; sandbox workers import this package and need not.
    if name in _GYM_NAMES:
        from codeworld.planning import _gym_env as gym_env

        return getattr(gym_env, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
