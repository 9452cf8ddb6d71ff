"""The sandbox: every evaluation of generated code runs in a separate, limited worker process.

A guard against accidents in LLM-written code (endless loops, runaway memory, crashes, exits,
stray processes, network use, output floods), not a security boundary against a determined
attacker. See `_guards` for the limits, `_runner` for the parent side, and `ops` for how the
operations that run in a worker are written and called.
"""

from codeworld.sandbox._model_worker import ModelWorker, Prediction
from codeworld.sandbox._runner import (DECISION_TIMEOUT_S, PORT_CHECK_TIMEOUT_S, PROGRAM_TIMEOUT_S,
                                       STARTUP_TIMEOUT_S, STATUSES, Sandbox, SandboxError,
                                       SandboxLimits, SandboxResult)
from codeworld.sandbox.ops import OpFailure, sandbox_op

__all__ = [
    "DECISION_TIMEOUT_S",
    "PORT_CHECK_TIMEOUT_S",
    "PROGRAM_TIMEOUT_S",
    "STARTUP_TIMEOUT_S",
    "STATUSES",
    "ModelWorker",
    "OpFailure",
    "Prediction",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
    "sandbox_op",
]
