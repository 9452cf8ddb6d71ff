"""Typed frozen records for what crosses layers (issue 39): the fit note of a program the search
replaced by its fitted constants, and an agent run's directory. Their JSON on disk is what it was,
and runs written before them are still read."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from codeworld.synthesis.types import FitNote, ProgramEvaluation


def test_the_fit_note_is_a_record_and_keeps_its_json_form():
    plain = ProgramEvaluation(0.9, False, report={"score": 0.9, "status": "ok"})
    assert plain.fit_note is None
    fitted = plain.with_fit_note(FitNote(score_before=0.5, constants=3))
    assert fitted.fit_note == FitNote(0.5, 3) and plain.report == {"score": 0.9, "status": "ok"}
    # the evaluation's JSON, as calls/NNNN.json and fits/ hold it: the report's "fitted" last
    data = json.loads(json.dumps(fitted.to_json()))
    assert list(data["report"]) == ["score", "status", "fitted"]
    assert data["report"]["fitted"] == {"score_before": 0.5, "constants": 3}
    assert ProgramEvaluation.from_json(data).fit_note == FitNote(0.5, 3)


def test_an_evaluation_saved_before_the_record_reads_its_fit_note():
    saved = {"score": 1.0, "buggy": False, "feedback": "", "mispredicted": None,
             "report": {"score": 1.0, "fitted": {"score_before": 0.8125, "constants": 2}}}
    note = ProgramEvaluation.from_json(saved).fit_note
    assert note is not None and note.score_before == 0.8125 and note.constants == 2


LEGACY = Path(__file__).parent / "data" / "legacy_runs"
ROW = {"level": "sokoban-corridor", "episodes": 3, "successes": 2, "env_steps": 41, "llm_calls": 2,
       "tokens": 900, "rewrites": 1, "first_success": {"episodes": 2, "env_steps": 30, "llm_calls": 2},
       "reliable_success": None, "plan_timeouts": 0, "wall_seconds": 1.5}


def legacy_agent_run(path: Path) -> None:
    """An agent's run folder as the agent wrote it before `AgentRunDir`, written by hand."""
    path.mkdir(parents=True, exist_ok=True)
    (path / "accounting.json").write_text(json.dumps({"config": {"optimism": True, "seed": 0},
                                                      "levels": [ROW]}, indent=2, default=str) + "\n")
    level = path / "levels" / "00-sokoban-corridor"
    level.mkdir(parents=True)
    (level / "level.json").write_text(json.dumps({"level": "sokoban-corridor"}, indent=2) + "\n")
    (level / "transitions.jsonl").write_text('{"action": 1}\n')
    rewrite = path / "rewrites" / "0000"
    rewrite.mkdir(parents=True)
    shutil.copy(LEGACY / "agent_rewrite.run.json", rewrite / "run.json")


def test_an_agent_run_written_before_the_record_is_read_and_shown(tmp_path, capsys):
    from codeworld.cli import main
    from codeworld.synthesis._run_dir import AgentAccounting, AgentRunDir

    legacy_agent_run(tmp_path)
    agent_dir = AgentRunDir(tmp_path)
    assert agent_dir.exists() and not AgentRunDir(tmp_path / "levels").exists()
    assert agent_dir.accounting() == AgentAccounting({"optimism": True, "seed": 0}, (ROW,))
    [(index, rewrite)] = agent_dir.rewrites()
    assert index == 0 and rewrite.spec.extra["level"] == "sokoban-corridor"
    assert main(["show", str(tmp_path), "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary["levels"] == [ROW] and summary["config"]["optimism"] is True
    assert [(r["index"], r["level"], r["reason"]) for r in summary["rewrites"]] == \
        [(0, "sokoban-corridor", "no model")]


def test_an_agent_run_directory_writes_the_files_of_before(tmp_path):
    from codeworld.synthesis._run_dir import AgentAccounting, AgentRunDir

    legacy_agent_run(tmp_path / "old")
    agent_dir = AgentRunDir(tmp_path / "new")
    agent_dir.save_accounting(AgentAccounting({"optimism": True, "seed": 0}, (ROW,)))
    folder = agent_dir.save_level(0, "sokoban-corridor", {"level": "sokoban-corridor"}, None,
                                  [{"action": 1}])
    assert folder == tmp_path / "new" / "levels" / "00-sokoban-corridor"
    assert agent_dir.rewrite_path(3) == tmp_path / "new" / "rewrites" / "0003"
    for name in ("accounting.json", "levels/00-sokoban-corridor/level.json",
                 "levels/00-sokoban-corridor/transitions.jsonl"):
        assert (tmp_path / "new" / name).read_bytes() == (tmp_path / "old" / name).read_bytes(), name
    assert not (folder / "model.py").exists()  # no program at the level's end: none saved


def test_an_agent_run_with_an_unreadable_accounting_is_named_in_one_line(tmp_path, capsys):
    from codeworld.cli import main

    legacy_agent_run(tmp_path)
    (tmp_path / "accounting.json").write_text('{"config": ')
    assert main(["show", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "accounting.json is not valid JSON (truncated?)" in err
