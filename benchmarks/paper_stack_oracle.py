"""The oracle's return on the CWMB paper's software stack, to tell a simulator difference from a planner one.

codeworld's oracle plans with the true simulator through MuJoCo's batched stepping on the MuJoCo and
Gymnasium installed here (`codeworld.planning._oracle`). Where its return under the paper's protocol
differs from the paper's Table 12, this script replays the protocol on the stack the paper ran on,
in a separate environment, with no codeworld import: Gymnasium 0.29 and MuJoCo 2.3 (Gymnasium's
``Pusher-v4`` loads only on MuJoCo below 3, so codeworld makes it from ``Pusher-v5``), CEM over
the env's own ``step`` with the paper's settings (plans of up to 100 steps, 20 iterations of 1,000
sequences clipped to the action box, 100 elites, the mean and standard deviation refitted to the
elites, the initial standard deviation ``max(|low|, |high|) / 2``; the best sequence seen is
executed open loop, then the next plan). Between sequences the simulator is put back with
``set_state`` (positions and velocities; the MuJoCo tasks have no other state). Episode ``i``
resets with seed ``i``, as codeworld's protocol does, and the planner's draws use the same seed.

Usage (one plan of 2 million steps takes minutes, stepped from Python)::

    python -m venv /tmp/paper-stack
    /tmp/paper-stack/bin/pip install "gymnasium[mujoco]==0.29.1" "mujoco==2.3.7" "numpy<2"
    /tmp/paper-stack/bin/python benchmarks/paper_stack_oracle.py Pusher-v4 --seeds 0,1 --out FILE.json
"""

from __future__ import annotations

import argparse
import json
import platform
import time

import numpy as np


def cem_plan(env, rng: np.random.Generator, horizon: int, iterations: int, samples: int,
             elites: int) -> np.ndarray:
    """The best action sequence seen by CEM over the env's own ``step`` from its current state."""
    sim = env.unwrapped
    low = env.action_space.low.astype(np.float64)
    high = env.action_space.high.astype(np.float64)
    qpos, qvel = sim.data.qpos.copy(), sim.data.qvel.copy()
    mean = np.tile((low + high) / 2, (horizon, 1))
    std = np.tile(np.maximum(np.abs(low), np.abs(high)) / 2, (horizon, 1))
    best, best_return = mean.copy(), -np.inf
    for _ in range(iterations):
        drawn = np.clip(rng.normal(mean, std, size=(samples, horizon, low.size)), low, high)
        returns = np.empty(samples)
        for n in range(samples):
            sim.set_state(qpos, qvel)
            total = 0.0
            for action in drawn[n]:
                _, reward, terminated, _, _ = sim.step(action)
                total += float(reward)
                if terminated:
                    break
            returns[n] = total
        order = np.argsort(-returns, kind="stable")
        top = drawn[order[:elites]]
        mean, std = top.mean(axis=0), top.std(axis=0)
        if returns[order[0]] > best_return:
            best_return, best = returns[order[0]], drawn[order[0]].copy()
    sim.set_state(qpos, qvel)
    return best


def main(argv: list[str] | None = None) -> int:
    import gymnasium as gym
    import mujoco

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("env_id", help="a Gymnasium MuJoCo id, as the paper names it (e.g. Pusher-v4)")
    parser.add_argument("--seeds", default="0", help="comma list of episode seeds (default 0)")
    parser.add_argument("--horizon", type=int, default=100)
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--samples", type=int, default=1000)
    parser.add_argument("--elites", type=int, default=100)
    parser.add_argument("--out", default=None, help="a JSON file for the returns")
    args = parser.parse_args(argv)
    env = gym.make(args.env_id)
    limit = env.spec.max_episode_steps
    horizon = min(args.horizon, limit) if limit else args.horizon
    episodes = []
    for seed in (int(s) for s in args.seeds.split(",")):
        started = time.perf_counter()
        env.reset(seed=seed)
        rng = np.random.default_rng(seed)
        total, steps, done = 0.0, 0, False
        while not done:
            for action in cem_plan(env, rng, horizon, args.iterations, args.samples, args.elites):
                _, reward, terminated, truncated, _ = env.step(action)
                total, steps = total + float(reward), steps + 1
                done = terminated or truncated
                if done:
                    break
        episodes.append({"seed": seed, "return": total, "length": steps,
                         "seconds": time.perf_counter() - started})
        print(f"{args.env_id} seed {seed}: return {total:.1f} in {steps} steps "
              f"({episodes[-1]['seconds']:.0f} s)", flush=True)
    summary = {"env_id": args.env_id, "gymnasium": gym.__version__, "mujoco": mujoco.__version__,
               "numpy": np.__version__, "machine": f"{platform.machine()}, Python {platform.python_version()}",
               "cem": {"horizon": horizon, "iterations": args.iterations, "samples": args.samples,
                       "elites": args.elites}, "episodes": episodes,
               "mean": float(np.mean([e["return"] for e in episodes]))}
    print(f"mean {summary['mean']:.1f} over {len(episodes)} episodes")
    if args.out:
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(summary, handle, indent=1)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
