"""`codeworld demo` as a new user runs it, measured: the figures the README quotes.

Runs the demo command itself (``python -m codeworld demo``) in a child process, by default with
an empty user cache (a temporary ``CODEWORLD_CACHE_DIR``: no cached completions, the embedded
model joined and checked again) and the portable engine a fresh clone uses
(``CODEWORLD_LOCAL_ENGINE=xllamacpp``), and writes its wall time and what its ``demo.json``
holds (held-out accuracy with floor and ceiling, the paper rule's, the normalized return) to
``STEM.json`` and ``STEM.md``, with the commit of the code.

    python benchmarks/demo.py                      # writes benchmarks/results/demo.{json,md}
    python benchmarks/demo.py --engine native --keep-cache
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
from worldcoder import code_version  # noqa: E402  (the commit of the code, as the agent's tables record it)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--engine", default="xllamacpp", choices=("xllamacpp", "native"),
                        help="the embedded model's engine (default xllamacpp, a fresh clone's)")
    parser.add_argument("--keep-cache", action="store_true",
                        help="use the user cache as it is (cached completions replay)")
    parser.add_argument("--out", default=str(HERE / "results" / "demo"), metavar="STEM")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as tmp:
        env = dict(os.environ, CODEWORLD_LOCAL_ENGINE=args.engine)
        if not args.keep_cache:
            env["CODEWORLD_CACHE_DIR"] = str(Path(tmp) / "cache")
        run_dir = Path(tmp) / "run"
        started = time.perf_counter()
        done = subprocess.run([sys.executable, "-m", "codeworld", "demo", "--out", str(run_dir)],
                              env=env)
        wall = time.perf_counter() - started
        if done.returncode != 0:
            sys.exit(f"demo.py: codeworld demo exited with {done.returncode}")
        record = json.loads((run_dir / "demo.json").read_text())
    sound, paper, plan = record["score_sound"], record["score_paper"], record["planning"]
    outcomes = record.get("calls_by_outcome")
    meta = {"command": "python benchmarks/demo.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "commit": code_version(), "engine": args.engine, "fresh_cache": not args.keep_cache,
            "wall_minutes": round(wall / 60, 2), "cpus": os.cpu_count()}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "demo": record}, indent=2) + "\n")
    lines = [
        f"Command: `{meta['command']}`, at {meta['commit']}; the {args.engine} engine, "
        f"{'an empty' if meta['fresh_cache'] else 'the existing'} user cache, {meta['cpus']} cores.",
        "",
        "| figure | value |", "|---|---|",
        f"| wall time of `codeworld demo` (install not counted) | {meta['wall_minutes']:.1f} min |",
        f"| LLM calls, tokens | {record['calls']}, {record['tokens']:,} |",
        *([f"| calls by outcome: new, copies, buggy (copies asked again within their calls) "
           f"| {outcomes['new']}, {outcomes['copy']}, {outcomes['buggy']} "
           f"({record.get('resamples', 0)}) |"] if outcomes else []),
        f"| held-out accuracy, sound rule (floor, ceiling) | {sound['model']:.4f} "
        f"({sound['floor']:.4f}, {sound['ceiling']:.4f}) |",
        f"| held-out strict accuracy | {sound['strict']:.4f} |",
        f"| held-out accuracy, paper rule (floor, ceiling) | {paper['model']:.4f} "
        f"({paper['floor']:.4f}, {paper['ceiling']:.4f}) |",
        f"| normalized return (model, random, oracle) | {plan['normalized_return']:.3f} "
        f"({plan['return_model']:g}, {plan['return_random']:g}, {plan['return_oracle']:g}) |",
    ]
    out.with_suffix(".md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
