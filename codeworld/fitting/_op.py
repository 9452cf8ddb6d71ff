"""The fit's sandbox op: the whole optimizer loop runs inside the worker, next to the program.

``op_fit`` receives the program, the training transitions and the fit's config; it evaluates the
program at every parameter vector the optimizer asks for and returns the best vector found. Two
ways to evaluate, both exact:

* **compiled** (fast): the program with its literals read at run time (`parametrize`), compiled
  once with Numba; each evaluation writes the vector into a buffer the compiled code reads and
  steps the training batch in one native loop (`codeworld.kernels._rollout.step_batch`). Used
  only when it predicts exactly as the rewritten program at two parameter vectors.
* **python**: the program rewritten with the vector's values (`rewrite_literals`), loaded and
  stepped in a Python loop; slower, works for every program.
"""

from __future__ import annotations

import math
import time

import numpy as np

import codeworld._model as cwm
from codeworld.fitting._literals import PARAM_FUNCTION, find_literals, parametrize, rewrite_literals
from codeworld.sandbox._ops import SandboxTimeout

# The normalized residual of a transition the program could not predict (raised, NaN, bad shape).
FAILED_RESIDUAL = 1e3


class _Stop(Exception):
    """The evaluation or time cap was reached."""


def _param_reader(values: np.ndarray):
    """A Numba function ``_cw_param(i)`` reading ``values[i]`` at run time (not frozen at compile)."""
    import numba
    from numba import carray, types as nt
    from numba.extending import intrinsic

    address = int(values.ctypes.data)
    size = int(values.size)

    @intrinsic
    def as_double_ptr(typingctx, addr):
        def codegen(context, builder, signature, args):
            return builder.inttoptr(args[0], context.get_value_type(nt.CPointer(nt.float64)))

        return nt.CPointer(nt.float64)(nt.int64), codegen

    @numba.njit
    def read(i):
        return carray(as_double_ptr(address), (size,))[i]

    return read


class _Evaluator:
    """Predicts the training transitions for a parameter vector, by either path."""

    def __init__(self, source: str, literals: list, states, actions, discrete: bool):
        self.source = source
        self.literals = literals
        self.states = states
        self.actions = actions
        self.discrete = discrete
        self.n, self.d = states.shape
        self.path = "python"
        self.compile_note = ""
        self._values = np.array([lit.value for lit in literals], dtype=np.float64)
        self._compiled = None

    def try_compiled(self) -> None:
        """Switch to the compiled path when it compiles and agrees with the Python path."""
        text = parametrize(self.source, self.literals)
        if text is None:
            self.compile_note = "module-level constants this fit cannot follow at run time"
            return
        try:
            reader = _param_reader(self._values)
            model = cwm.load_model(text, discrete=self.discrete, compile=True,
                                   filename="model_parametrized.py",
                                   extra_globals={PARAM_FUNCTION: reader})
        except SandboxTimeout:
            raise
        except Exception as exc:  # noqa: BLE001 - any failure means: use the Python path
            self.compile_note = f"{type(exc).__name__}: {exc}"[:300]
            return
        if not model.compiled:
            self.compile_note = (model.compile_error or "not compiled").splitlines()[0][:300]
            return
        self._compiled = model
        x0 = self._values.copy()
        probes = [x0, x0 * (1.0 + 1e-3) + 1e-6]
        for x in probes:
            fast = self._predict_compiled(x)
            slow = self._predict_python(x)
            if not _same(fast, slow):
                self._compiled = None
                self.compile_note = "the compiled parametrized program differs from the rewritten one"
                return
        self.path = "compiled"

    def predict(self, x: np.ndarray):
        if self._compiled is not None:
            return self._predict_compiled(x)
        return self._predict_python(x)

    def _predict_compiled(self, x: np.ndarray):
        from codeworld.kernels._rollout import step_batch

        self._values[:] = x
        nxt, rew, done, status, _ = step_batch(self._compiled, self.states, self.actions,
                                               stop_on_error=False)
        return nxt, rew, done, status == cwm.STEP_OK

    def _predict_python(self, x: np.ndarray):
        n, d = self.n, self.d
        nxt = np.zeros((n, d))
        rew = np.zeros(n)
        done = np.zeros(n, bool)
        ok = np.zeros(n, bool)
        try:
            source = rewrite_literals(self.source, self.literals, x)
            model = cwm.load_model(source, discrete=self.discrete, compile=False)
        except SandboxTimeout:
            raise
        except Exception:  # noqa: BLE001 - the program fails to load at this point: all wrong
            return nxt, rew, done, ok
        for i, output, error in cwm.step_each(model.step, self.states, self.actions,
                                              discrete=self.discrete):
            if error is None:  # a transition that failed counts as wrong
                nxt[i], rew[i], done[i] = output
                ok[i] = True
        return nxt, rew, done, ok


def _same(a, b) -> bool:
    nxt_a, rew_a, done_a, ok_a = a
    nxt_b, rew_b, done_b, ok_b = b
    if not np.array_equal(ok_a, ok_b):
        return False
    return (np.allclose(nxt_a[ok_a], nxt_b[ok_b], rtol=1e-9, atol=1e-12)
            and np.allclose(rew_a[ok_a], rew_b[ok_b], rtol=1e-9, atol=1e-12)
            and np.array_equal(done_a[ok_a], done_b[ok_b]))


def _scale(values: np.ndarray, fallback: np.ndarray | None = None) -> float:
    rms = float(np.sqrt(np.mean(np.square(values)))) if values.size else 0.0
    if rms > 0 and math.isfinite(rms):
        return rms
    if fallback is not None:
        return _scale(fallback)
    return 1.0


def op_fit(ctx, source: str, states, actions, next_states, rewards, terminated, discrete: bool,
           method: str, max_evaluations: int, max_seconds: float, max_constants: int,
           compiled: bool = True) -> dict:
    """Fit the program's literals to the training transitions; returns the best values found.

    The objective is a normalized squared error over the transitions: per next-state dimension
    the error divided by the RMS of that dimension's recorded change (so every dimension counts
    alike, and a model no better than "nothing moves" has about 1 per dimension), the reward
    error divided by the RMS of the rewards' spread, and 1 for each wrong ``done``. A transition
    the program cannot predict counts `FAILED_RESIDUAL` in each component.
    """
    from scipy import optimize

    started = time.monotonic()
    literals = find_literals(source)[:max_constants]
    states = np.ascontiguousarray(states, dtype=np.float64)
    actions = np.ascontiguousarray(actions, dtype=np.float64).reshape(len(states), -1)
    next_states = np.ascontiguousarray(next_states, dtype=np.float64)
    rewards = np.asarray(rewards, dtype=np.float64)
    terminated = np.asarray(terminated, dtype=bool)
    n, d = states.shape
    state_scale = np.array([_scale(next_states[:, j] - states[:, j], next_states[:, j]) for j in range(d)])
    reward_scale = _scale(rewards - rewards.mean(), rewards)
    norm = math.sqrt(n * (d + 2))

    evaluator = _Evaluator(source, literals, states, actions, discrete)
    if compiled:
        evaluator.try_compiled()
    x0 = np.array([lit.value for lit in literals], dtype=np.float64)
    best = {"x": x0.copy(), "cost": math.inf}
    counter = {"evaluations": 0, "stopped": ""}

    def residuals(x: np.ndarray) -> np.ndarray:
        if counter["evaluations"] >= max_evaluations:
            counter["stopped"] = "max_evaluations"
            raise _Stop
        if time.monotonic() - started > max_seconds:
            counter["stopped"] = "max_seconds"
            raise _Stop
        counter["evaluations"] += 1
        if not np.all(np.isfinite(x)):
            return np.full(n * (d + 2), FAILED_RESIDUAL / norm)
        nxt, rew, done, ok = evaluator.predict(np.asarray(x, dtype=np.float64))
        r_state = (nxt - next_states) / state_scale
        r_reward = (rew - rewards) / reward_scale
        r_done = (done != terminated).astype(np.float64)
        r_state[~ok] = FAILED_RESIDUAL
        r_reward[~ok] = FAILED_RESIDUAL
        r_done[~ok] = FAILED_RESIDUAL
        out = np.concatenate([r_state.ravel(), r_reward, r_done])
        out = np.clip(np.nan_to_num(out, nan=FAILED_RESIDUAL), -FAILED_RESIDUAL, FAILED_RESIDUAL) / norm
        cost = float(out @ out)
        if cost < best["cost"]:
            best["cost"] = cost
            best["x"] = np.array(x, dtype=np.float64)
        return out

    initial = residuals(x0)
    initial_cost = float(initial @ initial)
    message = ""
    try:
        if method == "least_squares":
            scale = np.where(x0 != 0, np.abs(x0), 1.0)
            optimize.least_squares(residuals, x0, method="trf", x_scale=scale,
                                   max_nfev=max_evaluations)
        else:
            method_name = {"nelder-mead": "Nelder-Mead", "powell": "Powell"}[method]
            optimize.minimize(lambda x: float(np.sum(np.square(residuals(x)))), x0,
                              method=method_name, options={"maxfev": max_evaluations,
                                                           "xatol": 1e-12, "fatol": 1e-16})
    except _Stop:
        pass
    except (ValueError, np.linalg.LinAlgError, FloatingPointError) as exc:
        message = f"the optimizer stopped: {type(exc).__name__}: {exc}"
    return {
        "values": [float(v) for v in best["x"]],
        "initial_values": [float(v) for v in x0],
        "objective_before": initial_cost,
        "objective_after": float(best["cost"]),
        "evaluations": counter["evaluations"],
        "stopped": counter["stopped"] or "converged",
        "path": evaluator.path,
        "compile_note": evaluator.compile_note,
        "seconds": time.monotonic() - started,
        "message": message,
    }
