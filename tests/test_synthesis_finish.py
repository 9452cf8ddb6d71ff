"""After a synthesis run: the best program's constants are fitted and it goes through the speed
step; the run directory records both, and the switches turn them off."""

from __future__ import annotations

import json
from pathlib import Path

from codeworld.cli import main

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


def _script(path: Path, program: str) -> str:
    path.write_text(json.dumps([f"Here it is:\n```python\n{program}```\n"]))
    return f"scripted:{path}"


def test_a_run_fits_its_best_program_and_records_constants_and_speed(tmp_path, capsys):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", wrong),
                 "--budget", "1", "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    assert "constant fit:  kept" in printed and "compiled as written" in printed
    searched = json.loads((out / "programs" / "0000.json").read_text())
    assert searched["score"] < 0.9
    fit = json.loads((out / "fit.json").read_text())
    assert fit["accepted"] and fit["became_best"]
    tau = next(c for c in fit["constants"] if c["text"] == "0.03")
    assert tau["before"] == 0.03 and abs(tau["after"] - 0.02) < 1e-6
    best = json.loads((out / "best_report.json").read_text())
    assert best["fitted_from"] == 0 and best["score"] > 0.999
    assert (out / "best_model.py").read_text() == (out / "fitted_model.py").read_text()
    speed = json.loads((out / "speed.json").read_text())
    assert speed["compiled"] and speed["how"] == "as_written" and speed["steps_per_s"] > 0
    assert json.loads((out / "run.json").read_text())["finish"] == {"fit_constants": True,
                                                                    "speed_step": True}


def test_the_switches_turn_the_fit_and_the_speed_step_off(tmp_path, capsys):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", wrong),
                 "--budget", "1", "--out", str(out), "--no-fit", "--no-speed-step"]) == 0
    assert not (out / "fit.json").exists() and not (out / "speed.json").exists()
    assert (out / "best_model.py").read_text().strip() == wrong.strip()
