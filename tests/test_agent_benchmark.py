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


def _results(path, llm, methods, rows, commit=None, md_first_line=None):
    meta = {"command": f"python benchmarks/worldcoder.py --out {path.stem}", "llm": llm,
            "methods": methods, "config": {"max_llm_calls": 10, "max_env_steps": 150,
                                           "max_episode_steps": 40, "reliable_successes": 3},
            "react_episodes": 3, "ppo_steps": 1000}
    if commit:
        meta["commit"] = commit
    path.write_text(json.dumps({"meta": meta, "rows": rows}))
    if md_first_line:
        path.with_suffix(".md").write_text(md_first_line + "\n\nCommand: ...\n")
    return path


def _row(variant, level, successes, calls=0):
    milestone = {"env_steps": 10, "llm_calls": calls, "tokens": 100 * calls}
    return {"variant": variant, "level": level, "episodes": 3, "successes": successes,
            "env_steps": 30, "llm_calls": calls, "tokens": 100 * calls,
            "first_success": milestone if successes else None,
            "reliable_success": milestone if successes >= 3 else None, "wall_seconds": 5.0}


def test_combine_puts_earlier_runs_in_one_table_with_each_rows_commit(tmp_path, capsys):
    bench = load_benchmark()
    old = _results(tmp_path / "old.json", "local", ["agent"],
                   [_row("optimism+transfer", "sokoban-corridor", 0, 10),
                    _row("optimism+transfer", "minigrid-empty", 3, 5)],
                   md_first_line="Code: commit abc1234 (by hand); run on a day")
    new = _results(tmp_path / "new.json", "local", ["agent"],
                   [_row("optimism+transfer", "sokoban-corridor", 3, 4)], commit="def5678")
    ppo = _results(tmp_path / "ppo.json", None, ["ppo"], [_row("ppo", "minigrid-empty", 200)])
    stem = tmp_path / "all"
    assert bench.main(["--combine", str(old), str(new), str(ppo), "--out", str(stem)]) == 0
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    # a row per (method or variant, level), the last file's; a level's rows together
    assert [(r["level"], r["variant"], r["commit"]) for r in rows] == [
        ("sokoban-corridor", "optimism+transfer", "def5678"),
        ("minigrid-empty", "optimism+transfer", "abc1234"),
        ("minigrid-empty", "ppo", "?")]
    assert rows[0]["successes"] == 3
    md = stem.with_suffix(".md").read_text()
    assert "| optimism+transfer | sokoban-corridor | 3 | 3 |" in md and "| 5 | def5678 |" in md
    assert "`old.json` at abc1234 (agent: at most 10 LLM calls" in md
    assert "(3 rows)" in capsys.readouterr().out


def test_combine_refuses_files_of_different_llms_and_files_that_are_not_results(tmp_path):
    import pytest

    bench = load_benchmark()
    local = _results(tmp_path / "a.json", "local", ["agent"], [_row("neither", "sokoban-corridor", 0)])
    reference = _results(tmp_path / "b.json", "reference", ["agent"],
                         [_row("neither", "sokoban-corridor", 3)])
    with pytest.raises(SystemExit, match="different LLMs \\(local, reference\\)"):
        bench.main(["--combine", str(local), str(reference), "--out", str(tmp_path / "x")])
    (tmp_path / "c.json").write_text("[1, 2]")
    with pytest.raises(SystemExit, match="c.json is not a results file"):
        bench.main(["--combine", str(tmp_path / "c.json"), "--out", str(tmp_path / "x")])
    with pytest.raises(SystemExit, match="missing.json is not a results file"):
        bench.main(["--combine", str(tmp_path / "missing.json"), "--out", str(tmp_path / "x")])
