"""The public API of sandbox operations: how code that runs inside a worker is written and called.

An *op* is a function ``op(ctx, **kwargs)`` that runs inside a sandbox worker, where it may execute
LLM-written code. It is declared once with `sandbox_op`, and the parent passes the function itself
to `Sandbox.call` (or `ModelWorker.call`); only the op's name travels to the worker, which imports
it from its module there and refuses anything not declared as an op. The parent never runs it::

    @sandbox_op
    def op_count_lines(ctx, source: str) -> int:
        namespace = exec_candidate(source, "candidate.py")
        ...

    with Sandbox() as box:
        result = box.call(op_count_lines, source=program)

Inside an op, ``ctx.state`` keeps per-worker state between requests, ``ctx.emit`` streams partial
results (kept by the parent even when the request later times out), and a failure is reported
one way: raise `OpFailure` with its status; any other exception becomes an ``exception`` record
naming the candidate's line (`candidate_error`).
"""

from __future__ import annotations

import importlib
import traceback
from typing import Any, Callable

from codeworld.model import compile_candidate, exec_candidate
from codeworld.sandbox._guards import SandboxTimeout

__all__ = [
    "OpFailure",
    "SandboxTimeout",
    "candidate_error",
    "compile_candidate",
    "exec_candidate",
    "failure_record",
    "loaded_model",
    "op_name",
    "resolve_op",
    "sandbox_op",
]

# The attribute `sandbox_op` sets on an op: its name, ``"module:function"``.
_OP_ATTRIBUTE = "__sandbox_op__"
# Ops built into every worker, by their short names (see `codeworld.sandbox._builtin_ops`).
_BUILTIN_MODULE = "codeworld.sandbox._builtin_ops"


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
        message = f"the model called sys.exit({exc.code!r})"
    text = message if line is None else f"{message} (line {line}: {code})"
    shown = candidate_frames[-5:]
    tb = "".join(traceback.format_list(shown)) if shown else ""
    return {"type": type(exc).__name__, "message": text, "line": line, "code": code, "traceback": tb}


def loaded_model(ctx) -> Any:
    """The `codeworld.model.LoadedModel` that the built-in ``load`` op loaded in this worker (as
    `ModelWorker` does before any other op)."""
    model = ctx.state.get("model")
    if model is None:
        raise RuntimeError("no model loaded in this worker (call the 'load' op first)")
    return model


def sandbox_op(function: Callable) -> Callable:
    """Declare `function` a sandbox op, to be passed to `Sandbox.call`. Returns it unchanged.

    An op must be a module-level function of the ``codeworld`` package, so that a worker can
    import it by name.
    """
    module, name = function.__module__, function.__qualname__
    if not (module == "codeworld" or module.startswith("codeworld.")) or "." in name:
        raise ValueError(f"a sandbox op must be a module-level function of codeworld, not {module}:{name}")
    setattr(function, _OP_ATTRIBUTE, f"{module}:{name}")
    return function


def op_name(op: Callable | str) -> str:
    """What travels to the worker for `op`: a declared op's ``module:function``, or a built-in
    op's short name (``ping``, ``load``, ``predict``) as given."""
    if isinstance(op, str):
        return op
    name = getattr(op, _OP_ATTRIBUTE, None)
    if name is None:
        raise TypeError(f"{op!r} is not a sandbox op (declare it with @sandbox_op)")
    if name.startswith(_BUILTIN_MODULE + ":"):
        return name.split(":", 1)[1].removeprefix("op_")
    return name


def resolve_op(name: str) -> Callable:
    """The op a name stands for (in the worker). Only ops declared with `sandbox_op` resolve.

    Raises:
        KeyError: for a name that is not a declared op.
    """
    module_name, _, function_name = name.rpartition(":")
    if not module_name:
        module_name, function_name = _BUILTIN_MODULE, f"op_{name}"
    if module_name == "codeworld" or module_name.startswith("codeworld."):
        try:
            op = getattr(importlib.import_module(module_name), function_name, None)
        except ImportError:
            op = None
        if op is not None and getattr(op, _OP_ATTRIBUTE, None) == f"{module_name}:{function_name}":
            return op
    raise KeyError(f"unknown sandbox op {name!r}")


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
        record["message"] = "the model ran out of memory (the sandbox's address-space limit)"
    else:
        record["status"] = "exception"
    return record
