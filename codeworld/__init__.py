"""codeworld: code world models written by LLMs, scored soundly and planned with at native speed.

The public names below are loaded on first use, so that importing one part of the package (a
sandbox worker imports only ``codeworld.sandbox``) does not pay for all the others.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from codeworld._version import __version__

# public name -> the module that defines it
_EXPORTS = {
    "backend": "codeworld._backend",
    "core_available": "codeworld._backend",
    "AgentConfig": "codeworld.agent",
    "WorldCoderAgent": "codeworld.agent",
    "make_object_env": "codeworld.agent",
    "EnvSpec": "codeworld.envs",
    "encode_obs": "codeworld.envs",
    "env_spec": "codeworld.envs",
    "get_spec": "codeworld.envs",
    "list_envs": "codeworld.envs",
    "make_env": "codeworld.envs",
    "register_env": "codeworld.envs",
    "ReplayBuffer": "codeworld.envs._buffers",
    "load_buffer": "codeworld.envs._buffers",
    "describe": "codeworld.envs._descriptions",
    "FitConfig": "codeworld.fitting",
    "FitResult": "codeworld.fitting",
    "fit_constants": "codeworld.fitting",
    "LLMClient": "codeworld.llm",
    "Completion": "codeworld.llm",
    "LLMConfig": "codeworld.llm",
    "Sampling": "codeworld.llm",
    "extract_code": "codeworld.llm",
    "make_llm": "codeworld.llm",
    "ModelSourceError": "codeworld._model",
    "ModelSourceInfo": "codeworld._model",
    "check_model_source": "codeworld._model",
    "CemConfig": "codeworld.planning",
    "MctsConfig": "codeworld.planning",
    "PlanEvaluation": "codeworld.planning",
    "evaluate": "codeworld.planning",
    "ModelWorker": "codeworld._model_worker",
    "Prediction": "codeworld._model_worker",
    "Sandbox": "codeworld.sandbox",
    "SandboxLimits": "codeworld.sandbox",
    "SandboxResult": "codeworld.sandbox",
    "Registry": "codeworld.registry",
    "SpeedReport": "codeworld._speed",
    "speed_step": "codeworld._speed",
    "Scorer": "codeworld.scoring",
    "ScoreReport": "codeworld.scoring",
    "score_model": "codeworld.scoring",
    "GifMcts": "codeworld.synthesis",
    "GifMctsConfig": "codeworld.synthesis",
    "Rex": "codeworld.synthesis",
    "RexConfig": "codeworld.synthesis",
    "RunDir": "codeworld.synthesis",
    "RunSpec": "codeworld.synthesis",
    "RunStatus": "codeworld.synthesis",
    "ZeroShot": "codeworld.synthesis",
    "ZeroShotConfig": "codeworld.synthesis",
    "synthesize": "codeworld.synthesis",
}

__all__ = sorted([*_EXPORTS, "__version__"])


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'codeworld' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))


if TYPE_CHECKING:  # for type checkers and IDEs; at run time the names load lazily
    from codeworld._backend import backend, core_available
    from codeworld.agent import AgentConfig, WorldCoderAgent, make_object_env
    from codeworld.envs import (EnvSpec, encode_obs, env_spec, get_spec, list_envs, make_env,
                                register_env)
    from codeworld.envs._buffers import ReplayBuffer, load_buffer
    from codeworld.envs._descriptions import describe
    from codeworld.fitting import FitConfig, FitResult, fit_constants
    from codeworld.llm import Completion, LLMClient, LLMConfig, Sampling, extract_code, make_llm
    from codeworld._model import ModelSourceError, ModelSourceInfo, check_model_source
    from codeworld.planning import CemConfig, MctsConfig, PlanEvaluation, evaluate
    from codeworld._model_worker import ModelWorker, Prediction
    from codeworld.registry import Registry
    from codeworld.sandbox import Sandbox, SandboxLimits, SandboxResult
    from codeworld.scoring import Scorer, ScoreReport, score_model
    from codeworld._speed import SpeedReport, speed_step
    from codeworld.synthesis import (GifMcts, GifMctsConfig, Rex, RexConfig, RunDir, RunSpec,
                                     RunStatus, ZeroShot, ZeroShotConfig, synthesize)
