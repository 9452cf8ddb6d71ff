"""The parent side of the sandbox: start a worker, send it requests, turn every outcome into a record.

Nothing here runs candidate code, and nothing here knows what an op does: the caller passes the
function to run (see `codeworld.sandbox._ops`) and its own wall-clock limit. A worker is a fresh
interpreter (``python -m codeworld.sandbox._worker``) started in its own session and its own private temporary directory,
connected by two pipes. Whatever the candidate does (loop, allocate, crash, exit, kill itself,
flood its output), `Sandbox.call` returns a `SandboxResult` within the timeout plus a short grace,
and `Sandbox.close` leaves no process and no directory behind.

The candidate runs inside the worker and can write to the worker's reply pipe, so the parent
trusts nothing it reads there. It reads multiprocessing's frames (a 4-byte big-endian length, then
a pickle) itself, never past the request's deadline and never more than `SandboxLimits.reply_bytes`
a frame; it unpickles with `ReplyUnpickler`, which builds only numpy arrays, dtypes and scalars and
plain containers, so that no pickle runs code in the parent; and a frame that is not a reply
becomes an ``invalid_reply`` result, the worker killed. A worker dies with its parent (see
`_guards.die_with_parent`); the folder of a worker whose parent was killed is removed by the next
sandbox to start on the machine (`remove_orphaned_dirs`).
"""

from __future__ import annotations

import io
import json
import os
import pickle
import re
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from codeworld.sandbox._ops import op_reference

GiB = 1024**3
MiB = 1024**2

# The wall-clock limit of a request whose caller names none (an op's owner names its own).
REQUEST_TIMEOUT_S = 60.0
# A worker's start-up: a fresh interpreter importing numpy (and Numba when asked).
STARTUP_TIMEOUT_S = 60.0

STATUSES = ("ok", "exception", "timeout", "memory", "crashed", "killed", "invalid_output",
            "invalid_reply")
# The statuses a worker's error record may carry (the others are the parent's own findings).
_RECORD_STATUSES = ("exception", "timeout", "memory", "invalid_output")
# The kinds of frame a worker sends: ("hello", info) once, then ("partial", value)... and one
# ("ok", value) or ("error", record) per request.
_REPLY_KINDS = ("hello", "partial", "ok", "error")
# A sandbox folder: codeworld-sandbox-<pid of the process that owns it>-<random>.
_DIR_PREFIX = "codeworld-sandbox-"
_OWNED_DIR = re.compile(re.escape(_DIR_PREFIX) + r"(\d+)-")

# The worker's module, run with ``python -m``.
_WORKER_MODULE = f"{__package__}._worker"
# Environment variables never passed to a worker (API keys and the like).
_SECRET_ENV = re.compile(r"(KEY|TOKEN|SECRET|PASSWORD|PASSWD|CREDENTIAL)", re.IGNORECASE)


@dataclass(frozen=True)
class SandboxLimits:
    """Limits on one sandbox worker.

    Attributes:
        timeout_s: wall-clock limit for one request; past it the worker is killed (SIGKILL).
        startup_timeout_s: wall-clock limit for the worker to start and report ready.
        memory_bytes: address-space limit (RLIMIT_AS). Numba and numpy need about 1 GiB of it.
        cpu_seconds: CPU-time limit over the worker's whole life (RLIMIT_CPU); None for none.
        file_bytes: largest file the worker may write (RLIMIT_FSIZE), its captured output included.
        output_bytes: how much of stdout and of stderr is kept and returned.
        seccomp: install the seccomp filter (no processes, no sockets, no signals to others).
        preload_numba: import Numba before the limits (saves time when compiling models).
        soft_timeout_grace_s: after the timeout, how long a Python-level op may take to send its
            partial results before the hard kill.
        reply_bytes: the largest frame the parent reads from the worker; a longer one is an
            ``invalid_reply``.
    """

    timeout_s: float = REQUEST_TIMEOUT_S
    startup_timeout_s: float = STARTUP_TIMEOUT_S
    memory_bytes: int | None = 4 * GiB
    cpu_seconds: int | None = 3600
    file_bytes: int | None = 64 * MiB
    output_bytes: int = 64 * 1024
    seccomp: bool = True
    preload_numba: bool = False
    soft_timeout_grace_s: float = 1.0
    reply_bytes: int = 1 * GiB


@dataclass
class SandboxResult:
    """The structured outcome of one sandboxed request.

    Attributes:
        status: one of ``ok``, ``exception``, ``timeout``, ``memory``, ``crashed``, ``killed``,
            ``invalid_output``, ``invalid_reply`` (the worker sent something that is no reply:
            the candidate wrote to its pipe).
        value: the op's return value when ``status == "ok"``.
        message: what went wrong, cleaned (exception type and message, and the candidate's line).
        line: the line of the candidate's code that failed, when known.
        code: the text of that line.
        transition: index of the transition that failed, for batched ops.
        partial: partial results the op streamed before it ended (kept across timeouts).
        stdout, stderr: the worker's captured output (truncated to the limit).
        elapsed_s: wall time of the request.
        exit_code, signal: how the worker process ended, when it ended.
    """

    status: str
    value: Any = None
    message: str | None = None
    line: int | None = None
    code: str | None = None
    transition: int | None = None
    traceback: str = ""
    partial: list = field(default_factory=list)
    stdout: str = ""
    stderr: str = ""
    elapsed_s: float = 0.0
    exit_code: int | None = None
    signal: int | None = None

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    def summary(self) -> str:
        """One line for logs and prompts."""
        if self.ok:
            return "ok"
        return f"{self.status}: {self.message}" if self.message else self.status


class SandboxError(RuntimeError):
    """The sandbox itself could not work (not a failure of the candidate)."""


class ReplyUnpickler(pickle.Unpickler):
    """Unpickles a worker's frame, building nothing but what replies hold: numpy arrays, dtypes
    and scalars, and plain containers (the opcodes' own). Any other global, the ones a payload
    would run code through included, is refused with ``pickle.UnpicklingError``."""

    # The tests' replies use the first three (arrays); a numpy scalar adds ``scalar``. The module
    # is ``numpy.core`` before numpy 2.
    SAFE_GLOBALS = frozenset(
        (module, name) for module, names in (("numpy._core.multiarray", ("_reconstruct", "scalar")),
                                             ("numpy.core.multiarray", ("_reconstruct", "scalar")),
                                             ("numpy", ("ndarray", "dtype")))
        for name in names)

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) not in self.SAFE_GLOBALS:
            raise pickle.UnpicklingError(f"a reply may not build {module}.{name}")
        return super().find_class(module, name)


def load_reply(frame: bytes) -> Any:
    """A worker's frame, unpickled with `ReplyUnpickler`. Raises what a bad frame raises."""
    return ReplyUnpickler(io.BytesIO(frame)).load()


class _BadFrame(Exception):
    """The worker's pipe holds something that is no frame (an impossible length)."""


class _FrameReader:
    """Reads the worker's frames from a pipe, waiting no longer than asked and buffering a frame
    that arrives in pieces.

    Args:
        fd: the read end of the pipe (closed by `close`).
        max_bytes: the longest frame accepted.
    """

    def __init__(self, fd: int, max_bytes: int):
        self.fd = fd
        self.max_bytes = max_bytes
        self._buffer = bytearray()
        self._size: int | None = None  # the length of the frame being read, once known
        self._poll = select.poll()
        self._poll.register(fd, select.POLLIN)

    def read(self, until: float) -> bytes | None:
        """The next frame, or None when the monotonic clock reaches `until` first.

        Raises:
            EOFError: the worker's end of the pipe is closed.
            _BadFrame: a length below zero or above `max_bytes`.
        """
        while True:
            need = 4 if self._size is None else self._size
            if len(self._buffer) >= need:
                data = bytes(self._buffer[:need])
                del self._buffer[:need]
                if self._size is not None:
                    self._size = None
                    return data
                (size,) = struct.unpack("!i", data)
                if not 0 <= size <= self.max_bytes:
                    raise _BadFrame(f"a frame of {size} bytes (the limit is {self.max_bytes})")
                self._size = size
                continue
            wait_ms = max(0, int((until - time.monotonic()) * 1000) + 1)
            if not self._poll.poll(wait_ms):
                if time.monotonic() >= until:
                    return None
                continue
            chunk = os.read(self.fd, max(need - len(self._buffer), 1 << 16))
            if not chunk:
                raise EOFError("the worker closed its pipe")
            self._buffer += chunk

    def close(self) -> None:
        os.close(self.fd)


def _send_frame(fd: int, message: Any, until: float) -> bool:
    """Write `message` as one frame to the non-blocking pipe `fd` (the worker reads it with
    ``Connection.recv``). Returns False when the monotonic clock reaches `until` first.

    Raises:
        OSError: the worker's end is closed (BrokenPipeError).
    """
    data = pickle.dumps(message, protocol=pickle.DEFAULT_PROTOCOL)
    header = struct.pack("!i", len(data)) if len(data) <= 0x7FFFFFFF else struct.pack("!iQ", -1, len(data))
    view = memoryview(header + data)
    poll = select.poll()
    poll.register(fd, select.POLLOUT)
    while view:
        wait_ms = max(0, int((until - time.monotonic()) * 1000) + 1)
        if not poll.poll(wait_ms):
            if time.monotonic() >= until:
                return False
            continue
        try:
            view = view[os.write(fd, view):]
        except BlockingIOError:
            continue
    return True


def remove_orphaned_dirs(tmp: str | None = None) -> list[str]:
    """Remove the sandbox folders in `tmp` (default: the temp directory) whose owner process has
    ended: a search process killed before it could close its sandboxes leaves them behind (its
    workers die with it). Folders of other users, of live processes and of unknown owners stay.

    Returns:
        the folders removed.
    """
    tmp = tmp or tempfile.gettempdir()
    removed = []
    try:
        names = os.listdir(tmp)
    except OSError:
        return removed
    for name in names:
        match = _OWNED_DIR.match(name)
        if match is None or _process_exists(int(match.group(1))):
            continue
        path = os.path.join(tmp, name)
        try:
            if os.lstat(path).st_uid != os.getuid():
                continue
        except OSError:
            continue
        shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
    return removed


def _process_exists(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _reply_problem(message: Any, expect_hello: bool) -> str | None:
    """What makes an unpickled frame no reply from a worker, or None: a reply is ``(kind,
    payload)``, a hello only first, and an error's payload a record of the fields `SandboxResult`
    takes."""
    if type(message) is not tuple or len(message) != 2 or message[0] not in _REPLY_KINDS:
        return f"a frame holding {type(message).__name__}"
    kind, payload = message
    if (kind == "hello") != expect_hello:
        return f"a {kind!r} frame where {'the hello' if expect_hello else 'a reply'} was due"
    if kind == "hello" and type(payload) is not dict:
        return "a hello that is no dict"
    if kind == "error":
        if type(payload) is not dict:
            return "an error record that is no dict"
        for key, types in (("status", (str,)), ("message", (str, type(None))),
                           ("line", (int, type(None))), ("code", (str, type(None))),
                           ("transition", (int, type(None))), ("traceback", (str, type(None)))):
            if key in payload and (type(payload[key]) not in types):
                return f"an error record whose {key} is {type(payload[key]).__name__}"
    return None


def _worker_env(tmpdir: str) -> dict:
    env = {k: v for k, v in os.environ.items() if not _SECRET_ENV.search(k)}
    env.update(TMPDIR=tmpdir, TMP=tmpdir, TEMP=tmpdir, HOME=tmpdir, PYTHONDONTWRITEBYTECODE="1",
               PYTHONUNBUFFERED="1", OMP_NUM_THREADS=env.get("OMP_NUM_THREADS", "1"),
               OPENBLAS_NUM_THREADS=env.get("OPENBLAS_NUM_THREADS", "1"),
               NUMBA_NUM_THREADS=env.get("NUMBA_NUM_THREADS", "1"))
    # The worker must import the same package as the parent, wherever it was imported from: the
    # directory above the package this sandbox belongs to comes first on its path.
    package_root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    paths = [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        paths.insert(0, package_root)
    env["PYTHONPATH"] = os.pathsep.join(paths)
    return env


class Sandbox:
    """One worker process with limits; serves requests until closed. Use as a context manager.

    A request that ends the worker (timeout, crash, kill) leaves the sandbox closed; the next
    `call` starts a fresh worker, and `restarts` counts how often that happened.
    """

    def __init__(self, limits: SandboxLimits | None = None):
        self.limits = limits or SandboxLimits()
        self._proc: subprocess.Popen | None = None
        self._reader: _FrameReader | None = None  # the worker's replies
        self._write_fd: int | None = None  # the worker's requests (non-blocking)
        self._tmpdir: str | None = None
        self._out_offsets = [0, 0]
        self.worker_info: dict = {}
        self.restarts = 0
        self._started_once = False
        self._begun = 0.0  # when the request in flight was sent

    # -- lifecycle ------------------------------------------------------------------------------

    @property
    def alive(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    @property
    def pid(self) -> int | None:
        return self._proc.pid if self._proc is not None else None

    @property
    def workdir(self) -> str | None:
        """The worker's private temporary directory (removed when the worker ends)."""
        return self._tmpdir

    def start(self) -> SandboxResult:
        """Start the worker. Returns an ``ok`` result, or the failure of the start."""
        if self.alive:
            return SandboxResult("ok", value=self.worker_info)
        self.close()
        if self._started_once:
            self.restarts += 1
        self._started_once = True
        remove_orphaned_dirs()
        self._tmpdir = tempfile.mkdtemp(prefix=f"{_DIR_PREFIX}{os.getpid()}-")
        parent_read, child_write = os.pipe()
        child_read, parent_write = os.pipe()
        config = {
            "fd_in": child_read,
            "fd_out": child_write,
            "output_cap": self.limits.output_bytes,
            "memory_bytes": self.limits.memory_bytes,
            "cpu_seconds": self.limits.cpu_seconds,
            "file_bytes": self.limits.file_bytes,
            "seccomp": self.limits.seccomp,
            "preload_numba": self.limits.preload_numba,
            "parent_pid": os.getpid(),
        }
        out_path = os.path.join(self._tmpdir, ".stdout")
        err_path = os.path.join(self._tmpdir, ".stderr")
        self._out_offsets = [0, 0]
        try:
            with open(out_path, "wb") as out, open(err_path, "wb") as err:
                self._proc = subprocess.Popen(
                    [sys.executable, "-m", _WORKER_MODULE, json.dumps(config)],
                    stdin=subprocess.DEVNULL, stdout=out, stderr=err, cwd=self._tmpdir,
                    env=_worker_env(self._tmpdir), pass_fds=(child_read, child_write),
                    start_new_session=True, close_fds=True,
                )
        finally:
            os.close(child_read)
            os.close(child_write)
        self._reader = _FrameReader(parent_read, self.limits.reply_bytes)
        os.set_blocking(parent_write, False)
        self._write_fd = parent_write
        started = time.monotonic()
        outcome = self._wait_reply(started + self.limits.startup_timeout_s, expect_hello=True)
        if outcome.status != "ok":
            outcome.message = f"the sandbox worker failed to start: {outcome.message}"
            self._finish()
            return outcome
        self.worker_info = outcome.value
        return outcome

    def close(self) -> None:
        """Stop the worker (politely, then by force) and remove its directory. Idempotent."""
        if self._proc is not None and self._proc.poll() is None and self._write_fd is not None:
            until = time.monotonic() + 1.0
            try:
                if _send_frame(self._write_fd, (None, {}), until) and self._reader is not None:
                    self._reader.read(until)  # its goodbye, unread
            except (OSError, EOFError, _BadFrame):
                pass
        self._finish()

    def _kill(self) -> None:
        if self._proc is None:
            return
        if self._proc.poll() is None:
            try:
                os.killpg(self._proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                try:
                    self._proc.kill()
                except ProcessLookupError:
                    pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:  # pragma: no cover - a process stuck in the kernel
            pass

    def _finish(self) -> None:
        self._kill()
        for close in ((self._reader.close if self._reader is not None else None),
                      (lambda: os.close(self._write_fd)) if self._write_fd is not None else None):
            if close is not None:
                try:
                    close()
                except OSError:
                    pass
        self._reader = None
        self._write_fd = None
        if self._tmpdir is not None:
            shutil.rmtree(self._tmpdir, ignore_errors=True)
            self._tmpdir = None
        self._proc = None

    def __enter__(self) -> "Sandbox":
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    def __del__(self):  # last resort; close() is the way
        try:
            self._finish()
        except Exception:
            pass

    # -- requests -------------------------------------------------------------------------------

    def call(self, op: Callable, timeout_s: float | None = None, **kwargs: Any) -> SandboxResult:
        """Run `op` in the worker with `kwargs`; never raises for anything the candidate does.

        Args:
            op: the op, a module-level function ``op(ctx, **kwargs)`` (see `codeworld.sandbox._ops`).
            timeout_s: wall-clock limit for this request (default: the limits' ``timeout_s``).

        Raises:
            TypeError: when `op` is a name or a function the worker could not import.
        """
        sent = self.begin(op, **kwargs)
        if not sent.ok:
            return sent
        return self.finish(timeout_s)

    def begin(self, op: Callable, **kwargs: Any) -> SandboxResult:
        """Send a request and return without waiting for its reply (`finish` collects it).

        For an op that serves the parent over a channel of its own (shared memory, pipes in
        `workdir`) until told to stop. Starts the worker first when needed; returns its failure
        to start, a ``timeout`` when the worker takes no request within the limits' ``timeout_s``
        (the worker killed), else an ``ok`` result with no value.
        """
        reference = op_reference(op)
        if not self.alive:
            started = self.start()
            if not started.ok:
                return started
        assert self._write_fd is not None
        self._begun = time.monotonic()
        try:
            sent = _send_frame(self._write_fd, (reference, kwargs), self._begun + self.limits.timeout_s)
        except OSError:
            sent = True  # the worker is gone; finish reports how it ended
        if not sent:  # a worker that reads no requests: its candidate is still running
            result = self._timed_out([], expect_hello=False)
            result.elapsed_s = time.monotonic() - self._begun
            self._finish()
            return result
        return SandboxResult("ok")

    def finish(self, timeout_s: float | None = None) -> SandboxResult:
        """The outcome of the request sent by `begin`, waiting at most `timeout_s` (default: the
        limits' ``timeout_s``) from now."""
        if self._proc is None or self._reader is None:
            return SandboxResult("crashed", message="the sandbox worker is not running")
        limit = self.limits.timeout_s if timeout_s is None else timeout_s
        result = self._wait_reply(time.monotonic() + limit, expect_hello=False)
        result.elapsed_s = time.monotonic() - self._begun
        if not self.alive:
            self._finish()
        return result

    def _read_output(self) -> tuple[str, str]:
        texts = []
        for index, name in enumerate((".stdout", ".stderr")):
            if self._tmpdir is None:
                texts.append("")
                continue
            path = os.path.join(self._tmpdir, name)
            try:
                with open(path, "rb") as handle:
                    handle.seek(self._out_offsets[index])
                    data = handle.read(self.limits.output_bytes + 1)  # + 1: was anything dropped?
                    size = os.fstat(handle.fileno()).st_size
            except OSError:
                texts.append("")
                continue
            self._out_offsets[index] = size
            text = data[: self.limits.output_bytes].decode("utf-8", "replace")
            if len(data) > self.limits.output_bytes:
                text += "\n[output truncated by the sandbox]"
            texts.append(text)
        return texts[0], texts[1]

    def _wait_reply(self, deadline: float, expect_hello: bool) -> SandboxResult:
        """Collect partial results and the reply; past the deadline, a soft then a hard stop.

        At the deadline the worker gets SIGUSR1, which raises a timeout inside a Python-level op
        so that it can send what it has; whatever happens, SIGKILL follows within the grace. A
        frame that is no reply ends the request as ``invalid_reply``, the worker killed.
        """
        assert self._reader is not None and self._proc is not None
        partial: list = []
        soft_sent = False
        hard_deadline = deadline
        while True:
            now = time.monotonic()
            if now >= deadline and not soft_sent and not expect_hello:
                soft_sent = True
                hard_deadline = deadline + self.limits.soft_timeout_grace_s
                try:
                    os.kill(self._proc.pid, signal.SIGUSR1)
                except ProcessLookupError:
                    pass
            if now >= hard_deadline:
                return self._timed_out(partial, expect_hello)
            try:
                frame = self._reader.read(hard_deadline if soft_sent else deadline)
            except (EOFError, OSError):
                if soft_sent:
                    return self._timed_out(partial, expect_hello)
                return self._died(partial)
            except _BadFrame as exc:
                return self._invalid_reply(f"{exc}", partial)
            if frame is None:
                continue
            try:
                message = load_reply(frame)
            except Exception as exc:  # noqa: BLE001 - whatever a forged frame makes pickle raise
                return self._invalid_reply(f"{type(exc).__name__}: {exc}", partial)
            problem = _reply_problem(message, expect_hello)
            if problem is not None:
                return self._invalid_reply(problem, partial)
            kind, payload = message
            if kind == "partial":
                partial.append(payload)
                continue
            stdout, stderr = self._read_output()
            if kind in ("ok", "hello"):
                return SandboxResult("ok", value=payload, partial=partial, stdout=stdout, stderr=stderr)
            record = dict(payload)
            status = record.pop("status", "exception")
            if status not in _RECORD_STATUSES:
                status = "exception"
            if soft_sent:
                # Whatever the op made of the interruption, the request ran out of time; the worker's
                # state is suspect, so it goes.
                self._kill()
                return self._timed_out(partial, expect_hello, stdout=stdout, stderr=stderr)
            return SandboxResult(status, message=record.get("message"), line=record.get("line"),
                                 code=record.get("code"), transition=record.get("transition"),
                                 traceback=record.get("traceback") or "", partial=partial,
                                 stdout=stdout, stderr=stderr)

    def _invalid_reply(self, problem: str, partial: list) -> SandboxResult:
        """The worker's pipe held something other than a reply: the candidate wrote to it. What
        follows on the pipe cannot be trusted either, so the worker goes."""
        self._kill()
        stdout, stderr = self._read_output()
        return SandboxResult("invalid_reply", message=f"the worker sent something that is no reply "
                             f"(the program wrote to the sandbox's pipe?): {problem}"[:500],
                             partial=partial, stdout=stdout, stderr=stderr)

    def _timed_out(self, partial: list, expect_hello: bool, stdout: str | None = None,
                   stderr: str | None = None) -> SandboxResult:
        self._kill()
        if stdout is None or stderr is None:
            stdout, stderr = self._read_output()
        what = "start-up" if expect_hello else "request"
        message = f"the {what} took longer than its wall-clock limit"
        return SandboxResult("timeout", message=message, partial=partial, stdout=stdout,
                             stderr=stderr, signal=signal.SIGKILL)

    def _died(self, partial: list) -> SandboxResult:
        """The worker ended without replying: say how."""
        assert self._proc is not None
        try:
            code = self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._kill()
            code = self._proc.returncode
        stdout, stderr = self._read_output()
        if code is not None and code < 0:
            sig = -code
            name = signal.Signals(sig).name if sig in signal.Signals._value2member_map_ else str(sig)
            if sig == signal.SIGXCPU:
                status, message = "timeout", "the worker used up its CPU-time limit"
            elif sig == signal.SIGKILL:
                status, message = "killed", "the worker was killed (SIGKILL) by something other than the sandbox"
            elif sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGQUIT):
                status, message = "killed", f"the worker was terminated by {name}"
            else:
                status, message = "crashed", f"the worker crashed with {name}"
            if re.search(r"bad_alloc|out of memory|Cannot allocate memory", stderr):
                status, message = "memory", f"the worker ran out of memory and died ({name})"
            return SandboxResult(status, message=message, partial=partial, stdout=stdout,
                                 stderr=stderr, signal=sig)
        message = f"the worker exited with code {code} without replying (os._exit or a fatal error)"
        if re.search(r"bad_alloc|out of memory|Cannot allocate memory|MemoryError", stderr):
            return SandboxResult("memory", message=message, partial=partial, stdout=stdout,
                                 stderr=stderr, exit_code=code)
        return SandboxResult("crashed", message=message, partial=partial, stdout=stdout,
                             stderr=stderr, exit_code=code)
