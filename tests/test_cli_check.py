"""`codeworld check`: a user's first look at a model program."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

MODELS = Path(__file__).parent / "models"


def _cli(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeworld", *args], capture_output=True, text=True,
                          timeout=120)


def test_check_reports_form_compilation_and_a_trial_step():
    run = _cli("check", str(MODELS / "cartpole_functional.py"), "--state-dim", "4", "--json")
    assert run.returncode == 0, run.stderr
    record = json.loads(run.stdout)
    assert record["form"] == "functional"
    assert record["compiled"] is True
    assert record["trial_step"] == "ok"
    assert len(record["trial_next_state"]) == 4


def test_check_points_at_a_syntax_error(tmp_path):
    bad = tmp_path / "bad.py"
    bad.write_text("import numpy as np\n\ndef step(state, action):\n    return state +, 0.0, False\n")
    run = _cli("check", str(bad))
    assert run.returncode == 1
    assert "line 4" in run.stderr and "syntax error" in run.stderr


def test_check_reports_a_crashing_trial_step(tmp_path):
    bad = tmp_path / "crash.py"
    bad.write_text("def step(state, action):\n    return state[10], 0.0, False\n")
    run = _cli("check", str(bad), "--state-dim", "4", "--no-compile")
    assert run.returncode == 1
    assert "IndexError" in run.stdout and "line 2" in run.stdout


def test_check_on_a_missing_file_is_a_clear_error(tmp_path):
    run = _cli("check", str(tmp_path / "nope.py"))
    assert run.returncode == 2
    assert "cannot read" in run.stderr
