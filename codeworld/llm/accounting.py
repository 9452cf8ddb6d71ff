"""Accounting of one run's LLM use: calls, tokens, time, cache hits, retries and cost."""

from __future__ import annotations

import json
import os
import threading
from dataclasses import asdict, dataclass, field
from pathlib import Path

# US dollars per million tokens (prompt, completion), as OpenAI published them for its API.
# A model missing here has an unknown cost (reported as such); pass ``prices`` to add one.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o": (2.50, 10.00),
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-3.5-turbo": (0.50, 1.50),
    "o3-mini": (1.10, 4.40),
}

# Backends that run on the user's own machine cost nothing per token.
FREE_BACKENDS = frozenset({"local", "hf", "scripted"})


def price_of(backend: str, model: str,
             prices: dict[str, tuple[float, float]] | None = None) -> tuple[float, float] | None:
    """Dollars per million (prompt, completion) tokens, or None when unknown.

    A dated snapshot name (``gpt-4o-2024-08-06``) falls back to its base name (``gpt-4o``).
    """
    if backend in FREE_BACKENDS:
        return (0.0, 0.0)
    table = {**DEFAULT_PRICES, **(prices or {})}
    name = model
    while name:
        if name in table:
            return table[name]
        if "-" not in name:
            break
        name = name.rsplit("-", 1)[0]
    return None


@dataclass
class LLMAccounting:
    """Running totals of one client's LLM use. Thread-safe updates through `record_*`.

    Attributes:
        calls: requests that reached the backend and succeeded.
        cache_hits: requests answered from the cache.
        prompt_tokens: prompt tokens of the backend calls (cache hits excluded).
        completion_tokens: completion tokens of the backend calls (cache hits excluded).
        wall_time_s: seconds spent in backend calls, retries and waits included.
        retries: failed attempts that were retried.
        failures: requests that failed after the last try.
        cost_usd: dollars spent, summed over calls of models with a known price.
        unpriced_calls: calls of models with no known price (cost then is a lower bound).
        by_model: the same counts per ``backend:model``.
    """

    calls: int = 0
    cache_hits: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    wall_time_s: float = 0.0
    retries: int = 0
    failures: int = 0
    cost_usd: float = 0.0
    unpriced_calls: int = 0
    by_model: dict = field(default_factory=dict)

    def __post_init__(self):
        self._lock = threading.Lock()

    def record_call(self, backend: str, model: str, prompt_tokens: int, completion_tokens: int,
                    wall_time_s: float, prices: dict | None = None) -> None:
        """Adds one successful backend call."""
        price = price_of(backend, model, prices)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.wall_time_s += wall_time_s
            entry = self.by_model.setdefault(
                f"{backend}:{model}", {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            entry["calls"] += 1
            entry["prompt_tokens"] += prompt_tokens
            entry["completion_tokens"] += completion_tokens
            if price is None:
                self.unpriced_calls += 1
            else:
                self.cost_usd += (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

    def record_cache_hit(self) -> None:
        with self._lock:
            self.cache_hits += 1

    def record_retry(self, wall_time_s: float) -> None:
        """Adds one failed attempt that will be retried (its time and the wait before the next)."""
        with self._lock:
            self.retries += 1
            self.wall_time_s += wall_time_s

    def record_failure(self, wall_time_s: float) -> None:
        with self._lock:
            self.failures += 1
            self.wall_time_s += wall_time_s

    @property
    def cost_known(self) -> bool:
        """True when every call's model had a price."""
        return self.unpriced_calls == 0

    def to_json(self) -> dict:
        with self._lock:
            data = {k: v for k, v in asdict(self).items()}
        data["by_model"] = json.loads(json.dumps(data["by_model"]))
        return data

    def summary(self) -> str:
        """One line for people: calls, cache hits, tokens, time, cost."""
        if self.calls and self.unpriced_calls == self.calls:
            cost = "cost unknown"
        else:
            cost = f"${self.cost_usd:.4f}" + ("+ (some models unpriced)" if self.unpriced_calls else "")
        return (f"llm: {self.calls} call{'s' if self.calls != 1 else ''}, "
                f"{self.cache_hits} cache hit{'s' if self.cache_hits != 1 else ''}, "
                f"{self.prompt_tokens} prompt + {self.completion_tokens} completion tokens, "
                f"{self.wall_time_s:.1f} s, {self.retries} retr{'ies' if self.retries != 1 else 'y'}, "
                f"{cost}")

    def save(self, path: str | os.PathLike) -> Path:
        """Writes the totals as JSON (atomically) and returns the path."""
        path = Path(path)
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_name(path.name + ".tmp")
        tmp.write_text(json.dumps(self.to_json(), indent=2), encoding="utf-8")
        os.replace(tmp, path)
        return path
