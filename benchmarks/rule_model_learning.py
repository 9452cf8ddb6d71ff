"""The agent's rule model alone (no LLM call): how much of a level's dynamics it predicts from how
few transitions, with and without an action taking another's rules (by its own step, or with
what its name names).

For each level and seed, a random policy plays episodes of the level (at most
``--episode-steps`` steps each) and records its transitions; the rule model
(`codeworld.worlds.objects._rules.learn_rules`) is learned from the first N of them, for each N
of ``--sizes``, and scored on transitions of other episodes (played at another seed, never
learned from): the share whose next state it predicts exactly, beside the do-nothing model's
(state unchanged). ``borrowed`` is the model as the agent builds it (an action takes the rules of
another that moves things by another vector, where they are right on its own transitions);
``own`` learns each action from its own transitions alone. Given the level's action names, as
the agent gives them, an action may also take the rules of one whose name begins as its own and
names another thing ("take apple" for "take potato").

    python benchmarks/rule_model_learning.py [--levels sokoban:turn minigrid:doorkey ...]
        [--seeds 5] [--sizes 25 50 100 200] [--out STEM]

Writes STEM.json after every level and seed (a rerun keeps the finished ones) and STEM.md.
"""

from __future__ import annotations

import argparse
import copy
import json
import platform
import random
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # cwmb.py and worldcoder.py beside it

LEVELS = ["sokoban:corridor", "sokoban:turn", "sokoban:gen:1", "sokoban:gen:2", "sokoban:gen:3",
          "minigrid:empty", "minigrid:doorkey", "minigrid:unlock", "household:place",
          "household:examine", "household:clean", "household:heat", "household:cool",
          "household:two"]
HELD_OUT = 300  # transitions scored per level and seed


def play(level: str, seed: int, steps: int, episode_steps: int) -> list[dict]:
    """``steps`` transitions of a random policy on ``level`` (a new episode after an end or
    ``episode_steps`` steps; episode seeds drawn from ``seed``)."""
    from codeworld.agent.envs import make_object_env

    env = make_object_env(level)
    rng = random.Random(seed)
    data: list[dict] = []
    try:
        while len(data) < steps:
            state, mission = env.reset(seed=rng.randrange(1 << 30))
            for _ in range(episode_steps):
                action = rng.randrange(env.n_actions)
                before = copy.deepcopy(state)
                state, reward, terminated, truncated = env.step(action)
                data.append({"state": before, "action": action, "next_state": copy.deepcopy(state),
                             "reward": float(reward), "done": bool(terminated), "mission": mission})
                if terminated or truncated or len(data) >= steps:
                    break
    finally:
        env.close()
    return data


def right(sandbox, program: str, transitions: list[dict], n_actions: int) -> float:
    """The share of ``transitions`` whose next state ``program`` gives exactly, checked as the
    agent checks a model (`codeworld.worlds.objects._ops.op_evaluate`, in the sandbox)."""
    from codeworld.worlds.objects._ops import op_evaluate

    reply = sandbox.call(op_evaluate, timeout_s=600.0, source=program, transitions=transitions,
                         starts=[], n_actions=n_actions)
    if not reply.ok:
        raise SystemExit(f"rule_model_learning.py: the rule model failed its check: {reply.message}")
    return reply.value["state_correct"] / len(transitions)


def measure(sandbox, level: str, seed: int, sizes: list[int], episode_steps: int) -> dict:
    from codeworld.agent.envs import make_object_env
    from codeworld.worlds.objects._rules import learn_rules

    env = make_object_env(level)
    n_actions, names = env.n_actions, tuple(env.action_names)
    env.close()
    data = play(level, seed, max(sizes), episode_steps)
    held = play(level, 10_000 + seed, HELD_OUT, episode_steps)
    row: dict = {"level": level, "seed": seed, "held_out": len(held),
                 "floor": sum(t["state"] == t["next_state"] for t in held) / len(held),
                 "sizes": {}}
    for n in sizes:
        started = time.perf_counter()
        borrowed = learn_rules(data[:n], names=names)
        seconds = time.perf_counter() - started
        own = learn_rules(data[:n], borrow=False)
        row["sizes"][str(n)] = {"borrowed": right(sandbox, borrowed.program(), held, n_actions),
                                "own": right(sandbox, own.program(), held, n_actions),
                                "actions_borrowing": sorted(borrowed.borrowed),
                                "actions_by_name": sorted(borrowed.analogies),
                                "learn_seconds": round(seconds, 3)}
    return row


def write_table(out: Path, meta: dict, rows: list[dict]) -> None:
    from cwmb import _pm, _stderr

    sizes = meta["sizes"]
    lines = ["# The rule model alone: next states predicted exactly on held-out transitions "
             "(benchmarks/rule_model_learning.py)", "",
             f"Command: `{meta['command']}`", "",
             f"Commit {meta['commit']}, {meta['machine']}. A random policy's transitions, "
             f"episodes of at most {meta['episode_steps']} steps; learned from the first N, "
             f"scored on {HELD_OUT} transitions of other episodes (another seed). Mean ± "
             "standard error over seeds; `borrowed`: as the agent builds it (an action may take "
             "another's rules by its own step, or, given the action names, those of an action "
             "whose name names another thing: \"take apple\" for \"take potato\"), `own`: each "
             "action from its own transitions alone; floor: the do-nothing model (state unchanged).", "",
             "| level | seeds | floor | " + " | ".join(f"N={n}: borrowed | own" for n in sizes)
             + " |",
             "|---|---:|---:|" + "---:|---:|" * len(sizes)]
    for level in meta["levels"]:
        mine = [r for r in rows if r["level"] == level]
        if not mine:
            continue
        floor = [r["floor"] for r in mine]
        cells = []
        for n in sizes:
            for kind in ("borrowed", "own"):
                values = [r["sizes"][str(n)][kind] for r in mine if str(n) in r["sizes"]]
                cells.append(_pm(float(np.mean(values)), _stderr(values)) if values else "n/a")
        lines.append(f"| {level} | {len(mine)} | {np.mean(floor):.3f} | " + " | ".join(cells) + " |")
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")


def main(argv: list[str] | None = None) -> int:
    from worldcoder import code_version

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=LEVELS, metavar="FAMILY:LEVEL")
    parser.add_argument("--seeds", type=int, default=5, help="seeds per level (default 5)")
    parser.add_argument("--sizes", type=int, nargs="+", default=[25, 50, 100, 200],
                        help="transitions learned from (default 25 50 100 200)")
    parser.add_argument("--episode-steps", type=int, default=40,
                        help="steps per random episode (default 40)")
    parser.add_argument("--out", default="benchmarks/results/rule_model_learning", metavar="STEM")
    args = parser.parse_args(argv)
    if args.seeds < 1 or not args.sizes or min(args.sizes) < 1 or args.episode_steps < 1:
        raise SystemExit("rule_model_learning.py: --seeds, --sizes and --episode-steps must be "
                         "at least 1")
    from codeworld.agent.envs import make_object_env
    from codeworld.sandbox import Sandbox, SandboxLimits

    for level in args.levels:
        try:
            make_object_env(level).close()
        except (KeyError, ValueError) as exc:
            raise SystemExit(f"rule_model_learning.py: --levels: {exc}") from None
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    meta = {"command": "python benchmarks/rule_model_learning.py "
                       + " ".join(argv if argv is not None else sys.argv[1:]),
            "levels": args.levels, "sizes": sorted(args.sizes), "episode_steps": args.episode_steps,
            "commit": code_version(),
            "machine": f"{platform.machine()}, Python {platform.python_version()}"}
    path = out.with_suffix(".json")
    rows: list[dict] = []
    if path.is_file():  # a rerun of the same settings keeps the finished levels and seeds
        old = json.loads(path.read_text())
        if {k: old["meta"].get(k) for k in ("sizes", "episode_steps")} == {
                k: meta[k] for k in ("sizes", "episode_steps")}:
            rows = old["rows"]
    done = {(r["level"], r["seed"]) for r in rows}
    with Sandbox(SandboxLimits(timeout_s=600.0)) as sandbox:
        for level in args.levels:
            for seed in range(args.seeds):
                if (level, seed) in done:
                    continue
                started = time.perf_counter()
                row = measure(sandbox, level, seed, sorted(args.sizes), args.episode_steps)
                rows.append(row)
                path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
                write_table(out, meta, rows)
                best = row["sizes"][str(max(args.sizes))]
                print(f"{level} seed {seed}: floor {row['floor']:.3f}, N={max(args.sizes)} "
                      f"borrowed {best['borrowed']:.3f}, own {best['own']:.3f} "
                      f"({time.perf_counter() - started:.0f} s)", flush=True)
    write_table(out, meta, rows)
    print(f"wrote {path} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
