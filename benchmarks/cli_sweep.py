"""Every command with bad input, as a new user would type it: the exit code, whether the error is
one line, and what was left on disk, per case.

The cases are the ones listed in the command-line page (``docs/cli.md``, the block after the
``cli-sweep cases`` marker), one command per line with placeholders that name what the case needs:

    FILE     a file of the user's (``notes.txt``)         FOLDER   a folder of the user's files
    MODEL    a correct CartPole-v1 model program          BROKEN   a program with a syntax error
    SCRIPT   ``scripted:a.json`` (a scripted LLM)         OTHER    ``scripted:b.json``
    RUN      a finished run made with SCRIPT              CUTRUN   the same run, calls/0001.json cut short

Each case runs ``python -m codeworld ...`` in a child process in a fresh folder holding these
(and a private user cache), with no browser and no ``CODEWORLD_LLM``. "One line" means stderr
holds one line that names the problem (argparse's usage lines before its error line aside) and
no traceback. "Left on disk" lists the files the command added, changed or removed in that
folder (a run's ``.lock``, taken and given back by every command that opens a run, aside).

    python benchmarks/cli_sweep.py          # writes benchmarks/results/cli_sweep.{json,md}
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))
from worldcoder import code_version  # noqa: E402  (the commit of the code, as the other results record it)

CLI_PAGE = ROOT / "docs" / "cli.md"
MARKER = "<!-- cli-sweep cases"
MODEL = ROOT / "tests" / "models" / "cartpole_functional.py"


def cases(page: Path = CLI_PAGE) -> list[str]:
    """The command lines of the CLI page's ``cli-sweep cases`` block (without ``codeworld``)."""
    text = page.read_text(encoding="utf-8")
    block = text[text.index(MARKER):]
    block = block[block.index("```") + 3:]
    block = block[block.index("\n") + 1:block.index("```", 3)]
    out = []
    for line in block.splitlines():
        line = line.split("  #")[0].strip()
        if line:
            out.append(line.removeprefix("codeworld "))
    return out


def _fence(program: str) -> str:
    return f"```python\n{program}```"


def make_fixtures(folder: Path, env: dict) -> dict[str, str]:
    """The files the placeholders name, in ``folder``; returns placeholder -> text to put in."""
    (folder / "notes.txt").write_text("my notes\n")
    (folder / "mine").mkdir()
    (folder / "mine" / "best_model.py").write_text("# my own model\n")
    (folder / "model.py").write_text(MODEL.read_text())
    (folder / "broken.py").write_text("def step(state, action)\n    return state\n")
    (folder / "a.json").write_text(json.dumps([_fence(MODEL.read_text().replace("0.02", "0.03"))] * 3))
    (folder / "b.json").write_text(json.dumps([_fence(MODEL.read_text())] * 3))
    return {"FILE": "notes.txt", "FOLDER": "mine", "MODEL": "model.py", "BROKEN": "broken.py",
            "SCRIPT": "scripted:a.json", "OTHER": "scripted:b.json", "RUN": "run", "CUTRUN": "cutrun"}


def make_run(folder: Path, env: dict) -> None:
    """RUN (one call with SCRIPT, finished) and CUTRUN (its copy, a call record cut short)."""
    subprocess.run([sys.executable, "-m", "codeworld", "synthesize", "CartPole-v1", "--llm",
                    "scripted:a.json", "--budget", "2", "--out", "run", "--quiet", "--no-fit",
                    "--no-compose", "--no-speed-step"], cwd=folder, env=env, check=True,
                   stdout=subprocess.DEVNULL)
    shutil.copytree(folder / "run", folder / "cutrun")
    record = folder / "cutrun" / "calls" / "0001.json"
    record.write_text(record.read_text()[:80])


def snapshot(folder: Path) -> dict[str, tuple[int, int]]:
    """Each file under ``folder`` with its size and mtime (a run's ``.lock``, which every
    command that opens a run takes and gives back, aside)."""
    out = {}
    for path in folder.rglob("*"):
        rel = path.relative_to(folder)
        if path.is_file() and path.name != ".lock":
            stat = path.stat()
            out[str(rel)] = (stat.st_size, stat.st_mtime_ns)
    return out


def left_on_disk(before: dict, after: dict) -> str:
    """What changed between two snapshots, in a few words."""
    added = sorted(set(after) - set(before))
    removed = sorted(set(before) - set(after))
    changed = sorted(p for p in set(before) & set(after) if before[p] != after[p])
    parts = []
    for word, paths in (("added", added), ("changed", changed), ("removed", removed)):
        if paths:
            shown = ", ".join(paths[:3]) + (f" and {len(paths) - 3} more" if len(paths) > 3 else "")
            parts.append(f"{word} {shown}")
    return "; ".join(parts) or "nothing"


def error_lines(stderr: str) -> list[str]:
    """stderr's lines without argparse's usage preamble (``usage: ...`` and its indented
    continuation lines)."""
    lines, in_usage = [], False
    for line in stderr.splitlines():
        if line.startswith("usage:"):
            in_usage = True
            continue
        if in_usage and line.startswith(" "):
            continue
        in_usage = False
        if line.strip():
            lines.append(line)
    return lines


def run_case(case: str, names: dict[str, str], template: Path, env: dict, timeout: float) -> dict:
    """One case in a fresh copy of the fixtures folder."""
    with tempfile.TemporaryDirectory(prefix="cli-sweep-") as tmp:
        folder = Path(tmp) / "w"
        shutil.copytree(template, folder, symlinks=True)
        pattern = re.compile(r"\b(" + "|".join(names) + r")\b")
        argv = [pattern.sub(lambda m: names[m.group(1)], word) for word in shlex.split(case)]
        before = snapshot(folder)
        started = time.perf_counter()
        try:
            done = subprocess.run([sys.executable, "-m", "codeworld", *argv], cwd=folder, env=env,
                                  capture_output=True, text=True, timeout=timeout)
            code, stderr = done.returncode, done.stderr
        except subprocess.TimeoutExpired as exc:
            code, stderr = None, (exc.stderr or b"").decode() if isinstance(exc.stderr, bytes) else (exc.stderr or "")
        seconds = time.perf_counter() - started
        lines = error_lines(stderr)
        one = None if code == 0 and not lines else len(lines) == 1 and "Traceback" not in stderr
        return {"case": case, "exit": code, "one_line": one,
                "error": lines[-1] if lines else "", "stderr_lines": len(stderr.splitlines()),
                "left_on_disk": left_on_disk(before, snapshot(folder)), "seconds": round(seconds, 1)}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=str(HERE / "results" / "cli_sweep"), metavar="STEM")
    parser.add_argument("--timeout", type=float, default=300, help="seconds per case (default 300)")
    args = parser.parse_args(argv)

    with tempfile.TemporaryDirectory(prefix="cli-sweep-fixtures-") as tmp:
        template = Path(tmp) / "w"
        template.mkdir()
        env = {k: v for k, v in os.environ.items() if k not in ("CODEWORLD_LLM", "BROWSER", "DISPLAY",
                                                                "WAYLAND_DISPLAY")}
        env["CODEWORLD_CACHE_DIR"] = str(Path(tmp) / "cache")
        names = make_fixtures(template, env)
        make_run(template, env)
        results = []
        for case in cases():
            result = run_case(case, names, template, env, args.timeout)
            shown = {True: "one line ", False: "NOT ONE  ", None: "worked   "}[result["one_line"]]
            print(f"{str(result['exit']):>4}  {shown} "
                  f"{result['case']}\n      {result['error'][:150]}\n      left: {result['left_on_disk']}",
                  flush=True)
            results.append(result)
    meta = {"command": "python benchmarks/cli_sweep.py " + " ".join(argv if argv is not None else sys.argv[1:]),
            "commit": code_version(), "cases": len(results),
            "one_line": sum(r["one_line"] is True for r in results),
            "worked": sum(r["one_line"] is None for r in results),
            "nonzero_exit": sum(r["exit"] not in (0, None) for r in results)}
    out = Path(args.out)
    out.with_suffix(".json").write_text(json.dumps({"meta": meta, "results": results}, indent=2) + "\n")
    rows = ["| command (after `codeworld`) | exit | one line | the error | left on disk |", "|---|---:|---|---|---|"]
    for r in results:
        error = re.sub(r"/tmp/cli-sweep-\w+/w/", "", r["error"]).replace("|", "\\|")
        one = {True: "yes", False: "**no**", None: "(it worked)"}[r["one_line"]]
        rows.append(f"| `{r['case']}` | {r['exit']} | {one} | {error} | "
                    f"{r['left_on_disk']} |")
    out.with_suffix(".md").write_text(
        f"Command: `{meta['command']}`, at {meta['commit']}: {meta['cases']} cases from "
        f"docs/cli.md: {meta['one_line']} refused with a one-line error and a non-zero exit "
        f"({meta['nonzero_exit']} non-zero in all), {meta['worked']} that work now.\n\n" + "\n".join(rows) + "\n")
    print(f"{meta['one_line']} of {meta['cases']} cases with a one-line error; wrote {out}.md")
    return 0


if __name__ == "__main__":
    sys.exit(main())
