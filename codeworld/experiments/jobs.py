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

# Method variants for ablations: the name after the slash switches one thing off. The first three
# are the paper's Table 6 (one kind of GIF-MCTS action); the others switch off one of codeworld's
# aids to a small model (the scaffold in the prompts, the static checks with the smoke run and the
# mechanical repairs, the error summary in improve prompts, the constant fit after the search, the composition,
# the data's fitted relations in the prompts, their nonlinear structure).
# A ``finish.`` field belongs to the `FinishConfig` of the run, the others to the method's config.
ABLATIONS: dict[str, dict[str, Any]] = {
    "no-generate": {"allow_generate": False},
    "no-improve": {"allow_improve": False},
    "no-fix": {"allow_fix": False},
    "no-scaffold": {"assist.scaffold": False},
    "no-checks": {"assist.checks": False},
    "no-summary": {"assist.error_summary": False},
    "no-fit": {"assist.fit_constants": False, "finish.fit_constants": False},
    "no-compose": {"finish.compose": False},
    "no-relations": {"assist.relations": False},
    # the data section off altogether, and on with plain linear fits only (no term library,
    # clips, wraps, exceptions or reward formula)
    "no-data": {"assist.relations": False},
    "no-structure": {"assist.structure": False},
}


def split_method(method: str) -> tuple[str, dict[str, Any]]:
    """A method name, possibly with an ablation variant (``"gif-mcts/no-fix"``), as (base, overrides).

    Raises:
        KeyError: an unknown variant.
    """
    base, _, variant = method.partition("/")
    if not variant:
        return base, {}
    if variant not in ABLATIONS:
        raise KeyError(f"unknown method variant {variant!r} of {base!r} (known: {', '.join(ABLATIONS)})")
    return base, dict(ABLATIONS[variant])


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
