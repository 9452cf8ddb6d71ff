"""Soak: many candidate programs, healthy and hostile, scored in one search process.

A synthesis run scores every program an LLM writes in the same long-lived process, through the
evaluator the runner uses (`make_cwmb_world`, then ``evaluator.evaluate(program)``: static checks,
a smoke run, the buffer, the held-out episodes and the steps beyond the data, each in a sandbox
worker). This script feeds that one evaluator a shuffled mix of programs:

* healthy: the true dynamics, and versions with a wrong constant;
* slow: endless loops and sleeps in ``step`` or at import, a handler that ignores the soft
  timeout (the per-request limit, ``--timeout``, ends them);
* crashing: exceptions, ``sys.exit``, ``os._exit``, a segfault through ctypes, runaway
  recursion, wrong return values;
* hostile: fork bombs (Python and raw ``fork`` through ctypes), subprocesses, thousands of open
  files, runaway memory, big files, network connections (Python and raw sockets), signals to the
  parent, closing the worker's pipes, hundreds of threads, output floods, garbage and forged
  pickles written to the worker's reply pipe (which once hung the parent and ran the payload in
  it; a file holding the parent's pid tells).

Every ``--every`` programs it samples the parent process with psutil: resident memory, child
processes (and zombies), open file descriptors, threads, and the sandbox's temporary folders left
in the temp directory. It prints the samples, the ratio of the last to the first (a leak shows as
growth), what each kind of program came back as, and writes ``benchmarks/results/soak.json`` and
``soak.md``.

Usage: ``nice -n 15 python benchmarks/soak.py [--programs 1000] [--timeout 2] [--every 50]``
"""

from __future__ import annotations

import argparse
import collections
import json
import os
import platform
import random
import sys
import tempfile
import time
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parent))
from scorer_throughput import MODEL  # noqa: E402  (the true CartPole dynamics, one home)

RESULTS = Path(__file__).resolve().parent / "results"
ESCAPE_MARK = "codeworld-soak-escape"


def program(prelude: str = "", body: str = "", tau: float = 0.02) -> str:
    """The CartPole model with ``prelude`` at module level and ``body`` first in ``step``."""
    source = MODEL.replace("TAU = 0.02", f"TAU = {tau!r}")
    if prelude:
        source = source.replace("\ndef step(", f"\n{prelude.strip()}\n\n\ndef step(", 1)
    if body:
        lines = "".join(f"    {line}\n" for line in body.strip().splitlines())
        source = source.replace("def step(state, action):\n", f"def step(state, action):\n{lines}", 1)
    return source


def escape_path(i: int) -> str:
    """A file outside the worker's folder (in the parent's temp directory) that a hostile program
    tries to create."""
    return os.path.join(tempfile.gettempdir(), f"{ESCAPE_MARK}-{os.getpid()}-{i}")


LIBC = "import ctypes\nLIBC = ctypes.CDLL(None, use_errno=True)"
# Writes ``frame`` to every descriptor the worker may hold, its reply pipe among them.
PIPE_WRITE = ("import os, struct\n{setup}\nfor fd in range(3, 64):\n    try:\n"
              "        os.write(fd, {frame})\n    except OSError:\n        pass")

# name -> (category, weight, make(i) -> program). The weights give the mix of a run.
KINDS = {
    # healthy
    "true dynamics": ("healthy", 20, lambda i: program()),
    "wrong constant": ("healthy", 20, lambda i: program(tau=round(0.02 + 0.0001 * (i % 97 + 1), 6))),
    # slow
    "endless loop in step": ("slow", 4, lambda i: program(body="while True:\n    pass")),
    "sleep in step": ("slow", 3, lambda i: program("import time", "time.sleep(30)")),
    "endless loop at import": ("slow", 3, lambda i: program("while True:\n    pass")),
    "ignores the soft timeout": ("slow", 3, lambda i: program(
        "import signal\nsignal.signal(signal.SIGUSR1, signal.SIG_IGN)", "while True:\n    pass")),
    # crashing
    "raises in step": ("crashing", 4, lambda i: program(body=f"raise ValueError('bad {i}')")),
    "sys.exit in step": ("crashing", 3, lambda i: program("import sys", "sys.exit(3)")),
    "os._exit at import": ("crashing", 3, lambda i: program("import os\nos._exit(7)")),
    "segfault through ctypes": ("crashing", 3, lambda i: program(
        "import ctypes", "ctypes.string_at(0)")),
    "runaway recursion": ("crashing", 3, lambda i: program(
        "def down(n):\n    return down(n + 1) + 1", "down(0)")),
    "wrong return value": ("crashing", 3, lambda i: program(body="return None")),
    "syntax error": ("crashing", 1, lambda i: program(body="x = (")),
    # hostile
    "fork bomb": ("hostile", 3, lambda i: program("import os", "while True:\n    os.fork()")),
    "raw fork through ctypes": ("hostile", 3, lambda i: program(
        LIBC, "for _ in range(100):\n    LIBC.fork()")),
    "subprocess": ("hostile", 2, lambda i: program(
        "import subprocess", "subprocess.Popen(['sleep', '60'])")),
    "thousands of open files": ("hostile", 3, lambda i: program(
        "import os\nFILES = [open(os.devnull) for _ in range(5000)]")),
    "runaway memory": ("hostile", 2, lambda i: program(
        "CHUNKS = []", "while True:\n    CHUNKS.append(bytearray(256 * 2**20))")),
    "one huge allocation": ("hostile", 2, lambda i: program(body="x = bytearray(64 * 2**30)")),
    "big file": ("hostile", 2, lambda i: program(
        body="with open('big.bin', 'wb') as f:\n    while True:\n        f.write(b'0' * 2**20)")),
    "file outside its folder": ("hostile", 2, lambda i: program(
        f"open({escape_path(i)!r}, 'w').write('written by a worker')")),
    "network": ("hostile", 2, lambda i: program(
        "import socket", "socket.create_connection(('127.0.0.1', 9), timeout=1)")),
    "raw socket through ctypes": ("hostile", 2, lambda i: program(
        LIBC, "if LIBC.socket(2, 1, 0) >= 0:\n    raise RuntimeError('got a socket')")),
    "signals the parent": ("hostile", 2, lambda i: program(
        "import os, signal", "os.kill(os.getppid(), signal.SIGTERM)")),
    "raw kill of the parent": ("hostile", 2, lambda i: program(
        LIBC + "\nimport os", "LIBC.kill(os.getppid(), 15)")),
    "closes its pipes": ("hostile", 1, lambda i: program("import os\nos.closerange(3, 256)")),
    "hundreds of threads": ("hostile", 2, lambda i: program(
        "import threading, time\nfor _ in range(300):\n"
        "    threading.Thread(target=time.sleep, args=(60,), daemon=True).start()")),
    "output flood": ("hostile", 2, lambda i: program(body="print('x' * 10**6)")),
    # A length prefix of b'garb' (1.7 GB): once, the parent blocked in recv past its deadline.
    "garbage on its pipes": ("hostile", 2, lambda i: program(
        PIPE_WRITE.format(setup="", frame="b'garbage' * 64"))),
    # A length, then less than it announced, then a long sleep.
    "short frame on its pipes": ("hostile", 1, lambda i: program(
        "import time\n" + PIPE_WRITE.format(setup="", frame="struct.pack('!i', 1000) + b'half'"),
        "time.sleep(30)")),
    # A reply frame the worker forges: once, the parent unpickled it, which ran the payload in the
    # parent, outside the sandbox (here: it writes the pid of the process that runs it).
    "forged reply on its pipe": ("hostile", 2, lambda i: program(PIPE_WRITE.format(
        setup="import pickle\nclass Payload:\n    def __reduce__(self):\n        return (eval, "
              f"(\"(open({escape_path(i)!r}, 'w').write(str(__import__('os').getpid())), {{}})[1]\",))"
              "\nFRAME = pickle.dumps(('ok', Payload()))",
        frame="struct.pack('!i', len(FRAME)) + FRAME"))),
}


def schedule(n: int, seed: int, kinds: dict) -> list[str]:
    """``n`` of ``kinds``, in proportion to their weights, shuffled (each stretch holds the same
    mix)."""
    names = list(kinds)
    weights = [kinds[k][1] for k in names]
    total = sum(weights)
    counts = {k: max(1, round(n * w / total)) for k, w in zip(names, weights)}
    order = [k for k in names for _ in range(counts[k])]
    random.Random(seed).shuffle(order)
    return (order * (n // len(order) + 1))[:n]


def sample(process: psutil.Process, done: int, started: float) -> dict:
    """The parent's resources now."""
    children = process.children(recursive=True)
    zombies = sum(1 for c in children if _status(c) == psutil.STATUS_ZOMBIE)
    tmp = tempfile.gettempdir()
    leftovers = sum(1 for name in os.listdir(tmp) if name.startswith("codeworld-sandbox-"))
    return {"programs": done, "seconds": round(time.perf_counter() - started, 1),
            "rss_mib": round(process.memory_info().rss / 2**20, 1), "children": len(children),
            "zombies": zombies, "fds": process.num_fds(), "threads": process.num_threads(),
            "sandbox_dirs": leftovers}


def _status(child: psutil.Process) -> str:
    try:
        return child.status()
    except psutil.Error:
        return "gone"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--env", default="CartPole-v1")
    parser.add_argument("--programs", type=int, default=1000)
    parser.add_argument("--timeout", type=float, default=2.0, help="seconds per request")
    parser.add_argument("--every", type=int, default=50, help="sample every this many programs")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", default=str(RESULTS / "soak.json"))
    args = parser.parse_args()

    from codeworld.sandbox import SandboxLimits
    from codeworld.worlds.cwmb._cwmb import make_cwmb_world

    evaluator = make_cwmb_world(args.env, timeout_s=args.timeout).evaluator
    # The evaluator's timeout covers scoring, not loading: a program that loops at import would
    # hold its worker for the sandbox's default limit. The scorers' own limits cover the load.
    for scorer in (evaluator.scorer, evaluator.heldout):
        if scorer is not None:
            scorer.limits = SandboxLimits(timeout_s=args.timeout)
    process = psutil.Process()
    kinds = KINDS
    order = schedule(args.programs, args.seed, kinds)
    tmp_before = sum(1 for n in os.listdir(tempfile.gettempdir())
                     if n.startswith("codeworld-sandbox-"))
    started = time.perf_counter()
    samples = [sample(process, 0, started)]
    outcomes: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
    seconds: dict[str, float] = collections.Counter()
    stray = []  # programs after which a child process outlived the evaluation
    print(f"soak: {args.programs} programs on {args.env}, {args.timeout:g} s per request, "
          f"{len(kinds)} kinds", flush=True)
    for i, kind in enumerate(order):
        source = kinds[kind][2](i)
        t0 = time.perf_counter()
        evaluation = evaluator.evaluate(source)
        seconds[kind] += time.perf_counter() - t0
        status = "ok" if not evaluation.buggy else str(evaluation.report.get("status", "buggy"))
        outcomes[kind][status] += 1
        alive = [c for c in process.children(recursive=True) if _status(c) != psutil.STATUS_ZOMBIE]
        if alive:
            stray.append({"program": i, "kind": kind, "children": len(alive)})
        if (i + 1) % args.every == 0 or i + 1 == len(order):
            samples.append(sample(process, i + 1, started))
            print("  " + "  ".join(f"{k} {v}" for k, v in samples[-1].items()), flush=True)
    escaped, in_parent = [], []
    for path in Path(tempfile.gettempdir()).glob(f"{ESCAPE_MARK}-{os.getpid()}-*"):
        # the sandbox is no file-system jail (see `codeworld.sandbox`); a file holding the
        # parent's pid was written by code that ran in the parent
        (in_parent if path.read_text() == str(os.getpid()) else escaped).append(str(path))
        path.unlink()

    first, last = samples[1], samples[-1]  # after the first stretch (imports warm) and at the end
    ratios = {k: (round(last[k] / first[k], 3) if first[k] else None)
              for k in ("rss_mib", "fds", "threads")}
    summary = [{"kind": k, "category": kinds[k][0], "count": sum(outcomes[k].values()),
                "outcomes": dict(outcomes[k]),
                "mean_seconds": round(seconds[k] / max(1, sum(outcomes[k].values())), 3)}
               for k in kinds if outcomes[k]]
    record = {"env_id": args.env, "programs": len(order), "timeout_s": args.timeout,
              "wall_seconds": round(time.perf_counter() - started, 1), "samples": samples,
              "first_vs_last": {"first": first, "last": last, "ratio": ratios},
              "sandbox_dirs_before": tmp_before, "children_after_an_evaluation": stray,
              "files_written_outside": escaped, "code_run_in_the_parent": in_parent,
              "kinds": summary,
              "machine": {"cpus": os.cpu_count(), "python": platform.python_version(),
                          "system": platform.platform()}}
    out = Path(args.out)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    out.with_suffix(".md").write_text(markdown(record), encoding="utf-8")
    print(markdown(record))


def markdown(record: dict) -> str:
    """The samples, the first-against-last ratios and the outcomes per kind, as markdown."""
    keys = ["programs", "seconds", "rss_mib", "children", "zombies", "fds", "threads",
            "sandbox_dirs"]
    lines = [f"# Soak: {record['programs']} programs scored in one process ({record['env_id']}, "
             f"{record['timeout_s']:g} s per request, {record['wall_seconds'] / 60:.1f} min, "
             f"{record['machine']['cpus']} CPUs)", "",
             "The parent (the search process) sampled with psutil: resident memory (MiB), its "
             "child processes and zombies, open file descriptors, threads, and sandbox temporary "
             "folders left in the temp directory.", "",
             "| " + " | ".join(keys) + " |", "|" + "---:|" * len(keys)]
    lines += ["| " + " | ".join(str(s[k]) for k in keys) + " |" for s in record["samples"]]
    fl = record["first_vs_last"]
    lines += ["", f"Last against first (after {fl['first']['programs']} programs, imports warm; "
                  f"after {fl['last']['programs']}): "
              + ", ".join(f"{k} {fl['first'][k]} -> {fl['last'][k]} (x{v})"
                          for k, v in fl["ratio"].items()) + ".", "",
              f"Child processes alive after an evaluation: {len(record['children_after_an_evaluation'])} "
              f"times. Files written outside a worker's folder: "
              f"{len(record['files_written_outside'])} (the sandbox is no file-system jail). "
              f"Programs whose code ran in the parent: {len(record['code_run_in_the_parent'])}.",
              "",
              "| kind | category | programs | came back as | mean s |", "|---|---|---:|---|---:|"]
    for k in record["kinds"]:
        got = ", ".join(f"{s} {n}" for s, n in sorted(k["outcomes"].items(), key=lambda x: -x[1]))
        lines.append(f"| {k['kind']} | {k['category']} | {k['count']} | {got} | "
                     f"{k['mean_seconds']:.2f} |")
    return "\n".join(lines) + "\n"


if __name__ == "__main__":
    main()
