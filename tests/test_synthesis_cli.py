"""`codeworld synthesize` and `codeworld show` end to end with a scripted LLM and the real scorer."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from codeworld.cli import main

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


@pytest.fixture
def programs():
    good = MODEL.read_text()
    return {
        "good": good,
        "bad": good.replace("return", "return undefined_name +", 1),
        "wrong": good.replace("0.02", "0.03"),
    }


def write_script(path: Path, texts: list[str]) -> str:
    path.write_text(json.dumps([f"Here it is:\n```python\n{t}```\n" for t in texts]))
    return f"scripted:{path}"


def test_synthesize_writes_a_complete_run_and_show_summarizes_it(tmp_path, programs, capsys):
    script = write_script(tmp_path / "s.json", [programs["bad"], programs["wrong"], programs["good"]])
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", script, "--budget", "3",
                 "--out", str(out), "--no-fit",
                 "--set", "assist.data_model=false"]) == 0  # from the empty program, as the paper
    printed = capsys.readouterr().out
    assert "call   3/3" in printed and "best program: call 3, score 1.0000" in printed
    meta = json.loads((out / "run.json").read_text())
    assert meta["status"] == "finished" and meta["method"] == "gif-mcts"
    assert meta["config"]["ucb_c"] == 0.1
    reports = [json.loads((out / "programs" / f"{i:04d}.json").read_text()) for i in range(3)]
    assert [r["buggy"] for r in reports] == [True, False, False]
    assert "undefined_name" in reports[0]["feedback"]  # the error with its line, for fix
    assert reports[1]["mispredicted"]["expected"]["next_state"]  # the transition, for improve
    best = json.loads((out / "best_report.json").read_text())
    assert best["score"] == max(r["score"] for r in reports if not r["buggy"]) == 1.0
    assert (out / "best_model.py").read_text().strip() == programs["good"].strip()
    calls = [json.loads((out / "calls" / f"{i:04d}.json").read_text()) for i in range(3)]
    assert [c["request"]["action"] for c in calls] == ["generate", "fix", "improve"]
    assert "undefined_name" in calls[1]["messages"][1]["content"]  # fix prompt shows the error
    assert calls[1]["messages"][-1]["content"].startswith("```python\n")  # the answer starts as code

    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "best score 1.0000 (call 3)" in shown
    assert "generate 1 (1 buggy)" in shown and "fix 1 (0 buggy)" in shown
    page = (out / "report.html").read_text()
    svg = page[page.index("<svg id='tree'"):]
    root = ET.fromstring(svg[:svg.index("</svg>") + len("</svg>")])
    circles = root.findall(".//{http://www.w3.org/2000/svg}circle")
    assert len(circles) == 4  # the root and three programs


def test_existing_run_needs_resume_and_resume_continues(tmp_path, programs, capsys):
    out = tmp_path / "run"
    first = write_script(tmp_path / "a.json", [programs["wrong"]])
    assert main(["synthesize", "CartPole-v1", "--llm", first, "--budget", "1", "--out", str(out),
                 "--method", "worldcoder", "--no-fit"]) == 0
    assert main(["synthesize", "CartPole-v1", "--llm", first, "--budget", "2",
                 "--out", str(out)]) == 2
    assert "--resume" in capsys.readouterr().err
    rest = write_script(tmp_path / "b.json", [programs["good"]])
    assert main(["synthesize", "--resume", "--out", str(out), "--llm", rest, "--budget", "2",
                 "--switch-llm"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["method"] == "worldcoder" and meta["budget"] == 2
    assert sorted(p.name for p in (out / "calls").iterdir()) == ["0000.json", "0001.json"]
    second = json.loads((out / "calls" / "0001.json").read_text())
    assert second["request"]["action"] == "improve" and second["request"]["parent"] == 0
    capsys.readouterr()
    assert main(["show", str(out)]) == 0  # a pool run (REx) is shown too
    shown = capsys.readouterr().out
    assert "worldcoder on CartPole-v1" in shown and "improve 2 (0 buggy)" in shown  # the first improves the data model


def test_bad_arguments_are_reported(tmp_path, capsys):
    assert main(["synthesize", "CartPole-v1", "--llm", "scripted:x", "--set", "nofield=1",
                 "--out", str(tmp_path / "r")]) == 2
    assert "nofield" in capsys.readouterr().err
    assert main(["synthesize", "--resume", "--out", str(tmp_path / "none")]) == 2
    assert main(["synthesize", "CartPole-v1", "--llm", "nosuchbackend", "--budget", "1",
                 "--out", str(tmp_path / "r2")]) == 2
    assert "unknown LLM backend" in capsys.readouterr().err
    assert main(["show", str(tmp_path / "none")]) == 2


def test_show_says_when_the_final_best_score_is_not_the_search_score():
    from codeworld.reports._text import format_summary

    def summary(final: float) -> dict:
        return {"run_dir": "r", "method": "gif-mcts", "env_id": "CartPole-v1", "llm": "local",
                "seed": 0, "status": "finished", "calls": 2, "budget": 2, "accounting": {},
                "action_mix": {"generate": {"calls": 2, "buggy": 0}},
                "per_call": [{"call": 1, "action": "generate", "parent": None, "score": 0.5,
                              "buggy": False, "best": 0.5},
                             {"call": 2, "action": "generate", "parent": None, "score": 0.903,
                              "buggy": False, "best": 0.903}],
                "best": {"call": 2, "score": final, "buggy": False, "path": "r/best_model.py"}}

    # Scored again on the whole buffer (or composed, or fitted) after the search: both are shown.
    assert "best score 0.9060 (call 2; the search scored it 0.9030): r/best_model.py" in \
        format_summary(summary(0.906))
    assert "best score 0.9030 (call 2): r/best_model.py" in format_summary(summary(0.903))
