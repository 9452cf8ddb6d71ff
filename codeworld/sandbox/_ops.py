"""Built-in sandbox ops: load a model program, report on it, and step it over a batch.

Each op runs inside the worker process and has the signature ``op(ctx, **kwargs)``.
"""

from __future__ import annotations

import time
from typing import Any

import numpy as np

from codeworld import model as cwm
from codeworld.sandbox._guards import SandboxTimeout


class OpFailure(Exception):
    """An op's structured failure; `record` is sent to the parent as is."""

    def __init__(self, record: dict):
        super().__init__(record.get("message", ""))
        self.record = record


def _require_model(ctx) -> cwm.LoadedModel:
    model = ctx.state.get("model")
    if model is None:
        raise RuntimeError("no model loaded in this worker (call the 'load' op first)")
    return model


def op_ping(ctx, **_: Any) -> str:
    return "pong"


def op_load(ctx, source: str, discrete: bool, compile: bool = True, filename: str = "model.py") -> dict:
    """Execute the program and try to compile it. Returns `LoadedModel.info()`."""
    ctx.state["filename"] = filename
    try:
        model = cwm.load_model(source, discrete=discrete, compile=compile, filename=filename)
    except cwm.ModelSourceError as exc:
        raise OpFailure({"status": "exception", "type": "ModelSourceError", "message": str(exc),
                         "line": exc.line, "code": None, "traceback": ""}) from None
    ctx.state["model"] = model
    return model.info()


def _transition_failure(ctx, index: int, status: str, message: str, exc: BaseException | None = None) -> OpFailure:
    from codeworld.sandbox._worker import candidate_error

    if exc is not None:
        record = candidate_error(exc, ctx.state.get("filename"))
        record["message"] = f"transition {index}: {record['message']}"
    else:
        record = {"type": "InvalidOutput", "message": f"transition {index}: {message}", "line": None,
                  "code": None, "traceback": ""}
    record["status"] = status
    record["transition"] = index
    return OpFailure(record)


def _python_step(model: cwm.LoadedModel, state: np.ndarray, action_row: np.ndarray):
    action = int(action_row[0]) if model.discrete else action_row.copy()
    return model.step(state.copy(), action)


def op_predict(ctx, states: np.ndarray, actions: np.ndarray, chunk: int | None = None,
               partial_every_s: float = 0.25) -> dict:
    """Predict (next_state, reward, done) for every transition, in order.

    Predictions stream to the parent as partial results ``{"start", "next_states", "rewards",
    "dones"}``; the first transition that raises or returns something outside the contract ends
    the op with status ``exception`` / ``invalid_output`` (or ``memory``) naming the transition.
    Compiled models run in one native loop per chunk; others in one Python loop.
    """
    model = _require_model(ctx)
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
                code = int(status[stepped])
                # Re-run the failing transition on the Python path for a readable message.
                try:
                    result = _python_step(model, states[index], actions[index])
                    cwm.validate_output(result, n_state)
                except cwm.InvalidOutput as exc:
                    raise _transition_failure(ctx, index, "invalid_output", str(exc)) from None
                except MemoryError as exc:
                    raise _transition_failure(ctx, index, "memory", "", exc) from None
                except BaseException as exc:  # noqa: BLE001
                    raise _transition_failure(ctx, index, "exception", "", exc) from None
                status_name = "exception" if code == cwm.STEP_EXCEPTION else "invalid_output"
                raise _transition_failure(ctx, index, status_name,
                                          cwm.STEP_STATUS_MESSAGES.get(code, f"status {code}"))
        return {"n": n, "compiled": True}

    size = chunk or 4096
    out_states = np.empty((min(size, n), n_state))
    out_rewards = np.empty(min(size, n))
    out_dones = np.empty(min(size, n), dtype=bool)
    start = 0
    filled = 0
    last_emit = time.monotonic()
    for i in range(n):
        try:
            result = _python_step(model, states[i], actions[i])
            nxt, reward, done = cwm.validate_output(result, n_state)
        except BaseException as exc:  # noqa: BLE001 - flushed below, then reported
            if filled:
                ctx.emit({"start": start, "next_states": out_states[:filled].copy(),
                          "rewards": out_rewards[:filled].copy(), "dones": out_dones[:filled].copy()})
            if isinstance(exc, SandboxTimeout):
                raise
            if isinstance(exc, cwm.InvalidOutput):
                raise _transition_failure(ctx, i, "invalid_output", str(exc)) from None
            if isinstance(exc, MemoryError):
                raise _transition_failure(ctx, i, "memory", "", exc) from None
            raise _transition_failure(ctx, i, "exception", "", exc) from None
        out_states[filled] = nxt
        out_rewards[filled] = reward
        out_dones[filled] = done
        filled += 1
        now = time.monotonic()
        if filled == len(out_states) or now - last_emit >= partial_every_s:
            ctx.emit({"start": start, "next_states": out_states[:filled].copy(),
                      "rewards": out_rewards[:filled].copy(), "dones": out_dones[:filled].copy()})
            start += filled
            filled = 0
            last_emit = now
    if filled:
        ctx.emit({"start": start, "next_states": out_states[:filled].copy(),
                  "rewards": out_rewards[:filled].copy(), "dones": out_dones[:filled].copy()})
    return {"n": n, "compiled": False}


def op_core_address_check(ctx, state: np.ndarray, action: np.ndarray) -> dict:
    """Step one transition through the compiled callback with the C++ extension (for tests)."""
    from codeworld._backend import core

    model = _require_model(ctx)
    if not model.compiled:
        raise RuntimeError(f"model is not compiled: {model.compile_error}")
    nxt, rew, done, status, stepped = core().step_batch(
        model.address, np.asarray(state, dtype=np.float64).reshape(1, -1),
        np.asarray(action, dtype=np.float64).reshape(1, -1), True)
    return {"next_state": nxt[0], "reward": float(rew[0]), "done": bool(done[0]), "status": int(status[0])}


BUILTIN_OPS = {
    "ping": op_ping,
    "load": op_load,
    "predict": op_predict,
    "core_address_check": op_core_address_check,
}
