"""codeworld: code world models written by LLMs, scored soundly and planned with at native speed."""

from codeworld._backend import backend, core_available
from codeworld.agent import AgentConfig, WorldCoderAgent, make_object_env
from codeworld.envs import EnvSpec, encode_obs, get_spec, list_envs, make_env
from codeworld.envs.buffers import ReplayBuffer, load_buffer
from codeworld.envs.descriptions import describe
from codeworld.llm import LLM, Completion, LLMConfig, Sampling, extract_code, make_llm
from codeworld.model import ModelSourceError, ModelSourceInfo, check_model_source
from codeworld.planning import CemConfig, Evaluation, MctsConfig, evaluate
from codeworld.sandbox import ModelWorker, Prediction, Sandbox, SandboxLimits, SandboxResult
from codeworld.scoring import Scorer, ScoreReport, score_model
from codeworld.synthesis import GifMcts, GifMctsConfig, Rex, RexConfig, RunDir, ZeroShot, ZeroShotConfig, synthesize

__version__ = "0.1.0"

__all__ = [
    "AgentConfig",
    "CemConfig",
    "Completion",
    "EnvSpec",
    "Evaluation",
    "GifMcts",
    "GifMctsConfig",
    "LLM",
    "LLMConfig",
    "MctsConfig",
    "ModelSourceError",
    "ModelSourceInfo",
    "ModelWorker",
    "Prediction",
    "ReplayBuffer",
    "Rex",
    "RexConfig",
    "RunDir",
    "Sampling",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "ScoreReport",
    "Scorer",
    "WorldCoderAgent",
    "ZeroShot",
    "ZeroShotConfig",
    "__version__",
    "backend",
    "check_model_source",
    "core_available",
    "describe",
    "encode_obs",
    "evaluate",
    "extract_code",
    "get_spec",
    "list_envs",
    "load_buffer",
    "make_env",
    "make_llm",
    "make_object_env",
    "score_model",
    "synthesize",
]
