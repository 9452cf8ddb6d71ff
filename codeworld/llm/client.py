"""The client every part of codeworld calls: ``LLMClient.complete(messages, **sampling) -> Completion``.

It wraps one backend (chosen by a spec string, see `codeworld.llm.backends`) with:

* retries with exponential backoff on rate limits, timeouts, lost connections and server
  errors, then `LLMUnavailableError` (with the accounting saved) after the last try;
* an on-disk cache keyed by backend, model, messages and sampling parameters (sample index
  included), so that a rerun replays every completion exactly and for free;
* accounting of calls, tokens, wall time, cache hits, retries and cost;
* optionally, a JSON Lines log of every completion in a run directory, which the ``scripted``
  backend can replay.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from codeworld.llm.accounting import LLMAccounting
from codeworld.llm.backends import backend_names, make_backend
from codeworld.llm.cache import CompletionCache, default_cache_root, request_key
from codeworld.llm.types import (
    Backend,
    BackendOptions,
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
        spec: the backend spec: ``local``, ``openai:MODEL``, ``hf:MODEL``, ``scripted:FILE``.
        backend: settings of the backend (key, base URL, request timeout, threads).
        retry: the retry policy.
        cache_dir: where completions are cached; None uses ``<codeworld cache>/llm``.
        use_cache: read and write the cache.
        run_dir: a run directory; when set, ``llm_accounting.json`` (always current) and
            ``llm_completions.jsonl`` (every completion) are written there.
        prices: extra dollars per million (prompt, completion) tokens by model name.
    """

    spec: str = DEFAULT_SPEC
    backend: BackendOptions = field(default_factory=BackendOptions)
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
        accounting: running totals of this client's use.
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
            root = self.config.cache_dir or default_cache_root() / "llm"
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
                self.accounting.record_cache_hit()
                completion = _with(hit, cached=True)
                self._log(messages, settings, completion)
                return completion
        completion = self._call(messages, settings)
        if self.cache is not None:
            self.cache.put(key, completion, {"backend": self.backend.name, "model": self.backend.model,
                                             "messages": messages, "sampling": settings.to_json()})
        self._log(messages, settings, completion)
        return completion

    def _call(self, messages: list[dict], settings: Sampling) -> Completion:
        policy = self.config.retry
        for attempt in range(1, policy.max_attempts + 1):
            started = time.perf_counter()
            try:
                raw = self.backend.chat(messages, settings)
            except TransientLLMError as exc:
                elapsed = time.perf_counter() - started
                if attempt == policy.max_attempts:
                    self.accounting.record_failure(elapsed)
                    state = self.save_state()
                    where = f"; accounting saved to {state}" if state else ""
                    raise LLMUnavailableError(
                        f"{self.name} failed {attempt} times ({exc.kind}): {exc}{where}. "
                        "Completed calls are cached: rerunning the same command resumes where it "
                        "stopped.", attempt, exc, str(state) if state else None) from exc
                wait = policy.delay(attempt, exc.retry_after_s, self._rng)
                self.accounting.record_retry(elapsed + wait)
                self._sleep(wait)
                continue
            latency = time.perf_counter() - started
            self.accounting.record_call(self.backend.name, raw.model or self.backend.model,
                                        raw.prompt_tokens, raw.completion_tokens, latency,
                                        self.config.prices)
            completion = Completion(
                text=raw.text, prompt_tokens=raw.prompt_tokens,
                completion_tokens=raw.completion_tokens, latency_s=latency,
                finish_reason=raw.finish_reason, backend=self.backend.name,
                model=raw.model or self.backend.model, prefill=prefill_of(messages))
            self.save_state()
            return completion
        raise AssertionError("unreachable")

    def _log(self, messages: list[dict], settings: Sampling, completion: Completion) -> None:
        if self.run_dir is None:
            return
        self.run_dir.mkdir(parents=True, exist_ok=True)
        record = {**completion.to_json(), "messages": messages, "sampling": settings.to_json()}
        with self._log_lock, open(self.run_dir / "llm_completions.jsonl", "a", encoding="utf-8") as log:
            log.write(json.dumps(record, ensure_ascii=False) + "\n")

    def save_state(self) -> Path | None:
        """Writes the accounting to the run directory (if any) and returns its path."""
        if self.run_dir is None:
            return None
        return self.accounting.save(self.run_dir / "llm_accounting.json")

    def close(self) -> None:
        """Saves the accounting and releases the backend."""
        self.save_state()
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
        **config: `LLMConfig` fields when ``spec`` is a string (``cache_dir``, ``run_dir``, ...),
            plus ``sleep`` and ``defaults`` for `LLMClient`.
    """
    client_kwargs = {k: config.pop(k) for k in ("sleep", "defaults") if k in config}
    cfg = spec if isinstance(spec, LLMConfig) else LLMConfig(spec=spec, **config)
    return LLMClient(make_backend(cfg.spec, cfg.backend), cfg, **client_kwargs)


def add_llm_arguments(parser: argparse.ArgumentParser) -> None:
    """Adds the options that choose and configure the LLM to a command's parser."""
    group = parser.add_argument_group("LLM")
    group.add_argument("--llm", default=os.environ.get("CODEWORLD_LLM", DEFAULT_SPEC),
                       metavar="SPEC",
                       help="local (embedded, default), openai:MODEL, hf:MODEL, scripted:FILE or another "
                            f"registered backend (registered: {', '.join(backend_names())}; "
                            "default from CODEWORLD_LLM, else local)")
    group.add_argument("--llm-base-url", default=None, metavar="URL",
                       help="OpenAI-compatible endpoint (default: OPENAI_BASE_URL)")
    group.add_argument("--llm-api-key", default=None, metavar="KEY",
                       help="API key (default: OPENAI_API_KEY)")
    group.add_argument("--llm-timeout", type=float, default=600.0, metavar="S",
                       help="seconds one request may take before it is retried (default 600)")
    group.add_argument("--llm-retries", type=int, default=6, metavar="N",
                       help="tries per request in all (default 6)")
    group.add_argument("--llm-cache-dir", default=None, metavar="DIR",
                       help="completion cache (default: ~/.cache/codeworld/llm)")
    group.add_argument("--no-llm-cache", action="store_true", help="neither read nor write the cache")
    group.add_argument("--llm-threads", type=int, default=None, metavar="N",
                       help="CPU threads of the local model (default: every core; "
                            "CODEWORLD_LOCAL_THREADS)")
    group.add_argument("--llm-speculation", default=None,
                       choices=["ngram-mod", "ngram", "draft", "none"],
                       help="speculative decoding of the local model: ngram-mod (default: long "
                            "drafts where the answer repeats the prompt, no second model), ngram "
                            "(short drafts after any 3 matching tokens), draft (the 0.5B draft "
                            "model, extra 'draft'), none (CODEWORLD_LOCAL_SPECULATION)")
    group.add_argument("--llm-engine", default=None, choices=["native", "xllamacpp"],
                       help="server of the local model: native (llama.cpp compiled for this CPU "
                            "by `codeworld build-llm`; the default once built) or xllamacpp "
                            "(CODEWORLD_LOCAL_ENGINE)")


def llm_from_args(args: argparse.Namespace, run_dir: str | None = None, *, slots: int = 1) -> LLMClient:
    """The client the options of `add_llm_arguments` describe.

    Args:
        slots: requests the caller sends at once (a search's ``parallel``); the local model
            decodes that many together.
    """
    options = BackendOptions(api_key=args.llm_api_key, base_url=args.llm_base_url,
                             timeout_s=args.llm_timeout, local_threads=args.llm_threads,
                             local_slots=max(1, slots),
                             local_speculation=getattr(args, "llm_speculation", None),
                             local_engine=getattr(args, "llm_engine", None))
    return make_llm(LLMConfig(spec=args.llm, backend=options,
                              retry=RetryPolicy(max_attempts=max(1, args.llm_retries)),
                              cache_dir=args.llm_cache_dir, use_cache=not args.no_llm_cache,
                              run_dir=run_dir))
