"""What every planner shares: how it reaches a model, what it must offer, and its decision seeds.

A model is reached in one of three ways, fastest first (DESIGN.md, Planning):

* compiled: a Numba-compiled ``step`` called through its C function pointer (`ModelAccess.compiled`,
  anything with ``address`` and ``cfunc``), no Python and no GIL in the loop;
* batched Python: ``step_batch(states, actions) -> (next_states, rewards, dones)`` called once per
  MCTS wave and rollout depth, or once per CEM iteration and time step;
* the oracle: the true simulator behind a batched step (`codeworld.planning._oracle`).

The planners themselves (`codeworld.planning._mcts`, `codeworld.planning._cem`) and the registry that
names them (`codeworld.planning.registry`) build on this module.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Protocol

import numpy as np

BatchStep = Callable[[np.ndarray, np.ndarray], tuple]


@dataclass
class ModelAccess:
    """How a planner reaches a model: compiled (preferred) or a batched Python step.

    Attributes:
        compiled: an object with ``address`` (for C++) and ``cfunc`` (for Numba), or None.
        step_batch: a batched Python step, used when `compiled` is None.
        oracle: `step_batch` is the true simulator. MCTS then searches exactly as on a compiled
            model (the config's `wave_size`, not `python_wave_size`), so that oracle and CWM
            returns differ by the model only; the search runs in the Python reference, since each
            simulator step is a Python call anyway and C++ must not call back once per step.
    """

    compiled: Any = None
    step_batch: BatchStep | None = None
    oracle: bool = False

    def __post_init__(self) -> None:
        if self.compiled is None and self.step_batch is None:
            raise ValueError("ModelAccess needs a compiled model or a step_batch")

    @property
    def kind(self) -> str:
        return "compiled" if self.compiled is not None else "python"


class Planner(Protocol):
    """A planner as an agent: a state in, the next actions out.

    A planner class is built as ``cls(config, n_actions=..., action_low=..., action_high=...)``
    (the env's action space; a planner takes the keywords it needs and ignores the rest).

    Attributes:
        config: its frozen config.
        model_steps: simulated steps taken so far (all decisions together).
        last_info: what the last decision found, JSON-ready (root visits, predicted return, ...).
    """

    config: Any
    model_steps: int
    last_info: dict

    def reset(self) -> None:
        """Start a new episode."""

    def act(self, access: ModelAccess, state: np.ndarray, seed: int) -> list:
        """The actions to execute from `state` before asking again (at least one)."""


def decision_seed(seed: int, episode: int, step: int) -> int:
    """The planner's seed for one decision: a fixed mix of the run seed, episode and step."""
    x = (int(seed) * 0x9E3779B1 + int(episode) * 0x85EBCA77 + int(step) * 0xC2B2AE3D) & ((1 << 64) - 1)
    return x ^ (x >> 29)
