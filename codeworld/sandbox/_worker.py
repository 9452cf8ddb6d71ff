"""The sandbox worker process: ``python -m codeworld.sandbox._worker CONFIG_JSON``.

Started by `codeworld.sandbox.Sandbox` in a fresh interpreter (the equivalent of multiprocessing's
``spawn``: nothing is inherited from the parent but two pipe descriptors). It limits itself (see
`_guards`; first of all it dies with its parent), then serves requests ``(op reference, kwargs)`` until it receives ``(None, {})``. An op
is imported from its reference as `codeworld.sandbox._ops` says; it streams partial results with
``ctx.emit``, which the parent keeps even when the request later times out. Replies are
multiprocessing's frames (a 4-byte length, then a pickle); the parent reads them with a deadline
and unpickles them with a short list of allowed globals (`_runner`), because a candidate can
write to the reply pipe too.
"""

from __future__ import annotations

import io
import json
import os
import sys
import time
from multiprocessing.connection import Connection
from typing import Any

from codeworld.sandbox import _guards
from codeworld.sandbox._ops import failure_record, resolve_op


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


def serve(conn_in: Connection, conn_out: Connection, config: dict) -> None:
    ctx = WorkerContext(conn_out)
    while True:
        try:
            message = conn_in.recv()
        except EOFError:
            return
        reference, kwargs = message
        if reference is None:
            conn_out.send(("ok", None))
            return
        try:
            op = resolve_op(reference)
        except Exception as exc:  # noqa: BLE001 - an unknown op, or its module fails to import
            conn_out.send(("error", {"status": "exception", "type": type(exc).__name__,
                                     "message": f"{type(exc).__name__}: {exc}", "line": None,
                                     "code": None, "traceback": ""}))
            continue
        try:
            result = op(ctx, **kwargs)
        except BaseException as exc:  # noqa: BLE001 - SystemExit and KeyboardInterrupt included
            record = failure_record(exc, ctx.state.get("filename"))
            try:
                conn_out.send(("error", record))
            except Exception:  # e.g. an unpicklable detail; send the plain text instead
                conn_out.send(("error", {k: (v if k in ("line", "transition") and type(v) is int else
                                             None if k in ("line", "transition") else str(v))
                                         for k, v in record.items()}))
        else:
            conn_out.send(("ok", result))


def main() -> None:
    config = json.loads(sys.argv[1])
    parent_death_error = _guards.die_with_parent(config["parent_pid"])
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
                             "seccomp_error": seccomp_error, "parent_death_error": parent_death_error,
                             "time": time.time()}))
    serve(conn_in, conn_out, config)
    sys.stdout.flush()


if __name__ == "__main__":
    main()
