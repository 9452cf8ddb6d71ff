"""codeworld: code world models written by LLMs, scored soundly and planned with at native speed."""

from codeworld._backend import backend, core_available
from codeworld.model import ModelSourceError, ModelSourceInfo, check_model_source
from codeworld.sandbox import ModelWorker, Prediction, Sandbox, SandboxLimits, SandboxResult

__version__ = "0.1.0"

__all__ = [
    "ModelSourceError",
    "ModelSourceInfo",
    "ModelWorker",
    "Prediction",
    "Sandbox",
    "SandboxLimits",
    "SandboxResult",
    "__version__",
    "backend",
    "check_model_source",
    "core_available",
]
