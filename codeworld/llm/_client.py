"""The client every part of codeworld calls: ``LLMClient.complete(messages, **sampling) -> Completion``.

It wraps one backend (chosen by a spec string, see `codeworld.llm.backends`) with:

* retries with exponential backoff on rate limits, timeouts, lost connections and server
  errors, then `LLMUnavailableError` after the last try;
* an on-disk cache keyed by backend, model, messages and sampling parameters (sample index
  included), so that a rerun replays every completion exactly and for free;
* accounting of calls, tokens, wall time, cache hits, retries and cost (`LLMAccounting`);
* optionally, a JSON Lines log of every completion in a run directory (``llm_completions.jsonl``):
  the records the accounting sums, which the ``scripted`` backend can replay.
"""

from __future__ import annotations

import json
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from codeworld._paths import cache_root
from codeworld.llm._accounting import COMPLETIONS_LOG, LLMAccounting
from codeworld.llm.backends import make_backend
from codeworld.llm._cache import CompletionCache, request_key
from codeworld.llm.types import (
    Backend,
    Completion,
    LLMUnavailableError,
    Sampling,
    TransientLLMError,
    check_messages,
    prefill_of,
)

DEFAULT_SPEC = "local"


@dataclass(frozen=True)
class RetryPolicy:
    """When and how long to wait before trying a failed request again.

    Attributes:
        max_attempts: tries in all, the first included.
        initial_delay_s: wait before the second try; each later wait is ``multiplier`` times
            longer, up to ``max_delay_s``. A server's Retry-After is honoured when longer.
        multiplier: growth factor of the wait.
        max_delay_s: the longest wait.
        jitter: each wait is scaled by a random factor in ``[1 - jitter, 1]``, so that parallel
            workers that failed together do not retry together.
    """

    max_attempts: int = 6
    initial_delay_s: float = 1.0
    multiplier: float = 2.0
    max_delay_s: float = 60.0
    jitter: float = 0.25

    def delay(self, attempt: int, retry_after_s: float | None = None,
              rng: random.Random | None = None) -> float:
        """The wait after failed try number ``attempt`` (1-based)."""
        base = min(self.max_delay_s, self.initial_delay_s * self.multiplier ** (attempt - 1))
        base *= 1.0 - self.jitter * (rng or random).random()
        if retry_after_s is not None:
            base = max(base, min(retry_after_s, self.max_delay_s))
        return base


@dataclass(frozen=True)
class LLMConfig:
    """Everything that picks and wraps a backend.

    Attributes:
        spec: the backend spec: ``local``, ``openai:MODEL``, ``hf:MODEL``, ``scripted:FILE``,
            another registered name, or ``MODULE:FACTORY[:ARG]`` (`codeworld.llm.backends`).
        options: the backend's own settings: an instance of its options dataclass
            (``LocalOptions``, ``OpenAIOptions``, ...), a dict of its fields, or None for its
            defaults.
        retry: the retry policy.
        cache_dir: where completions are cached; None uses ``<codeworld cache>/llm``.
        use_cache: read and write the cache.
        run_dir: a run directory; when set, every completion is appended to its
            ``llm_completions.jsonl``, whose records `LLMAccounting.from_log` sums.
        prices: extra dollars per million (prompt, completion) tokens by model name.
    """

    spec: str = DEFAULT_SPEC
    options: Any = None
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    cache_dir: str | None = None
    use_cache: bool = True
    run_dir: str | None = None
    prices: dict | None = None


class LLMClient:
    """A backend with retries, a completion cache and accounting.

    Args:
        backend: the backend to wrap.
        config: retry, cache and run-directory settings (its ``spec`` is not used here).
        sleep: the function that waits between tries (tests pass a fake).
        defaults: default sampling settings for every call.

    Attributes:
        accounting: running totals of this client's use (this session's; a run directory's log
            holds every session's, see `LLMAccounting.from_log`).
    """

    def __init__(self, backend: Backend, config: LLMConfig | None = None, *,
                 sleep: Callable[[float], None] = time.sleep, defaults: Sampling | None = None):
        self.backend = backend
        self.config = config or LLMConfig()
        self.defaults = defaults or Sampling()
        self.accounting = LLMAccounting()
        self._sleep = sleep
        self._rng = random.Random()
        self._log_lock = threading.Lock()
        self.cache: CompletionCache | None = None
        if self.config.use_cache and getattr(backend, "cacheable", True):
            root = self.config.cache_dir or cache_root() / "llm"
            self.cache = CompletionCache(root)
        self.run_dir = Path(self.config.run_dir) if self.config.run_dir else None

    @property
    def name(self) -> str:
        """``backend:model``."""
        return f"{self.backend.name}:{self.backend.model}"

    def sampling(self, sampling: Sampling | None = None, **overrides: Any) -> Sampling:
        """The settings of a call: ``sampling`` (or the defaults) with ``overrides`` applied."""
        return (sampling or self.defaults).replace(**overrides) if overrides else (sampling or self.defaults)

    def complete(self, messages: list[dict], sampling: Sampling | None = None,
                 **overrides: Any) -> Completion:
        """One completion of a conversation.

        Args:
            messages: chat messages; a final assistant message is a prefill to continue.
            sampling: sampling settings (default: the client's defaults).
            **overrides: sampling fields to change: temperature, top_p, top_k, max_tokens, stop,
                seed, sample.

        Returns:
            The completion; ``cached`` tells whether it came from the cache.

        Raises:
            LLMUnavailableError: every try failed with a transient error.
            LLMError: the request was rejected or the backend is misconfigured.
        """
        messages = check_messages(messages)
        settings = self.sampling(sampling, **overrides)
        key = request_key(self.backend.name, self.backend.model, messages, settings)
        if self.cache is not None:
            hit = self.cache.get(key)
            if hit is not None:
                completion = _with(hit, cached=True)
                self._record(messages, settings, completion, 0, 0.0)
                return completion
        completion, retries, retry_s = self._call(messages, settings)
        if self.cache is not None:
            self.cache.put(key, completion, {"backend": self.backend.name, "model": self.backend.model,
                                             "messages": messages, "sampling": settings.to_json()})
        self._record(messages, settings, completion, retries, retry_s)
        return completion

    def _call(self, messages: list[dict], settings: Sampling) -> tuple[Completion, int, float]:
        """The completion, the failed tries before it and the seconds they and the waits took."""
        policy = self.config.retry
        retry_s = 0.0
        for attempt in range(1, policy.max_attempts + 1):
            started = time.perf_counter()
            try:
                raw = self.backend.chat(messages, settings)
            except TransientLLMError as exc:
                retry_s += time.perf_counter() - started
                if attempt == policy.max_attempts:
                    self.accounting.record_failure(attempt - 1, retry_s)
                    log = self.run_dir / COMPLETIONS_LOG if self.run_dir is not None else None
                    raise LLMUnavailableError(
                        f"{self.name} failed {attempt} times ({exc.kind}): {exc}. Completed calls "
                        "are cached: rerunning the same command resumes where it stopped.",
                        attempt, exc, str(log) if log else None) from exc
                wait = policy.delay(attempt, exc.retry_after_s, self._rng)
                retry_s += wait
                self._sleep(wait)
                continue
            completion = Completion(
                text=raw.text, prompt_tokens=raw.prompt_tokens,
                completion_tokens=raw.completion_tokens, latency_s=time.perf_counter() - started,
                finish_reason=raw.finish_reason, backend=self.backend.name,
                model=raw.model or self.backend.model, prefill=prefill_of(messages))
            return completion, attempt - 1, retry_s
        raise AssertionError("unreachable")

    def _record(self, messages: list[dict], settings: Sampling, completion: Completion,
                retries: int, retry_s: float) -> None:
        # One record per completion: summed into this session's accounting and, with a run
        # directory, appended to its log, whose sum over every session is the run's account.
        record = {**completion.to_json(), "retries": retries, "retry_s": retry_s}
        self.accounting.add(record, self.config.prices)
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        line = json.dumps({**record, "messages": messages, "sampling": settings.to_json()},
                          ensure_ascii=False) + "\n"
        with self._log_lock, open(self.run_dir / COMPLETIONS_LOG, "a", encoding="utf-8") as log:
            log.write(line)

    def close(self) -> None:
        """Releases the backend."""
        self.backend.close()

    def __enter__(self) -> "LLMClient":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


def _with(completion: Completion, **changes: Any) -> Completion:
    return Completion.from_json({**completion.to_json(), **changes})


def make_llm(spec: str | LLMConfig = DEFAULT_SPEC, **config: Any) -> LLMClient:
    """Builds a client from a spec string (``"local"``, ``"openai:gpt-4o-mini"``, ...) or a config.

    Args:
        spec: the backend spec, or a full `LLMConfig`.
        **config: `LLMConfig` fields when ``spec`` is a string (``options``, ``cache_dir``,
            ``run_dir``, ...),
            plus ``sleep`` and ``defaults`` for `LLMClient`.
    """
    client_kwargs = {k: config.pop(k) for k in ("sleep", "defaults") if k in config}
    cfg = spec if isinstance(spec, LLMConfig) else LLMConfig(spec=spec, **config)
    return LLMClient(make_backend(cfg.spec, cfg.options), cfg, **client_kwargs)
