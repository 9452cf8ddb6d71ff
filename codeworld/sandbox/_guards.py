"""Limits a sandbox worker puts on itself before it runs any candidate code.

First of all the worker ties its life to its parent's (`die_with_parent`): when the search
process ends, killed or not, its workers end with it. Then three layers, in this order:

1. resource limits (address space, CPU time, file size, no core dumps);
2. a seccomp-BPF filter (Linux x86_64 and aarch64) that refuses new processes (fork, vfork,
   execve, and clone without CLONE_THREAD), every socket, signals to any other process, ptrace,
   changes to resource limits and to the parent-death signal. Threads stay allowed: numpy and Numba use them. It binds root
   too, unlike ``RLIMIT_NPROC``;
3. a Python audit hook that refuses the same operations at the Python level with a readable
   error (the seccomp filter is what holds when code goes around Python, e.g. through ctypes).

These guard against accidents in LLM-written code (an endless loop, a runaway allocation, a stray
``os.system``), not against a determined attacker: a candidate that can load arbitrary machine
code can still read files the user can read.
"""

from __future__ import annotations

import ctypes
import errno
import os
import platform
import resource
import signal
import struct
import sys

_PR_SET_PDEATHSIG = 1

# ---------------------------------------------------------------------------------------------
# The parent's death
# ---------------------------------------------------------------------------------------------


def die_with_parent(parent_pid: int) -> str | None:
    """Ask the kernel for SIGKILL when the parent ends (Linux ``PR_SET_PDEATHSIG``), then exit at
    once if the parent already ended before the request took effect.

    The signal comes when the thread that started the worker ends, so a sandbox is started from a
    thread that outlives it (the main thread, or a pool's). Returns None, or why the signal could
    not be asked for (the worker then lives until its CPU limit if its parent is killed).
    """
    error = None
    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
        if libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0) != 0:
            error = f"prctl(PDEATHSIG) failed: {os.strerror(ctypes.get_errno())}"
    else:
        error = f"no parent-death signal on {sys.platform}"
    if os.getppid() != parent_pid:  # the parent ended before the signal was asked for
        os._exit(1)
    return error


# ---------------------------------------------------------------------------------------------
# Resource limits
# ---------------------------------------------------------------------------------------------


def apply_rlimits(memory_bytes: int | None, cpu_seconds: int | None, file_bytes: int | None) -> None:
    """Set soft and hard limits alike, so that the candidate cannot raise them again."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    if memory_bytes:
        resource.setrlimit(resource.RLIMIT_AS, (memory_bytes, memory_bytes))
    if cpu_seconds:
        # The soft limit sends SIGXCPU; the hard one, a second later, SIGKILL.
        resource.setrlimit(resource.RLIMIT_CPU, (cpu_seconds, cpu_seconds + 1))
    if file_bytes:
        resource.setrlimit(resource.RLIMIT_FSIZE, (file_bytes, file_bytes))
        # Past the limit a write fails with EFBIG instead of killing the worker.
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


# ---------------------------------------------------------------------------------------------
# seccomp-BPF
# ---------------------------------------------------------------------------------------------

_PR_SET_NO_NEW_PRIVS = 38
_PR_SET_SECCOMP = 22
_SECCOMP_MODE_FILTER = 2

_RET_ALLOW = 0x7FFF0000
_RET_KILL_PROCESS = 0x80000000
_RET_ERRNO = 0x00050000

_LD_W_ABS = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JEQ_K = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JSET_K = 0x45  # BPF_JMP | BPF_JSET | BPF_K
_JGE_K = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RET_K = 0x06  # BPF_RET | BPF_K

_OFF_NR = 0
_OFF_ARCH = 4
_OFF_ARG0_LOW = 16

_CLONE_THREAD = 0x00010000

# (audit arch, syscall numbers) per machine.
_ARCHES = {
    "x86_64": (
        0xC000003E,
        {
            "fork": 57, "vfork": 58, "execve": 59, "execveat": 322, "clone": 56, "clone3": 435,
            "socket": 41, "socketpair": 53, "kill": 62, "tkill": 200, "tgkill": 234,
            "ptrace": 101, "setrlimit": 160, "prlimit64": 302, "prctl": 157,
        },
    ),
    "aarch64": (
        0xC00000B7,
        {
            "execve": 221, "execveat": 281, "clone": 220, "clone3": 435,
            "socket": 198, "socketpair": 199, "kill": 129, "tkill": 130, "tgkill": 131,
            "ptrace": 117, "setrlimit": 164, "prlimit64": 261, "prctl": 167,
        },
    ),
}


def _errno(code: int) -> int:
    return _RET_ERRNO | (code & 0xFFFF)


def _build_filter(machine: str, pid: int) -> list[tuple[int, int, int, int]]:
    """The filter program as (code, jt, jf, k) tuples. Jumps are relative, as BPF wants."""
    arch, nr = _ARCHES[machine]
    prog: list = []
    labels: dict[str, int] = {}

    def emit(code, k, jt=None, jf=None):
        prog.append([code, jt, jf, k])

    def label(name):
        labels[name] = len(prog)

    emit(_LD_W_ABS, _OFF_ARCH)
    emit(_JEQ_K, arch, jt=1, jf=0)  # a foreign ABI (e.g. i386 through int 0x80) is killed
    emit(_RET_K, _RET_KILL_PROCESS)
    emit(_LD_W_ABS, _OFF_NR)
    if machine == "x86_64":
        emit(_JGE_K, 0x40000000, jt="deny", jf=0)  # the x32 ABI
    for name in ("fork", "vfork", "execve", "execveat", "socket", "socketpair", "tkill", "ptrace",
                 "setrlimit", "prlimit64"):
        if name in nr:
            emit(_JEQ_K, nr[name], jt="deny", jf=0)
    emit(_JEQ_K, nr["clone3"], jt="nosys", jf=0)  # glibc then falls back to clone
    emit(_JEQ_K, nr["clone"], jt="clone", jf=0)
    emit(_JEQ_K, nr["kill"], jt="signal", jf=0)
    emit(_JEQ_K, nr["tgkill"], jt="signal", jf=0)
    emit(_JEQ_K, nr["prctl"], jt="prctl", jf=0)
    emit(_RET_K, _RET_ALLOW)
    label("prctl")  # the parent-death signal stays as the worker set it
    emit(_LD_W_ABS, _OFF_ARG0_LOW)
    emit(_JEQ_K, _PR_SET_PDEATHSIG, jt="deny", jf="allow")
    label("clone")
    emit(_LD_W_ABS, _OFF_ARG0_LOW)
    emit(_JSET_K, _CLONE_THREAD, jt="allow", jf="deny")
    label("signal")
    emit(_LD_W_ABS, _OFF_ARG0_LOW)
    emit(_JEQ_K, pid, jt="allow", jf=0)
    emit(_JEQ_K, 0, jt="allow", jf="deny")  # 0: the worker's own process group (only itself)
    label("allow")
    emit(_RET_K, _RET_ALLOW)
    label("deny")
    emit(_RET_K, _errno(errno.EPERM))
    label("nosys")
    emit(_RET_K, _errno(errno.ENOSYS))

    out = []
    for index, (code, jt, jf, k) in enumerate(prog):
        def rel(target):
            if target is None:
                return 0
            if isinstance(target, str):
                return labels[target] - index - 1
            return target
        out.append((code, rel(jt), rel(jf), k))
    return out


class _SockFilter(ctypes.Structure):
    _fields_ = [("code", ctypes.c_uint16), ("jt", ctypes.c_uint8), ("jf", ctypes.c_uint8),
                ("k", ctypes.c_uint32)]


class _SockFprog(ctypes.Structure):
    _fields_ = [("len", ctypes.c_uint16), ("filter", ctypes.POINTER(_SockFilter))]


def install_seccomp() -> str | None:
    """Install the filter. Returns None on success, or why it could not be installed."""
    if not sys.platform.startswith("linux"):
        return f"seccomp is Linux-only (platform {sys.platform})"
    machine = platform.machine()
    if machine not in _ARCHES:
        return f"no seccomp filter for machine {machine}"
    if struct.calcsize("P") != 8:
        return "seccomp filter needs a 64-bit process"
    program = _build_filter(machine, os.getpid())
    for _, jt, jf, _k in program:
        if not (0 <= jt < 256 and 0 <= jf < 256):
            return "internal error: seccomp jump out of range"
    filters = (_SockFilter * len(program))(*[_SockFilter(*ins) for ins in program])
    fprog = _SockFprog(len(program), filters)
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
        return f"prctl(NO_NEW_PRIVS) failed: {os.strerror(ctypes.get_errno())}"
    if libc.prctl(_PR_SET_SECCOMP, _SECCOMP_MODE_FILTER, ctypes.addressof(fprog), 0, 0) != 0:
        return f"prctl(SECCOMP) failed: {os.strerror(ctypes.get_errno())}"
    return None


# ---------------------------------------------------------------------------------------------
# Soft timeout
# ---------------------------------------------------------------------------------------------

SOFT_TIMEOUT_SIGNAL = signal.SIGUSR1


class SandboxTimeout(BaseException):
    """Raised in the worker when the parent's wall-clock limit for a request passes.

    A BaseException so that a candidate's ``except Exception`` does not swallow it. It lets a
    Python-level op send what it has before the parent's hard kill, which follows shortly anyway.
    """


def install_soft_timeout() -> None:
    def handler(signum, frame):
        raise SandboxTimeout("the request took longer than its wall-clock limit")

    signal.signal(SOFT_TIMEOUT_SIGNAL, handler)


# ---------------------------------------------------------------------------------------------
# Python audit hook
# ---------------------------------------------------------------------------------------------

_FORBIDDEN_EVENTS = {
    "os.fork": "starting a process",
    "os.forkpty": "starting a process",
    "os.system": "running a shell command",
    "os.exec": "replacing the process",
    "os.posix_spawn": "starting a process",
    "os.spawn": "starting a process",
    "subprocess.Popen": "starting a process",
    "socket.connect": "network access",
    "socket.bind": "network access",
    "socket.getaddrinfo": "network access",
    "socket.__new__": "network access",
    "os.kill": None,  # checked below: only the worker itself
    "os.killpg": "signalling other processes",
    "resource.setrlimit": "changing resource limits",
    "resource.prlimit": "changing resource limits",
}


class SandboxViolation(PermissionError):
    """The candidate tried an operation the sandbox forbids."""


def install_audit_hook() -> None:
    own_pid = os.getpid()

    def hook(event: str, args: tuple) -> None:
        if event not in _FORBIDDEN_EVENTS:
            return
        if event == "os.kill":
            if args and args[0] in (own_pid, 0):
                return
            raise SandboxViolation("sandbox: signalling other processes is not allowed")
        raise SandboxViolation(f"sandbox: {_FORBIDDEN_EVENTS[event]} is not allowed ({event})")

    sys.addaudithook(hook)
