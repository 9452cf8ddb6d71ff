"""The agent's planner on its models: states expanded per CPU second, against the former state
helpers in the same run.

The agent plans by breadth-first search over its program (`codeworld.worlds.objects._ops.bfs_plan`):
every simulated step copies the state three times (the program's input, and the reward's two)
and keys the state it reaches (`state_key`: its canonical text), and the rule model's
``transition`` copies the state it is given. Per level and seed, a random
policy records ``--transitions`` transitions (as `rule_model_learning.py` plays), the rule model
learned from them is the program, its reward replaced by "never" (the search then runs until
it exhausts the reachable states or ``--max-nodes``, as it does when it explores), and one plan
from a start state of the level is timed in CPU seconds, best of ``--repeats``:

* ``baseline``: as before 2026-12-07: the state helpers (a recursive copy in Python; a key built
  in two passes, a plain copy and then a sorted one, and encoded with sorted keys), kept here,
  and the rule model copying its state with ``copy.deepcopy``;
* ``current``: the package's (`copy_state`: marshal's copy in C; `state_key`: one canonical pass;
  the rule model's ``_copy``, marshal's).

Both searches must expand the same states (the script stops otherwise).

    python benchmarks/agent_plan_speed.py [--levels household:clean ...] [--seeds 3]

Writes benchmarks/results/agent_plan_speed.{json,md}.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))
from rule_model_learning import play  # noqa: E402  (the same random-policy transitions)
from worldcoder import code_version  # noqa: E402

LEVELS = ["household:place", "household:clean", "household:two", "sokoban:gen:1", "minigrid:doorkey"]


# ---------------------------------------------------------------- the former helpers (baseline)

def _plain(value: Any) -> Any:
    if isinstance(value, dict):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_plain(v) for v in value]
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return value
    if hasattr(value, "item"):
        return _plain(value.item())
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _sorted_containers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _sorted_containers(v) for k, v in sorted(value.items())}
    if isinstance(value, list):
        items = [_sorted_containers(v) for v in value]
        if items and all(isinstance(v, (dict, list)) for v in items):
            items.sort(key=repr)
        return items
    return value


def baseline_state_key(state: Any) -> str:
    return json.dumps(_sorted_containers(_plain(state)), sort_keys=True, separators=(",", ":"))


def baseline_copy_state(state: Any) -> Any:
    if isinstance(state, dict):
        return {k: baseline_copy_state(v) for k, v in state.items()}
    if isinstance(state, list):
        return [baseline_copy_state(v) for v in state]
    return state


@contextmanager
def helpers(kind: str):
    """The planner's module with the ``kind`` helpers in place."""
    from codeworld.worlds.objects import _ops

    saved = (_ops.copy_state, _ops.state_key)
    if kind == "baseline":
        _ops.copy_state, _ops.state_key = baseline_copy_state, baseline_state_key
    try:
        yield _ops
    finally:
        _ops.copy_state, _ops.state_key = saved


def measure(level: str, seed: int, transitions: int, max_nodes: int, repeats: int) -> dict:
    from codeworld.agent.envs import make_object_env
    from codeworld.worlds.objects._rules import learn_rules

    env = make_object_env(level)
    data = play(level, seed, transitions, 40)
    from codeworld.worlds.objects._rules import HELPERS

    program = (HELPERS + "\n\n" + learn_rules(data, names=tuple(env.action_names)).transition_code()
               + "\n\ndef reward(state, action, next_state, mission):\n    return 0.0, False\n")
    if "    new = _copy(state)\n" not in program:
        raise SystemExit("agent_plan_speed.py: the rule model no longer copies its state with _copy")
    # the former rule model copied its state with copy.deepcopy
    programs = {"baseline": program.replace("    new = _copy(state)\n", "    new = copy.deepcopy(state)\n"),
                "current": program}
    start, mission = env.reset(seed=seed)
    env.close()
    row: dict = {"level": level, "seed": seed, "transitions": transitions}
    for kind in ("baseline", "current"):
        namespace: dict = {}
        exec(programs[kind], namespace)  # noqa: S102 - the rule model's own program
        functions = (namespace["transition"], namespace["reward"])
        best = None
        with helpers(kind) as ops:
            for _ in range(repeats):
                began = time.process_time()
                plan = ops.bfs_plan(functions, start, mission, env.n_actions, max_nodes, 1000)
                spent = time.process_time() - began
                best = spent if best is None else min(best, spent)
        row[kind] = {"cpu_s": round(best, 4), "expanded": plan["expanded"],
                     "states_per_cpu_s": round(plan["expanded"] / best, 1)}
    if row["baseline"]["expanded"] != row["current"]["expanded"]:
        raise SystemExit(f"agent_plan_speed.py: {level} seed {seed}: the searches differ")
    row["speedup"] = round(row["baseline"]["cpu_s"] / row["current"]["cpu_s"], 2)
    return row


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--levels", nargs="+", default=LEVELS)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--transitions", type=int, default=200)
    parser.add_argument("--max-nodes", type=int, default=5000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "agent_plan_speed"))
    args = parser.parse_args(argv)
    if args.seeds < 1 or args.transitions < 1 or args.max_nodes < 1 or args.repeats < 1:
        parser.error("--seeds, --transitions, --max-nodes and --repeats must be at least 1")
    rows = []
    for level in args.levels:
        for seed in range(args.seeds):
            row = measure(level, seed, args.transitions, args.max_nodes, args.repeats)
            rows.append(row)
            print(f"{level} seed {seed}: {row['current']['expanded']} states, "
                  f"{row['baseline']['cpu_s']:.3f} -> {row['current']['cpu_s']:.3f} CPU s, "
                  f"{row['speedup']:.2f}x", flush=True)
    meta = {"commit": code_version(), "command": "python benchmarks/agent_plan_speed.py "
            + " ".join(argv if argv is not None else sys.argv[1:]),
            "machine": f"{platform.machine()}, Python {platform.python_version()}",
            }
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "rows": rows}, indent=1) + "\n")
    lines = ["# The agent's planner: states expanded per CPU second (benchmarks/agent_plan_speed.py)",
             "", f"Command: `{meta['command']}`, at {meta['commit']}, {meta['machine']}; "
             f"{args.transitions} random-policy transitions per level and seed, the rule model's "
             f"transition (the baseline's copying with copy.deepcopy) with a reward that never comes, one plan of at most {args.max_nodes} "
             f"states from the level's start, best of {args.repeats} (CPU seconds).", "",
             "| level | seed | states expanded | baseline (CPU s) | current (CPU s) | speedup |",
             "|---|---:|---:|---:|---:|---:|"]
    lines += [f"| {r['level']} | {r['seed']} | {r['current']['expanded']} | {r['baseline']['cpu_s']:.3f} "
              f"| {r['current']['cpu_s']:.3f} | {r['speedup']:.2f}x |" for r in rows]
    speedups = sorted(r["speedup"] for r in rows)
    lines += ["", f"Speedup over the {len(rows)} plans: {speedups[0]:.2f}x to {speedups[-1]:.2f}x "
              f"(median {speedups[len(speedups) // 2]:.2f}x)."]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines[-1:]))
    print(f"wrote {out.with_suffix('.json')} and {out.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
