"""benchmarks/worldcoder.py end to end with the hand-written model as the LLM (no tokens)."""

import importlib.util
import json
from pathlib import Path

import pytest

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
                       "--max-env-steps", "40", "--n-seeds", "1", "--out", str(stem),
                       "--runs", str(tmp_path / "runs")])
    assert code == 0
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    by = {(r["variant"], r["level"]): r for r in rows}
    assert set(by) == {(v, lv) for v in ("optimism+transfer", "neither")
                       for lv in ("sokoban-corridor", "sokoban-turn")}
    # with transfer the second level needs no LLM call; without, it needs one
    assert by[("optimism+transfer", "sokoban-turn")]["llm_calls"] == 0
    assert by[("neither", "sokoban-turn")]["llm_calls"] == 1
    assert all(r["reliable_success"] is not None for r in rows)
    assert "| optimism+transfer | sokoban-corridor | 0 |" in stem.with_suffix(".md").read_text()
    assert (tmp_path / "runs" / "neither-seed0" / "accounting.json").is_file()
    captured = capsys.readouterr()
    assert "sokoban-turn" in captured.out
    # progress on stderr: a line per LLM call, rewrite and episode, as `codeworld agent` prints
    assert "sokoban-corridor: episode 1: success" in captured.err
    assert "sokoban-corridor: rewrite 1" in captured.err and "call 1/" in captured.err
    assert bench.main(["--llm", "reference", "--levels", "sokoban:corridor", "--variants", "neither",
                       "--reliable", "1", "--max-env-steps", "20", "--quiet", "--n-seeds", "1",
                       "--out", str(tmp_path / "quiet")]) == 0
    assert capsys.readouterr().err == ""


def test_each_level_runs_with_three_seeds_the_table_gives_mean_and_spread_and_a_rerun_resumes(
        tmp_path, capsys, monkeypatch):
    bench = load_benchmark()
    stem = tmp_path / "wc"
    args = ["--llm", "reference", "--levels", "sokoban:corridor", "sokoban:turn", "--variants",
            "optimism+transfer", "--reliable", "2", "--max-env-steps", "40", "--quiet",
            "--seed", "5", "--out", str(stem)]
    assert bench.main(args) == 0
    data = json.loads(stem.with_suffix(".json").read_text())
    rows = data["rows"]
    assert data["meta"]["run_seeds"] == [5, 6, 7]  # --n-seeds 3 by default, from --seed
    assert [(r["seed"], r["level"]) for r in rows] == [
        (seed, level) for seed in (5, 6, 7) for level in ("sokoban-corridor", "sokoban-turn")]
    assert all(r["reliable_success"] is not None for r in rows)
    # the seed is the agent's: its exploration differs (epsilon 0.1), its accounting is its own
    assert {r["seed"] for r in rows} == {5, 6, 7}
    entry = next(e for e in bench.summary(rows) if e["level"] == "sokoban-corridor")
    steps = [r["env_steps"] for r in rows if r["level"] == "sokoban-corridor"]
    mean = sum(steps) / 3
    sd = (sum((x - mean) ** 2 for x in steps) / 2) ** 0.5
    assert entry["seeds"] == 3 and entry["reliable_in"] == 3 and entry["first_success_in"] == 3
    assert entry["env_steps"] == f"{mean:,.1f} ± {sd:,.1f}"
    assert entry["llm_calls"] == "1.0 ± 0.0"  # one call a seed: the hand-written model
    md = stem.with_suffix(".md").read_text()
    assert "| optimism+transfer | sokoban-corridor | 3 | 3 | 3 |" in md
    assert "| optimism+transfer | sokoban-turn | 7 |" in md  # every run's row beside

    # an interrupted run: seed 7's curriculum stopped after its first level; seed 6 finished
    data["rows"] = rows[:5]
    stem.with_suffix(".json").write_text(json.dumps(data))
    ran = []
    real = bench.run_variant
    monkeypatch.setattr(bench, "run_variant", lambda name, llm_for, levels, base, *a, **k: (
        ran.append(base.seed), real(name, llm_for, levels, base, *a, **k))[1])
    capsys.readouterr()
    assert bench.main(args + ["--resume"]) == 0
    assert ran == [7]  # only the unfinished job, whole (its second level needs the first's transfer)
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    assert sorted((r["seed"], r["level"]) for r in rows) == [
        (seed, level) for seed in (5, 6, 7) for level in ("sokoban-corridor", "sokoban-turn")]
    assert capsys.readouterr().out.count("(kept)") == 4
    # other settings: refused in one line, nothing run, the results left as they were
    before = stem.with_suffix(".json").read_text()
    with pytest.raises(SystemExit, match="made with other settings \\(config\\)"):
        bench.main(args[:-2] + ["--reliable", "3", "--out", str(stem), "--resume"])
    assert stem.with_suffix(".json").read_text() == before and ran == [7]


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
    from codeworld.agent._reference import SOKOBAN_MODEL

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
    assert "| optimism+transfer | sokoban-corridor | - | 3 | 3 |" in md and "| 5 | def5678 |" in md
    assert "`old.json` at abc1234 (agent: at most 10 LLM calls" in md
    assert "(3 rows)" in capsys.readouterr().out


def test_combine_refuses_files_of_different_llms_and_files_that_are_not_results(tmp_path):
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


def test_the_agent_allowed_no_call_starts_no_llm(tmp_path, monkeypatch, capsys):
    # `--max-llm-calls 0` is the rule model alone: the embedded model's server was started (and
    # held its memory) for a run that never asked it anything
    bench = load_benchmark()

    def no_server(args):
        raise AssertionError("an LLM was started")

    monkeypatch.setattr("codeworld.llm.llm_from_args", no_server)
    stem = tmp_path / "none"
    assert bench.main(["--llm", "local", "--levels", "sokoban:corridor", "--variants", "optimism",
                       "--reliable", "1", "--max-env-steps", "30", "--max-llm-calls", "0",
                       "--n-seeds", "1", "--quiet", "--out", str(stem)]) == 0
    data = json.loads(stem.with_suffix(".json").read_text())
    assert data["meta"]["llm"] is None and data["rows"][0]["llm_calls"] == 0
    with pytest.raises(SystemExit, match="--max-llm-calls must be at least 0"):
        bench.main(["--llm", "local", "--levels", "sokoban:corridor", "--max-llm-calls", "-1",
                    "--out", str(tmp_path / "bad")])
