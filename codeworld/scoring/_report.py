"""The score report: what a scored world model gets back, as a dataclass, a dict/JSON and text."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np


@dataclass(frozen=True)
class Reference:
    """A reference model's result on the same data (the floor or the ceiling).

    Attributes:
        name: ``"floor"`` (state unchanged, modal reward, never done) or ``"ceiling"`` (the true
            simulator set from each observation).
        score: its score in the report's mode.
        strict: its fraction of transitions right in every component.
        components: its per-component accuracies.
    """

    name: str
    score: float
    strict: float
    components: dict[str, float]


@dataclass(frozen=True)
class ScoreReport:
    """The result of scoring a world model on a replay buffer.

    Attributes:
        env_id: the environment.
        mode: ``"sound"`` or ``"paper"``.
        status: ``"ok"`` when every transition was predicted; otherwise the sandbox status of the
            failure (``exception``, ``invalid_output``, ``timeout``, ``memory``, ``crashed``,
            ``killed``); transitions not predicted count as wrong.
        score: the mode's score in [0, 1] (see `codeworld.scoring._scorer`).
        strict: fraction of transitions right in every component (the paper's "valid").
        components: per-component accuracies: ``state`` (all dimensions right), ``state_dims``
            (mean fraction of dimensions right), ``reward``, ``done``.
        skill: prediction skill ``1 - MSE(model) / MSE(state unchanged)`` on the predicted
            transitions, for continuous states (None for discrete ones or when undefined).
        floor: the do-nothing model on the same data.
        ceiling: the true simulator on the same data (None where it cannot be set from an
            observation).
        n_transitions: transitions in the buffer.
        n_predicted: transitions the model predicted before the end or its first failure.
        first_error: the first mispredicted transition (index, inputs, truth, prediction, wrong
            components), or the failure (index, message, line), or None when all are right.
        message: the failure message (None when status is ok).
        line: the model line of the failure, when known.
        compiled: whether the model ran compiled (native loop) in the worker.
        buffer: the buffer file scored on.
        backend: the kernel backend used for the comparison (``cpp`` or ``numba``).
        elapsed_s: wall time of the scoring (model run and comparison; references excluded).
    """

    env_id: str
    mode: str
    status: str
    score: float
    strict: float
    components: dict[str, float]
    skill: float | None
    floor: Reference | None
    ceiling: Reference | None
    n_transitions: int
    n_predicted: int
    first_error: dict[str, Any] | None
    message: str | None = None
    line: int | None = None
    compiled: bool | None = None
    buffer: str | None = None
    backend: str | None = None
    elapsed_s: float = 0.0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == "ok"

    @property
    def normalized(self) -> float | None:
        """The floor-normalised score ``(score - floor) / (ceiling - floor)``: 0 is the do-nothing
        model, 1 the true simulator (None without both references, or where they tie)."""
        return normalized_score(self.score, self.floor, self.ceiling)

    def summary(self) -> dict[str, Any]:
        """The headline figures as JSON-ready data: score, strict, components, floor, ceiling,
        floor-normalised score, transitions and status."""
        return _plain({
            "score": self.score, "strict": self.strict, "components": self.components,
            "skill": self.skill, "floor": None if self.floor is None else self.floor.score,
            "floor_strict": None if self.floor is None else self.floor.strict,
            "ceiling": None if self.ceiling is None else self.ceiling.score,
            "normalized": self.normalized, "n_transitions": self.n_transitions,
            "status": self.status, "message": self.message, "buffer": self.buffer})

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready dict (numpy values converted)."""
        return _plain(asdict(self))

    def to_json(self, **kwargs: Any) -> str:
        return json.dumps(self.to_dict(), **kwargs)

    def format(self) -> str:
        """A readable multi-line summary."""
        lines = [
            f"{self.env_id} ({self.mode} scoring, {self.n_transitions} transitions"
            f"{', ' + self.buffer if self.buffer else ''})",
            f"  status      {self.status}" + (f": {self.message}" if self.message else ""),
            f"  score       {self.score:.4f}   strict {self.strict:.4f}",
            "  components  " + "  ".join(f"{k} {v:.4f}" for k, v in self.components.items()),
        ]
        if self.skill is not None:
            lines.append(f"  skill       {self.skill:.4f}  (1 - MSE / MSE of 'state unchanged')")
        for ref in (self.floor, self.ceiling):
            if ref is not None:
                lines.append(f"  {ref.name:<11} {ref.score:.4f}   strict {ref.strict:.4f}")
        if self.normalized is not None:
            lines.append(f"  normalized  {self.normalized:.4f}  ((score - floor) / (ceiling - floor))")
        if self.ceiling is None and self.floor is not None:
            why = self.extra.get("ceiling_unavailable") or "the simulator cannot be set from an observation"
            lines.append(f"  ceiling     unavailable: {why}")
        if self.first_error:
            lines.append("  first error " + _format_error(self.first_error))
        return "\n".join(lines)


def normalized_score(score: float, floor: Any, ceiling: Any) -> float | None:
    """``(score - floor) / (ceiling - floor)``; `floor` and `ceiling` are numbers or `Reference`s.
    None without both, or where the ceiling does not beat the floor."""
    floor = getattr(floor, "score", floor)
    ceiling = getattr(ceiling, "score", ceiling)
    if score is None or floor is None or ceiling is None or ceiling - floor <= 1e-12:
        return None
    return float((score - floor) / (ceiling - floor))


def _format_error(err: dict[str, Any]) -> str:
    if "exception" in err:
        return str(err["exception"])
    wrong = ", ".join(err.get("wrong", []))
    return (f"transition {err['index']} ({wrong} wrong)\n"
            f"    state      {err['state']}\n    action     {err['action']}\n"
            f"    expected   next_state={err['expected']['next_state']} "
            f"reward={err['expected']['reward']} done={err['expected']['done']}\n"
            f"    predicted  next_state={err['predicted']['next_state']} "
            f"reward={err['predicted']['reward']} done={err['predicted']['done']}")


def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, np.ndarray):
        return _plain(value.tolist())
    if isinstance(value, np.generic):
        return _plain(value.item())
    if isinstance(value, float) and not np.isfinite(value):
        return None if np.isnan(value) else ("inf" if value > 0 else "-inf")
    return value
