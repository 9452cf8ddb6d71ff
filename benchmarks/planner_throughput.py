"""Planner throughput: model steps and decisions per second, against a plain-Python planner and a C loop.

One run measures, on the same compiled models:

* ``cpp_compiled``: the C++ planner calling the Numba-compiled model through its C pointer;
* ``numba_compiled``: the Numba planner (the fallback) with the same model;
* ``cpp_batched_python``: the C++ planner with the model in the paper's class form (which Numba
  cannot compile), called through Python once per batch;
* ``python_paper``: a plain-Python planner with the costs of the CWMB paper's planners (node
  objects, deep copies of the simulator's attributes, ``set_state`` then ``step`` per simulated
  step, numpy random choices), on that Python model object;
* ``python_reference``: codeworld's own plain-Python planner (the kernels' slow reference) on that
  model object, one call per simulated step: a lean pure-Python baseline;
* ``c_loop``: a hand-written C loop (benchmarks/planner_c_baseline.c, compiled here with the
  system compiler) doing the same rollouts through the same C pointer: the practical limit.

MCTS plans on CartPole; CEM on Pendulum and on a HalfCheetah-sized model (17-dim state, 6-dim
action). Compiled variants run the paper's budgets; the Python variants run smaller budgets (they
would take minutes), so their throughput is compared per model step. Ratios are printed and the
results written to benchmarks/results/planner_throughput.{json,md}.

    .venv/bin/python benchmarks/planner_throughput.py [--quick]
"""

from __future__ import annotations

import argparse
import copy
import ctypes
import hashlib
import json
import os
import platform
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from codeworld import core_available
from codeworld.kernels._cem import cem_plan, cem_plan_batched, cem_reference
from codeworld.kernels._mcts import mcts_plan, mcts_plan_batched, mcts_reference
from codeworld._model import load_model

HERE = Path(__file__).resolve().parent
try:
    CORES = len(os.sched_getaffinity(0))
except AttributeError:
    CORES = os.cpu_count() or 1
RESULTS = HERE / "results"

CARTPOLE = '''
import math
import numpy as np

def step(state, action):
    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]
    force = 10.0 if action == 1 else -10.0
    cos_t = math.cos(theta)
    sin_t = math.sin(theta)
    temp = (force + 0.05 * theta_dot**2 * sin_t) / 1.1
    theta_acc = (9.8 * sin_t - cos_t * temp) / (0.5 * (4.0 / 3.0 - 0.1 * cos_t**2 / 1.1))
    x_acc = temp - 0.05 * theta_acc * cos_t / 1.1
    x = x + 0.02 * x_dot
    x_dot = x_dot + 0.02 * x_acc
    theta = theta + 0.02 * theta_dot
    theta_dot = theta_dot + 0.02 * theta_acc
    done = x < -2.4 or x > 2.4 or theta < -0.2095 or theta > 0.2095
    return np.array([x, x_dot, theta, theta_dot]), 1.0, done
'''

PENDULUM = '''
import math
import numpy as np

def step(state, action):
    th = math.atan2(state[1], state[0])
    thdot = state[2]
    u = min(max(action[0], -2.0), 2.0)
    norm = ((th + math.pi) % (2 * math.pi)) - math.pi
    cost = norm**2 + 0.1 * thdot**2 + 0.001 * u**2
    thdot = min(max(thdot + (15.0 * math.sin(th) + 3.0 * u) * 0.05, -8.0), 8.0)
    th = th + thdot * 0.05
    return np.array([math.cos(th), math.sin(th), thdot]), -cost, False
'''

# A HalfCheetah-sized model: 17-dim state, 6-dim action, a fixed nonlinear map and a
# forward-velocity-minus-control-cost reward (the shape of HalfCheetah's, not its physics).
CHEETAH = '''
import numpy as np

_R = np.random.default_rng(0)
A = np.eye(17) * 0.95 + _R.normal(0.0, 0.02, (17, 17))
B = _R.normal(0.0, 0.1, (17, 6))

def step(state, action):
    nxt = np.empty(17)
    for i in range(17):
        acc = 0.0
        for j in range(17):
            acc += A[i, j] * state[j]
        for j in range(6):
            acc += B[i, j] * action[j]
        nxt[i] = np.tanh(acc)
    reward = nxt[8] - 0.1 * np.sum(action * action)
    return nxt, reward, False
'''


# The same models in the CWMB paper's class form (set_state, then step), as its planners call them.
CARTPOLE_CLASS = '''
import math
import numpy as np

class Environment:
    def __init__(self):
        self.gravity, self.masscart, self.masspole, self.length = 9.8, 1.0, 0.1, 0.5
        self.force_mag, self.tau = 10.0, 0.02
        self.state = np.zeros(4)

    def set_state(self, state):
        self.state = np.array(state, dtype=float)

    def step(self, action):
        x, x_dot, theta, theta_dot = self.state
        total_mass = self.masspole + self.masscart
        polemass_length = self.masspole * self.length
        force = self.force_mag if action == 1 else -self.force_mag
        costheta, sintheta = math.cos(theta), math.sin(theta)
        temp = (force + polemass_length * theta_dot**2 * sintheta) / total_mass
        thetaacc = (self.gravity * sintheta - costheta * temp) / (
            self.length * (4.0 / 3.0 - self.masspole * costheta**2 / total_mass))
        xacc = temp - polemass_length * thetaacc * costheta / total_mass
        x = x + self.tau * x_dot
        x_dot = x_dot + self.tau * xacc
        theta = theta + self.tau * theta_dot
        theta_dot = theta_dot + self.tau * thetaacc
        self.state = np.array([x, x_dot, theta, theta_dot])
        done = bool(x < -2.4 or x > 2.4 or theta < -0.2095 or theta > 0.2095)
        return self.state.copy(), 1.0, done
'''

PENDULUM_CLASS = '''
import math
import numpy as np

class Environment:
    def __init__(self):
        self.max_speed, self.max_torque, self.dt, self.g = 8.0, 2.0, 0.05, 10.0
        self.state = np.zeros(3)

    def set_state(self, state):
        self.state = np.array(state, dtype=float)

    def step(self, action):
        th = math.atan2(self.state[1], self.state[0])
        thdot = self.state[2]
        u = float(np.clip(action, -self.max_torque, self.max_torque)[0])
        norm = ((th + math.pi) % (2 * math.pi)) - math.pi
        cost = norm**2 + 0.1 * thdot**2 + 0.001 * u**2
        thdot = float(np.clip(thdot + (1.5 * self.g * math.sin(th) + 3.0 * u) * self.dt, -self.max_speed, self.max_speed))
        th = th + thdot * self.dt
        self.state = np.array([math.cos(th), math.sin(th), thdot])
        return self.state.copy(), -cost, False
'''

CHEETAH_CLASS = '''
import numpy as np

_R = np.random.default_rng(0)

class Environment:
    def __init__(self):
        self.A = np.eye(17) * 0.95 + _R.normal(0.0, 0.02, (17, 17))
        self.B = _R.normal(0.0, 0.1, (17, 6))
        self.state = np.zeros(17)

    def set_state(self, state):
        self.state = np.array(state, dtype=float)

    def step(self, action):
        self.state = np.tanh(self.A @ self.state + self.B @ np.asarray(action))
        reward = self.state[8] - 0.1 * float(np.sum(np.square(action)))
        return self.state.copy(), reward, False
'''


def _python_batch(model, discrete):
    """A batched step that calls the Python model object once per transition."""
    def step_batch(states, actions):
        n = len(states)
        out_s = np.empty_like(states)
        out_r = np.empty(n)
        out_d = np.empty(n, dtype=bool)
        for i in range(n):
            a = int(actions[i, 0]) if discrete else actions[i].copy()
            s, r, d = model.step(states[i].copy(), a)
            out_s[i] = s
            out_r[i] = r
            out_d[i] = d
        return out_s, out_r, out_d
    return step_batch


# -- the paper's way ------------------------------------------------------------------------------
# Plain-Python planners with the costs of the CWMB paper's planners (Dainese et al., 2024, code
# release): a Python object per node, the simulator's attributes deep-copied when a node is made
# and restored from a deep copy before stepping from it, the model stepped on every tree edge
# walked, a hash of every new frame, and numpy random choices per rollout step. Written here to
# measure those costs, not taken from that code.


def _paper_env(class_source: str):
    namespace: dict = {}
    exec(compile(class_source, "paper_model.py", "exec"), namespace)  # trusted benchmark code
    return namespace["Environment"]()


def _snapshot(env) -> dict:
    return {k: copy.deepcopy(v) for k, v in vars(env).items()}


def _restore(env, snap: dict) -> None:
    for k, v in snap.items():
        setattr(env, k, copy.deepcopy(v))


class _PaperNode:
    def __init__(self, frame, reward, terminal, snap):
        self.frame, self.reward, self.terminal, self.snap = frame, reward, terminal, snap
        self.children: dict = {}
        self.visits = 0
        self.value_sum = 0.0


class PaperStyleMcts:
    """UCT over Python node objects, stepping a class-form model through set_state and step."""

    def __init__(self, env, n_actions, num_simulations, rollout_depth, c_uct, gamma, seed):
        self.env, self.n_actions = env, n_actions
        self.num_simulations, self.rollout_depth = num_simulations, rollout_depth
        self.c_uct, self.gamma = c_uct, gamma
        self.rng = np.random.default_rng(seed)
        self.steps = 0

    def _step(self, frame, action):
        self.steps += 1
        self.env.set_state(frame)
        return self.env.step(action)

    def plan(self, root_frame) -> int:
        self.env.set_state(root_frame)
        root = _PaperNode(np.array(root_frame), 0.0, False, _snapshot(self.env))
        root.visits = 1
        for _ in range(self.num_simulations):
            node, path = root, [root]
            while True:
                scores = np.empty(self.n_actions)
                for a in range(self.n_actions):
                    child = node.children.get(a)
                    n = 0 if child is None else child.visits
                    q = child.value_sum / n if n else 1.0
                    scores[a] = q + self.c_uct * np.sqrt(np.log(node.visits) / (n + 1e-3))
                action = int(self.rng.choice(np.flatnonzero(scores == scores.max())))
                _restore(self.env, node.snap)
                frame, reward, done = self._step(node.frame, action)
                hashlib.sha256(str(frame).encode()).hexdigest()
                child = node.children.get(action)
                new = child is None
                if new:
                    child = _PaperNode(frame, reward, bool(done), _snapshot(self.env))
                    node.children[action] = child
                path.append(child)
                node = child
                if new or node.terminal:
                    break
            value = 0.0
            if not node.terminal:
                _restore(self.env, node.snap)
                frame = node.frame
                for i in range(self.rollout_depth):
                    a = self.rng.choice(np.arange(self.n_actions))
                    frame, reward, done = self._step(frame, a)
                    value += self.gamma**i * reward
                    if done:
                        break
            for n in reversed(path):
                n.visits += 1
                n.value_sum += value
                value = n.reward + self.gamma * value
        visits = [root.children[a].visits if a in root.children else 0 for a in range(self.n_actions)]
        return int(np.argmax(visits))


def paper_style_cem(env, start, low, high, horizon, iterations, num_samples, num_elites, seed):
    """CEM scoring each sample by a sequential rollout, the simulator snapshotted around each one."""
    rng = np.random.default_rng(seed)
    low, high = np.asarray(low).reshape(1, -1), np.asarray(high).reshape(1, -1)
    mu = np.tile((low + high) / 2, (horizon, 1))
    sigma = np.tile(np.maximum(np.abs(low), np.abs(high)) / 2, (horizon, 1))
    steps = 0
    samples = scores = None
    for _ in range(iterations):
        samples = np.clip(rng.normal(mu, sigma, size=(num_samples,) + mu.shape), low, high)
        scores = np.empty(num_samples)
        for k, sample in enumerate(samples):
            env.set_state(start)
            snap = _snapshot(env)
            state, total = copy.deepcopy(start), 0.0
            for a in sample:
                env.set_state(state)
                state, reward, done = env.step(a)
                steps += 1
                total += reward
                if done:
                    break
            _restore(env, snap)
            scores[k] = total
        elites = samples[np.argsort(-scores)[:num_elites]]
        mu, sigma = elites.mean(axis=0), elites.std(axis=0)
    return samples[int(np.argmax(scores))], steps


def _compile_c_baseline(workdir: str):
    compiler = shutil.which("cc") or shutil.which("gcc") or shutil.which("clang")
    if compiler is None:
        return None, "no C compiler found"
    lib = os.path.join(workdir, "planner_c_baseline.so")
    cmd = [compiler, "-O2", "-shared", "-fPIC", str(HERE / "planner_c_baseline.c"), "-o", lib, "-lm"]
    proc = subprocess.run(cmd, capture_output=True, text=True)
    if proc.returncode != 0:
        return None, proc.stderr.strip()[:500]
    so = ctypes.CDLL(lib)
    i64, dbl, u64, vp = ctypes.c_int64, ctypes.c_double, ctypes.c_uint64, ctypes.c_void_p
    dp = ctypes.POINTER(ctypes.c_double)
    so.random_rollouts.argtypes = [vp, dp, i64, i64, i64, i64, dbl, u64, dp]
    so.random_rollouts.restype = i64
    so.cem.argtypes = [vp, dp, i64, i64, dp, dp, i64, i64, i64, i64, u64, dp]
    so.cem.restype = i64
    return so, " ".join(cmd)


def _ptr(array: np.ndarray):
    return array.ctypes.data_as(ctypes.POINTER(ctypes.c_double))


REPEATS = 3  # passes per variant; the fastest counts (the least disturbed by other work)


def _measure(run, decisions: int, repeats: int | None = None) -> dict:
    """Time `decisions` calls of run(i) -> model steps (after one warm-up call), best of `repeats` passes."""
    run(0)
    best = None
    for _ in range(repeats or REPEATS):
        steps = 0
        begin = time.perf_counter()
        for i in range(decisions):
            steps += run(i + 1)
        elapsed = time.perf_counter() - begin
        if best is None or elapsed < best[1]:
            best = (steps, elapsed)
    steps, elapsed = best
    return {"decisions": decisions, "model_steps": int(steps), "seconds": elapsed, "repeats": repeats or REPEATS,
            "steps_per_s": steps / elapsed, "decisions_per_s": decisions / elapsed,
            "seconds_per_decision": elapsed / decisions}


def _with_backend(name: str, fn):
    old = os.environ.get("CODEWORLD_BACKEND")
    os.environ["CODEWORLD_BACKEND"] = name
    try:
        return fn()
    finally:
        if old is None:
            os.environ.pop("CODEWORLD_BACKEND", None)
        else:
            os.environ["CODEWORLD_BACKEND"] = old


def bench_mcts(c_lib, quick: bool) -> dict:
    model = load_model(CARTPOLE, discrete=True)
    assert model.compiled, model.compile_error
    paper_model = load_model(CARTPOLE_CLASS, discrete=True)
    rng = np.random.default_rng(0)
    roots = rng.uniform(-0.05, 0.05, (1000, 4))
    sims, depth, c, gamma = 25, 100, 1.0, 0.99
    n_fast = 100 if quick else 400
    n_slow = 5 if quick else 20
    batch = _python_batch(paper_model, True)
    out = {"env": "CartPole-v1", "budget": {"num_simulations": sims, "rollout_depth": depth}}
    variants = {}
    if core_available():
        variants["cpp_compiled"] = _with_backend("cpp", lambda: _measure(
            lambda i: mcts_plan(model, roots[i], 2, sims, depth, 1, c, gamma, i)[3], n_fast))
        variants["cpp_batched_python"] = _with_backend("cpp", lambda: _measure(
            lambda i: mcts_plan_batched(batch, roots[i], 2, sims, depth, 8, c, gamma, i)[3], n_slow))
    variants["numba_compiled"] = _with_backend("numba", lambda: _measure(
        lambda i: mcts_plan(model, roots[i], 2, sims, depth, 1, c, gamma, i)[3], n_fast))
    variants["python_reference"] = _measure(
        lambda i: mcts_reference(batch, roots[i], 2, sims, depth, 1, c, gamma, i)[3], n_slow)

    def paper_run(i):
        planner = PaperStyleMcts(_paper_env(CARTPOLE_CLASS), 2, sims, depth, c, gamma, i)
        planner.plan(roots[i])
        return planner.steps
    variants["python_paper"] = _measure(paper_run, n_slow)
    if c_lib is not None:
        mean = ctypes.c_double()

        def c_run(i):
            root = np.ascontiguousarray(roots[i])
            return c_lib.random_rollouts(model.address, _ptr(root), 4, 2, sims, depth + 1, gamma, i,
                                         ctypes.byref(mean))
        variants["c_loop"] = _measure(c_run, n_fast)
    out["variants"] = variants
    return out


def bench_cem(name: str, source: str, class_source: str, n_state: int, n_action: int, low: float, high: float,
              c_lib, quick: bool) -> dict:
    model = load_model(source, discrete=False)
    assert model.compiled, model.compile_error
    paper_model = load_model(class_source, discrete=False)
    H, I, S, E = 100, 20, 1000, 100
    lo, hi = np.full(n_action, low), np.full(n_action, high)
    mean0 = np.tile((lo + hi) / 2, (H, 1))
    std0 = np.tile((hi - lo) / 2, (H, 1))
    rng = np.random.default_rng(1)
    starts = rng.uniform(-0.5, 0.5, (10, n_state))
    if n_state == 3:  # Pendulum: (cos, sin, velocity)
        th = rng.uniform(-np.pi, np.pi, 10)
        starts = np.stack([np.cos(th), np.sin(th), rng.uniform(-1, 1, 10)], axis=1)
    n_fast = 1 if quick else 3
    small = {"iterations": 2, "num_samples": 50} if quick else {"iterations": 3, "num_samples": 100}
    smean, sstd = mean0, std0
    batch = _python_batch(paper_model, False)
    out = {"env": name, "budget": {"horizon": H, "iterations": I, "num_samples": S, "num_elites": E},
           "python_budget": {"horizon": H, "num_elites": 10, **small}}
    variants = {}
    full = (I, S, E)
    reduced = (small["iterations"], small["num_samples"], 10)
    if core_available():
        variants["cpp_compiled"] = _with_backend("cpp", lambda: _measure(
            lambda i: cem_plan(model, starts[i % 10], lo, hi, mean0, std0, *full, 1.0, i)[4], n_fast))
        if CORES > 1:
            variants["cpp_compiled_all_cores"] = _with_backend("cpp", lambda: _measure(
                lambda i: cem_plan(model, starts[i % 10], lo, hi, mean0, std0, *full, 1.0, i, threads=0)[4],
                n_fast))
        variants["cpp_batched_python"] = _with_backend("cpp", lambda: _measure(
            lambda i: cem_plan_batched(batch, starts[i % 10], lo, hi, smean, sstd, *reduced, 1.0, i)[4], 1))
    variants["numba_compiled"] = _with_backend("numba", lambda: _measure(
        lambda i: cem_plan(model, starts[i % 10], lo, hi, mean0, std0, *full, 1.0, i)[4], n_fast))
    if CORES > 1:
        variants["numba_compiled_all_cores"] = _with_backend("numba", lambda: _measure(
            lambda i: cem_plan(model, starts[i % 10], lo, hi, mean0, std0, *full, 1.0, i, threads=0)[4],
            n_fast))
    variants["python_reference"] = _measure(
        lambda i: cem_reference(batch, starts[i % 10], lo, hi, smean, sstd, *reduced, 1.0, i)[4], 1)
    paper_env = _paper_env(class_source)
    variants["python_paper"] = _measure(
        lambda i: paper_style_cem(paper_env, starts[i % 10], lo, hi, H, reduced[0], reduced[1], reduced[2], i)[1], 1)
    if c_lib is not None:
        plan = np.zeros((H, n_action))

        def c_run(i):
            start = np.ascontiguousarray(starts[i % 10])
            return c_lib.cem(model.address, _ptr(start), n_state, n_action, _ptr(lo), _ptr(hi), H, I, S, E, i,
                             _ptr(plan))
        variants["c_loop"] = _measure(c_run, n_fast)
    out["variants"] = variants
    return out


def ratios(result: dict) -> dict:
    v = result["variants"]

    def r(a, b):
        if a in v and b in v:
            return v[a]["steps_per_s"] / v[b]["steps_per_s"]
        return None

    return {
        "cpp_over_python_paper": r("cpp_compiled", "python_paper"),
        "cpp_over_python_reference": r("cpp_compiled", "python_reference"),
        "cpp_over_c_loop": r("cpp_compiled", "c_loop"),
        "numba_over_cpp": r("numba_compiled", "cpp_compiled"),
        "cpp_batched_python_over_python_paper": r("cpp_batched_python", "python_paper"),
        "cpp_all_cores_over_python_paper": r("cpp_compiled_all_cores", "python_paper"),
        "numba_all_cores_over_cpp_all_cores": r("numba_compiled_all_cores", "cpp_compiled_all_cores"),
    }


PYTHON_VARIANTS = ("python_paper", "python_reference", "cpp_batched_python")


def _markdown(results: list[dict], machine: str) -> str:
    lines = ["# Planner throughput", "", f"Machine: {machine}", "",
             "| planner | variant | model steps/s | decisions/s | s/decision | budget |",
             "|---|---|---:|---:|---:|---|"]
    for res in results:
        for name, m in res["variants"].items():
            budget = res.get("python_budget") if name in PYTHON_VARIANTS and "python_budget" in res \
                else res["budget"]
            text = ", ".join(f"{k}={val}" for k, val in budget.items())
            lines.append(f"| {res['planner']} {res['env']} | {name} | {m['steps_per_s']:.3g} | "
                         f"{m['decisions_per_s']:.3g} | {m['seconds_per_decision']:.3g} | {text} |")
    lines += ["", "Ratios of model steps per second (C++ and Numba on one thread unless the column says all "
              f"{CORES} cores; CEM only):", "",
              "| planner | C++ / paper-style Python | C++ / Python reference | C++ / C loop | Numba / C++ "
              f"| C++ batched Python / paper-style Python | C++ all {CORES} cores / paper-style Python "
              f"| Numba / C++, all {CORES} cores |",
              "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for res in results:
        rt = res["ratios"]

        def f(x):
            return "-" if x is None else f"{x:.3g}"
        lines.append(f"| {res['planner']} {res['env']} | {f(rt['cpp_over_python_paper'])} | "
                     f"{f(rt['cpp_over_python_reference'])} | {f(rt['cpp_over_c_loop'])} | "
                     f"{f(rt['numba_over_cpp'])} | {f(rt['cpp_batched_python_over_python_paper'])} | "
                     f"{f(rt.get('cpp_all_cores_over_python_paper'))} | "
                     f"{f(rt.get('numba_all_cores_over_cpp_all_cores'))} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    global REPEATS
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer decisions (a smoke run)")
    parser.add_argument("--out", default=str(RESULTS), help="directory for the JSON and markdown results")
    parser.add_argument("--repeats", type=int, default=None,
                        help=f"passes per variant, the fastest counted (default {REPEATS}; 1 with --quick)")
    args = parser.parse_args(argv)
    REPEATS = args.repeats or (1 if args.quick else REPEATS)
    load_start = os.getloadavg()[0]

    with tempfile.TemporaryDirectory(prefix="codeworld-bench-") as workdir:
        c_lib, c_note = _compile_c_baseline(workdir)
        if c_lib is None:
            print(f"C baseline unavailable: {c_note}", file=sys.stderr)
        results = []
        mcts = bench_mcts(c_lib, args.quick)
        mcts["planner"] = "mcts"
        results.append(mcts)
        for name, src, class_src, n_state, n_action, low, high in (
            ("Pendulum-v1", PENDULUM, PENDULUM_CLASS, 3, 1, -2.0, 2.0),
            ("HalfCheetah-sized (17 state, 6 action)", CHEETAH, CHEETAH_CLASS, 17, 6, -1.0, 1.0),
        ):
            res = bench_cem(name, src, class_src, n_state, n_action, low, high, c_lib, args.quick)
            res["planner"] = "cem"
            results.append(res)
    for res in results:
        res["ratios"] = ratios(res)

    load_end = os.getloadavg()[0]
    machine = (f"{platform.processor() or platform.machine()}, {CORES} cores, Python {platform.python_version()}; "
               f"best of {REPEATS} passes per variant; 1-minute load average {load_start:.2f} at the start, "
               f"{load_end:.2f} at the end")
    report = {"machine": machine, "c_baseline": c_note, "quick": args.quick, "repeats": REPEATS,
              "load_average": {"start": load_start, "end": load_end}, "results": results}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "planner_throughput.json").write_text(json.dumps(report, indent=2))
    md = _markdown(results, machine)
    (out / "planner_throughput.md").write_text(md)
    print(md)
    pend = next(r for r in results if r["env"] == "Pendulum-v1")
    if "cpp_compiled" in pend["variants"]:
        print(f"paper-sized CEM plan on Pendulum (H=100, 20 iterations, 1000 samples), C++ compiled: "
              f"{pend['variants']['cpp_compiled']['seconds_per_decision']:.3f} s on one thread")
    return 0


if __name__ == "__main__":
    sys.exit(main())
