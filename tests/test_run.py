"""The one owner of a synthesis run (codeworld.synthesis.run.Run): statuses, the switches it reads
back, Ctrl-C, the lock, and that nothing else sets a status."""

from __future__ import annotations

import ast
import json
import shlex
from pathlib import Path

import pytest

import codeworld
from codeworld.synthesis import RunStatus
from codeworld.synthesis.config import FinishConfig
from codeworld.synthesis.fakes import EchoPrompts, FakeEvaluator, ScriptedLLM, fake_program
from codeworld.synthesis.run import Run
from codeworld.synthesis._run_dir import RunLockedError
from codeworld.synthesis.types import FinishRecord, World

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


def _script(call, messages):
    return fake_program(round(0.1 * (call + 1), 2), tag=str(call))


def _world(finished: list | None = None) -> World:
    def finish(result, config, run_dir):
        finished.append(config)
        return FinishRecord(compose={"on": config.compose})

    return World(EchoPrompts(), FakeEvaluator(), finish if finished is not None else None)


def test_a_run_goes_from_not_started_to_finished_and_reads_its_finish_switches_back(tmp_path):
    run = Run.start(tmp_path / "run", "worldcoder", finish=FinishConfig(compose=False), budget=3, seed=1)
    assert run.spec.status is RunStatus.NOT_STARTED
    finished: list = []
    result = run.execute(_world(finished), ScriptedLLM(_script))
    assert run.spec.status is RunStatus.FINISHED and result.accounting.calls == 3
    assert finished == [FinishConfig(compose=False)] and result.finish == FinishRecord(compose={"on": False})
    # a resume reads the switches it wrote (the flags of the new session only turn steps off)
    again = Run.resume(tmp_path / "run", finish_off=("speed_step",), budget=4)
    assert again.finish == FinishConfig(compose=False, speed_step=False)
    result = again.execute(_world(finished), ScriptedLLM(_script))
    assert result.accounting.replayed_calls == 3 and result.accounting.new_calls == 1
    assert json.loads((tmp_path / "run" / "run.json").read_text())["finish"] == {
        "compose": False, "fit_constants": True, "speed_step": False, "floor": True}


def test_a_rerun_job_continues_its_run_taking_only_the_new_budget(tmp_path):
    first = Run.start(tmp_path / "run", "gif-mcts", env_id="CartPole-v1", budget=2, seed=1,
                      continue_existing=True)
    first.execute(_world(), ScriptedLLM(_script))
    again = Run.start(tmp_path / "run", "zero-shot", env_id="Taxi-v3", budget=5, seed=9,
                      continue_existing=True)
    assert again.method.name == "gif-mcts" and again.spec.env_id == "CartPole-v1"
    assert again.spec.seed == 1 and again.budget == 5
    again.release()
    with pytest.raises(ValueError, match="already holds a run: add --resume"):
        Run.start(tmp_path / "run", "gif-mcts", budget=2)


def test_ctrl_c_leaves_the_run_interrupted_unlocked_and_resumable(tmp_path):
    class CtrlC(ScriptedLLM):
        def complete(self, messages, **sampling):
            if sampling.get("sample") == 2:
                raise KeyboardInterrupt
            return super().complete(messages, **sampling)

    run = Run.start(tmp_path / "run", "worldcoder", budget=4)
    with pytest.raises(KeyboardInterrupt):
        run.execute(_world(), CtrlC(_script))
    assert run.run_dir.spec.status is RunStatus.INTERRUPTED
    resumed = Run.resume(tmp_path / "run")  # the lock went with the interrupted session
    result = resumed.execute(_world(), ScriptedLLM(_script))
    assert result.accounting.replayed_calls == 2 and result.accounting.new_calls == 2
    assert resumed.spec.status is RunStatus.FINISHED


def test_a_run_holds_its_directory_until_it_ends(tmp_path):
    run = Run.start(tmp_path / "run", "worldcoder", budget=1)
    with pytest.raises(RunLockedError, match="in use"):
        Run.resume(tmp_path / "run")
    run.execute(_world(), ScriptedLLM(_script))
    Run.resume(tmp_path / "run").release()


def test_cli_ctrl_c_prints_how_to_resume_and_the_resume_finishes(tmp_path, capsys, monkeypatch):
    from codeworld.cli import main
    from codeworld.synthesis import _runner as runner

    script = tmp_path / "s.json"
    wrong = MODEL.read_text().replace("0.02", "0.03")
    script.write_text(json.dumps([f"```python\n{wrong}```", f"```python\n{MODEL.read_text()}```"]))
    args = ["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "2",
            "--out", str(tmp_path / "run"), "--no-fit", "--no-speed-step", "--quiet",
            "--llm-cache-dir", str(tmp_path / "cache")]
    real = runner._Calls.completion

    def interrupted(self, request):
        if request.call == 1:
            raise KeyboardInterrupt
        return real(self, request)

    monkeypatch.setattr(runner._Calls, "completion", interrupted)
    assert main(args) == 130
    err = capsys.readouterr().err
    hint = err.split("interrupted; resume with: ")[1].strip()
    assert hint.endswith(f"codeworld synthesize --resume --out {tmp_path / 'run'} --llm "
                         f"scripted:{script} --llm-cache-dir {tmp_path / 'cache'}")  # complete
    assert json.loads((tmp_path / "run" / "run.json").read_text())["status"] == "interrupted"
    monkeypatch.setattr(runner._Calls, "completion", real)
    assert main(shlex.split(hint)[1:] + ["--quiet"]) == 0
    saved = json.loads((tmp_path / "run" / "run.json").read_text())
    assert saved["status"] == "finished" and saved["finish"]["speed_step"] is False


def test_only_the_run_sets_a_status():
    """A status is written by `Run` alone (through `RunDir.set_status`, the file's one writer): no
    other module calls `set_status` or gives a spec a `RunStatus`."""
    package = Path(codeworld.__file__).parent
    writers = set()
    for path in package.rglob("*.py"):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            called = (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                      and node.func.attr == "set_status")
            keyword = (isinstance(node, ast.keyword) and node.arg == "status"
                       and "RunStatus" in ast.unparse(node.value))
            if called or keyword:
                writers.add(str(path.relative_to(package)))
    assert writers == {"synthesis/run.py", "synthesis/_run_dir.py"}
