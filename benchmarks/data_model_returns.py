"""The data model alone (no LLM call): its held-out accuracy beside the floor, and its normalized
return under a planning protocol beside the do-nothing model's.

For each environment and split seed, the CWMB world is built on the training episodes of the
split a grid job of that seed draws (`codeworld.worlds.cwmb._cwmb.make_cwmb_world`, all assists
on), and its data model (the program the machine writes from the data before any call, a
search's first node) is scored on the held-out episodes (sound rule, with the do-nothing floor)
and planned under the protocol (default: the paper's) on the episodes of `--plan-seed`, with
random and oracle returns from the reference table (`benchmarks/reference_returns.py`; an env the
table lacks is listed, not planned; one with the random return but no oracle's is planned and
its raw returns shown, not normalized). Beside it, the do-nothing model (state unchanged, a constant
reward, never done: every plan ties, so it earns the planner's own noise) planned the same way:
a model at that return plans no better than knowing nothing.

    python benchmarks/data_model_returns.py [--envs continuous|ENV,ENV,...] [--seeds 3]
        [--protocol paper] [--plan-seed 0] [--out STEM]

Writes STEM.json after every environment and seed (a rerun keeps the finished ones) and STEM.md.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(Path(__file__).resolve().parent))  # cwmb.py and worldcoder.py beside it


def measure(env_id: str, seed: int, protocol: str, plan_seed: int) -> dict:
    """One environment and split seed: the data model's scores and both returns."""
    from codeworld.envs import resolve_env
    from codeworld.envs._buffers import HELDOUT_FRACTION, EpisodeSplit
    from codeworld.experiments._cwmb_job import floor_program, missing_references, score_program
    from codeworld.planning import evaluate
    from codeworld.planning._protocol import default_config, get_protocol
    from codeworld.scoring import Scorer
    from codeworld.worlds.cwmb._cwmb import make_cwmb_world

    spec = resolve_env(env_id)
    chosen = get_protocol(protocol)
    whole = Scorer(spec, None, references=False).buffer
    split = EpisodeSplit.draw(whole, HELDOUT_FRACTION, seed).to_json()
    started = time.perf_counter()
    world = make_cwmb_world(env_id, split=split, split_seed=seed)
    data = next(s for s in world.seeds if s.label == "data")
    built = time.perf_counter() - started
    scores = score_program(spec, data.program, split=split)["sound"]
    out = {"env_id": env_id, "seed": seed, "build_seconds": built,
           "reward": (data.record or {}).get("reward"),
           "heldout": scores["score"], "floor": scores["floor"], "protocol": chosen.name,
           "plan_seed": plan_seed}
    config = default_config(spec, chosen.max_steps)
    missing = missing_references(spec, chosen.name, plan_seed, config)
    policies = ("random", "oracle", "model")
    if "random" in missing:
        out["skipped"] = (f"no random return under protocol {chosen.name} for seed {plan_seed} in "
                          f"the reference table (benchmarks/reference_returns.py --envs {env_id} "
                          f"--protocol {chosen.name})")
        return out
    if missing:  # no oracle: the raw returns beside the random policy's, no normalized return
        policies = ("random", "model")
        out["no_oracle"] = (f"no oracle return under protocol {chosen.name} for seed {plan_seed} "
                            f"(benchmarks/reference_returns.py --envs {env_id} --protocol "
                            f"{chosen.name} --policies oracle)")
    for name, program in (("data", data.program), ("do_nothing", floor_program(spec))):
        t0 = time.perf_counter()
        plan = evaluate(spec, program, config, seed=plan_seed, protocol=chosen.name,
                        policies=policies).to_dict()
        out[name] = {"normalized_return": plan["normalized_return"], "return": plan["return_model"],
                     "random": plan["return_random"], "oracle": plan["return_oracle"],
                     "lengths": plan["model"]["lengths"], "seconds": time.perf_counter() - t0}
    return out


def normalize_late(rows: list[dict]) -> None:
    """Rows planned while the reference table had no oracle return for their env, normalized
    now from the table's (their raw returns do not depend on it), where it has one since."""
    from codeworld.envs import resolve_env
    from codeworld.experiments._cwmb_job import reference_entry
    from codeworld.planning._protocol import default_config, get_protocol
    from codeworld.planning.evaluate import normalized_return

    for row in rows:
        if "no_oracle" not in row or "data" not in row:
            continue
        spec = resolve_env(row["env_id"])
        chosen = get_protocol(row["protocol"])
        entry = reference_entry(spec, "oracle", chosen.name, row["plan_seed"],
                                default_config(spec, chosen.max_steps))
        if entry is None:
            continue
        oracle = float(entry["stats"]["mean"])
        for name in ("data", "do_nothing"):
            plan = row[name]
            plan["oracle"] = oracle
            plan["normalized_return"] = normalized_return(plan["return"], plan["random"], oracle)
        row["oracle_later"] = entry.get("commit")
        del row["no_oracle"]


def _mean(values: list) -> str:
    """Mean ± standard error over seeds, as the CWMB tables write it (`cwmb._pm`)."""
    from cwmb import _mean as mean, _pm, _stderr

    values = [v for v in values if v is not None]
    return _pm(mean(values), _stderr(values))


def markdown(rows: list[dict], meta: dict) -> str:
    lines = ["# The data model alone: held out and planned", "",
             f"Command: `{meta['command']}`; code at {meta['commit']}"
             + (f" (rows kept from a run at {meta['kept_from']})" if meta.get("kept_from") else "")
             + f", {meta['finished_at']}, "
             f"{meta['machine']}. No LLM call: each split seed's data model (the program the "
             "machine writes from the training episodes before a search's first call), scored on "
             "the held-out episodes (sound rule) beside the do-nothing floor, and planned under "
             f"protocol `{meta['protocol']}` on the episodes of seed {meta['plan_seed']} beside "
             "the do-nothing model (state unchanged, a constant reward, never done: every plan "
             "ties, so it earns the planner's own noise). Mean ± standard error over seeds.", "",
             "| env | seeds | held out (sound) | floor | normalized return | the do-nothing model "
             "| return: data model / do-nothing / random / oracle | the data model's reward |",
             "|---|---:|---|---:|---|---:|---|---|"]
    envs: dict[str, list[dict]] = {}
    for row in rows:
        envs.setdefault(row["env_id"], []).append(row)
    skipped = []
    for env_id, members in envs.items():
        planned = [r for r in members if "data" in r]
        if not planned:
            skipped.append(f"- {env_id}: {members[0].get('skipped')}")
        reward = (members[0].get("reward") or {})
        kinds = sorted({(r.get("reward") or {}).get("kind", "?") for r in members})
        text = str(reward.get("text", ""))
        if planned and any("no_oracle" in r for r in planned):
            skipped.append(f"- {env_id}: not normalized, {planned[0]['no_oracle']}")

        def raw(key: str, field: str = "return") -> str:
            values = [r[key][field] for r in planned if r[key].get(field) is not None]
            return f"{np.mean(values):.1f}" if values else "-"

        lines.append(
            f"| {env_id} | {len(members)} | {_mean([r['heldout'] for r in members])} "
            f"| {np.mean([r['floor'] for r in members]):.3f} "
            f"| {_mean([r['data']['normalized_return'] for r in planned]) if planned else 'not planned'} "
            f"| {_mean([r['do_nothing']['normalized_return'] for r in planned]) if planned else ''} "
            f"| {raw('data')} / {raw('do_nothing')} / {raw('data', 'random')} / {raw('data', 'oracle')} "
            f"| {'/'.join(kinds)}: `{text[:90]}{'...' if len(text) > 90 else ''}` (seed {members[0]['seed']}) |")
    later = sorted({f"{r['env_id']} (oracle at {r['oracle_later']})" for r in rows if r.get("oracle_later")})
    if later:
        lines += ["", "Planned before the reference table had their oracle's return, normalized "
                  "since from the table's: " + ", ".join(later) + "."]
    if skipped:
        lines += ["", "Not planned, or not normalized:", ""] + skipped
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="continuous",
                        help="continuous, discrete, all, or a comma-separated list of env ids")
    parser.add_argument("--seeds", type=int, default=3, help="split seeds 0 .. N-1 (default 3)")
    parser.add_argument("--protocol", default="paper", help="the planning protocol (default: paper)")
    parser.add_argument("--plan-seed", type=int, default=0,
                        help="the planning episodes' seed, the same for every split (default 0)")
    parser.add_argument("--out", default=str(ROOT / "benchmarks" / "results" / "data_model_returns"),
                        help="writes STEM.json and STEM.md")
    args = parser.parse_args(argv)
    if args.seeds < 1:
        parser.error("--seeds must be at least 1")
    from cwmb import resolve_envs
    from worldcoder import code_version
    from codeworld.planning._protocol import PROTOCOLS

    if args.protocol not in PROTOCOLS:
        parser.error(f"unknown --protocol {args.protocol!r} (use one of {', '.join(sorted(PROTOCOLS))})")
    try:
        envs = resolve_envs(args.envs)
    except (KeyError, ValueError) as exc:
        parser.error(str(exc).strip("'\""))
    stem = Path(args.out)
    stem.parent.mkdir(parents=True, exist_ok=True)
    path = stem.with_suffix(".json")
    settings = {"protocol": args.protocol, "plan_seed": args.plan_seed}
    kept = json.loads(path.read_text()) if path.is_file() else {}
    rows = [r for r in kept.get("rows", []) if all(r.get(k) == v for k, v in settings.items())]
    done = {(r["env_id"], r["seed"]) for r in rows}
    meta = {"command": "python benchmarks/data_model_returns.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "commit": code_version(), "machine": f"{platform.machine()}, Python {platform.python_version()}",
            **settings}
    if rows and kept.get("meta", {}).get("commit") not in (None, meta["commit"]):
        # the rows kept from an earlier run were measured by its code
        meta["kept_from"] = kept["meta"].get("kept_from") or kept["meta"]["commit"]
    for env in envs:
        env_id = env if isinstance(env, str) else env.env_id
        for seed in range(args.seeds):
            if (env_id, seed) in done:
                continue
            print(f"{env_id:<28} seed {seed} ...", flush=True)
            row = measure(env_id, seed, args.protocol, args.plan_seed)
            rows.append(row)
            ret = (row.get("data") or {}).get("normalized_return")
            floor = (row.get("do_nothing") or {}).get("normalized_return")
            raw = (row.get("data") or {}).get("return"), (row.get("do_nothing") or {}).get("return")
            print(f"  held out {row['heldout']:.3f} (floor {row['floor']:.3f}); "
                  + (row.get("skipped") or (f"return {raw[0]:.1f} (the do-nothing model {raw[1]:.1f})"
                                            if ret is None else
                                            f"normalized return {ret:.3f} (the do-nothing model {floor:.3f})")),
                  flush=True)
            meta["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
            path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    meta["finished_at"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    normalize_late(rows)
    text = markdown(rows, meta)
    stem.with_suffix(".md").write_text(text, encoding="utf-8")
    path.write_text(json.dumps({"meta": meta, "rows": rows}, indent=2) + "\n", encoding="utf-8")
    print(text)
    print(f"wrote {path} and {stem.with_suffix('.md')}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
