"""A sandbox worker holding one loaded model program, serving many batches for it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from codeworld.model import check_model_source
from codeworld.sandbox._runner import Sandbox, SandboxLimits, SandboxResult


@dataclass
class Prediction:
    """Predictions for a batch of transitions, complete or up to the first failure.

    Attributes:
        result: the sandbox record of the request (status, message, line, transition, output).
        next_states, rewards, dones: predictions for the first `n_predicted` transitions.
        n_predicted: how many transitions were predicted before the end or the first failure.
    """

    result: SandboxResult
    next_states: np.ndarray
    rewards: np.ndarray
    dones: np.ndarray
    n_predicted: int
    info: dict = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.result.ok


class ModelWorker:
    """Loads a model program once in a sandbox worker and steps it on request.

    The program is checked with `ast` in the parent first (a syntax error or a missing ``step``
    never reaches a worker). If a request ends the worker (timeout, crash), the next request starts
    a fresh worker and loads the program again.

    Args:
        source: the model program.
        discrete: whether actions are integers.
        compile: try Numba compilation (a functional model only).
        limits: sandbox limits.
    """

    def __init__(self, source: str, *, discrete: bool, compile: bool = True,
                 limits: SandboxLimits | None = None):
        check_model_source(source)  # raises ModelSourceError with a line
        self.source = source
        self.discrete = discrete
        self.compile = compile
        self.sandbox = Sandbox(limits or SandboxLimits(preload_numba=compile))
        self.info: dict = {}
        self.load_result: SandboxResult | None = None

    def load(self) -> SandboxResult:
        """Start the worker if needed and load the program. ``value`` is the model's info."""
        if self.load_result is not None and self.load_result.ok and self.sandbox.alive:
            return self.load_result
        result = self.sandbox.call("load", source=self.source, discrete=self.discrete,
                                   compile=self.compile)
        self.load_result = result
        if result.ok:
            self.info = result.value
        return result

    def call(self, op: Callable | str, timeout_s: float | None = None, **kwargs: Any) -> SandboxResult:
        """Run an op (see `codeworld.sandbox.ops`) against the loaded model, loading it first when
        needed; inside the op, `loaded_model(ctx)` is the model."""
        loaded = self.load()
        if not loaded.ok:
            return loaded
        return self.sandbox.call(op, timeout_s=timeout_s, **kwargs)

    def predict(self, states: np.ndarray, actions: np.ndarray, timeout_s: float | None = None) -> Prediction:
        """Predict every transition of a batch; stops at the first failing one."""
        states = np.asarray(states, dtype=np.float64)
        states = states.reshape(len(states), -1)
        actions = np.asarray(actions, dtype=np.float64).reshape(len(states), -1)
        result = self.call("predict", timeout_s=timeout_s, states=states, actions=actions)
        n, n_state = states.shape
        next_states = np.full((n, n_state), np.nan)
        rewards = np.full(n, np.nan)
        dones = np.zeros(n, dtype=bool)
        count = 0
        for chunk in result.partial:
            start = chunk["start"]
            k = len(chunk["rewards"])
            next_states[start:start + k] = chunk["next_states"]
            rewards[start:start + k] = chunk["rewards"]
            dones[start:start + k] = chunk["dones"]
            count = max(count, start + k)
        result.partial = []  # the arrays above hold them now
        return Prediction(result, next_states, rewards, dones, count, dict(self.info))

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> "ModelWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
