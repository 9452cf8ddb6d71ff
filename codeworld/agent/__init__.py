"""The WorldCoder agent: learning a code world model online, with optimism under uncertainty.

WorldCoder (Tang, Key, Ellis, NeurIPS 2024, arXiv 2402.12275) acts in an environment, keeps every
transition, rewrites its world model with REx whenever data contradicts it, and prefers models
under which a planner reaches the mission's reward from the start state. Here it runs on MiniGrid
levels, on codeworld's own Sokoban and on codeworld's own household world (AlfWorld's six task
types), all with object-level states. Its baselines on the same levels: PPO (`ppo_baseline`, the
``train`` extra) and a ReAct agent that asks the LLM for every action (`react_baseline`).
"""

from codeworld.agent._config import AgentConfig
from codeworld.agent.envs import FAMILIES, ObjectEnv, list_levels, make_object_env, register_family
from codeworld.agent._household import HouseholdEnv
from codeworld.agent._loop import LevelResult, Milestone, WorldCoderAgent
from codeworld.agent._minigrid_env import MiniGridEnv
from codeworld.agent._ppo import PPOConfig, ppo_baseline
from codeworld.agent._react import ReActAgent, ReActConfig, react_baseline
from codeworld.agent._sokoban import SokobanEnv

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "AgentConfig",
    "LevelResult",
    "WorldCoderAgent",
    "make_object_env",
]
