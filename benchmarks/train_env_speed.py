"""Vectorized env throughput: a compiled code world model against Gymnasium and envpool.

One run measures env steps per second (random actions, autoreset on) at batch sizes 1, 16, 256
and 4096, for CartPole-v1, Pendulum-v1 and Acrobot-v1:

* ``codeworld``: `CodeWorldVectorEnv` with the true-physics model of tests/models/,
  Numba-compiled, inside its sandbox worker (the copies stepped in one native loop per step,
  actions and states through shared memory);
* ``gymnasium_sync``: Gymnasium's own envs under ``gymnasium.vector.SyncVectorEnv``;
* ``gymnasium_env``: (batch 1 only) one Gymnasium env stepped directly, with its wrappers;
* ``envpool``: envpool's C++ envs, one thread, batch = num_envs (when envpool imports; the
  reason is recorded when it does not);
* the floor: one-byte round trips per second over pipes to another process;
* at batch 1 also codeworld with its worker pinned to this process's CPU and to another CPU (the
  scheduler places it either way, and the two differ by 4x on the VM this ran on).

Each figure is the median of three timed windows after a warm-up; ratios (codeworld over each
baseline) come from the same run. Results go to benchmarks/results/train/env_speed.{json,md}.

    .venv/bin/python benchmarks/train_env_speed.py [--quick] [--batches 1,16,256,4096]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import time
from pathlib import Path

import gymnasium as gym
import numpy as np

from codeworld.planning import CodeWorldVectorEnv

HERE = Path(__file__).resolve().parent
TRUE_MODELS = HERE.parent / "tests" / "models"  # true-physics models, shared with the tests
OUT = HERE / "results" / "train"
ENVS = {"CartPole-v1": "cartpole_functional.py", "Pendulum-v1": "pendulum_functional.py",
        "Acrobot-v1": "acrobot_functional.py"}


def _actions(space: gym.Space, n: int, count: int, seed: int) -> list:
    space = gym.vector.utils.batch_space(space, n)
    space.seed(seed)
    return [space.sample() for _ in range(count)]


def _rate(step, actions: list, n: int, window_s: float) -> float:
    """Median env steps/s over three windows of about `window_s` (after one warm-up window)."""
    rates = []
    for window in range(4):
        steps = 0
        began = time.perf_counter()
        while True:
            step(actions[steps % len(actions)])
            steps += 1
            elapsed = time.perf_counter() - began
            if elapsed >= window_s and steps >= 3:
                break
        if window:
            rates.append(steps * n / elapsed)
    return statistics.median(rates)


def _pinned(pids: tuple[int, int], cpus: tuple[int, int] | None):
    """Pin this process and the other one to the given CPUs for a measurement (None: leave them)."""
    import contextlib

    @contextlib.contextmanager
    def pin():
        if cpus is None:
            yield
            return
        saved = [os.sched_getaffinity(pid) for pid in pids]
        try:
            for pid, cpu in zip(pids, cpus):
                os.sched_setaffinity(pid, {cpu})
            yield
        finally:
            for pid, mask in zip(pids, saved):
                os.sched_setaffinity(pid, mask)

    return pin()


def _placements() -> dict:
    """CPU placements of (this process, the other one) measured at batch 1, beside the scheduler's."""
    cpus = sorted(os.sched_getaffinity(0))
    if len(cpus) < 2:
        return {}
    return {"same_cpu": (cpus[0], cpus[0]), "other_cpu": (cpus[0], cpus[1])}


def _codeworld(env_id: str, n: int, window_s: float, placements: dict | None = None) -> dict:
    """Steps/s as the scheduler places the worker (``rate``), and pinned as `placements` say."""
    env = CodeWorldVectorEnv(env_id, (TRUE_MODELS / ENVS[env_id]).read_text(), n)
    try:
        assert env.compiled, f"the {env_id} model did not compile"
        env.reset(seed=0)
        actions = _actions(env.single_action_space, n, 64, 0)
        out = {"rate": _rate(env.step, actions, n, window_s)}
        pids = (os.getpid(), env._backend.worker.sandbox.pid)
        for name, cpus in (placements or {}).items():
            with _pinned(pids, cpus):
                out[name] = _rate(env.step, actions, n, window_s)
        return out
    finally:
        env.close()


def _gym_sync(env_id: str, n: int, window_s: float) -> float:
    env = gym.vector.SyncVectorEnv([lambda: gym.make(env_id)] * n)
    try:
        env.reset(seed=0)
        return _rate(env.step, _actions(env.single_action_space, n, 64, 0), n, window_s)
    finally:
        env.close()


def _gym_single(env_id: str, window_s: float) -> float:
    env = gym.make(env_id)
    env.reset(seed=0)
    state = {"done": False}

    def step(action):
        if state["done"]:
            env.reset()
        _, _, term, trunc, _ = env.step(action)
        state["done"] = term or trunc

    try:
        env.action_space.seed(0)
        return _rate(step, [env.action_space.sample() for _ in range(64)], 1, window_s)
    finally:
        env.close()


def _envpool(env_id: str, n: int, window_s: float) -> float:
    import envpool

    env = envpool.make_gymnasium(env_id, num_envs=n, batch_size=n, num_threads=1, seed=0)
    try:
        env.reset()
        return _rate(env.step, _actions(env.action_space, n, 64, 0), n, window_s)
    finally:
        env.close()


def _round_trip_floor(window_s: float, cpus: tuple[int, int] | None = None) -> float:
    """One-byte round trips per second to another process over pipes: what bounds any env whose
    steps run in another process (the sandbox worker) at batch 1; pinned to `cpus` if given."""
    import subprocess
    import sys

    echo = "import os\nwhile True:\n    b = os.read(0, 1)\n    if not b:\n        break\n    os.write(1, b)\n"
    child = subprocess.Popen([sys.executable, "-c", echo], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    to_child, from_child = child.stdin.fileno(), child.stdout.fileno()

    def ping(_):
        os.write(to_child, b"x")
        os.read(from_child, 1)

    try:
        with _pinned((os.getpid(), child.pid), cpus):
            return _rate(ping, [None], 1, window_s)
    finally:
        child.stdin.close()
        child.wait()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="short windows, batches 1 and 256")
    parser.add_argument("--batches", default="1,16,256,4096")
    parser.add_argument("--envs", default=",".join(ENVS))
    parser.add_argument("--out", default=str(OUT))
    args = parser.parse_args()
    batches = [1, 256] if args.quick else [int(b) for b in args.batches.split(",")]
    window_s = 0.15 if args.quick else 0.5
    try:
        import envpool

        envpool_note = f"envpool {envpool.__version__}"
    except Exception as exc:  # noqa: BLE001 - any reason it cannot be used is the note
        envpool = None
        envpool_note = f"envpool unavailable: {type(exc).__name__}: {exc}".splitlines()[0]
    print(envpool_note)

    placements = _placements()
    floors = {"scheduler": _round_trip_floor(window_s)}
    floors.update({name: _round_trip_floor(window_s, cpus) for name, cpus in placements.items()})
    floor = floors["scheduler"]
    print("pipe round trips to another process: "
          + ", ".join(f"{k} {v:,.0f}/s ({1e6 / v:.1f} us)" for k, v in floors.items()))
    rows = []
    for env_id in args.envs.split(","):
        for n in batches:
            measured = _codeworld(env_id, n, window_s, placements if n == 1 else None)
            row = {"env_id": env_id, "batch": n, "codeworld": measured.pop("rate"),
                   "gymnasium_sync": _gym_sync(env_id, n, window_s)}
            row.update({f"codeworld_{name}": rate for name, rate in measured.items()})
            if n == 1:
                row["gymnasium_env"] = _gym_single(env_id, window_s)
            if envpool is not None:
                row["envpool"] = _envpool(env_id, n, window_s)
            for base in ("gymnasium_sync", "gymnasium_env", "envpool"):
                if base in row:
                    row[f"ratio_vs_{base}"] = row["codeworld"] / row[base]
            rows.append(row)
            print(f"{env_id:12s} batch {n:5d}: codeworld {row['codeworld']:12,.0f}/s   "
                  + "   ".join(f"{b} {row[b]:11,.0f}/s ({row['ratio_vs_' + b]:.2f}x)"
                             for b in ("gymnasium_env", "gymnasium_sync", "envpool") if b in row), flush=True)
            if n == 1 and placements:
                print(f"{'':12s}   pinned: worker on the same CPU {row['codeworld_same_cpu']:,.0f}/s, "
                      f"on another CPU {row['codeworld_other_cpu']:,.0f}/s", flush=True)

    meta = {"machine": platform.processor() or platform.machine(), "cpus": len(os.sched_getaffinity(0)),
            "python": platform.python_version(), "gymnasium": gym.__version__, "envpool": envpool_note,
            "numpy": np.__version__, "window_s": window_s, "pipe_round_trips_per_s": floors, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "env_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["# Vectorized env throughput (env steps/s, random actions, autoreset)", "",
             f"{meta['date']}, {meta['cpus']} CPUs ({meta['machine']}), Gymnasium {meta['gymnasium']}, "
             f"{envpool_note}; median of 3 windows of {window_s} s; one process for all. A one-byte pipe "
             f"round trip to another process (the floor for a model in its sandbox at batch 1): "
             + ", ".join(f"{k.replace('_', ' ')} {v:,.0f}/s ({1e6 / v:.1f} us)" for k, v in floors.items())
             + ".", "",
             "Batch 1 with the worker pinned (this process on the first CPU): "
             + "; ".join(f"{r['env_id']} same CPU {r['codeworld_same_cpu']:,.0f}/s, other CPU "
                         f"{r['codeworld_other_cpu']:,.0f}/s" for r in rows if "codeworld_same_cpu" in r)
             + ".", "",
             "| env | batch | codeworld | Gymnasium env | SyncVectorEnv | envpool (1 thread) "
             "| vs env | vs Sync | vs envpool |", "|---|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        def fmt(key, ratio=False):
            if key not in r:
                return "-"
            return f"{r[key]:.2f}x" if ratio else f"{r[key]:,.0f}"
        lines.append(f"| {r['env_id']} | {r['batch']} | {fmt('codeworld')} | {fmt('gymnasium_env')} | "
                     f"{fmt('gymnasium_sync')} | {fmt('envpool')} | {fmt('ratio_vs_gymnasium_env', True)} | "
                     f"{fmt('ratio_vs_gymnasium_sync', True)} | {fmt('ratio_vs_envpool', True)} |")
    (out / "env_speed.md").write_text("\n".join(lines) + "\n")
    print(f"wrote {out / 'env_speed.json'} and env_speed.md")


if __name__ == "__main__":
    main()
