"""The speed step: a program that scores well is made fast, and kept fast only if it stays right.

Correct first, fast second (DESIGN.md). `speed_step` takes a model program as the LLM wrote it:

1. If Numba compiles it as written, it is planned with through its C function pointer.
2. Otherwise candidate ports are tried in order: the mechanical rewrites of `codeworld._porting`,
   then any extra porters the caller gives (for instance an LLM asked to "make this compile",
   whose calls the caller accounts apart from the search budget). A port is kept only if Numba
   compiles it *and* it predicts the same as the original (next state and reward to 1e-9
   relative, ``done`` exactly, failures at the same transition) on every transition of the
   buffer (`check_port`).
3. Failing that, the original runs on the Python path (one batched call per planner level).

The report says whether the program runs compiled, how (as written or ported, by which
rewrites), and how many model steps per second the planner's rollout loop makes with it.
Every program runs in sandbox workers; nothing here executes candidate code in this process.
"""

from __future__ import annotations

import dataclasses
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

import numpy as np

from codeworld._model_worker import ModelWorker, loaded_model
from codeworld._porting import mechanical_port

# One prediction pass of the equality check (`check_port`), when the caller names no limit: the
# original runs on the Python path, slower than the program timeout assumes.
PORT_CHECK_TIMEOUT_S = 120.0
# Relative and absolute tolerance of "predicts the same" (rounding differences of compiled math).
SAME_RTOL = 1e-9
SAME_ATOL = 1e-12

Porter = Callable[[str, str], "str | None"]


@dataclass
class PortCheck:
    """Whether a port predicts as the original on every transition of a buffer.

    Attributes:
        equal: it does (and the port compiled).
        compiled: the port compiled with Numba.
        transitions: transitions compared.
        first_difference: the first transition where they differ (None when equal).
        message: what differs, or why the port was refused, in words.
    """

    equal: bool
    compiled: bool
    transitions: int
    first_difference: int | None = None
    message: str = ""


@dataclass
class SpeedReport:
    """The speed step's outcome for one program.

    Attributes:
        compiled: the program (or its kept port) runs compiled.
        ported: a port was needed and kept.
        source: the program to plan with: the kept port, else the original.
        how: ``as_written``, ``mechanical_port``, ``porter_<i>`` (the i-th extra porter) or
            ``python`` (no compiled form).
        rewrites: the mechanical rewrites of the kept (or last refused) port.
        compile_error: why Numba could not compile the original (None when it could).
        ports_tried: per candidate port: how it was made and its `PortCheck`.
        steps_per_s: model steps per second in the planner's rollout loop (compiled: the native
            rollout kernel; Python: batched steps), measured in the worker.
        seconds: wall time of the whole step.
    """

    compiled: bool
    ported: bool
    source: str
    how: str
    rewrites: list[str] = field(default_factory=list)
    compile_error: str | None = None
    ports_tried: list[dict] = field(default_factory=list)
    steps_per_s: float | None = None
    seconds: float = 0.0

    def to_json(self) -> dict:
        data = dataclasses.asdict(self)
        data.pop("source")
        return data


def _worker(source: str, discrete: bool, compile: bool, limits: Any) -> ModelWorker:
    return ModelWorker(source, discrete=discrete, compile=compile, limits=limits)


def _same(a, b) -> bool:
    return bool(np.allclose(a, b, rtol=SAME_RTOL, atol=SAME_ATOL, equal_nan=True))


def check_port(original: str, port: str, states: np.ndarray, actions: np.ndarray, *,
               discrete: bool, limits: Any = None,
               timeout_s: float | None = PORT_CHECK_TIMEOUT_S) -> PortCheck:
    """Compare a port (compiled) with the original (Python path) on every given transition."""
    from codeworld._model import ModelSourceError

    n = len(states)
    try:
        port_worker = _worker(port, discrete, True, limits)
    except ModelSourceError as exc:
        return PortCheck(False, False, n, None, f"the port is not a world model: {exc}")
    with _worker(original, discrete, False, limits) as original_worker, port_worker:
        loaded = port_worker.load()
        if not loaded.ok:
            return PortCheck(False, False, n, None, f"the port does not load: {loaded.summary()}")
        if not port_worker.info.get("compiled"):
            error = (port_worker.info.get("compile_error") or "").splitlines()
            return PortCheck(False, False, n, None,
                             "the port does not compile: " + (error[0] if error else "unknown"))
        want = original_worker.predict(states, actions, timeout_s=timeout_s)
        got = port_worker.predict(states, actions, timeout_s=timeout_s)
    if want.result.status == "timeout" or got.result.status == "timeout":
        return PortCheck(False, True, n, None, "a prediction pass timed out")
    common = min(want.n_predicted, got.n_predicted)
    for i in range(common):
        if not (_same(want.next_states[i], got.next_states[i]) and _same(want.rewards[i], got.rewards[i])
                and want.dones[i] == got.dones[i]):
            return PortCheck(False, True, n, i, f"transition {i}: the port predicts "
                             f"({got.next_states[i].tolist()}, {got.rewards[i]}, {bool(got.dones[i])}), "
                             f"the original ({want.next_states[i].tolist()}, {want.rewards[i]}, "
                             f"{bool(want.dones[i])})")
    if want.n_predicted != got.n_predicted or want.result.status != got.result.status:
        return PortCheck(False, True, n, common,
                         f"transition {common}: the original ends with {want.result.summary()}, "
                         f"the port with {got.result.summary()}")
    return PortCheck(True, True, n)


def measure_steps_per_second(worker: Any, states: np.ndarray, actions: np.ndarray, *,
                             seconds: float = 0.5, horizon: int = 100) -> float | None:
    """Model steps per second of the planner's rollout loop with the program in `worker`."""
    result = worker.call(op_steps_per_second, states=states, actions=actions, seconds=seconds, horizon=horizon,
                         timeout_s=seconds * 4 + 30)
    if not result.ok:
        return None
    return result.value["steps_per_s"]


def op_steps_per_second(ctx, states, actions, seconds: float = 0.5, horizon: int = 100,
                        seed: int = 0) -> dict:
    """Roll the loaded model out from buffer states with buffer actions until `seconds` pass."""
    from codeworld.kernels._rollout import rollout_batch
    from codeworld.planning._ops import python_step_batch

    model = loaded_model(ctx)
    rng = np.random.default_rng(seed)
    states = np.ascontiguousarray(states, dtype=np.float64).reshape(len(states), -1)
    actions = np.ascontiguousarray(actions, dtype=np.float64).reshape(len(states), -1)
    batch = min(256, len(states))
    steps = 0
    started = time.perf_counter()
    while True:
        starts = states[rng.integers(0, len(states), batch)]
        picks = actions[rng.integers(0, len(actions), (batch, horizon))]
        if model.compiled:
            _, stepped, _ = rollout_batch(model, starts, picks)
            steps += int(np.sum(stepped))
        else:
            step = python_step_batch(model)
            current = starts.copy()
            for t in range(horizon):
                current, _, _ = step(current, picks[:, t])
                steps += batch
                if time.perf_counter() - started >= seconds:
                    break
        elapsed = time.perf_counter() - started
        if elapsed >= seconds:
            return {"steps_per_s": steps / elapsed, "steps": steps, "seconds": elapsed,
                    "compiled": bool(model.compiled)}


def speed_step(source: str, states: np.ndarray, actions: np.ndarray, *, discrete: bool,
               porters: Sequence[Porter] = (), limits: Any = None, measure_s: float = 0.5,
               timeout_s: float | None = PORT_CHECK_TIMEOUT_S) -> SpeedReport:
    """Compile the program, or port it and keep the port only if it predicts the same.

    Args:
        source: the model program as written.
        states: the states of the equality check's transitions (the whole buffer).
        actions: their actions.
        discrete: whether actions are integers.
        porters: extra port makers tried after the mechanical port, each
            ``porter(source, compile_error) -> program or None`` (e.g. an LLM call).
        limits: sandbox limits of the workers.
        measure_s: seconds of the steps-per-second measurement.
        timeout_s: wall-clock limit of each prediction pass.
    """
    from codeworld._model import ModelSourceError

    started = time.perf_counter()
    states = np.asarray(states, dtype=np.float64)
    try:
        worker = _worker(source, discrete, True, limits)
    except ModelSourceError as exc:
        return SpeedReport(False, False, source, "python", compile_error=str(exc),
                           seconds=time.perf_counter() - started)
    with worker:
        loaded = worker.load()
        if loaded.ok and worker.info.get("compiled"):
            speed = measure_steps_per_second(worker, states, actions, seconds=measure_s)
            return SpeedReport(True, False, source, "as_written", steps_per_s=speed,
                               seconds=time.perf_counter() - started)
        compile_error = (worker.info.get("compile_error") if loaded.ok else loaded.summary()) or ""
    report = SpeedReport(False, False, source, "python", compile_error=compile_error)
    if not loaded.ok:
        report.seconds = time.perf_counter() - started
        return report

    mechanical = mechanical_port(source)
    candidates: list[tuple[str, Callable[[], tuple[str | None, list[str]]]]] = []
    if mechanical.changed:
        candidates.append(("mechanical_port", lambda: (mechanical.source, mechanical.rewrites)))
    for i, porter in enumerate(porters):
        candidates.append((f"porter_{i}", lambda porter=porter: (porter(source, compile_error), [])))
    for how, make in candidates:
        port, rewrites = make()
        if not port or port == source:
            report.ports_tried.append({"how": how, "equal": False, "message": "no port"})
            continue
        check = check_port(source, port, states, actions, discrete=discrete, limits=limits,
                           timeout_s=timeout_s)
        report.ports_tried.append({"how": how, "rewrites": rewrites, **dataclasses.asdict(check)})
        report.rewrites = rewrites
        if check.equal:
            with _worker(port, discrete, True, limits) as port_worker:
                report.steps_per_s = measure_steps_per_second(port_worker, states, actions,
                                                              seconds=measure_s)
            report.compiled, report.ported, report.source, report.how = True, True, port, how
            report.seconds = time.perf_counter() - started
            return report
    with _worker(source, discrete, False, limits) as python_worker:
        report.steps_per_s = measure_steps_per_second(python_worker, states, actions,
                                                      seconds=measure_s)
    report.seconds = time.perf_counter() - started
    return report
