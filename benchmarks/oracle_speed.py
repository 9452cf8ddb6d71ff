"""The oracle's speed: simulator steps per second of the old and the native oracle, per MuJoCo env.

One run measures, for each continuous MuJoCo environment of the CWMB, in the same process, the
rate of steps from the environment's first state with random actions (every variant steps the
same states, since a step's cost depends on the contacts it meets):

* ``mujoco``: MuJoCo's own stepping speed, the bound: ``mj_setState`` and ``mj_step``
  (``frame_skip`` substeps) on one ``MjData``, no reward;
* ``batch``: ``mujoco.batch`` stepping 1,000 copies on the oracle's threads, no reward;
* ``old``: the oracle as it was, one copy at a time (restore the state, the env's ``step``, save
  it), on batches of 1,000 states as CEM asks for them (`OracleModel(native=False)`);
* ``new``: the native oracle (`OracleModel`, `MujocoBatchStep`): all copies at once on MuJoCo's
  thread pool, rewards vectorised;
* ``plan``: the wall time of one paper-sized CEM plan (20 iterations of 1,000 sequences of 100
  steps, 100 elites; Reacher's plans are 50 steps, its episode's length) on the native oracle
  from the env's first state. Where it would take longer than ``--plan-budget-s`` it runs its
  first iteration only and is extrapolated to 20 (marked "est."; later iterations may keep more
  sequences alive, so a terminating env's estimate is low). The old oracle's plan time is the
  plan's simulated steps at the old oracle's rate.

Steps are environment steps (one action, ``frame_skip`` MuJoCo substeps). Results go to
``benchmarks/results/oracle_speed.{json,md}`` with the commit and the load average, since these 2
cores are shared:

    .venv/bin/python benchmarks/oracle_speed.py [--envs HalfCheetah-v4,Hopper-v4] [--threads 2]
"""

from __future__ import annotations

import argparse
import datetime as _dt
import json
import os
import platform
import sys
import time
import warnings
from dataclasses import replace
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from worldcoder import code_version  # noqa: E402  (the commit of the code, as the agent's tables record it)

RESULTS = HERE / "results"
BATCH = 1000
GOAL_PLAN_S = 5.0


def _rate(step, seconds: float, cpu: dict, name: str) -> float:
    """Steps per wall second of ``step()`` (returning how many steps it took), run for about
    `seconds`; steps per CPU second (all threads) go to ``cpu[name]``."""
    step()  # warm up (a batch's first call allocates)
    done, begin, begin_cpu = 0, time.perf_counter(), time.process_time()
    while True:
        done += step()
        elapsed = time.perf_counter() - begin
        if elapsed >= seconds:
            cpu[name] = done / max(time.process_time() - begin_cpu, 1e-9)
            return done / elapsed


def measure(env_id: str, threads: int, seconds: float, plan_budget_s: float) -> dict:
    import mujoco
    from mujoco import batch as mujoco_batch

    from codeworld.envs import get_spec
    from codeworld.planning._cem import CemPlanner
    from codeworld.planning._oracle import OracleModel
    from codeworld.planning.planners import ModelAccess
    from codeworld.planning._protocol import default_config

    spec = get_spec(env_id)
    rng = np.random.default_rng(0)
    env = spec.make()
    env.reset(seed=0)
    sim = env.unwrapped
    model, frame_skip = sim.model, sim.frame_skip
    low, high = np.array(spec.action_low), np.array(spec.action_high)

    data = mujoco.MjData(model)
    spec_state = mujoco.mjtState.mjSTATE_INTEGRATION
    first = np.empty(mujoco.mj_stateSize(model, spec_state))
    mujoco.mj_getState(model, sim.data, first, spec_state)
    controls = rng.uniform(low, high, size=(256, spec.action_dim))

    def raw() -> int:  # one env step from the first state per control, as the oracles below
        for u in controls:
            mujoco.mj_setState(model, data, first, spec_state)
            data.ctrl[:] = u
            mujoco.mj_step(model, data, nstep=frame_skip)
        return len(controls)

    cpu: dict = {}
    out: dict = {"env_id": env_id, "frame_skip": frame_skip, "mujoco": _rate(raw, seconds, cpu, "mujoco"),
                 "per_cpu_second": cpu}

    oracle = OracleModel(spec, threads=threads)
    start = oracle.state_of(env)
    batch = mujoco_batch.Batch(model, nsim=BATCH, nthread=oracle._native.threads)
    batch.state[:] = start[: oracle._native.nstate]
    ctrl = batch.bind("ctrl")

    def batched() -> int:
        batch.state[:] = start[: oracle._native.nstate]
        ctrl[:] = rng.uniform(low, high, size=ctrl.shape)
        batch.step(nstep=frame_skip)
        return BATCH

    out["batch"] = _rate(batched, seconds, cpu, "batch")

    def stepper(which: OracleModel):
        states = np.tile(which.state_of(env), (BATCH, 1))

        def step() -> int:
            which.step_batch(states, rng.uniform(low, high, size=(BATCH, spec.action_dim)))
            return BATCH

        return step

    old = OracleModel(spec, native=False)
    out["old"] = _rate(stepper(old), seconds, cpu, "old")
    out["new"] = _rate(stepper(oracle), seconds, cpu, "new")
    old.close()

    config = default_config(spec)
    steps_full = config.iterations * config.num_samples * config.horizon
    iterations = config.iterations if steps_full / out["new"] <= plan_budget_s else 1
    planner = CemPlanner(replace(config, iterations=iterations), low, high)
    begin, begin_cpu = time.perf_counter(), time.process_time()
    planner.act(ModelAccess(step_batch=oracle.step_batch, oracle=True), start, seed=0)
    seconds_plan, cpu_plan = time.perf_counter() - begin, time.process_time() - begin_cpu
    scale = config.iterations / iterations
    out.update(plan_horizon=config.horizon, plan_iterations_run=iterations, plan_estimated=iterations < config.iterations,
               plan_s=seconds_plan * scale, plan_cpu_s=cpu_plan * scale, plan_steps=int(planner.model_steps * scale),
               old_plan_s=planner.model_steps * scale / out["old"])
    out["mujoco_plan_s"] = out["plan_steps"] / out["mujoco"]
    oracle.close()
    env.close()
    return out


def markdown(rows: list[dict], meta: dict) -> str:
    lines = ["# The oracle's speed (benchmarks/oracle_speed.py)", "",
             f"Commit {meta['commit']}, {meta['finished_at']}, {meta['machine']}; oracle threads "
             f"{meta['threads']}; 1-minute load average {meta['load_before']:.1f} before and "
             f"{meta['load_after']:.1f} after (2 cores shared with other jobs). Env steps per second "
             "(one action, frame_skip MuJoCo substeps); plans are 20 x 1000 sequences x 100 steps "
             "(Reacher: 50) on the native oracle.", "",
             "| env | frame skip | MuJoCo mj_step, 1 thread | mujoco.batch, no reward | old oracle | native oracle "
             "| native / old | native / MuJoCo 1 thread | paper plan, native (s) | paper plan, old (s, from its rate) "
             "| plan at MuJoCo's 1-thread rate (s) |",
             "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        est = " est." if r["plan_estimated"] else ""
        lines.append(f"| {r['env_id']} | {r['frame_skip']} | {r['mujoco']:,.0f} | {r['batch']:,.0f} | {r['old']:,.0f} | "
                     f"{r['new']:,.0f} | {r['new'] / r['old']:.2f} | {r['new'] / r['mujoco']:.2f} | "
                     f"{r['plan_s']:.0f}{est} | {r['old_plan_s']:.0f} | {r['mujoco_plan_s']:.0f} |")
    lines += ["", "The same per CPU second (the process's CPU time over all its threads; less sensitive to "
              "the other jobs on these cores):", "",
              "| env | MuJoCo mj_step | mujoco.batch | old oracle | native oracle | native / old "
              "| native / MuJoCo | paper plan, native (CPU s) |", "|---|---:|---:|---:|---:|---:|---:|---:|"]
    for r in rows:
        c = r["per_cpu_second"]
        est = " est." if r["plan_estimated"] else ""
        lines.append(f"| {r['env_id']} | {c['mujoco']:,.0f} | {c['batch']:,.0f} | {c['old']:,.0f} | {c['new']:,.0f} | "
                     f"{c['new'] / c['old']:.2f} | {c['new'] / c['mujoco']:.2f} | {r['plan_cpu_s']:.0f}{est} |")
    lines += ["", f"Goal: one paper-sized plan in at most {GOAL_PLAN_S:.0f} s. A plan is 2 million env steps "
              "(10 million MuJoCo substeps at frame skip 5), so it cannot take less than 2 million steps at "
              "MuJoCo's own rate (last column, one thread; halve it for two idle cores).", ""]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    from codeworld.envs import get_spec, list_envs

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    default_envs = [e for e in list_envs() if get_spec(e).family == "mujoco" and not get_spec(e).discrete]
    parser.add_argument("--envs", default=",".join(default_envs))
    parser.add_argument("--threads", type=int, default=0, help="the native oracle's threads (0: every core)")
    parser.add_argument("--seconds", type=float, default=2.0, help="time per rate measured")
    parser.add_argument("--plan-budget-s", type=float, default=150.0,
                        help="run a whole plan where it takes at most this long, else one iteration x 20")
    parser.add_argument("--out", default=str(RESULTS / "oracle_speed"))
    args = parser.parse_args(argv)
    warnings.simplefilter("ignore")
    meta = {"commit": code_version(), "threads": args.threads, "load_before": os.getloadavg()[0],
            "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}",
            "command": "python benchmarks/oracle_speed.py " + " ".join(argv if argv is not None else sys.argv[1:])}
    rows = []
    for env_id in [e.strip() for e in args.envs.split(",") if e.strip()]:
        row = measure(env_id, args.threads, args.seconds, args.plan_budget_s)
        rows.append(row)
        print(f"{env_id:<26} mujoco {row['mujoco']:>9,.0f}/s  batch {row['batch']:>9,.0f}/s  old {row['old']:>8,.0f}/s  "
              f"new {row['new']:>8,.0f}/s  x{row['new'] / row['old']:.2f}  plan {row['plan_s']:.0f} s"
              f"{' est.' if row['plan_estimated'] else ''} (old {row['old_plan_s']:.0f} s)", flush=True)
    meta.update(load_after=os.getloadavg()[0],
                finished_at=_dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"))
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    out.with_suffix(".md").write_text(markdown(rows, meta))
    print(f"written {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
