"""The public API of sandbox operations: how code that runs inside a worker is written and called.

An *op* is a module-level function ``op(ctx, **kwargs)`` that runs inside a sandbox worker, where it
may execute untrusted code. The parent passes the function itself to `Sandbox.call`, never a name;
what travels to the worker is its reference (module and qualified name, as pickle sends a
function), and the worker imports it from there. The parent never runs it::

    def op_count_lines(ctx, source: str) -> int:
        namespace = run_untrusted(source)
        ...

    with Sandbox() as box:
        result = box.call(op_count_lines, source=program)

An op lives in a module the worker can import (one of the package the sandbox belongs to, which
is on the worker's path), and that module should import only what the op needs: the worker
imports it after its limits are in place. Inside an op, ``ctx.state`` keeps per-worker state
between requests (``ctx.state["filename"]``, when set, is the file name the untrusted code runs
under, used to point at its line), ``ctx.emit`` streams partial results (kept by the parent even
when the request later times out), and a failure is reported one way: raise `OpFailure` with its
status; any other exception becomes an ``exception`` record naming the candidate's line
(`candidate_error`).
"""

from __future__ import annotations

import importlib
import sys
import traceback
from typing import Callable

from codeworld.sandbox._guards import SandboxTimeout

__all__ = [
    "OpFailure",
    "SandboxTimeout",
    "candidate_error",
    "failure_record",
    "op_reference",
    "resolve_op",
]


class OpFailure(Exception):
    """An op's structured failure, sent to the parent as its `SandboxResult`.

    Attributes:
        status: one of the sandbox's statuses (``exception``, ``invalid_output``, ``memory``...).
        message: what went wrong, in words.
        line, code: the candidate's line that failed and its text, when known.
        transition: the index of the transition that failed, for batched ops.
        traceback: the candidate's frames of the traceback.
        type: the name of the underlying exception type.
    """

    def __init__(self, status: str, message: str, *, line: int | None = None, code: str | None = None,
                 transition: int | None = None, traceback: str = "", type: str = ""):
        super().__init__(message)
        self.status = status
        self.message = message
        self.line = line
        self.code = code
        self.transition = transition
        self.traceback = traceback
        self.type = type or status

    @classmethod
    def from_exception(cls, exc: BaseException, filename: str | None, *, status: str = "exception",
                       transition: int | None = None) -> "OpFailure":
        """The failure of candidate code that raised `exc` (see `candidate_error`); with a
        transition, the message starts with ``transition i:``."""
        record = candidate_error(exc, filename)
        message = record["message"] if transition is None else f"transition {transition}: {record['message']}"
        return cls(status, message, line=record["line"], code=record["code"], transition=transition,
                   traceback=record["traceback"], type=record["type"])

    @property
    def record(self) -> dict:
        """The record the worker sends to the parent."""
        return {"status": self.status, "type": self.type, "message": self.message, "line": self.line,
                "code": self.code, "transition": self.transition, "traceback": self.traceback}


def candidate_error(exc: BaseException, filename: str | None) -> dict:
    """A cleaned description of an exception raised by candidate code.

    The message names the exception, and, when the traceback passes through the candidate's
    file, the last line of the candidate that was running, with its text.

    Returns:
        ``{"type", "message", "line", "code", "traceback"}``.
    """
    import linecache

    frames = traceback.extract_tb(exc.__traceback__)
    line = None
    code = None
    candidate_frames = [f for f in frames if filename and f.filename == filename]
    if isinstance(exc, SyntaxError) and exc.filename == filename:
        line, code = exc.lineno, (exc.text or "").strip()
    elif candidate_frames:
        last = candidate_frames[-1]
        line = last.lineno
        code = (last.line or linecache.getline(filename, line)).strip()
    message = f"{type(exc).__name__}: {exc}" if str(exc) else type(exc).__name__
    if isinstance(exc, SystemExit):
        message = f"the program called sys.exit({exc.code!r})"
    text = message if line is None else f"{message} (line {line}: {code})"
    shown = candidate_frames[-5:]
    tb = "".join(traceback.format_list(shown)) if shown else ""
    return {"type": type(exc).__name__, "message": text, "line": line, "code": code, "traceback": tb}


def op_reference(op: Callable) -> tuple[str, str]:
    """What travels to the worker for `op`: its module and qualified name (in the parent).

    Raises:
        TypeError: for a name instead of a function, or a function the worker could not import
            (a lambda, a nested function, one defined in ``__main__``).
    """
    if isinstance(op, str):
        raise TypeError(f"a sandbox op is passed as the function itself, not by name ({op!r})")
    module = getattr(op, "__module__", None)
    name = getattr(op, "__qualname__", None)
    if not callable(op) or not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(f"a sandbox op must be a function, not {op!r}")
    if module == "__main__" or "." in name or "<" in name or getattr(sys.modules.get(module), name, None) is not op:
        raise TypeError(f"a sandbox op must be a module-level function of an importable module, "
                        f"not {module}:{name}")
    return module, name


def resolve_op(reference: tuple[str, str]) -> Callable:
    """The function a reference from `op_reference` stands for (in the worker).

    Raises:
        ImportError: when its module does not import in the worker.
        LookupError: when the module has no such function.
    """
    module_name, name = reference
    op = getattr(importlib.import_module(module_name), name, None)
    if not callable(op):
        raise LookupError(f"no sandbox op {module_name}:{name}")
    return op


def failure_record(exc: BaseException, filename: str | None) -> dict:
    """The record the worker sends for an exception that ended an op: an `OpFailure` as it is;
    the sandbox's timeout, a `MemoryError` or anything else the candidate raised, described."""
    if isinstance(exc, OpFailure):
        return exc.record
    record = candidate_error(exc, filename)
    if isinstance(exc, SandboxTimeout):
        record["status"] = "timeout"
    elif isinstance(exc, MemoryError):
        record["status"] = "memory"
        record["message"] = "the program ran out of memory (the sandbox's address-space limit)"
    else:
        record["status"] = "exception"
    return record
