"""The sandbox worker process: ``python -m codeworld.sandbox._worker CONFIG_JSON``.

Started by `codeworld.sandbox.Sandbox` in a fresh interpreter (the equivalent of multiprocessing's
``spawn``: nothing is inherited from the parent but two pipe descriptors). It limits itself (see
`_guards`), then serves requests ``(op, kwargs)`` until told to stop. An op is a function
``op(ctx, **kwargs)``; built-in ops are in `BUILTIN_OPS`, and any ``"codeworld.module:function"``
names an op defined elsewhere in the package. Ops stream partial results with ``ctx.emit``, which
the parent keeps even when the request later times out.
"""

from __future__ import annotations

import importlib
import io
import json
import os
import sys
import time
import traceback
from multiprocessing.connection import Connection
from typing import Any, Callable

from codeworld.sandbox import _guards
from codeworld.sandbox._ops import OpFailure


class CappedWriter(io.TextIOBase):
    """A text stream that writes at most `cap` bytes to `target` and counts the rest."""

    def __init__(self, target, cap: int):
        self._target = target
        self._cap = cap
        self.written = 0
        self.dropped = 0

    def writable(self) -> bool:
        return True

    def write(self, text: str) -> int:
        data = text.encode("utf-8", "replace")
        room = self._cap - self.written
        if room > 0:
            chunk = data[:room]
            try:
                self._target.write(chunk)
                self._target.flush()
            except OSError:
                pass
            self.written += len(chunk)
        self.dropped += max(0, len(data) - max(room, 0))
        return len(text)

    def flush(self) -> None:
        pass


class WorkerContext:
    """What an op sees: the connection for partial results, and per-worker state."""

    def __init__(self, conn: Connection):
        self._conn = conn
        self.state: dict[str, Any] = {}

    def emit(self, partial: Any) -> None:
        """Send a partial result now; it survives a later timeout or crash of this request."""
        self._conn.send(("partial", partial))


def candidate_error(exc: BaseException, filename: str | None) -> dict:
    """A cleaned description of an exception raised by candidate code.

    The message names the exception, and, when the traceback passes through the candidate's
    file, the last line of the candidate that was running, with its text.
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
    shown = [f for f in candidate_frames][-5:]
    tb = "".join(traceback.format_list(shown)) if shown else ""
    return {"type": type(exc).__name__, "message": text, "line": line, "code": code, "traceback": tb}


def _resolve_op(name: str) -> Callable:
    from codeworld.sandbox._ops import BUILTIN_OPS

    if name in BUILTIN_OPS:
        return BUILTIN_OPS[name]
    if ":" in name:
        module_name, func_name = name.split(":", 1)
        if module_name == "codeworld" or module_name.startswith("codeworld."):
            module = importlib.import_module(module_name)
            return getattr(module, func_name)
    raise KeyError(f"unknown sandbox op {name!r}")


def serve(conn_in: Connection, conn_out: Connection, config: dict) -> None:
    ctx = WorkerContext(conn_out)
    while True:
        try:
            message = conn_in.recv()
        except EOFError:
            return
        op_name, kwargs = message
        if op_name == "__stop__":
            conn_out.send(("ok", None))
            return
        try:
            op = _resolve_op(op_name)
        except (KeyError, ImportError, AttributeError) as exc:
            conn_out.send(("error", {"status": "exception", "type": type(exc).__name__,
                                     "message": f"{type(exc).__name__}: {exc}", "line": None,
                                     "code": None, "traceback": ""}))
            continue
        try:
            result = op(ctx, **kwargs)
        except OpFailure as exc:
            conn_out.send(("error", exc.record))
        except MemoryError as exc:
            record = candidate_error(exc, ctx.state.get("filename"))
            record["status"] = "memory"
            record["message"] = "the model ran out of memory (the sandbox's address-space limit)"
            conn_out.send(("error", record))
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
            record = candidate_error(exc, ctx.state.get("filename"))
            record["status"] = getattr(exc, "sandbox_status", "exception")
            record.update(getattr(exc, "sandbox_extra", {}))
            try:
                conn_out.send(("error", record))
            except Exception:  # e.g. an unpicklable detail; send the plain text instead
                conn_out.send(("error", {k: str(v) for k, v in record.items()}))
        else:
            conn_out.send(("ok", result))


def main() -> None:
    config = json.loads(sys.argv[1])
    conn_in = Connection(config["fd_in"], writable=False)
    conn_out = Connection(config["fd_out"], readable=False)

    # One byte over the cap lets the parent see that output was dropped.
    sys.stdout = CappedWriter(open(1, "wb", closefd=False, buffering=0), config["output_cap"] + 1)
    sys.stderr = CappedWriter(open(2, "wb", closefd=False, buffering=0), config["output_cap"] + 1)

    # Trusted imports first, before the limits and the filter.
    import numpy  # noqa: F401

    if config.get("preload_numba"):
        import numba  # noqa: F401

    _guards.apply_rlimits(config.get("memory_bytes"), config.get("cpu_seconds"), config.get("file_bytes"))
    seccomp_error = _guards.install_seccomp() if config.get("seccomp", True) else "disabled"
    _guards.install_audit_hook()
    _guards.install_soft_timeout()
    conn_out.send(("hello", {"pid": os.getpid(), "seccomp": seccomp_error is None,
                             "seccomp_error": seccomp_error, "time": time.time()}))
    serve(conn_in, conn_out, config)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
