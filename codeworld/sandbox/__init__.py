"""The sandbox: every evaluation of generated code runs in a separate, limited worker process.

A guard against accidents in LLM-written code (endless loops, runaway memory, crashes, exits,
stray processes, network use, output floods), not a security boundary against a determined
attacker. See `_guards` for the limits, `_runner` for the parent side, and `ops` for how the
operations that run in a worker are written and called. The sandbox knows nothing of what runs in
it: the ops, and the wall-clock limits that suit them, live with their owners (the world model's
in `codeworld._model_worker`).
"""

from codeworld.sandbox._runner import (REQUEST_TIMEOUT_S, STARTUP_TIMEOUT_S, STATUSES, Sandbox,
                                       SandboxError, SandboxLimits, SandboxResult)
from codeworld.sandbox._ops import OpFailure

# The public names: each one documented on docs/api.md (tests/test_architecture.py checks). The
# other names imported above stay importable here for the package's own modules.
__all__ = [
    "OpFailure",
    "Sandbox",
    "SandboxError",
    "SandboxLimits",
    "SandboxResult",
]
