"""Run directories written by earlier versions still show, replay and resume with the same scores.

``tests/data/legacy_runs/`` holds what the code before the run type (`RunSpec`) wrote: a whole
two-call ``codeworld synthesize`` run on CartPole-v1 (scripted LLM: a buggy program, then one
with a wrong constant), and the ``run.json`` of a ``codeworld demo`` run, a CWMB job, an APPS job
and a WorldCoder agent rewrite, whose keys differ. These tests use only the command line and the
files, so they hold for the old code as well as the new.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeworld.cli import main

DATA = Path(__file__).parent / "data" / "legacy_runs"
MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"

SHOWN = """\
{run}: gif-mcts on CartPole-v1 with scripted:/tmp/legacy/s.json, seed 0, finished
calls 2/2, tokens 0 (prompt 0 + completion 0), LLM 0 s
best score 0.6686 (call 2): {run}/best_model.py
whole buffer:  0.6686  strict 0.0000  floor 0.6655  ceiling 1.0000  normalized 0.0092  (568 transitions)
actions: fix 1 (0 buggy), generate 1 (1 buggy)
best score per call:
  call  action    parent  score    best
     1  generate    root  buggy    0.0000
     2  fix            1  0.6686   0.6686
"""


@pytest.fixture
def legacy_run(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    out = tmp_path / "run"
    shutil.copytree(DATA / "synthesize-cartpole", out)
    return out


def scripted(path: Path, programs: list[str]) -> str:
    path.write_text(json.dumps([f"Here it is:\n```python\n{p}```\n" for p in programs]))
    return f"scripted:{path}"


def saved_scores(run: Path) -> dict[str, float]:
    return {p.name: json.loads(p.read_text())["score"] for p in sorted((run / "programs").glob("*.json"))}


def test_show_summarizes_a_legacy_run_as_before(legacy_run, capsys):
    assert main(["show", str(legacy_run)]) == 0
    assert capsys.readouterr().out == (SHOWN.format(run=legacy_run)
                                       + f"report: {legacy_run / 'report.html'}\n")
    assert main(["show", str(legacy_run), "--json", "--no-picture"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["status"] == "finished" and summary["budget"] == 2 and summary["seed"] == 0
    assert {k: v for k, v in summary["best"].items() if k != "report"} == {
        "call": 2, "score": saved_scores(legacy_run)["0001.json"], "buggy": False,
        "path": str(legacy_run / "best_model.py")}


def test_a_legacy_run_replays_without_an_llm_call_and_with_the_same_scores(legacy_run, tmp_path, capsys):
    before = json.loads((legacy_run / "run.json").read_text())
    scores = saved_scores(legacy_run)
    best = json.loads((legacy_run / "best_report.json").read_text())
    empty = scripted(tmp_path / "none.json", [])
    assert main(["synthesize", "--resume", "--out", str(legacy_run), "--llm", empty,
                 "--switch-llm", "--no-fit", "--no-speed-step"]) == 0
    printed = capsys.readouterr().out
    assert "call   1/2  generate -> buggy" in printed
    assert "call   2/2  fix      -> 0.6686  best 0.6686" in printed and "(saved)" in printed
    assert "best program: call 2, score 0.6686" in printed
    assert "calls 2 (0 new, 2 saved, 0 from cache, 0 copies)" in printed
    assert saved_scores(legacy_run) == scores
    assert json.loads((legacy_run / "best_report.json").read_text())["score"] == best["score"]
    after = json.loads((legacy_run / "run.json").read_text())
    assert after.pop("llm") == empty and before.pop("llm") != empty
    # the finish switches of this session, which now include the composition
    assert after.pop("finish") == {**before.pop("finish"), "compose": True, "floor": True}
    # a switch added after the run was made is written as the run had it: off
    assert after["config"].pop("assist") == {**before["config"].pop("assist"), "relations": False,
                                             "form_from_data": False, "copies": False,
                                             "beyond_data": False, "beyond_steps": 30,
                                             "structure": False, "compact_tables": False,
                                             "reward_from_old": False, "angles": False,
                                             "data_model": False, "regression": False,
                                             "regression_seconds": 10.0,
                                             "described_rewards": False,
                                             "described_ends": False,
                                             "bounded_data_model": False}
    # GIF-MCTS's stall limit came later too: the run keeps the paper's rule (no limit)
    assert after["config"].pop("stall_limit") is None and "stall_limit" not in before["config"]
    # and the resample of copies: the run asks once per call, as it did
    assert after["config"]["sampling"].pop("copy_resamples") == 0
    assert "copy_resamples" not in before["config"]["sampling"]
    # a run saved before runs were split keeps its whole buffer (so it replays), and says so
    assert after.pop("split")["heldout_episodes"] == [] and "split" not in before
    assert after == before  # status back to finished; config, created and version kept

    from codeworld.scoring import Scorer  # the saved best score is what the scorer gives today

    program = (legacy_run / "best_model.py").read_text()
    assert Scorer("CartPole-v1", mode="sound").score_source(program, timeout_s=60).score == best["score"]


def test_a_legacy_run_resumes_with_more_budget(legacy_run, tmp_path, capsys):
    before = json.loads((legacy_run / "run.json").read_text())
    good = scripted(tmp_path / "good.json", [MODEL.read_text()])
    assert main(["synthesize", "--resume", "--out", str(legacy_run), "--llm", good,
                 "--switch-llm", "--budget", "3", "--no-fit", "--no-speed-step"]) == 0
    printed = capsys.readouterr().out
    assert "call   3/3  improve  -> 1.0000  best 1.0000" in printed
    assert "calls 3 (1 new, 2 saved, 0 from cache, 0 copies)" in printed
    after = json.loads((legacy_run / "run.json").read_text())
    assert after["budget"] == 3 and after["status"] == "finished"
    for added_later in ("relations", "structure", "form_from_data", "copies", "beyond_data",
                       "compact_tables", "reward_from_old", "angles", "data_model", "regression",
                       "described_rewards", "described_ends", "bounded_data_model"):
        assert after["config"]["assist"].pop(added_later) is False
    after["config"]["assist"].pop("beyond_steps")
    after["config"]["assist"].pop("regression_seconds")
    assert after["config"].pop("stall_limit") is None  # the paper's rule, as the run was made
    assert after["config"]["sampling"].pop("copy_resamples") == 0  # one answer per call
    assert {k: after[k] for k in ("method", "env_id", "seed", "config", "created", "codeworld_version")} \
        == {k: before[k] for k in ("method", "env_id", "seed", "config", "created", "codeworld_version")}
    assert main(["show", str(legacy_run), "--no-picture"]) == 0
    shown = capsys.readouterr().out
    assert f"{legacy_run}: gif-mcts on CartPole-v1 with {good}, seed 0, finished" in shown
    assert "calls 3/3" in shown and "best score 1.0000 (call 3)" in shown


@pytest.mark.parametrize("name, first_line", [
    ("demo", "gif-mcts on CartPole-v1 with scripted:/tmp/legacy16a/d.json, seed 0, finished"),
    ("cwmb_job", "gif-mcts on RTFM-v0 with scripted:/tmp/legacy16a/c.jsonl, seed 0, finished"),
    # what the programs were for: the APPS problem, the agent's level
    ("apps_job", "worldcoder on 0000 with scripted:/tmp/legacy16a/a.jsonl, seed 0, None"),
    ("agent_rewrite", "worldcoder-agent-rewrite on sokoban-corridor with None, seed 0, None"),
])
def test_show_reads_the_run_json_of_every_earlier_writer(name, first_line, tmp_path, capsys):
    run = tmp_path / name
    run.mkdir()
    shutil.copy(DATA / f"{name}.run.json", run / "run.json")
    assert main(["show", str(run), "--no-picture"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"{run}: {first_line}"
