"""The sandbox: every evaluation of generated code runs in a separate, limited worker process.

A guard against accidents in LLM-written code (endless loops, runaway memory, crashes, exits,
stray processes, network use, output floods), not a security boundary against a determined
attacker. See `_guards` for the limits and `_runner` for the parent side.
"""

from codeworld.sandbox._model_worker import ModelWorker, Prediction
from codeworld.sandbox._runner import STATUSES, Sandbox, SandboxError, SandboxLimits, SandboxResult

__all__ = [
    "STATUSES",
    "ModelWorker",
    "Prediction",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
]
