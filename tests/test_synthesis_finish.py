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
                 "--budget", "1", "--out", str(out), "--set", "assist.fit_constants=false",
                 "--set", "assist.data_model=false"]) == 0  # the call's program is the best
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
    assert json.loads((out / "run.json").read_text())["finish"] == {"compose": True, "fit_constants": True,
                                                                    "speed_step": True, "floor": True}


def test_the_switches_turn_the_fit_and_the_speed_step_off(tmp_path, capsys):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", wrong),
                 "--budget", "1", "--out", str(out), "--no-fit", "--no-speed-step",
                 "--set", "assist.data_model=false"]) == 0  # the call's program is the best
    assert not (out / "fit.json").exists() and not (out / "speed.json").exists()
    assert (out / "best_model.py").read_text().strip() == wrong.strip()


def test_the_search_fits_each_healthy_program_and_builds_on_the_fitted_one(tmp_path, capsys):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    out = tmp_path / "run"
    script = _script(tmp_path / "s.json", wrong)
    assert main(["synthesize", "CartPole-v1", "--llm", script, "--budget", "1", "--out", str(out),
                 "--no-speed-step"]) == 0
    printed = capsys.readouterr().out
    assert "constants fitted" in printed
    record = json.loads((out / "fits" / "0000.json").read_text())
    assert record["original"].strip() == wrong.strip() and record["fit"]["accepted"]
    tau = next(c for c in record["fit"]["constants"] if c["text"] == "0.03")
    assert abs(tau["after"] - 0.02) < 1e-6
    searched = json.loads((out / "programs" / "0000.json").read_text())
    assert searched["score"] > 0.999 and searched["report"]["fitted"]["score_before"] < 0.9
    assert (out / "programs" / "0000.py").read_text() == record["program"]
    accounting = json.loads((out / "accounting.json").read_text())
    assert accounting["fits"] == 1 and accounting["calls"] == 1
    # a resumed run replays the fitted program without fitting again
    (out / "fits" / "0000.json").write_text(json.dumps({**record, "fit": {"replayed": True}}))
    assert main(["synthesize", "--resume", "--out", str(out), "--llm", script, "--no-speed-step"]) == 0
    assert json.loads((out / "fits" / "0000.json").read_text())["fit"] == {"replayed": True}
    assert (out / "best_model.py").read_text() == record["program"]
    assert "constant fit:  skipped, its constants were fitted in the search" in capsys.readouterr().out


def test_no_fit_switches_off_the_fit_in_the_search_too(tmp_path):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", wrong),
                 "--budget", "1", "--out", str(out), "--no-fit", "--no-speed-step"]) == 0
    assert not (out / "fits").exists()
    assert json.loads((out / "programs" / "0000.json").read_text())["score"] < 0.9


def test_a_class_form_best_program_is_planned_with_through_its_kept_port(tmp_path):
    from codeworld.synthesis.fakes import ScriptedLLM
    from codeworld.synthesis.config import FinishConfig
    from codeworld.worlds.cwmb._cwmb import make_cwmb_world
    from codeworld.synthesis.run import Run

    class_form = (MODEL.parent / "cartpole_class.py").read_text()
    run = Run.start(tmp_path / "run", "gif-mcts", finish=FinishConfig(fit_constants=False), budget=1)
    result = run.execute(make_cwmb_world("CartPole-v1"), ScriptedLLM([f"```python\n{class_form}```"]))
    assert "class Environment" in result.best_program
    assert result.fast_program is not None and "class Environment" not in result.fast_program
    assert result.program_to_plan_with == result.fast_program
    assert (tmp_path / "run" / "best_model_fast.py").read_text() == result.fast_program


def test_a_run_composes_programs_that_are_right_in_different_components(tmp_path, capsys):
    true_model = MODEL.read_text()
    last = "    return np.array([x, x_dot, theta, theta_dot]), 1.0, done\n"
    cart_only = true_model.replace(last, "    return np.array([x, x_dot, state[2], state[3]]), 0.0, False\n")
    pole_only = true_model.replace(last, "    return np.array([state[0], state[1], theta, theta_dot]), 1.0, done\n")
    assert cart_only != true_model and pole_only != true_model
    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```python\n{p}```\n" for p in (cart_only, pole_only)]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "2",
                 "--out", str(out), "--no-fit", "--no-speed-step",
                 "--set", "assist.data_model=false"]) == 0  # the calls' programs only
    assert "composition:   calls 2, 1 -> score 1.0000" in capsys.readouterr().out
    scores = [json.loads((out / "programs" / f"000{i}.json").read_text())["score"] for i in (0, 1)]
    assert max(scores) < 0.9
    compose = json.loads((out / "compose.json").read_text())
    assert compose["status"] == "composed" and compose["became_best"]
    assert compose["choice"] == {"state[0]": 0, "state[1]": 0, "state[2]": 1, "state[3]": 1,
                                 "reward": 1, "done": 1}
    assert compose["score"] > 0.999 and abs(compose["predicted_score"] - compose["score"]) < 1e-9
    best = json.loads((out / "best_report.json").read_text())
    assert best["composed_from"] == [1, 0] and best["score"] > 0.999
    composed = (out / "best_model.py").read_text()
    assert composed == (out / "composed_model.py").read_text()
    assert "_p0_GRAVITY" in composed and "_p1_GRAVITY" in composed  # the shared names kept apart
    # its header, show and the page name the calls as the line above does
    assert "from the programs of calls 2, 1:" in composed and "# --- the program of call 2\n" in composed
    assert main(["show", str(out)]) == 0
    assert "(composed from calls 2, 1)" in capsys.readouterr().out
    page = (out / "report.html").read_text()
    assert "best program (composed from calls 2, 1)" in page and "composition of calls 2, 1" in page
    # the composed program is an ordinary model: it scores on its own
    assert main(["score", "CartPole-v1", str(out / "best_model.py"), "--json"]) == 0
    assert json.loads(capsys.readouterr().out.strip().splitlines()[-1])["score"] > 0.999
    # switched off: no composition, the search's best stays
    off = tmp_path / "off"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "2",
                 "--out", str(off), "--no-fit", "--no-speed-step", "--no-compose",
                 "--set", "assist.data_model=false"]) == 0
    assert not (off / "compose.json").exists()
    assert (off / "best_model.py").read_text().strip() == pole_only.strip()


BUGGY = "def step(state, action):\n    return undefined_name\n"


def test_a_search_whose_every_program_is_buggy_ends_at_the_skeleton(tmp_path, capsys):
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", BUGGY),
                 "--budget", "1", "--out", str(out), "--no-speed-step",
                 "--set", "assist.data_model=false"]) == 0  # no floor seed: the finish step's
    assert "best program: the skeleton (every program the search wrote was buggy), score" in capsys.readouterr().out
    floor = json.loads((out / "floor.json").read_text())
    assert floor["became_best"] and 0.5 < floor["skeleton_score"] < 0.9  # the do-nothing model
    best = json.loads((out / "best_report.json").read_text())
    assert best["floor"] == "skeleton" and best["score"] == floor["skeleton_score"]
    assert json.loads((out / "programs" / "0000.json").read_text())["buggy"]
    assert "def step" in (out / "best_model.py").read_text()


def test_the_floor_switch_leaves_a_buggy_best_and_a_healthy_best_is_kept(tmp_path, capsys):
    out = tmp_path / "off"
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "s.json", BUGGY), "--budget", "1",
                 "--out", str(out), "--no-speed-step", "--no-floor",
                 "--set", "assist.data_model=false"]) == 0
    assert "best program: call 1, buggy" in capsys.readouterr().out and not (out / "floor.json").exists()
    out = tmp_path / "healthy"
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    assert main(["synthesize", "CartPole-v1", "--llm", _script(tmp_path / "w.json", wrong), "--budget", "1",
                 "--out", str(out), "--no-speed-step", "--no-fit",
                 "--set", "assist.data_model=false"]) == 0
    assert not (out / "floor.json").exists()  # the best program runs: the skeleton is not needed
    assert "best program: call 1, score" in capsys.readouterr().out


def test_the_finish_record_keeps_its_json_form():
    from codeworld.synthesis.types import FinishRecord

    data = {"call": 3, "floor": {"skipped": "the best program runs"},
            "compose": {"status": "too_few", "calls": [3], "best_before": 0.5, "score": None,
                        "became_best": False},
            "speed": {"compiled": True, "ported": False, "how": "as_written", "steps_per_s": 1e5}}
    record = FinishRecord.from_json(data)
    assert record.call == 3 and record.fit is None and record.compose["status"] == "too_few"
    assert json.dumps(record.to_json()) == json.dumps(data)  # same keys, in the same order
    assert FinishRecord(skipped="no program").to_json() == {"skipped": "no program"}
    assert FinishRecord().to_json() == {}
