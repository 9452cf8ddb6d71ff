"""The run type: `RunSpec` is the contents of ``run.json``, `RunStatus` its states, `RunDir` its writer."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from codeworld.cli import main
from codeworld.synthesis import GifMctsConfig, RunDir, RunSpec, RunStatus

LEGACY = Path(__file__).parent / "data" / "legacy_runs"
LEGACY_FILES = {
    "synthesize": LEGACY / "synthesize-cartpole" / "run.json",
    "demo": LEGACY / "demo.run.json",
    "cwmb_job": LEGACY / "cwmb_job.run.json",
    "apps_job": LEGACY / "apps_job.run.json",
    "agent_rewrite": LEGACY / "agent_rewrite.run.json",
}
MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


def legacy(name: str) -> dict:
    return json.loads(LEGACY_FILES[name].read_text())


@pytest.mark.parametrize("name", sorted(LEGACY_FILES))
def test_every_earlier_run_json_reads_and_writes_back_unchanged(name, tmp_path):
    data = legacy(name)
    spec = RunSpec.from_json(data)
    assert spec.to_json() == data
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(spec)
    assert json.loads((tmp_path / "run" / "run.json").read_text()) == data
    assert run_dir.spec == spec


def test_earlier_runs_read_into_the_fields_their_writers_meant():
    synthesized = RunSpec.from_json(legacy("synthesize"))
    assert synthesized.status is RunStatus.FINISHED and synthesized.budget == 2
    assert synthesized.mode == "sound" and synthesized.buffer is None and synthesized.timeout_s == 60.0
    assert synthesized.finish == {"fit_constants": False, "speed_step": False} and not synthesized.extra
    assert (synthesized.world, synthesized.world_kind, synthesized.world_target) == \
        (None, "cwmb", "CartPole-v1")  # saved before kinds were recorded: a CWMB run
    assert RunSpec.from_json(legacy("demo")).codeworld_version is None  # the demo wrote none
    job = RunSpec.from_json(legacy("cwmb_job"))
    assert job.variant == "gif-mcts/no-fix" and job.config["ucb_c"] == 0.2 and job.job["budget"] == 2
    assert RunSpec.from_json(legacy("apps_job")).extra == {"problem": "0000"}
    rewrite = RunSpec.from_json(legacy("agent_rewrite"))
    assert rewrite.status is None and rewrite.extra["level"] == "sokoban-corridor"


def test_statuses_are_the_five_states_and_nothing_else(tmp_path):
    assert [s.value for s in RunStatus] == ["running", "not started", "interrupted",
                                            "stopped at the time limit", "finished"]
    assert f"{RunStatus.FINISHED}" == str(RunStatus.FINISHED) == "finished"
    assert RunStatus.ended(True) is RunStatus.STOPPED_AT_TIME_LIMIT
    assert RunStatus.ended(False) is RunStatus.FINISHED
    assert RunSpec("gif-mcts", status="interrupted").status is RunStatus.INTERRUPTED
    with pytest.raises(ValueError, match="unknown run status 'done'"):
        RunSpec("gif-mcts", status="done")
    run = tmp_path / "run"
    run.mkdir()
    (run / "run.json").write_text(json.dumps({**legacy("demo"), "status": "done"}))
    with pytest.raises(ValueError, match="run.json: unknown run status"):
        RunDir(run).spec
    assert main(["show", str(run)]) == 2  # said plainly, not as a traceback
    with pytest.raises(ValueError, match="names no method"):
        RunSpec.from_json({"env_id": "CartPole-v1"})


def test_updates_keep_what_this_version_does_not_know(tmp_path):
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec.new("gif-mcts", GifMctsConfig(), env_id="CartPole-v1", mode="sound",
                             extra={"from_a_later_version": [1, 2]}))
    spec = run_dir.set_status(RunStatus.INTERRUPTED)
    data = json.loads((tmp_path / "run" / "run.json").read_text())
    assert data["status"] == "interrupted" and data["from_a_later_version"] == [1, 2]
    assert data["buffer"] is None  # a run scored on a buffer names it, None for the committed one
    assert "variant" not in data and "job" not in data  # fields not set are left out
    assert data["config"]["ucb_c"] == GifMctsConfig().ucb_c and data["created"] and data["codeworld_version"]
    assert run_dir.spec == spec


def test_synthesize_writes_the_keys_it_wrote_before(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```python\n{MODEL.read_text()}```"]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "1",
                 "--out", str(out), "--no-fit", "--no-speed-step", "--quiet"]) == 0
    data = json.loads((out / "run.json").read_text())
    before = legacy("synthesize")
    # and the held-out split and the world's kind and target, added since
    assert [k for k in data if k not in ("split", "world", "target")] == list(before)
    assert (data["world"], data["target"]) == ("cwmb", "CartPole-v1")
    assert data["split"]["n_heldout"] > 0 and data["split"]["seed"] == 0
    for added_since in ("relations", "structure", "form_from_data", "copies", "beyond_data",
                        "compact_tables", "reward_from_old", "angles", "data_model", "regression",
                        "described_rewards", "described_ends", "bounded_data_model"):
        assert data["config"]["assist"].pop(added_since) is True
    assert data["config"]["assist"].pop("beyond_steps") is None  # the planner's lookahead
    assert data["config"]["assist"].pop("regression_seconds") == 10.0  # the regression's cap
    assert data["config"].pop("stall_limit") == 2  # GIF-MCTS's stall limit, added since
    assert data["config"]["sampling"].pop("copy_resamples") == 0  # a setting added since, off
    assert {k: data[k] for k in ("method", "env_id", "seed", "mode", "buffer", "timeout_s",
                                 "config", "status")} \
        == {k: before[k] for k in ("method", "env_id", "seed", "mode", "buffer", "timeout_s",
                                   "config", "status")}
    # the finish switches gained the composition's and the floor's
    assert data["finish"] == {**before["finish"], "compose": True, "floor": True}
