"""A sandbox worker holding one loaded world model: its ops, and `ModelWorker`, the parent's handle.

The world-model contract (`codeworld._model`) meets the sandbox here. `op_load` executes a program
in the worker and keeps the `LoadedModel`; `op_predict` steps it over a batch; any other op that
works with the loaded model (planning, the speed measurement) finds it with `loaded_model`.
`ModelWorker` checks the program in the parent, loads it once and serves many batches, loading it
again in a fresh worker after a request that ended the last one.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

import codeworld._model as cwm
from codeworld.sandbox import Sandbox, SandboxLimits, SandboxResult
from codeworld.sandbox._ops import OpFailure

# One program's run over a whole replay buffer: the default limit of a `ModelWorker` request
# (scoring, the constant fit's held-out passes, synthesis and its jobs name it as theirs).
PROGRAM_TIMEOUT_S = 60.0


# -- the worker side ----------------------------------------------------------------------------


def loaded_model(ctx) -> cwm.LoadedModel:
    """The `codeworld._model.LoadedModel` that `op_load` loaded in this worker (as `ModelWorker`
    does before any other op)."""
    model = ctx.state.get("model")
    if model is None:
        raise RuntimeError("no model loaded in this worker (run op_load first)")
    return model


def op_load(ctx, source: str, discrete: bool, compile: bool = True, filename: str = "model.py") -> dict:
    """Execute the program and try to compile it. Returns `LoadedModel.info()`."""
    ctx.state["filename"] = filename
    try:
        model = cwm.load_model(source, discrete=discrete, compile=compile, filename=filename)
    except cwm.ModelSourceError as exc:
        raise OpFailure("exception", str(exc), line=exc.line, type="ModelSourceError") from None
    ctx.state["model"] = model
    return model.info()


def transition_failure(ctx, index: int, error: Exception) -> OpFailure:
    """The failure of transition `index`, whose step raised `error` or returned it (`InvalidOutput`)."""
    if isinstance(error, cwm.InvalidOutput):
        return OpFailure("invalid_output", f"transition {index}: {error}", transition=index,
                         type="InvalidOutput")
    status = "memory" if isinstance(error, MemoryError) else "exception"
    return OpFailure.from_exception(error, ctx.state.get("filename"), status=status, transition=index)


def op_predict(ctx, states: np.ndarray, actions: np.ndarray, chunk: int | None = None,
               partial_every_s: float = 0.25) -> dict:
    """Predict (next_state, reward, done) for every transition, in order.

    Predictions stream to the parent as partial results ``{"start", "next_states", "rewards",
    "dones"}``; the first transition that raises or returns something outside the contract ends
    the op with status ``exception`` / ``invalid_output`` (or ``memory``) naming the transition.
    Compiled models run in one native loop per chunk; others in one Python loop.
    """
    model = loaded_model(ctx)
    states = np.ascontiguousarray(states, dtype=np.float64).reshape(len(states), -1)
    actions = np.ascontiguousarray(actions, dtype=np.float64).reshape(len(actions), -1)
    n, n_state = states.shape
    if len(actions) != n:
        raise ValueError(f"states and actions differ in length ({n} vs {len(actions)})")

    if model.compiled:
        from codeworld.kernels._rollout import step_batch

        size = chunk or 65536
        for start in range(0, n, size):
            stop = min(n, start + size)
            nxt, rew, done, status, stepped = step_batch(model, states[start:stop], actions[start:stop])
            if stepped:
                ctx.emit({"start": start, "next_states": nxt[:stepped], "rewards": rew[:stepped],
                          "dones": done[:stepped]})
            if stepped < stop - start:
                index = start + stepped
                # Re-run the failing transition on the Python path for a readable message.
                for _, _, error in cwm.step_each(model.step, states[index:index + 1],
                                                 actions[index:index + 1], discrete=model.discrete):
                    if error is not None:
                        raise transition_failure(ctx, index, error)
                code = int(status[stepped])
                raise OpFailure("exception" if code == cwm.STEP_EXCEPTION else "invalid_output",
                                f"transition {index}: {cwm.STEP_STATUS_MESSAGES.get(code, f'status {code}')}",
                                transition=index, type="InvalidOutput")
        return {"n": n, "compiled": True}

    size = chunk or 4096
    out_states = np.empty((min(size, n), n_state))
    out_rewards = np.empty(min(size, n))
    out_dones = np.empty(min(size, n), dtype=bool)
    start = 0
    filled = 0

    def flush() -> None:
        nonlocal start, filled
        if filled:
            ctx.emit({"start": start, "next_states": out_states[:filled].copy(),
                      "rewards": out_rewards[:filled].copy(), "dones": out_dones[:filled].copy()})
        start += filled
        filled = 0

    last_emit = time.monotonic()
    try:
        for i, output, error in cwm.step_each(model.step, states, actions, discrete=model.discrete):
            if error is not None:
                raise transition_failure(ctx, i, error)
            out_states[filled], out_rewards[filled], out_dones[filled] = output
            filled += 1
            now = time.monotonic()
            if filled == len(out_states) or now - last_emit >= partial_every_s:
                flush()
                last_emit = now
    finally:  # what was predicted reaches the parent, whatever ends the loop (a timeout too)
        flush()
    return {"n": n, "compiled": False}


# -- the parent side ----------------------------------------------------------------------------


def _chunk_problem(chunk: Any, n: int, n_state: int) -> str | None:
    """What makes `chunk` no partial result of `op_predict` for `n` transitions of `n_state`
    numbers, or None."""
    if type(chunk) is not dict:
        return f"a partial result that is {type(chunk).__name__}, not a dict"
    start = chunk.get("start")
    if type(start) is not int or not 0 <= start <= n:
        return f"a partial result starting at {start!r}"
    arrays = [chunk.get(key) for key in ("next_states", "rewards", "dones")]
    if not all(isinstance(a, np.ndarray) and a.dtype.kind in "biuf" for a in arrays):
        return "a partial result without numeric arrays"
    k = len(arrays[1]) if arrays[1].ndim == 1 else -1
    if k < 0 or start + k > n or arrays[0].shape != (k, n_state) or arrays[2].shape != (k,):
        return "a partial result of the wrong shape"
    return None



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
        limits: sandbox limits (default: `PROGRAM_TIMEOUT_S` per request, Numba preloaded when
            compiling). A compiling load gets at least `PROGRAM_TIMEOUT_S`: Numba takes seconds
            that no step takes.
    """

    def __init__(self, source: str, *, discrete: bool, compile: bool = True,
                 limits: SandboxLimits | None = None):
        cwm.check_model_source(source)  # raises ModelSourceError with a line
        self.source = source
        self.discrete = discrete
        self.compile = compile
        self.sandbox = Sandbox(limits or SandboxLimits(timeout_s=PROGRAM_TIMEOUT_S, preload_numba=compile))
        self.info: dict = {}
        self.load_result: SandboxResult | None = None

    def load(self) -> SandboxResult:
        """Start the worker if needed and load the program. ``value`` is the model's info."""
        if self.load_result is not None and self.load_result.ok and self.sandbox.alive:
            return self.load_result
        timeout_s = self.sandbox.limits.timeout_s
        if self.compile:  # compiling takes seconds no step takes, more on a busy machine
            timeout_s = max(timeout_s, PROGRAM_TIMEOUT_S)
        result = self.sandbox.call(op_load, timeout_s=timeout_s, source=self.source, discrete=self.discrete,
                                   compile=self.compile)
        if result.ok and type(result.value) is not dict:
            result = self._invalid_reply(result, f"a load that returned {type(result.value).__name__}")
        self.load_result = result
        if result.ok:
            self.info = result.value
        return result

    def call(self, op: Callable, timeout_s: float | None = None, **kwargs: Any) -> SandboxResult:
        """Run an op (see `codeworld.sandbox._ops`) against the loaded model, loading it first when
        needed; inside the op, `loaded_model(ctx)` is the model."""
        loaded = self.load()
        if not loaded.ok:
            return loaded
        return self.sandbox.call(op, timeout_s=timeout_s, **kwargs)

    def predict(self, states: np.ndarray, actions: np.ndarray, timeout_s: float | None = None) -> Prediction:
        """Predict every transition of a batch; stops at the first failing one.

        Partial results that are not what `op_predict` sends (the candidate wrote to the worker's
        pipe) make the whole batch an ``invalid_reply`` with nothing predicted."""
        states = np.asarray(states, dtype=np.float64)
        states = states.reshape(len(states), -1)
        actions = np.asarray(actions, dtype=np.float64).reshape(len(states), -1)
        result = self.call(op_predict, timeout_s=timeout_s, states=states, actions=actions)
        n, n_state = states.shape
        next_states = np.full((n, n_state), np.nan)
        rewards = np.full(n, np.nan)
        dones = np.zeros(n, dtype=bool)
        count = 0
        for chunk in result.partial:
            problem = _chunk_problem(chunk, n, n_state)
            if problem is not None:
                result = self._invalid_reply(result, problem)
                next_states[:], rewards[:], dones[:], count = np.nan, np.nan, False, 0
                break
            start = chunk["start"]
            k = len(chunk["rewards"])
            next_states[start:start + k] = chunk["next_states"]
            rewards[start:start + k] = chunk["rewards"]
            dones[start:start + k] = chunk["dones"]
            count = max(count, start + k)
        result.partial = []  # the arrays above hold them now
        return Prediction(result, next_states, rewards, dones, count, dict(self.info))

    def _invalid_reply(self, result: SandboxResult, problem: str) -> SandboxResult:
        """The failure for a reply that passed the sandbox's checks but is not what the op
        returns; the worker, whose pipe the candidate wrote to, goes."""
        self.sandbox.close()
        return SandboxResult("invalid_reply", message=f"the worker replied with {problem} (the program "
                             f"wrote to the sandbox's pipe?)", stdout=result.stdout, stderr=result.stderr,
                             elapsed_s=result.elapsed_s)

    def close(self) -> None:
        self.sandbox.close()

    def __enter__(self) -> "ModelWorker":
        return self

    def __exit__(self, *exc) -> None:
        self.close()
