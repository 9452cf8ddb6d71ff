"""The CWMB harness end to end with a scripted LLM: records, rerun skips, tables, plots, ablation."""

from __future__ import annotations

import importlib.util
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from codeworld.experiments import Job, run_cwmb_job
from codeworld.experiments._cwmb_job import job_config, job_options

ROOT = Path(__file__).resolve().parents[1]

# A perfect RTFM model (the search stops at its first program).
RTFM_MODEL = (ROOT / "tests" / "test_rtfm.py").read_text(encoding="utf-8").split("MODEL = '''")[1].split("'''")[0]


def _load_harness():
    spec = importlib.util.spec_from_file_location("cwmb_harness", ROOT / "benchmarks" / "cwmb.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def script(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    path = tmp_path / "script.jsonl"
    answer = {"text": "The model:\n```python\n" + RTFM_MODEL + "```\n"}
    path.write_text("\n".join(json.dumps(answer) for _ in range(4)) + "\n")
    return path


def test_job_options_and_ablation_configs():
    job = Job("CartPole-v1", "gif-mcts/no-fix", 0, "scripted", 3,
              {"overrides": {"ucb_c": 0.2}, "sampling": {"temperature": 0.5}})
    method, config = job_config(job, job_options(job))
    assert method.name == "gif-mcts" and config.allow_fix is False and config.allow_improve is True
    assert config.ucb_c == 0.2 and config.sampling.temperature == 0.5
    with pytest.raises(KeyError, match="unknown CWMB job option"):
        job_options(Job("CartPole-v1", "gif-mcts", options={"episdes": 3}))


def test_cwmb_job_synthesizes_scores_and_plans(script, tmp_path):
    job = Job("RTFM-v0", "worldcoder", 0, f"scripted:{script}", 2, {"episodes": 1, "max_steps": 5})
    result = run_cwmb_job(job, str(tmp_path / "work"))
    assert result["calls"] == 1 and result["history"][0]["best"] == 1.0  # perfect: stopped early
    assert result["scores"]["sound"]["score"] == 1.0
    assert result["scores"]["paper"]["ceiling"] == pytest.approx(result["scores"]["paper"]["score"])
    assert result["scores"]["paper_on_paper_buffer"] is None  # the paper released no RTFM buffer here
    # five steps: neither the oracle nor random play wins, so the model is not planned with
    # (its normalized return would be undefined whatever it earned)
    planning = result["planning"]
    assert planning["return_oracle"] == planning["return_random"] and planning["model"] is None
    assert planning["normalized_note"] == "undefined: the oracle and the random policy tie"
    assert "def step(state, action)" in (Path(result["run_dir"]) / "best_model.py").read_text()
    spec = json.loads((Path(result["run_dir"]) / "run.json").read_text())  # the keys of before
    legacy = json.loads((ROOT / "tests" / "data" / "legacy_runs" / "cwmb_job.run.json").read_text())
    # the keys of before, and the finish switches every run records now (read back on a rerun)
    assert [k for k in spec if k not in ("split", "finish")] == list(legacy) and spec["status"] == "finished"
    assert spec["finish"] == {"compose": True, "fit_constants": True, "speed_step": True, "floor": True}
    assert result["scores"]["heldout"] and spec["split"]["n_heldout"] == result["scores"]["sound"]["n_transitions"]
    assert result["scores"]["training"]["sound"]["n_transitions"] == spec["split"]["n_train"]
    assert spec["variant"] == "worldcoder" and spec["job"] == job.to_json()


def test_harness_writes_tables_and_plots_and_skips_finished_jobs(script, tmp_path, capsys, monkeypatch):
    harness = _load_harness()
    out, work = tmp_path / "out", tmp_path / "work"
    argv = ["--envs", "rtfm", "--methods", "gif-mcts,worldcoder", "--llm", f"scripted:{script}",
            "--budget", "2", "--no-plan", "--out", str(out), "--workdir", str(work)]
    assert harness.main(argv) == 0
    first = capsys.readouterr().out
    assert "2 finished, 0 failed, 0 already done" in first
    table = json.loads((out / "table.json").read_text())
    assert table["meta"]["methods"] == ["gif-mcts", "worldcoder"]
    entry = table["per_env"]["gif-mcts"]["RTFM-v0"]
    assert entry["accuracy_sound"] == 1.0 and entry["seeds"] == 1 and entry["best_by_call"] == [1.0]
    assert table["groups"]["worldcoder"]["rtfm"]["accuracy_sound"] == 1.0
    # held out, beside the training score, the floor and the floor-normalised accuracy
    assert entry["accuracy_training"] == 1.0 and entry["normalized_sound"] == 1.0
    assert 0.0 < entry["floor_sound"] < 1.0 and entry["strict_sound"] == 1.0
    # the paper's Table 3 beside the RTFM group and row, one column per LLM and budget of the paper
    assert table["paper_numbers"]["groups"]["gif-mcts"]["rtfm"]["GPT-4 Turbo, 50 calls"] == {
        "accuracy": [1.0, 0.0], "return": [1.0, 0.0]}
    assert set(table["paper_numbers"]["per_env"]["worldcoder"]) == {"RTFM-v0"}
    text = (out / "table.md").read_text()
    assert "arXiv 2405.15383" in text and "| RTFM-v0 | worldcoder | 1 | 1.000 |" in text
    assert "paper, Llama 3 70B, 50 calls: accuracy / return |" in text
    assert "| worldcoder | rtfm | 1/1 |" in text and text.count("| 0.23±0.01 / -0.11±0.12 |") == 2
    assert "its own LLMs and budgets" in text
    assert "| accuracy (sound, held-out) | training | strict | floor | floor-normalised |" in text
    for svg in (out / "plots").glob("*.svg"):
        ET.fromstring(svg.read_text())  # well-formed
    assert {p.name for p in (out / "plots").iterdir()} == {"RTFM-v0.svg", "groups.svg"}
    records = sorted((out / "jobs").glob("*.json"))
    assert len(records) == 2
    stamps = [r.stat().st_mtime_ns for r in records]

    assert harness.main(argv) == 0  # the rerun finds both jobs finished
    assert "0 finished, 0 failed, 2 already done" in capsys.readouterr().out
    assert [r.stat().st_mtime_ns for r in records] == stamps

    # --report-only rebuilds the tables from the records, keeping the command, time and machine
    measured = json.loads((out / "table.json").read_text())
    measured["meta"].update(finished_at="2000-01-01T00:00:00+00:00", machine="the machine that ran")
    (out / "table.json").write_text(json.dumps(measured))
    assert harness.main(argv + ["--report-only"]) == 0
    again = json.loads((out / "table.json").read_text())
    assert again["meta"]["finished_at"] == "2000-01-01T00:00:00+00:00"
    assert "Measured 2000-01-01T00:00:00+00:00 on the machine that ran." in (out / "table.md").read_text()
    assert again["meta"]["command"] == measured["meta"]["command"] and again["per_env"] == table["per_env"]
    _check_replan(harness, argv, out, work, tmp_path, monkeypatch, capsys)


def _check_replan(harness, argv, out, work, tmp_path, monkeypatch, capsys):
    """--replan on a finished grid: a grid planned short (or not at all) gets another protocol's
    returns with no second search. Each job's program is planned again with the reference
    table's random and oracle returns; an env the table lacks is named with the command that
    fills it, and nothing runs for it."""
    table = tmp_path / "reference.json"
    monkeypatch.setenv("CODEWORLD_REFERENCE_RETURNS", str(table))
    for path in (out / "jobs").glob("*.json"):  # the record plans on its own
        assert "def step(state, action)" in json.loads(path.read_text())["result"]["program"]
    capsys.readouterr()
    replanned = out / "replan-short"
    assert harness.main(argv + ["--replan", "short"]) == 0  # no references yet: skipped, named
    text = (replanned / "table.md").read_text()
    assert "Not planned:" in text and "benchmarks/reference_returns.py --envs RTFM-v0 --protocol short" in text
    assert not list((replanned / "jobs").glob("*.json"))

    # The table's returns, written as benchmarks/reference_returns.py writes them, with returns no
    # real policy earns, so that a run of either policy would show.
    from codeworld.envs import resolve_env
    from codeworld.planning import evaluate
    from codeworld.planning.evaluate import ReturnStats, reference_key_of
    from codeworld.planning._protocol import store_reference

    env = resolve_env("RTFM-v0")
    probe = evaluate(env, seed=0, policies=(), protocol="short")
    for policy, value in (("random", -7.0), ("oracle", 7.0)):
        stats = ReturnStats(policy, returns=[value] * 3, lengths=[5] * 3).to_dict()
        store_reference(reference_key_of(policy, probe), stats, {"protocol": "short"}, env, table)
    import shutil

    shutil.rmtree(work)  # the run directories gone, the records' programs are what is planned
    assert harness.main(argv + ["--replan", "short"]) == 0
    saved = sorted((replanned / "jobs").glob("*.json"))
    assert len(saved) == 2
    for path in saved:
        result = json.loads(path.read_text())["result"]
        planning = result["planning"]
        assert result["status"] == "ok" and planning["protocol"] == "short" and planning["episodes"] == 3
        assert planning["random"]["returns"] == [-7.0] * 3 and planning["oracle"]["returns"] == [7.0] * 3
        assert planning["model"]["lengths"] and planning["normalized_return"] == pytest.approx(
            (planning["return_model"] + 7.0) / 14.0)
    rows = json.loads((replanned / "table.json").read_text())["rows"]
    assert [r["status"] for r in rows] == ["ok", "ok"]
    # the do-nothing model planned the same way, once per env and evaluation seed, beside each row
    floors = sorted((replanned / "floors").glob("*.json"))
    assert [p.name for p in floors] == ["RTFM-v0__seed0.json"]
    floor = json.loads(floors[0].read_text())
    assert floor["status"] == "ok" and floor["program"] == "floor"
    assert floor["planning"]["random"]["returns"] == [-7.0] * 3
    assert all(r["floor_normalized_return"] == floor["planning"]["normalized_return"] for r in rows)
    assert "| RTFM-v0 | worldcoder | 1 |" in (replanned / "table.md").read_text()
    stamps = [p.stat().st_mtime_ns for p in saved]
    assert harness.main(argv + ["--replan", "short"]) == 0  # kept, not planned again
    assert [p.stat().st_mtime_ns for p in saved] == stamps
    # one evaluation seed for every job: its own folder, the seed in each record and the table
    assert harness.main(argv + ["--replan", "short", "--replan-seed", "0"]) == 0
    for path in (out / "replan-short-seed0" / "jobs").glob("*.json"):
        assert json.loads(path.read_text())["result"]["evaluation_seed"] == 0
    assert "on the episodes of seed 0 for every job" in (out / "replan-short-seed0" / "table.md").read_text()


def test_paper_columns_hold_the_published_numbers():
    harness = _load_harness()
    paper = harness.paper_numbers(False, ["CartPole-v1", "Taxi-v4", "Pendulum-v1"], ["gif-mcts", "worldcoder"])
    # Dainese et al., Table 2: GIF-MCTS on the discrete envs with Llama 3 70B at 50 calls
    assert harness._published_cell(paper["groups"]["gif-mcts"]["discrete"]["Llama 3 70B, 50 calls"]) \
        == "0.84±0.03 / 0.76±0.03"
    assert harness._published_cell(paper["groups"]["worldcoder"]["continuous"]["GPT-4 Turbo, 10 calls"]) \
        == "0.24±0.06 / 0.20±0.01"
    assert "rtfm" not in paper["groups"]["gif-mcts"]  # no RTFM env in this table
    # Tables 10 and 11, under codeworld's id for the paper's Taxi-v3
    assert harness._published_cell(paper["per_env"]["worldcoder"]["Taxi-v4"]["Llama 3 70B, 50 calls"]) \
        == "0.44 / 0.23"
    assert harness._published_cell(harness.PAPER_PER_ENV["gif-mcts"]["Humanoid-v4"]["Llama 3 70B, 50 calls"]) \
        == "n/a / 0.00"
    assert harness._published_cell(harness.PAPER_PER_ENV["gif-mcts"]["MountainCar-v0"]["GPT-4 Turbo, 10 calls"]) \
        == "1.00 / n/a"
    ablation = harness.paper_numbers(True, ["CartPole-v1"], list(harness.ABLATION_METHODS))
    assert harness._published_cell(ablation["groups"]["gif-mcts/no-fix"]["discrete"]["Llama 3 70B, 50 calls"]) \
        == "0.81±0.08 / 0.55±0.05"
    assert set(harness.PAPER_PER_ENV["gif-mcts"]) == set(harness.resolve_envs("all")) | {"RTFM-v0"}


def test_ablation_option_runs_the_four_variants(script, tmp_path, capsys):
    harness = _load_harness()
    args = harness.parse_args(["--ablation", "--envs", "discrete"])
    assert harness.default_name(args).endswith("-ablation")
    assert harness.resolve_envs("discrete")[:3] == ["Blackjack-v1", "CliffWalking-v1", "Taxi-v4"]
    assert harness.resolve_envs("CartPole-v1,Taxi-v3,rtfm") == ["CartPole-v1", "Taxi-v4", "RTFM-v0"]
    out = tmp_path / "out"
    argv = ["--ablation", "--envs", "rtfm", "--llm", f"scripted:{script}", "--budget", "1",
            "--no-plan", "--workers", "2", "--out", str(out), "--workdir", str(tmp_path / "work")]
    assert harness.main(argv) == 0
    table = json.loads((out / "table.json").read_text())
    assert table["meta"]["methods"] == list(harness.ABLATION_METHODS)
    assert "Table 6" in (out / "table.md").read_text()
    assert harness.main(["--envs", "NoSuchEnv-v0", "--out", str(out)]) == 2


def test_aid_ablation_variants_switch_off_one_aid_each():
    from codeworld.experiments._cwmb_job import finish_config, job_config, job_options

    for variant, (field, off) in {"no-scaffold": ("scaffold", "assist"), "no-checks": ("checks", "assist"),
                                  "no-summary": ("error_summary", "assist")}.items():
        job = Job("CartPole-v1", f"gif-mcts/{variant}", 0, "scripted:x", 2)
        _, config = job_config(job, job_options(job))
        assert getattr(config.assist, field) is False
        assert finish_config(job, job_options(job)).fit_constants is True
    job = Job("CartPole-v1", "gif-mcts/no-fit", 0, "scripted:x", 2)
    _, config = job_config(job, job_options(job))
    assert config.assist.scaffold and config.assist.checks and config.assist.error_summary
    assert finish_config(job, job_options(job)).fit_constants is False
    job = Job("CartPole-v1", "gif-mcts/no-compose", 0, "scripted:x", 2)
    finish = finish_config(job, job_options(job))
    assert finish.compose is False and finish.fit_constants is True
    plain = Job("CartPole-v1", "gif-mcts", 0, "scripted:x", 2, {"finish": {"speed_step": False}})
    assert finish_config(plain, job_options(plain)).speed_step is False


def test_program_outcomes_name_what_became_of_each_program(tmp_path):
    from codeworld.cli import main
    from codeworld.experiments._outcomes import outcome_counts, program_outcome, run_outcomes

    model = (ROOT / "tests" / "models" / "cartpole_functional.py").read_text()
    programs = [
        "import numpy as np\nX = 1\n",                                            # no step
        model.replace("return", "raise ZeroDivisionError('x')\n    return", 1),   # raises
        model.replace("0.02", "0.03"),                                            # runs, wrong
    ]
    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```python\n{p}```" for p in programs]
                                 + ["no code here", f"```python\n{model}```"]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--method", "zero-shot", "--llm", f"scripted:{script}",
                 "--budget", "5", "--out", str(out), "--no-fit", "--no-speed-step", "--quiet",
                 "--set", "assist.scaffold=false", "--set", "assist.checks=false"]) == 0
    outcomes = [entry["outcome"] for entry in run_outcomes(out)]
    assert outcomes == ["no step", "raises ZeroDivisionError", "runs, wrong", "no program", "right"]
    # a syntax error is caught when the code is taken from the answer, or when it is loaded
    assert program_outcome({"buggy": True, "report": {"status": "exception",
                                                      "message": "syntax error: ..."}}) == "does not parse"
    assert program_outcome({"has_program": False, "report": {"status": "no_code"}}) == "no program"
    assert program_outcome({"buggy": True, "report": {"stage": "static_check",
                                                      "problems": [{"kind": "undefined_name"}]}}) \
        == "static check: undefined_name"
    # exact on every transition, just under 1 for a reward the description states and no
    # transition shows: right; merely close: wrong
    assert program_outcome({"buggy": False, "score": 1.0 - 5e-6,
                            "report": {"described_rewards": {"missing": [20.0]}}}) == "right"
    assert program_outcome({"buggy": False, "score": 1.0 - 1e-5, "report": {}}) == "runs, wrong"
    assert outcome_counts(["a", "b", "a"]) == {"a": 2, "b": 1}


def test_a_grid_plans_with_the_planner_fields_it_was_given(script, tmp_path, capsys):
    job = Job("RTFM-v0", "worldcoder", 0, f"scripted:{script}", 2,
              {"episodes": 1, "max_steps": 5, "planner": {"support.mode": "range", "num_simulations": "7"}})
    result = run_cwmb_job(job, str(tmp_path / "work"))
    config = result["planning"]["config"]
    assert config["support"]["mode"] == "range" and config["num_simulations"] == 7
    # the harness passes --plan-set on to every job, and refuses a field no planner has before any
    harness = _load_harness()
    args = harness.parse_args(["--envs", "rtfm", "--plan-set", "support.mode=nearest"])
    assert harness.job_options(args)["planner"] == {"support.mode": "nearest"}
    out = tmp_path / "refused"
    assert harness.main(["--envs", "rtfm", "--llm", f"scripted:{script}", "--plan-set", "nosuch=1",
                         "--out", str(out), "--workdir", str(tmp_path / "w")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith("cwmb: ") and "nosuch" in err and len(err.splitlines()) == 1
    assert not out.exists()


def _record(env: str, seed: int, sound: float, ret: float | None, new: int, copies: int, buggy: int) -> dict:
    """A finished job's record as the harness writes it, with only the fields the tables read."""
    return {"status": "finished", "seconds": 60.0,
            "job": {"env_id": env, "method": "gif-mcts", "seed": seed},
            "result": {"env_id": env, "calls": new + copies + buggy, "history": [], "outcomes": [],
                       "scores": {"sound": {"score": sound}, "heldout": True},
                       "planning": {"normalized_return": ret},
                       "accounting": {"duplicates": copies, "new_programs": new,
                                      "buggy_programs": buggy, "cached_calls": 0, "tokens": 10}}}


def test_group_means_carry_their_spread_over_seeds_and_calls_by_outcome():
    harness = _load_harness()
    envs = ["CartPole-v1", "Taxi-v4"]
    records = [_record("CartPole-v1", 0, 0.9, 1.0, 2, 7, 1), _record("Taxi-v4", 0, 0.7, 0.5, 4, 4, 2),
               _record("CartPole-v1", 1, 0.8, 0.8, 6, 3, 1), _record("Taxi-v4", 1, 0.6, 0.3, 8, 0, 2),
               _record("CartPole-v1", 2, 1.0, 0.9, 0, 0, 0)]  # seed 2 lacks Taxi: not in the spread
    summary = harness.aggregate(records, envs, ["gif-mcts"])
    group = summary["groups"]["gif-mcts"]["discrete"]
    assert group["seeds"] == 2
    # the seeds' means over the envs are 0.80 and 0.70: standard error 0.05
    assert group["accuracy_sound_seed_stderr"] == pytest.approx(0.05)
    assert group["normalized_return_seed_stderr"] == pytest.approx(0.1)  # 0.75 and 0.55
    meta = {"methods": ["gif-mcts"], "ablation": False, "command": "c", "llm": "local", "budget": 10,
            "seeds": 3, "executor": "local", "planning": "p", "finished_at": "t", "machine": "m",
            "envs": envs}
    paper = harness.paper_numbers(False, envs, ["gif-mcts"])
    text = harness.markdown(summary, meta, paper)
    cartpole = next(line for line in text.splitlines() if line.startswith("| CartPole-v1 | gif-mcts |"))
    assert "| 2.7 / 3.3 / 0.7 |" in cartpole  # mean calls per search: new / copies / buggy
    groups = next(line for line in text.splitlines() if line.startswith("| gif-mcts | discrete |"))
    assert f"| {summary['groups']['gif-mcts']['discrete']['accuracy_sound']:.3f} ± 0.050 |" in groups



def test_data_model_returns_normalizes_a_row_planned_before_its_oracle_was_in_the_table(
        tmp_path, monkeypatch):
    """benchmarks/data_model_returns.py keeps the rows of an earlier run; one planned while the
    reference table had no oracle return for its env is normalized from the table's once it has
    one (its raw returns do not depend on the oracle), and the table says so."""
    monkeypatch.syspath_prepend(str(ROOT / "benchmarks"))
    spec = importlib.util.spec_from_file_location("dmr", ROOT / "benchmarks" / "data_model_returns.py")
    dmr = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(dmr)
    from codeworld.envs import resolve_env
    from codeworld.planning import evaluate
    from codeworld.planning.evaluate import ReturnStats, reference_key_of
    from codeworld.planning._protocol import store_reference

    table = tmp_path / "reference.json"
    monkeypatch.setenv("CODEWORLD_REFERENCE_RETURNS", str(table))
    row = {"env_id": "Pendulum-v1", "seed": 0, "protocol": "short", "plan_seed": 0,
           "heldout": 0.9, "floor": 0.3, "reward": {"kind": "formula", "text": "x"},
           "no_oracle": "no oracle return",
           "data": {"normalized_return": None, "return": -500.0, "random": -1000.0, "oracle": None},
           "do_nothing": {"normalized_return": None, "return": -1000.0, "random": -1000.0,
                          "oracle": None}}
    dmr.normalize_late([row])
    assert "no_oracle" in row and row["data"]["normalized_return"] is None  # none in the table
    env = resolve_env("Pendulum-v1")
    probe = evaluate(env, seed=0, policies=(), protocol="short")
    stats = ReturnStats("oracle", returns=[-200.0] * 3, lengths=[100] * 3).to_dict()
    store_reference(reference_key_of("oracle", probe), stats, {"protocol": "short", "commit": "abc"},
                    env, table)
    dmr.normalize_late([row])
    assert "no_oracle" not in row and row["oracle_later"] == "abc"
    assert row["data"]["normalized_return"] == pytest.approx(500.0 / 800.0)
    assert row["do_nothing"]["normalized_return"] == pytest.approx(0.0)
    text = dmr.markdown([row], {"command": "c", "commit": "x", "finished_at": "t", "machine": "m",
                                "protocol": "short", "plan_seed": 0})
    assert "| 0.625 |" in text and "normalized since from the table's: Pendulum-v1 (oracle at abc)" in text
