"""LLM backends and the registry that picks one from a string.

A backend turns ``(messages, Sampling)`` into a `RawCompletion`, and maps its failures that are
worth retrying to `TransientLLMError`; the client (`codeworld.llm.client`) adds retries, caching
and accounting around it. A spec string names a backend and its argument:

* ``local``: the embedded Qwen2.5-Coder-1.5B-Instruct (`codeworld.llm.local`);
* ``openai:MODEL``: any OpenAI-compatible endpoint through the ``openai`` client;
* ``hf:MODEL``: a Hugging Face ``transformers`` model (imported only when chosen);
* ``scripted:FILE``: replays completions from a file.

`register_backend` adds a new name.
"""

from __future__ import annotations

import json
import os
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Protocol

from codeworld.llm.types import (
    BackendNotInstalledError,
    LLMError,
    RawCompletion,
    Sampling,
    TransientLLMError,
    prefill_of,
)


@dataclass(frozen=True)
class BackendOptions:
    """Settings a backend factory may use; each backend ignores those it has no use for.

    Attributes:
        api_key: key of an OpenAI-compatible endpoint; None reads ``OPENAI_API_KEY``.
        base_url: URL of an OpenAI-compatible endpoint (``.../v1``); None reads
            ``OPENAI_BASE_URL`` and then uses OpenAI's own.
        timeout_s: how long one request may take before it counts as timed out (and is retried).
        local_threads: CPU threads of the embedded model; None uses ``CODEWORLD_LOCAL_THREADS``
            or else every core the process may use.
        local_context: context window of each of the embedded model's slots, in tokens.
        local_slots: requests the embedded model decodes together (a search's ``parallel``).
        local_speculation: speculative decoding of the embedded model: ``ngram``, ``draft``
            or ``none``; None uses ``CODEWORLD_LOCAL_SPECULATION`` or else the default
            (see `codeworld.llm.local.ServerSettings`).
        hf_device: torch device of an ``hf:`` model (``"cuda"``, ``"cpu"``); None picks CUDA when
            available.
        hf_dtype: torch dtype name of an ``hf:`` model (``"bfloat16"``, ``"float32"``, ``"auto"``).
    """

    api_key: str | None = None
    base_url: str | None = None
    timeout_s: float = 600.0
    local_threads: int | None = None
    local_context: int = 8192
    local_slots: int = 1
    local_speculation: str | None = None
    hf_device: str | None = None
    hf_dtype: str = "auto"


class Backend(Protocol):
    """What the client needs of a backend.

    Attributes:
        name: the registry name (``openai``, ``local``, ...), part of the cache key.
        model: the model name, part of the cache key.
        cacheable: False for backends whose answers must not be cached (``scripted``).
    """

    name: str
    model: str
    cacheable: bool

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        """One completion. Raises TransientLLMError for failures worth retrying."""

    def close(self) -> None:
        """Releases what the backend holds (connections, servers)."""


BackendFactory = Callable[[str, BackendOptions], Backend]
_REGISTRY: dict[str, BackendFactory] = {}


def register_backend(name: str, factory: BackendFactory) -> None:
    """Makes ``name`` (and ``name:ARG``) a valid backend spec. ``factory(arg, options)`` builds it."""
    if not name.isidentifier():
        raise ValueError(f"backend name must be an identifier, got {name!r}")
    _REGISTRY[name] = factory


def backend_names() -> list[str]:
    """The registered backend names."""
    return sorted(_REGISTRY)


def parse_spec(spec: str) -> tuple[str, str]:
    """Splits ``"openai:gpt-4o-mini"`` into ``("openai", "gpt-4o-mini")``; ``"local"`` into
    ``("local", "")``."""
    name, _, arg = spec.strip().partition(":")
    return name, arg


def make_backend(spec: str, options: BackendOptions | None = None) -> Backend:
    """Builds the backend a spec string names.

    Raises:
        ValueError: an unknown backend name, or a missing argument (``openai:`` needs a model).
    """
    name, arg = parse_spec(spec)
    if name not in _REGISTRY:
        raise ValueError(f"unknown LLM backend {name!r} in {spec!r}; known: "
                         + ", ".join(f"{n}" for n in backend_names()))
    return _REGISTRY[name](arg, options or BackendOptions())


# --- openai ----------------------------------------------------------------------------------

def _strip_echoed_prefill(text: str, prefill: str) -> str:
    # Some OpenAI-compatible servers (the llama.cpp server among them) return the prefill
    # followed by its continuation; others return the continuation only.
    if prefill and text.startswith(prefill):
        return text[len(prefill):]
    return text


class OpenAIBackend:
    """Any OpenAI-compatible chat-completions endpoint, through the ``openai`` client.

    Args:
        model: the model name sent with each request.
        options: key, base URL and timeout (None: from ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``).
        name: the name recorded in caches and accounting.
        extra_body: fields added to every request body (e.g. for a server's own parameters).
        send_top_k: send ``top_k`` when set (not a field of OpenAI's own API; servers such as
            vLLM and llama.cpp accept it).
    """

    cacheable = True

    def __init__(self, model: str, options: BackendOptions, *, name: str = "openai",
                 extra_body: dict | None = None, send_top_k: bool = True):
        import openai

        if not model:
            raise ValueError("the openai backend needs a model: --llm openai:MODEL")
        self._openai = openai
        self.name = name
        self.model = model
        self.extra_body = dict(extra_body or {})
        self.send_top_k = send_top_k
        base_url = options.base_url or os.environ.get("OPENAI_BASE_URL") or None
        api_key = options.api_key or os.environ.get("OPENAI_API_KEY")
        if not api_key:
            if base_url is None:
                raise LLMError("no API key for openai:%s: set OPENAI_API_KEY or pass --llm-api-key "
                               "(or point OPENAI_BASE_URL / --llm-base-url at a server that needs "
                               "none)" % model)
            api_key = "none"  # self-hosted servers usually ignore the key
        # Retries are the client's job (one policy for every backend), so the SDK's are off.
        self.client = openai.OpenAI(api_key=api_key, base_url=base_url,
                                    timeout=options.timeout_s, max_retries=0)

    def request_body(self, messages: list[dict], sampling: Sampling) -> dict[str, Any]:
        """The keyword arguments of ``chat.completions.create`` for this request."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": messages,
            "temperature": sampling.temperature,
            "top_p": sampling.top_p,
            "max_tokens": sampling.max_tokens,
        }
        if sampling.stop:
            kwargs["stop"] = list(sampling.stop)
        if sampling.effective_seed is not None:
            kwargs["seed"] = sampling.effective_seed
        extra = dict(self.extra_body)
        if sampling.top_k is not None and self.send_top_k:
            extra["top_k"] = sampling.top_k
        if extra:
            kwargs["extra_body"] = extra
        return kwargs

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        openai = self._openai
        try:
            response = self.client.chat.completions.create(**self.request_body(messages, sampling))
        except openai.RateLimitError as exc:
            raise TransientLLMError(f"rate limited: {exc}", "rate_limit",
                                    _retry_after(exc)) from exc
        except openai.APITimeoutError as exc:
            raise TransientLLMError(f"request timed out: {exc}", "timeout") from exc
        except openai.APIConnectionError as exc:
            raise TransientLLMError(f"connection failed: {exc}", "connection") from exc
        except openai.InternalServerError as exc:
            raise TransientLLMError(f"server error: {exc}", "server", _retry_after(exc)) from exc
        except openai.APIStatusError as exc:
            raise LLMError(f"{self.name}:{self.model} rejected the request "
                           f"(HTTP {exc.status_code}): {exc}") from exc
        if not response.choices:
            raise TransientLLMError("the server returned no choices", "server")
        choice = response.choices[0]
        text = _strip_echoed_prefill(choice.message.content or "", prefill_of(messages))
        usage = response.usage
        return RawCompletion(
            text=text,
            prompt_tokens=int(getattr(usage, "prompt_tokens", 0) or 0),
            completion_tokens=int(getattr(usage, "completion_tokens", 0) or 0),
            finish_reason=choice.finish_reason or "stop",
            model=response.model or self.model,
        )

    def close(self) -> None:
        self.client.close()


def _retry_after(exc: Any) -> float | None:
    response = getattr(exc, "response", None)
    value = response.headers.get("retry-after") if response is not None else None
    try:
        return float(value) if value is not None else None
    except ValueError:
        return None


# --- scripted --------------------------------------------------------------------------------

class ScriptExhaustedError(LLMError):
    """A scripted backend was asked for more completions than its script holds."""


class ScriptedBackend:
    """Replays given completions in order, for tests and exact replays.

    Args:
        completions: each a string (the text) or a dict with ``text`` and optionally
            ``prompt_tokens``, ``completion_tokens``, ``finish_reason``.
        model: the model name reported.

    Attributes:
        requests: every ``(messages, sampling)`` asked for, in order.
    """

    name = "scripted"
    cacheable = False

    def __init__(self, completions: list[str | dict], model: str = "script"):
        self._script = [c if isinstance(c, dict) else {"text": c} for c in completions]
        for i, entry in enumerate(self._script):
            if not isinstance(entry.get("text"), str):
                raise ValueError(f"scripted completion {i} has no text")
        self.model = model
        self.requests: list[tuple[list[dict], Sampling]] = []
        self._lock = threading.Lock()

    @classmethod
    def from_file(cls, path: str | os.PathLike) -> "ScriptedBackend":
        """Reads a script: a JSON list, or JSON Lines (one string or object per line, such as a
        run's completions log, whose entries carry ``text``)."""
        path = Path(path)
        try:
            raw = path.read_text(encoding="utf-8")
        except OSError as exc:
            raise LLMError(f"cannot read script {path}: {exc.strerror}") from exc
        stripped = raw.lstrip()
        try:
            if stripped.startswith("["):
                entries = json.loads(raw)
            else:
                entries = [json.loads(line) for line in raw.splitlines() if line.strip()]
        except json.JSONDecodeError as exc:
            raise LLMError(f"script {path} is neither a JSON list nor JSON Lines: {exc}") from exc
        return cls(entries, model=path.name)

    @property
    def remaining(self) -> int:
        return len(self._script) - len(self.requests)

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        with self._lock:
            index = len(self.requests)
            if index >= len(self._script):
                raise ScriptExhaustedError(
                    f"the script has {len(self._script)} completions; call {index + 1} has none")
            self.requests.append((messages, sampling))
            entry = self._script[index]
        return RawCompletion(
            text=_strip_echoed_prefill(entry["text"], prefill_of(messages)),
            prompt_tokens=int(entry.get("prompt_tokens", 0)),
            completion_tokens=int(entry.get("completion_tokens", 0)),
            finish_reason=entry.get("finish_reason", "stop"),
            model=self.model,
        )

    def close(self) -> None:
        pass


# --- hf --------------------------------------------------------------------------------------

class HFBackend:
    """A Hugging Face ``transformers`` causal LM, for local GPU models.

    ``transformers`` and ``torch`` are imported only when this backend is built. A conversation
    ending with an assistant message is continued with ``continue_final_message``, so the
    model writes on from the prefill instead of starting a new turn.

    Args:
        model: a model id or local directory ``from_pretrained`` accepts.
        options: device and dtype.
        tokenizer, lm: ready objects to use instead of loading ``model`` (for tests and reuse).
    """

    name = "hf"
    cacheable = True

    def __init__(self, model: str, options: BackendOptions, *, tokenizer: Any = None, lm: Any = None):
        if not model:
            raise ValueError("the hf backend needs a model: --llm hf:MODEL")
        try:
            import torch
            if tokenizer is None or lm is None:
                import transformers
        except ImportError as exc:
            raise BackendNotInstalledError(
                f"the hf backend needs transformers and torch ({exc.name} is missing): "
                "pip install 'codeworld[hf]' torch") from exc
        self._torch = torch
        self.model = model
        if tokenizer is None or lm is None:
            device = options.hf_device or ("cuda" if torch.cuda.is_available() else "cpu")
            dtype = options.hf_dtype if options.hf_dtype == "auto" else getattr(torch, options.hf_dtype)
            tokenizer = transformers.AutoTokenizer.from_pretrained(model)
            lm = transformers.AutoModelForCausalLM.from_pretrained(model, torch_dtype=dtype)
            lm = lm.to(device)
            lm.eval()
        self.tokenizer = tokenizer
        self.lm = lm
        self._lock = threading.Lock()

    def prompt_ids(self, messages: list[dict]):
        """Token ids of the conversation: a new assistant turn, or the prefill continued."""
        prefill = bool(prefill_of(messages))
        return self.tokenizer.apply_chat_template(
            messages,
            add_generation_prompt=not prefill,
            continue_final_message=prefill,
            return_tensors="pt",
        )

    def chat(self, messages: list[dict], sampling: Sampling) -> RawCompletion:
        torch = self._torch
        ids = self.prompt_ids(messages)
        if hasattr(ids, "input_ids"):
            ids = ids["input_ids"]
        ids = ids.to(self.lm.device)
        kwargs: dict[str, Any] = {"max_new_tokens": sampling.max_tokens}
        if sampling.temperature > 0:
            kwargs.update(do_sample=True, temperature=sampling.temperature, top_p=sampling.top_p)
            if sampling.top_k is not None:
                kwargs["top_k"] = sampling.top_k
        else:
            kwargs.update(do_sample=False)
        if sampling.stop:
            kwargs.update(stop_strings=list(sampling.stop), tokenizer=self.tokenizer)
        pad = getattr(self.tokenizer, "pad_token_id", None)
        if pad is None:
            pad = getattr(self.tokenizer, "eos_token_id", None)
        if pad is not None:
            kwargs["pad_token_id"] = pad
        with self._lock, torch.no_grad():
            if sampling.effective_seed is not None:
                torch.manual_seed(sampling.effective_seed)
            output = self.lm.generate(ids, attention_mask=torch.ones_like(ids), **kwargs)
        new_ids = output[0, ids.shape[-1]:]
        text = self.tokenizer.decode(new_ids, skip_special_tokens=True)
        finish = "length" if len(new_ids) >= sampling.max_tokens else "stop"
        for stop in sampling.stop:
            cut = text.find(stop)
            if cut >= 0:
                text, finish = text[:cut], "stop"
        return RawCompletion(text=text, prompt_tokens=int(ids.shape[-1]),
                             completion_tokens=int(len(new_ids)), finish_reason=finish,
                             model=self.model)

    def close(self) -> None:
        self.lm = None


def _local_factory(arg: str, options: BackendOptions) -> Backend:
    from codeworld.llm.local import LocalBackend

    if arg:
        raise ValueError(f"the local backend takes no argument, got local:{arg}")
    return LocalBackend(options)


def _scripted_factory(arg: str, options: BackendOptions) -> Backend:
    if not arg:
        raise ValueError("the scripted backend needs a file: --llm scripted:FILE")
    return ScriptedBackend.from_file(arg)


register_backend("local", _local_factory)
register_backend("openai", lambda arg, options: OpenAIBackend(arg, options))
register_backend("hf", lambda arg, options: HFBackend(arg, options))
register_backend("scripted", _scripted_factory)
