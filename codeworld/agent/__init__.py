"""The WorldCoder agent: learning a code world model online, with optimism under uncertainty.

WorldCoder (Tang, Key, Ellis, NeurIPS 2024, arXiv 2402.12275) acts in an environment, keeps every
transition, rewrites its world model with REx whenever data contradicts it, and prefers models
under which a planner reaches the mission's reward from the start state. Here it runs on MiniGrid
levels and on codeworld's own Sokoban, both with object-level states. Its baselines on the same
levels: PPO (`ppo_baseline`, the ``train`` extra) and a ReAct agent that asks the LLM for every
action (`react_baseline`).
"""

from codeworld.agent.config import AgentConfig
from codeworld.agent.envs import FAMILIES, ObjectEnv, list_levels, make_object_env, register_family
from codeworld.agent.evaluate import AgentEvaluator, ModelCheck
from codeworld.agent.loop import LevelResult, Milestone, WorldCoderAgent, nearest_missions
from codeworld.agent.minigrid_env import MiniGridEnv
from codeworld.agent.ppo import ObjectGymEnv, PPOConfig, StateEncoder, ppo_baseline
from codeworld.agent.react import ReActAgent, ReActConfig, react_baseline
from codeworld.agent.model import AgentModelError, check_agent_source
from codeworld.synthesis.objects import normalize_state, state_key
from codeworld.agent.sokoban import GeneratorConfig, SokobanEnv, generate_level

__all__ = [
    "FAMILIES",
    "AgentConfig",
    "AgentEvaluator",
    "AgentModelError",
    "GeneratorConfig",
    "LevelResult",
    "MiniGridEnv",
    "Milestone",
    "ModelCheck",
    "ObjectEnv",
    "ObjectGymEnv",
    "PPOConfig",
    "ReActAgent",
    "ReActConfig",
    "SokobanEnv",
    "StateEncoder",
    "WorldCoderAgent",
    "check_agent_source",
    "generate_level",
    "list_levels",
    "make_object_env",
    "nearest_missions",
    "normalize_state",
    "ppo_baseline",
    "react_baseline",
    "register_family",
    "state_key",
]
