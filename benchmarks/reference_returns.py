"""The reference table: random and oracle returns per environment, seed and protocol, computed once.

Every grid's normalized return needs the random policy's and the oracle's returns on the same
seeded episodes; they do not depend on the model, so they are computed here once and stored in
``codeworld/data/reference_returns.json`` (with the commit, the simulator versions, the protocol,
the planner config, the wall time and the machine), which `codeworld.planning.evaluate` reads
before its cache (`codeworld.planning._protocol`).

The table is written after each environment and policy, and entries already in it are skipped, so
a run can be stopped and started again; within an environment, each finished episode is kept
(in ``benchmarks/results/reference_episodes/``, which is committed with the repository, so a run
stopped on one machine goes on from a clone on another) and a stopped run starts again after the
last one kept. It is meant to run in the background at low priority:

    nohup nice -n 10 .venv/bin/python benchmarks/reference_returns.py --envs continuous \\
        --protocol paper --threads 2 > /tmp/reference_returns.log 2>&1 &
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import shlex
import sys
import time
from dataclasses import replace
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from cwmb import resolve_envs  # noqa: E402  (the grid's own env lists: all, discrete, continuous, ids)
from worldcoder import code_version  # noqa: E402  (the commit of the code, as the agent's tables record it)


def main(argv: list[str] | None = None) -> int:
    from codeworld.envs import get_spec
    from codeworld.planning import evaluate
    from codeworld.planning.evaluate import reference_key_of
    from codeworld.planning._protocol import (PROTOCOLS, default_config, episode_cap, find_reference, get_protocol,
                                             reference_path, store_reference)

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--envs", default="continuous", help="envs, as benchmarks/cwmb.py takes them")
    parser.add_argument("--protocol", default="paper", choices=sorted(PROTOCOLS))
    parser.add_argument("--seeds", type=int, default=1, help="seeds 0..N-1 (default 1)")
    parser.add_argument("--policies", default="random,oracle")
    parser.add_argument("--threads", type=int, default=0,
                        help="threads of the oracle's planner and simulator (0: every core; plans do not depend on it)")
    parser.add_argument("--out", default=None, help="the table (default: the package's)")
    parser.add_argument("--keep", default=str(HERE / "results" / "reference_episodes"),
                        help="where the finished episodes of an unfinished run are kept "
                             "(default: benchmarks/results/reference_episodes)")
    args = parser.parse_args(argv)
    protocol = get_protocol(args.protocol)
    path = Path(args.out) if args.out else reference_path()
    policies = [p.strip() for p in args.policies.split(",") if p.strip()]
    command = "python benchmarks/reference_returns.py " + " ".join(
        shlex.quote(a) for a in (argv if argv is not None else sys.argv[1:]))
    for env_id in resolve_envs(args.envs):
        spec = get_spec(env_id)
        for seed in range(args.seeds):
            for policy in policies:
                if policy == "oracle" and not spec.has_oracle:
                    continue
                caps = [c for c in (protocol.max_steps, spec.max_episode_steps) if c is not None]
                cap = min(caps) if caps else episode_cap(spec, None)
                config = default_config(spec, protocol.max_steps)
                if hasattr(config, "threads"):
                    config = replace(config, threads=args.threads)
                # The key as evaluate makes it (no run: policies=()).
                probe = evaluate(spec, config=config, seed=seed, policies=(), protocol=protocol)
                key = reference_key_of(policy, probe)
                if find_reference(key, path) is not None:
                    print(f"{env_id} {policy} seed {seed}: in the table", flush=True)
                    continue
                print(f"{env_id} {policy} seed {seed}: {protocol.episodes} episodes of up to {cap} steps ...",
                      flush=True)
                result = evaluate(spec, config=config, seed=seed, policies=(policy,), protocol=protocol,
                                  use_cache=False, resume=True, keep_dir=Path(args.keep))
                stats = getattr(result, policy)
                if not stats.ok:
                    print(f"  {stats.status}: {stats.message}", flush=True)
                    continue
                meta = {"protocol": protocol.name, "commit": code_version(), "command": command,
                        "threads": args.threads,
                        "finished_at": _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="seconds"),
                        "machine": f"{platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}"}
                store_reference(key, stats.to_dict(), meta, spec, path)
                print(f"  mean {stats.mean:.3f} over {len(stats.returns)} episodes, {stats.seconds / 60:.1f} min, "
                      f"{stats.model_steps} simulated steps", flush=True)
    return 0


if __name__ == "__main__":
    started = time.perf_counter()
    code = main()
    print(f"reference_returns: {(time.perf_counter() - started) / 60:.1f} min")
    sys.exit(code)
