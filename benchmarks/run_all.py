"""``make bench``: the throughput benchmarks that need no LLM, one after the other.

Runs the scorer benchmark (codeworld's batched, sandboxed scorer against the paper's per-transition
loop) and the planner benchmark (C++ and Numba MCTS/CEM against paper-style Python planners and a
hand-written C loop). Each script measures its baseline in the same run, prints its ratios and
writes its results under ``benchmarks/results/`` (``scorer_throughput.json``,
``planner_throughput.json`` and ``.md``). The LLM benchmarks (``cwmb.py``, ``inference_speed.py``,
``apps.py``, ``worldcoder.py``) take hours on a CPU and are run on their own.

Usage: ``python benchmarks/run_all.py [--quick]`` (``--quick``: smaller runs, a smoke test of the
scripts whose figures are not for the README; they go to a temporary folder).
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small smoke runs, results not kept")
    args = parser.parse_args(argv)
    out = Path(tempfile.mkdtemp(prefix="codeworld-bench-")) if args.quick else HERE / "results"
    runs = [
        ("scorer throughput", [HERE / "scorer_throughput.py", "--out", str(out / "scorer_throughput.json")]
         + (["--transitions", "5000", "--paper-transitions", "2000", "--repeats", "1"] if args.quick else [])),
        ("planner throughput", [HERE / "planner_throughput.py", "--out", str(out)]
         + (["--quick", "--repeats", "1"] if args.quick else [])),
    ]
    failed = []
    for name, command in runs:
        print(f"== {name}: {' '.join(str(c) for c in command)}", flush=True)
        started = time.perf_counter()
        code = subprocess.call([sys.executable, *map(str, command)])
        print(f"== {name}: exit {code} after {time.perf_counter() - started:.0f} s", flush=True)
        if code:
            failed.append(name)
    print(f"results in {out}" + (f"; failed: {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
