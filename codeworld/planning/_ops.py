"""Sandbox ops that plan with an untrusted model, inside the worker that loaded it.

The parent keeps the real environment and, per decision, sends the current state:

    worker.call(plan_reset, config=..., n_actions=..., ...)
    worker.call(plan_act, state=..., seed=...)

so a model that crashes or hangs mid-plan ends that request with a structured sandbox record
(exception, invalid_output, timeout, ...) and nothing else. A compiled model is planned with
through its C function pointer; any other through one batched Python call per depth level.
"""

from __future__ import annotations

import importlib
from types import SimpleNamespace

import numpy as np

import codeworld._model as cwm
from codeworld.kernels._mcts import PlanningModelError
from codeworld._model_worker import loaded_model
from codeworld.planning.planners import ModelAccess
from codeworld.planning.registry import PLANNERS, config_from_dict, make_planner
from codeworld.sandbox._ops import OpFailure


def python_step_batch(model: cwm.LoadedModel):
    """A batched step over a loaded model's Python ``step``, validating every output.

    A step that raises ends the batch with its exception; one that returns something outside the
    contract, with an ``invalid_output`` `OpFailure`.
    """

    def step_batch(states: np.ndarray, actions: np.ndarray):
        n, n_state = states.shape
        next_states = np.empty((n, n_state))
        rewards = np.empty(n)
        dones = np.empty(n, dtype=np.uint8)
        for i, output, error in cwm.step_each(model.step, states, actions, discrete=model.discrete):
            if isinstance(error, cwm.InvalidOutput):
                raise OpFailure.from_exception(error, model.filename, status="invalid_output") from None
            if error is not None:
                raise error
            next_states[i], rewards[i], dones[i] = output
        return next_states, rewards, dones

    return step_batch


def plan_reset(ctx, config: dict, n_actions: int = 0, action_low=(), action_high=(),
               planner_module: str | None = None, support: dict | None = None) -> dict:
    """Create the planner for a new episode. Returns how the model is reached.

    `planner_module` is the module that defines the planner: imported here when the planner is not
    registered yet (one registered outside codeworld registers itself there). `support` is the
    training data's support (`codeworld.planning._support.Support.to_dict`) when the config's
    support setting is on: the model is then reached through it.
    """
    model = loaded_model(ctx)
    if planner_module and config.get("planner") not in PLANNERS:
        importlib.import_module(planner_module)
    spec = SimpleNamespace(n_actions=n_actions, action_low=tuple(action_low), action_high=tuple(action_high))
    planner = ctx.state.get("planner")
    cfg = config_from_dict(config)
    if planner is None or planner.config != cfg:
        planner = make_planner(cfg, spec)
        ctx.state["planner"] = planner
    planner.reset()
    access = ModelAccess(compiled=model if model.compiled else None, step_batch=python_step_batch(model))
    if support is not None and getattr(cfg, "support", None) is not None and cfg.support.on:
        from codeworld.planning._support import Support, wrap_access

        wrapped = ctx.state.get("support_access")  # compiling the wrapper once per setting
        if wrapped is None or wrapped[0] != cfg.support:
            wrapped = (cfg.support, wrap_access(access, Support.from_dict(cfg.support, support)))
            ctx.state["support_access"] = wrapped
        access = wrapped[1]
    ctx.state["planner_access"] = access
    return {"access": "compiled" if model.compiled else "python", "compile_error": model.compile_error}


def plan_act(ctx, state, seed: int) -> dict:
    """Plan from `state`. Returns ``{"actions": [...], "model_steps": n, "info": {...}}``.

    A compiled model that fails (an exception, NaN, a wrong shape) is planned with again on the
    Python path with the same seed, so that the failure surfaces as the model's own exception with
    its line.
    """
    planner = ctx.state.get("planner")
    if planner is None:
        raise RuntimeError("plan_reset must come before plan_act")
    access: ModelAccess = ctx.state["planner_access"]
    state = np.ascontiguousarray(state, dtype=np.float64).ravel()
    before = planner.model_steps
    try:
        actions = planner.act(access, state, seed)
    except PlanningModelError:
        if access.compiled is None:
            raise
        actions = planner.act(ModelAccess(step_batch=access.step_batch), state, seed)
    return {
        "actions": [a.tolist() if isinstance(a, np.ndarray) else a for a in actions],
        "model_steps": planner.model_steps - before,
        "info": planner.last_info,
    }

