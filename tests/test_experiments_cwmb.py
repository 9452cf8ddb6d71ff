"""The CWMB harness end to end with a scripted LLM: records, rerun skips, tables, plots, ablation."""

from __future__ import annotations

import importlib.util
import json
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from codeworld.experiments import Job, run_cwmb_job
from codeworld.experiments.cwmb_job import job_config, job_options

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
    assert result["planning"]["model"]["returns"] == result["planning"]["oracle"]["returns"]
    assert "def step(state, action)" in (Path(result["run_dir"]) / "best_model.py").read_text()


def test_harness_writes_tables_and_plots_and_skips_finished_jobs(script, tmp_path, capsys):
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
    assert all(v is None for g in table["paper_numbers"]["gif-mcts"].values() for v in g.values())
    text = (out / "table.md").read_text()
    assert "arXiv 2405.15383" in text and "| RTFM-v0 | worldcoder | 1 | 1.000 |" in text
    for svg in (out / "plots").glob("*.svg"):
        ET.fromstring(svg.read_text())  # well-formed
    assert {p.name for p in (out / "plots").iterdir()} == {"RTFM-v0.svg", "groups.svg"}
    records = sorted((out / "jobs").glob("*.json"))
    assert len(records) == 2
    stamps = [r.stat().st_mtime_ns for r in records]

    assert harness.main(argv) == 0  # the rerun finds both jobs finished
    assert "0 finished, 0 failed, 2 already done" in capsys.readouterr().out
    assert [r.stat().st_mtime_ns for r in records] == stamps


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
