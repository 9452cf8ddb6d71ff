"""benchmarks/worldcoder.py end to end with the hand-written model as the LLM (no tokens)."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def load_benchmark():
    spec = importlib.util.spec_from_file_location("worldcoder_bench", ROOT / "benchmarks" / "worldcoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_benchmark_writes_per_level_rows(tmp_path, capsys):
    bench = load_benchmark()
    stem = tmp_path / "wc"
    code = bench.main(["--llm", "reference", "--levels", "sokoban:corridor", "sokoban:turn",
                       "--variants", "optimism+transfer", "neither", "--reliable", "2",
                       "--max-env-steps", "40", "--out", str(stem), "--runs", str(tmp_path / "runs")])
    assert code == 0
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    by = {(r["variant"], r["level"]): r for r in rows}
    assert set(by) == {(v, lv) for v in ("optimism+transfer", "neither")
                       for lv in ("sokoban-corridor", "sokoban-turn")}
    # with transfer the second level needs no LLM call; without, it needs one
    assert by[("optimism+transfer", "sokoban-turn")]["llm_calls"] == 0
    assert by[("neither", "sokoban-turn")]["llm_calls"] == 1
    assert all(r["reliable_success"] is not None for r in rows)
    assert "| optimism+transfer | sokoban-corridor |" in stem.with_suffix(".md").read_text()
    assert (tmp_path / "runs" / "neither" / "accounting.json").is_file()
    captured = capsys.readouterr()
    assert "sokoban-turn" in captured.out
    # progress on stderr: a line per LLM call, rewrite and episode, as `codeworld agent` prints
    assert "sokoban-corridor: episode 1: success" in captured.err
    assert "sokoban-corridor: rewrite 1" in captured.err and "call 1/" in captured.err
    assert bench.main(["--llm", "reference", "--levels", "sokoban:corridor", "--variants", "neither",
                       "--reliable", "1", "--max-env-steps", "20", "--quiet",
                       "--out", str(tmp_path / "quiet")]) == 0
    assert capsys.readouterr().err == ""


def test_cli_agent_runs_a_level(tmp_path, capsys):
    from codeworld.cli import main

    code = main(["agent", "sokoban:corridor", "--llm", "scripted:" + str(_script(tmp_path)),
                 "--reliable", "2", "--max-env-steps", "30", "--out", str(tmp_path / "run"),
                 "--llm-cache-dir", str(tmp_path / "cache")])
    assert code == 0
    out = capsys.readouterr().out
    # a line per call, per rewrite and per episode while it runs, then one per level
    assert "call 1/" in out and "rewrite 1 (no model)" in out and "episode 1: success" in out
    level = next(line for line in out.splitlines() if line.startswith("sokoban-corridor:"))
    assert "reliable: -" not in level
    row = json.loads((tmp_path / "run" / "accounting.json").read_text())["levels"][0]
    assert row["level"] == "sokoban-corridor" and row["reliable_success"] is not None


def _script(tmp_path):
    from codeworld.agent.reference import SOKOBAN_MODEL

    path = tmp_path / "script.jsonl"
    path.write_text(json.dumps({"text": f"```python\n{SOKOBAN_MODEL}```"}) + "\n")
    return path
