"""The ops built into every worker: load a model program, and step it over a batch.

Each runs inside the worker process (see `codeworld.sandbox.ops`); the parent names them by their
short names (``ping``, ``load``, ``predict``), as `ModelWorker` does.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from codeworld import model as cwm
from codeworld.sandbox.ops import OpFailure, loaded_model, sandbox_op


@sandbox_op
def op_ping(ctx, **_: Any) -> str:
    return "pong"


@sandbox_op
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


@sandbox_op
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
        from codeworld.kernels.rollout import step_batch

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
