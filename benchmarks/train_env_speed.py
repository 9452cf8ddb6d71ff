"""Vectorized env throughput: a compiled code world model against Gymnasium and envpool.

One run measures env steps per second (random actions, autoreset on) at batch sizes 1, 16, 256
and 4096, for CartPole-v1, Pendulum-v1 and Acrobot-v1:

* ``codeworld``: `CodeWorldVectorEnv` with the true-physics model of tests/models/,
  Numba-compiled, inside its sandbox worker (the copies stepped in one native loop per step,
  actions and states through shared memory);
* ``gymnasium_sync``: Gymnasium's own envs under ``gymnasium.vector.SyncVectorEnv``;
* ``gymnasium_env``: (batch 1 only) one Gymnasium env stepped directly, with its wrappers;
* ``envpool``: envpool's C++ envs, one thread, batch = num_envs (when envpool imports; the
  reason is recorded when it does not).

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


def _codeworld(env_id: str, n: int, window_s: float) -> float:
    env = CodeWorldVectorEnv(env_id, (TRUE_MODELS / ENVS[env_id]).read_text(), n)
    try:
        assert env.compiled, f"the {env_id} model did not compile"
        env.reset(seed=0)
        return _rate(env.step, _actions(env.single_action_space, n, 64, 0), n, window_s)
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

    rows = []
    for env_id in args.envs.split(","):
        for n in batches:
            row = {"env_id": env_id, "batch": n, "codeworld": _codeworld(env_id, n, window_s),
                   "gymnasium_sync": _gym_sync(env_id, n, window_s)}
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

    meta = {"machine": platform.processor() or platform.machine(), "cpus": len(os.sched_getaffinity(0)),
            "python": platform.python_version(), "gymnasium": gym.__version__, "envpool": envpool_note,
            "numpy": np.__version__, "window_s": window_s, "date": time.strftime("%Y-%m-%d %H:%M UTC", time.gmtime())}
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "env_speed.json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n")
    lines = ["# Vectorized env throughput (env steps/s, random actions, autoreset)", "",
             f"{meta['date']}, {meta['cpus']} CPUs ({meta['machine']}), Gymnasium {meta['gymnasium']}, "
             f"{envpool_note}; median of 3 windows of {window_s} s; one process for all.", "",
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
