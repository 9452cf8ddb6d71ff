"""Jobs of an experiment grid: one (environment, method, seed, LLM, budget) run each.

A `Job` is a small frozen record with a stable `key`, so that a results store can tell whether it
has already been run. Whatever else a job needs (scoring mode, planning episodes, config
overrides, sampling) goes into `options`, a JSON-ready mapping that is part of the key.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

_UNSAFE = re.compile(r"[^A-Za-z0-9._+=-]+")

def split_method(method: str) -> tuple[str, dict[str, Any]]:
    """A method name, possibly with an ablation variant (``"gif-mcts/no-fix"``), as (base,
    overrides); the variants are those the method declares (`codeworld.synthesis.Method.ablations`).

    Raises:
        KeyError: an unknown method or variant.
    """
    from codeworld.synthesis import get_method

    base, _, variant = method.partition("/")
    if not variant:
        return base, {}
    ablations = get_method(base).ablations
    if variant not in ablations:
        raise KeyError(f"unknown method variant {variant!r} of {base!r} (known: {', '.join(ablations)})")
    return base, dict(ablations[variant])


@dataclass(frozen=True)
class Job:
    """One run of a grid.

    Attributes:
        env_id: the environment.
        method: the synthesis method (``"gif-mcts"``, ``"worldcoder"``, ``"zero-shot"``), possibly
            with an ablation variant (``"gif-mcts/no-improve"``).
        seed: the run's seed.
        llm: the LLM spec (``"local"``, ``"openai:gpt-4o"``, ...).
        budget: LLM calls of the search.
        options: anything else the job function reads (JSON-ready; part of the key).
    """

    env_id: str
    method: str
    seed: int = 0
    llm: str = "local"
    budget: int = 10
    options: Mapping[str, Any] = field(default_factory=dict, hash=False)

    @property
    def key(self) -> str:
        """A stable, file-name-safe id: the same job always has the same key."""
        parts = [self.env_id, self.method.replace("/", "-"), f"seed{self.seed}", self.llm,
                 f"budget{self.budget}"]
        key = "__".join(_UNSAFE.sub("_", p) for p in parts)
        if self.options:
            digest = hashlib.sha256(json.dumps(self.options, sort_keys=True).encode()).hexdigest()
            key += "__" + digest[:10]
        return key

    def to_json(self) -> dict:
        return {"env_id": self.env_id, "method": self.method, "seed": self.seed, "llm": self.llm,
                "budget": self.budget, "options": dict(self.options)}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> "Job":
        return cls(env_id=data["env_id"], method=data["method"], seed=int(data.get("seed", 0)),
                   llm=data.get("llm", "local"), budget=int(data.get("budget", 10)),
                   options=dict(data.get("options") or {}))


def grid(envs: Iterable[str], methods: Iterable[str], seeds: Iterable[int], *, llm: str,
         budget: int, options: Mapping[str, Any] | None = None) -> list[Job]:
    """Every combination of environment, method and seed, in that nesting order."""
    options = dict(options or {})
    return [Job(env, method, seed, llm, budget, options)
            for env in envs for method in methods for seed in seeds]
