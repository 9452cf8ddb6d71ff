"""Scorer throughput: codeworld's batched, sandboxed scorer against the CWMB paper's scoring loop.

Both score the same CartPole world model (the true dynamics, written by hand) on the same buffer
of at least 100,000 transitions (the committed CartPole buffer repeated), in the same run:

* codeworld: `Scorer.score_source` with a warm sandbox worker (the program already loaded and
  compiled by Numba): one request runs the compiled model over every transition in a native loop,
  then one kernel call compares all predictions (C++, or the Numba twin with
  ``CODEWORLD_BACKEND=numba``). Timed end to end in the parent, including the transfer of the
  arrays to and from the worker. The cold time (worker start, load and compile) is printed apart.
* the paper's way: a Python model object (the paper's ``class Environment``), and per transition
  ``set_state`` on a copy of the state, ``step``, then the comparisons of the paper's
  ``check_transition_via_enum`` (``np.allclose(rtol=1e-5, atol=1e-5)`` on the whole state and on
  each dimension, reward and done by equality), one transition at a time in this process.

Prints transitions per second and the ratio for both backends, and writes
``benchmarks/results/scorer_throughput.json`` and a table beside it (``.md``).

Usage: ``python benchmarks/scorer_throughput.py [--transitions 100000] [--repeats 3]``
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import time
from pathlib import Path

import numpy as np

MODEL = '''
import math
import numpy as np

GRAVITY = 9.8
MASS_POLE = 0.1
TOTAL_MASS = 1.1
HALF_LENGTH = 0.5
POLE_MASS_LENGTH = 0.05
FORCE_MAG = 10.0
TAU = 0.02
THETA_LIMIT = 12 * 2 * math.pi / 360
X_LIMIT = 2.4


def step(state, action):
    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]
    force = FORCE_MAG if action == 1 else -FORCE_MAG
    cos_t = math.cos(theta)
    sin_t = math.sin(theta)
    temp = (force + POLE_MASS_LENGTH * theta_dot ** 2 * sin_t) / TOTAL_MASS
    theta_acc = (GRAVITY * sin_t - cos_t * temp) / (
        HALF_LENGTH * (4.0 / 3.0 - MASS_POLE * cos_t ** 2 / TOTAL_MASS))
    x_acc = temp - POLE_MASS_LENGTH * theta_acc * cos_t / TOTAL_MASS
    x = x + TAU * x_dot
    x_dot = x_dot + TAU * x_acc
    theta = theta + TAU * theta_dot
    theta_dot = theta_dot + TAU * theta_acc
    done = x < -X_LIMIT or x > X_LIMIT or theta < -THETA_LIMIT or theta > THETA_LIMIT
    return np.array([x, x_dot, theta, theta_dot]), 1.0, done
'''


class PaperStyleEnvironment:
    """The same model in the paper's class form (trusted benchmark code, run in this process)."""

    def __init__(self):
        namespace: dict = {}
        exec(compile(MODEL, "benchmark_model.py", "exec"), namespace)
        self._step = namespace["step"]
        self.state = np.zeros(4)

    def set_state(self, state):
        self.state = state

    def step(self, action):
        return self._step(self.state, action)


def paper_style_score(buffer, n: int) -> float:
    """The paper's per-transition loop over the first `n` transitions; returns its success rate."""
    env = PaperStyleEnvironment()
    rates = []
    for i in range(n):
        state = buffer.obs[i].copy()
        action = int(buffer.actions[i, 0])
        next_state, reward, done = buffer.next_obs[i], buffer.rewards[i], bool(buffer.dones[i])
        env.set_state(state.copy())
        pred_state, pred_reward, pred_done = env.step(action)
        reward_ok = float(pred_reward == reward)
        done_ok = float(pred_done == done)
        if done:
            rates.append(0.5 * reward_ok + 0.5 * done_ok)
            continue
        np.allclose(pred_state, next_state, rtol=1e-5, atol=1e-5)  # the paper's "valid" test
        dims = sum(float(np.allclose(pred_state[j], next_state[j], rtol=1e-5, atol=1e-5))
                   for j in range(len(next_state)))
        rates.append(dims / len(next_state) / 3 + reward_ok / 3 + done_ok / 3)
    return float(np.mean(rates))


def big_buffer(min_transitions: int):
    """The committed CartPole buffer repeated until it holds at least `min_transitions`."""
    from codeworld.envs._buffers import buffer_path, load_buffer, make_buffer

    base = load_buffer(buffer_path("CartPole-v1"))
    reps = -(-min_transitions // len(base))
    offsets = np.repeat(np.arange(reps) * len(base), len(base))
    arrays = {k: np.concatenate([getattr(base, k)] * reps) for k in
              ("obs", "actions", "rewards", "next_obs", "terminated", "truncated")}
    arrays["episode_start"] = np.tile(base.episode_start, reps) + offsets
    return make_buffer("CartPole-v1", **arrays)


def time_codeworld(buffer, backend: str, repeats: int) -> dict:
    from codeworld._model_worker import ModelWorker
    from codeworld.scoring import Scorer

    os.environ["CODEWORLD_BACKEND"] = backend  # read by the parent and by the worker it spawns
    scorer = Scorer("CartPole-v1", buffer, references=False)
    start = time.perf_counter()
    worker = ModelWorker(MODEL, discrete=True, compile=True)
    loaded = worker.load()
    cold_load = time.perf_counter() - start
    if not loaded.ok or not worker.info.get("compiled"):
        raise RuntimeError(f"the benchmark model did not load compiled: {loaded.summary()}")
    times, report = [], None
    try:
        for _ in range(repeats):
            t0 = time.perf_counter()
            report = scorer.score_source(MODEL, worker=worker)
            times.append(time.perf_counter() - t0)
    finally:
        worker.close()
    assert report is not None and report.ok and report.score >= 0.99, report
    best = min(times)
    return {"backend": backend, "seconds": best, "rate": len(buffer) / best,
            "cold_load_seconds": cold_load, "score": report.score}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--transitions", type=int, default=100_000)
    parser.add_argument("--paper-transitions", type=int, default=None,
                        help="transitions timed for the paper-style loop (default: all)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(Path(__file__).parent / "results" / "scorer_throughput.json"))
    args = parser.parse_args()

    buffer = big_buffer(args.transitions)
    n_paper = min(len(buffer), args.paper_transitions or len(buffer))
    t0 = time.perf_counter()
    paper_score = paper_style_score(buffer, n_paper)
    paper_seconds = time.perf_counter() - t0
    paper_rate = n_paper / paper_seconds

    from codeworld._backend import core_available

    backends = (["cpp"] if core_available() else []) + ["numba"]
    results = [time_codeworld(buffer, b, args.repeats) for b in backends]

    print(f"CartPole-v1, {len(buffer)} transitions; {platform.processor() or platform.machine()}, "
          f"{os.cpu_count()} CPUs")
    print(f"  paper-style loop   {paper_rate:>12,.0f} transitions/s  "
          f"({n_paper} transitions in {paper_seconds:.2f} s, success rate {paper_score:.4f})")
    for r in results:
        r["ratio"] = r["rate"] / paper_rate
        print(f"  codeworld ({r['backend']:>5})  {r['rate']:>12,.0f} transitions/s  "
              f"({r['seconds']:.3f} s warm; {r['cold_load_seconds']:.2f} s to start the worker and "
              f"compile)  ratio {r['ratio']:.0f}x")
    record = {"env_id": "CartPole-v1", "transitions": len(buffer), "paper_style": {
        "transitions": n_paper, "seconds": paper_seconds, "rate": paper_rate}, "codeworld": results,
        "machine": {"cpus": os.cpu_count(), "python": platform.python_version()}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(record), encoding="utf-8")


def markdown(record: dict) -> str:
    """The results as a short markdown table."""
    paper = record["paper_style"]
    lines = [f"# Scorer throughput ({record['env_id']}, {record['transitions']:,} transitions, "
             f"{record['machine']['cpus']} CPUs, Python {record['machine']['python']})", "",
             "| scorer | transitions/s | ratio to the paper-style loop |", "|---|---:|---:|",
             f"| paper-style loop (per transition, in Python) | {paper['rate']:,.0f} | 1 |"]
    for r in record["codeworld"]:
        lines.append(f"| codeworld, {r['backend']} (warm worker; {r['cold_load_seconds']:.2f} s cold start) "
                     f"| {r['rate']:,.0f} | {r['ratio']:.0f}x |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
