"""The records of the LLM layer: sampling settings, completions, the errors a caller handles, and
what a backend is (`Backend`), shared by the backend modules and the client.

Messages are plain dicts in the chat format every backend understands,
``{"role": "system" | "user" | "assistant", "content": str}``. A conversation that ends with an
``assistant`` message asks the backend to *continue* that message (assistant prefill): the
completion's `Completion.text` is only the new text, and `Completion.full_text` joins the two.
"""

from __future__ import annotations

import re
from dataclasses import asdict, dataclass, fields
from typing import Any, Protocol

ROLES = ("system", "user", "assistant")


@dataclass(frozen=True)
class Sampling:
    """How one completion is sampled.

    Attributes:
        temperature: softmax temperature; 0 is greedy decoding.
        top_p: nucleus sampling mass (1.0 keeps every token).
        top_k: keep only the k most likely tokens; None leaves the backend's default. Hosted
            OpenAI models have no such setting; it is sent only where it is set.
        max_tokens: the longest completion asked for, in tokens.
        stop: strings at which generation stops (not included in the text).
        seed: the backend's random seed; None lets the backend choose. Backends that honour
            seeds get ``seed + sample``, so that repeated samples differ and are replayable.
        sample: the index of this sample among repeated requests with otherwise identical
            settings. It is part of the cache key, so that at temperature > 0 sample 0 and
            sample 1 are distinct completions, each replayed from the cache on a rerun.
    """

    temperature: float = 1.0
    top_p: float = 1.0
    top_k: int | None = None
    max_tokens: int = 1024
    stop: tuple[str, ...] = ()
    seed: int | None = None
    sample: int = 0

    def __post_init__(self):
        if isinstance(self.stop, str):
            object.__setattr__(self, "stop", (self.stop,))
        else:
            object.__setattr__(self, "stop", tuple(self.stop))
        if self.temperature < 0:
            raise ValueError(f"temperature must be >= 0, got {self.temperature}")
        if not 0 < self.top_p <= 1:
            raise ValueError(f"top_p must be in (0, 1], got {self.top_p}")
        if self.top_k is not None and self.top_k < 1:
            raise ValueError(f"top_k must be >= 1 or None, got {self.top_k}")
        if self.max_tokens < 1:
            raise ValueError(f"max_tokens must be >= 1, got {self.max_tokens}")
        if self.sample < 0:
            raise ValueError(f"sample must be >= 0, got {self.sample}")

    @classmethod
    def names(cls) -> tuple[str, ...]:
        """The accepted keyword names."""
        return tuple(f.name for f in fields(cls))

    def replace(self, **changes: Any) -> "Sampling":
        """A copy with some fields changed; unknown names raise TypeError."""
        unknown = set(changes) - set(self.names())
        if unknown:
            raise TypeError(f"unknown sampling parameter(s) {sorted(unknown)}; "
                            f"accepted: {', '.join(self.names())}")
        return Sampling(**{**asdict(self), **changes})

    @property
    def effective_seed(self) -> int | None:
        """The seed sent to the backend: ``seed + sample``, or None without a seed."""
        return None if self.seed is None else self.seed + self.sample

    def to_json(self) -> dict:
        data = asdict(self)
        data["stop"] = list(self.stop)
        return data


@dataclass(frozen=True)
class RawCompletion:
    """What a backend returns for one request, before the client adds timing and caching.

    Attributes:
        text: the generated text; with an assistant prefill, only the continuation.
        prompt_tokens: tokens in the prompt, as the backend counted them (0 when unknown).
        completion_tokens: tokens generated (0 when unknown).
        finish_reason: ``"stop"`` (natural end or a stop string), ``"length"`` (max_tokens
            reached: the text is truncated), or the backend's own word.
        model: the model name the backend reports.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    finish_reason: str = "stop"
    model: str = ""


@dataclass(frozen=True)
class Completion:
    """One completion as the caller sees it.

    Attributes:
        text: the generated text (only the continuation when the request had a prefill).
        prompt_tokens: tokens in the prompt.
        completion_tokens: tokens generated.
        latency_s: wall time of the request that produced it (for a cache hit, of the original
            request; the time actually spent is in the accounting).
        finish_reason: ``"stop"``, ``"length"`` (truncated), or the backend's own word.
        backend: the backend's name (``local``, ``openai``, ``hf``, ``scripted``).
        model: the model that wrote it.
        prefill: the assistant prefill the text continues (empty without one).
        cached: True when it came from the on-disk cache rather than the backend.
    """

    text: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    latency_s: float = 0.0
    finish_reason: str = "stop"
    backend: str = ""
    model: str = ""
    prefill: str = ""
    cached: bool = False

    @property
    def full_text(self) -> str:
        """The prefill followed by the continuation: the whole assistant message."""
        return self.prefill + self.text

    @property
    def truncated(self) -> bool:
        """True when generation stopped at ``max_tokens``."""
        return self.finish_reason == "length"

    def to_json(self) -> dict:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict) -> "Completion":
        known = {f.name for f in fields(cls)}
        return cls(**{k: v for k, v in data.items() if k in known})


class LLMError(RuntimeError):
    """A request that cannot succeed as asked (bad configuration, rejected request)."""


class TransientLLMError(LLMError):
    """A failure worth retrying: rate limit, timeout, lost connection, server overload.

    Attributes:
        kind: ``"rate_limit"``, ``"timeout"``, ``"connection"`` or ``"server"``.
        retry_after_s: the server's requested wait, when it sent one.
    """

    def __init__(self, message: str, kind: str, retry_after_s: float | None = None):
        super().__init__(message)
        self.kind = kind
        self.retry_after_s = retry_after_s


class PromptTooLongError(LLMError):
    """The prompt does not fit the model's context window: the same request can never succeed
    (a search records the call as unanswered and goes on, `codeworld.synthesis._runner`).

    Attributes:
        prompt_tokens: the prompt's length in tokens, where the server said it.
        context: the context window in tokens, where the server said it.
    """

    def __init__(self, message: str, prompt_tokens: int | None = None, context: int | None = None):
        super().__init__(message)
        self.prompt_tokens = prompt_tokens
        self.context = context


# How servers word a request longer than the context (llama.cpp's server, OpenAI, vLLM).
_TOO_LONG = re.compile(r"context (?:size|length|window)|context_length_exceeded|maximum context",
                       re.IGNORECASE)


def prompt_too_long(status: int, message: str) -> PromptTooLongError | None:
    """The `PromptTooLongError` a rejected request's status and message stand for, else None."""
    if status not in (400, 413) or not _TOO_LONG.search(message):
        return None
    numbers = [int(n) for n in re.findall(r"(\d+) tokens", message)]
    return PromptTooLongError(message, numbers[0] if numbers else None,
                              numbers[1] if len(numbers) > 1 else None)


class LLMUnavailableError(LLMError):
    """Every retry of a request failed.

    Attributes:
        attempts: how many times the request was tried.
        last_error: the last failure.
        log_path: the run directory's completions log (every completion so far, and so the
            run's accounting), or None when the client has no run directory. Completions made
            so far are in the cache too, so a rerun resumes for free.
    """

    def __init__(self, message: str, attempts: int, last_error: BaseException,
                 log_path: str | None = None):
        super().__init__(message)
        self.attempts = attempts
        self.last_error = last_error
        self.log_path = log_path


class BackendNotInstalledError(LLMError):
    """A backend's optional dependencies are missing; the message names the install command."""


def check_messages(messages: Any) -> list[dict]:
    """Validates chat messages and returns them as a list of plain ``{role, content}`` dicts.

    Raises:
        ValueError: not a non-empty list of messages with known roles and string contents.
    """
    if not isinstance(messages, (list, tuple)) or not messages:
        raise ValueError("messages must be a non-empty list of {'role': ..., 'content': ...}")
    out = []
    for i, message in enumerate(messages):
        if not isinstance(message, dict) or "role" not in message or "content" not in message:
            raise ValueError(f"message {i} must be a dict with 'role' and 'content'")
        if message["role"] not in ROLES:
            raise ValueError(f"message {i} has role {message['role']!r}; expected one of {ROLES}")
        if not isinstance(message["content"], str):
            raise ValueError(f"message {i} content must be a string")
        out.append({"role": message["role"], "content": message["content"]})
    return out


def prefill_of(messages: list[dict]) -> str:
    """The assistant prefill of a conversation: its last message's content if that is the
    assistant's, else the empty string."""
    return messages[-1]["content"] if messages[-1]["role"] == "assistant" else ""


def strip_echoed_prefill(text: str, prefill: str) -> str:
    """`text` without the prefill at its start, for servers that echo the prefill."""
    # Some OpenAI-compatible servers (the llama.cpp server among them) return the prefill
    # followed by its continuation; others return the continuation only.
    if prefill and text.startswith(prefill):
        return text[len(prefill):]
    return text


# --- backends --------------------------------------------------------------------------------

class Backend(Protocol):
    """What the client needs of a backend. A backend is built by a factory,
    ``factory(arg, options)``, whose ``Options`` attribute (if any) is the frozen dataclass of
    its settings (see `codeworld.llm.backends`).

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
