"""Accounting of LLM use: calls, tokens, time, cache hits, retries and cost, as a sum over
completion records.

The client folds each completion's record into its running totals (`LLMAccounting.add`) and,
with a run directory, appends the same record to ``llm_completions.jsonl``
(`COMPLETIONS_LOG`). The layer writes no totals of its own: a run's figures are the sum over
that log (`LLMAccounting.from_log`), so a run resumed in a second process adds to the first
session's records instead of starting a second, disagreeing account. (Run directories written
before this also hold an ``llm_accounting.json``: the totals of their last session only, now
neither written nor read.)
"""

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


COMPLETIONS_LOG = "llm_completions.jsonl"


@dataclass
class LLMAccounting:
    """Totals of LLM use, summed over completion records. Thread-safe updates through `add`
    and `record_failure`.

    Attributes:
        calls: requests that reached the backend and succeeded.
        cache_hits: requests answered from the cache.
        prompt_tokens: prompt tokens of the backend calls (cache hits excluded).
        completion_tokens: completion tokens of the backend calls (cache hits excluded).
        wall_time_s: seconds spent in backend calls, retries and waits included.
        retries: failed attempts that were retried.
        failures: requests that failed after the last try (in this process only: a failed
            request leaves no completion record).
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

    def add(self, record: dict, prices: dict | None = None) -> None:
        """Adds one completion record: a `Completion`'s fields (``backend``, ``model``,
        ``prompt_tokens``, ``completion_tokens``, ``latency_s``, ``cached``) and the client's
        ``retries`` and ``retry_s`` (failed tries before it, and the seconds they and the waits
        took; 0 when absent)."""
        if record.get("cached"):
            with self._lock:
                self.cache_hits += 1
            return
        backend, model = record.get("backend", ""), record.get("model", "")
        prompt_tokens = int(record.get("prompt_tokens", 0) or 0)
        completion_tokens = int(record.get("completion_tokens", 0) or 0)
        price = price_of(backend, model, prices)
        with self._lock:
            self.calls += 1
            self.prompt_tokens += prompt_tokens
            self.completion_tokens += completion_tokens
            self.wall_time_s += float(record.get("latency_s", 0.0)) + float(record.get("retry_s", 0.0))
            self.retries += int(record.get("retries", 0))
            entry = self.by_model.setdefault(
                f"{backend}:{model}", {"calls": 0, "prompt_tokens": 0, "completion_tokens": 0})
            entry["calls"] += 1
            entry["prompt_tokens"] += prompt_tokens
            entry["completion_tokens"] += completion_tokens
            if price is None:
                self.unpriced_calls += 1
            else:
                self.cost_usd += (prompt_tokens * price[0] + completion_tokens * price[1]) / 1e6

    def record_failure(self, retries: int, wall_time_s: float) -> None:
        """Adds a request that failed after its last try (``retries`` tries before it)."""
        with self._lock:
            self.failures += 1
            self.retries += retries
            self.wall_time_s += wall_time_s

    @classmethod
    def from_log(cls, path: str | os.PathLike, prices: dict | None = None) -> "LLMAccounting":
        """The totals of a completions log (a run directory's `COMPLETIONS_LOG`, or the
        directory itself): every session that wrote to it. A missing log has none; a line cut
        short by a killed process is skipped."""
        path = Path(path)
        if path.is_dir():
            path = path / COMPLETIONS_LOG
        totals = cls()
        if not path.is_file():
            return totals
        with open(path, encoding="utf-8") as log:
            for line in log:
                try:
                    record = json.loads(line)
                except ValueError:
                    continue
                if isinstance(record, dict):
                    totals.add(record, prices)
        return totals

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
