"""Bad input on the command line gets one line naming the problem, never a traceback; work done is
never lost to an output that cannot be written; a run keeps the LLM it was started with; and
nothing of the user's is overwritten. Each case is driven through the real CLI (`main`)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from codeworld.cli import main

ROOT = Path(__file__).resolve().parents[1]
MODEL = ROOT / "tests" / "models" / "cartpole_functional.py"
LEGACY_RUN = ROOT / "tests" / "data" / "legacy_runs" / "synthesize-cartpole"


def one_line(err: str, says: str) -> bool:
    """Whether stderr is exactly one line that starts with ``says``."""
    return err.startswith(says) and err.count("\n") == 1 and "Traceback" not in err


def listing(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` with its bytes (what a command left on disk)."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.mark.parametrize("argv, says", [
    (["agent", "minigrid:empty", "--llm", "nosuch"], "codeworld agent: unknown LLM backend 'nosuch'"),
    (["agent", "sokoban:gen:notanumber"], "codeworld agent: a generated Sokoban level is gen:SEED"),
    (["score", "missing.npz", "model.py"], "codeworld score: missing.npz: no such file"),
    (["demo", "--llm", "nosuch"], "codeworld demo: unknown LLM backend 'nosuch'"),
    (["synthesize", "CartPole-v1", "--llm", "scripted:s.json", "--set", "sampling.temperature=-3"],
     "codeworld synthesize: sampling.temperature must be 0 or more, not -3.0"),
    (["demo", "--llm", "scripted:s.json", "--set", "sampling.max_tokens=0"],
     "codeworld demo: sampling.max_tokens must be at least 1, not 0"),
    (["train", "CartPole-v1", str(MODEL), "--steps", "64", "--set", "learning_rate=abc"],
     "codeworld train: ppo: The learning rate schedule must be a float or a callable, not abc"),
    # another kind of world: a bad target, or a flag of a CWMB run, refused before a run is made
    (["synthesize", "--world", "objects", "sokoban:nosuch", "--llm", "scripted:s.json"],
     "codeworld synthesize: unknown Sokoban level 'nosuch'"),
    (["synthesize", "--world", "apps", "nowhere", "--llm", "scripted:s.json"],
     "codeworld synthesize: no APPS problems at nowhere"),
    (["synthesize", "--world", "objects", "sokoban:corridor", "--llm", "scripted:s.json", "--buffer", "paper"],
     "codeworld synthesize: --buffer is a flag of a CWMB run (on a replay buffer): --world objects does not"),
    (["synthesize", "--world", "apps", "nowhere", "--llm", "scripted:s.json", "--no-fit"],
     "codeworld synthesize: --no-fit is a flag of a CWMB run"),
])
def test_bad_input_gets_one_line(argv, says, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert one_line(err, says), err
    assert listing(tmp_path) == {}  # no run directory was started


def test_a_set_error_names_the_config_fields_and_no_internal_constant(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(["synthesize", "CartPole-v1", "--set", "nosuch=1"]) == 2
    err = capsys.readouterr().err
    assert one_line(err, "codeworld synthesize: GifMctsConfig has no field 'nosuch'; fields: ucb_c")
    assert "ABSENT_IN_OLDER_RUNS" not in err and "stall_limit" in err


def test_a_backend_module_that_makes_no_backend_gets_one_line(capsys):
    assert main(["llm", "hello", "--llm", "os:system:ls"]) == 1
    err = capsys.readouterr().err
    assert one_line(err, "codeworld llm: os:system:ls is not an LLM backend factory"), err


@pytest.mark.parametrize("argv, says", [
    (["synthesize", "CartPole-v1", "--budget", "0"], "argument --budget: must be at least 1, not 0"),
    (["synthesize", "CartPole-v1", "--budget", "two"], "argument --budget: not a whole number: 'two'"),
    (["synthesize", "CartPole-v1", "--time-limit", "-1"], "argument --time-limit: must be above 0, not -1"),
    (["synthesize", "CartPole-v1", "--timeout", "nan"], "argument --timeout: must be above 0, not nan"),
    (["demo", "--episodes", "0"], "argument --episodes: must be at least 1, not 0"),
    (["plan", "CartPole-v1", "model.py", "--max-steps", "-1"], "argument --max-steps: must be at least 1, not -1"),
    (["plan", "CartPole-v1", "model.py", "--timeout", "0"], "argument --timeout: must be above 0, not 0"),
    (["plan", "CartPole-v1", "model.py", "--timeout", "-1"], "argument --timeout: must be above 0, not -1"),
    (["score", "CartPole-v1", "model.py", "--timeout", "0"], "argument --timeout: must be above 0, not 0"),
    (["check", "model.py", "--state-dim", "-3"], "argument --state-dim: must be at least 1, not -3"),
])
def test_a_count_or_duration_below_its_range_is_refused_before_any_work(argv, says, capsys, tmp_path,
                                                                        monkeypatch):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(SystemExit) as stopped:
        main(argv)
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert err.splitlines()[-1] == f"codeworld {argv[0]}: error: {says}"
    assert not (tmp_path / "runs").exists()  # no run directory was made


@pytest.mark.parametrize("argv", [["check"], ["score", "CartPole-v1"], ["fit", "CartPole-v1"],
                                  ["plan", "CartPole-v1"], ["train", "CartPole-v1"]])
def test_a_model_with_a_syntax_error_gets_one_line_naming_the_command_and_the_line(argv, tmp_path,
                                                                                   capsys):
    broken = tmp_path / "broken.py"
    broken.write_text("def step(state, action)\n    return state\n")
    assert main([*argv, str(broken)]) != 0
    err = capsys.readouterr().err
    assert one_line(err, f"codeworld {argv[0]}: {broken}: line 1: syntax error"), err


# ------------------------------------------------------------------ outputs


@pytest.fixture
def user_files(tmp_path, monkeypatch):
    """A folder of the user's: a file ``notes.txt`` and a folder ``mine`` with a ``best_model.py``."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "notes.txt").write_text("my notes\n")
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "best_model.py").write_text("# my own model\n")
    (tmp_path / "s.json").write_text("[]")  # a scripted LLM with nothing to say
    return tmp_path


@pytest.mark.parametrize("argv, says", [
    (["synthesize", "CartPole-v1", "--llm", "scripted:s.json", "--out", "notes.txt"],
     "codeworld synthesize: notes.txt is a file: a run needs a new or empty folder"),
    (["synthesize", "CartPole-v1", "--llm", "scripted:s.json", "--out", "mine"],
     "codeworld synthesize: mine holds files that are not a run's (best_model.py): a run needs a "
     "new or empty folder"),
    (["synthesize", "CartPole-v1", "--llm", "scripted:s.json", "--out", "notes.txt/run"],
     "codeworld synthesize: cannot write notes.txt/run: notes.txt is a file, not a folder"),
    (["demo", "--llm", "scripted:s.json", "--out", "mine"],
     "codeworld demo: mine holds files that are not a run's (best_model.py)"),
    (["agent", "minigrid:empty", "--llm", "scripted:s.json", "--out", "mine"],
     "codeworld agent: mine is not empty: a run needs a new or empty folder"),
    (["collect", "CartPole-v1", "--out", "notes.txt"], "codeworld collect: notes.txt is a file, not a folder"),
    (["describe", "all", "--write", "notes.txt"], "codeworld describe: notes.txt is a file, not a folder"),
    (["fit", "CartPole-v1", str(MODEL), "--out", "notes.txt/fitted.py"],
     "codeworld fit: cannot write notes.txt/fitted.py: notes.txt is a file, not a folder"),
    (["fit", "CartPole-v1", str(MODEL), "--out", "mine"], "codeworld fit: mine is a folder, not a file"),
    (["train", "CartPole-v1", str(MODEL), "--steps", "64", "--save-policy", "notes.txt/p.zip"],
     "codeworld train: cannot write notes.txt/p.zip: notes.txt is a file, not a folder"),
    (["train", "CartPole-v1", str(MODEL), "--steps", "64", "--out", "notes.txt/r.json"],
     "codeworld train: cannot write notes.txt/r.json: notes.txt is a file, not a folder"),
])
def test_an_output_that_cannot_be_written_is_refused_before_the_work(argv, says, user_files, capsys):
    before = listing(user_files)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert one_line(err, says), err
    assert listing(user_files) == before  # nothing written, nothing of the user's touched


def test_fit_creates_the_folder_of_its_output(tmp_path, capsys):
    out = tmp_path / "new" / "folder" / "fitted.py"
    assert main(["fit", "CartPole-v1", str(MODEL), "--out", str(out), "--max-evals", "3"]) == 0
    assert out.read_text() == MODEL.read_text()  # the model is exact: the original is kept
    assert [p.name for p in out.parent.iterdir()] == ["fitted.py"]  # no temporary file left


def test_show_writes_its_page_into_a_new_folder_or_says_why_not(tmp_path, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    page = tmp_path / "new" / "r.html"
    assert main(["show", str(run), "--html", str(page)]) == 0
    assert page.read_text().startswith("<!DOCTYPE html>")
    (tmp_path / "notes.txt").write_text("mine\n")
    capsys.readouterr()
    assert main(["show", str(run), "--html", str(tmp_path / "notes.txt" / "r.html")]) == 2
    assert one_line(capsys.readouterr().err, "codeworld show: cannot write ")


def test_show_open_without_a_browser_says_so(tmp_path, monkeypatch, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    monkeypatch.setattr("webbrowser.open", lambda url, *a, **k: False)  # what it returns with none
    assert main(["show", str(run), "--open"]) == 1
    err = capsys.readouterr().err
    assert one_line(err, "codeworld show: no web browser could be started here; open "
                         f"{run / 'report.html'}")


# ------------------------------------------------------------------ records


def test_show_names_a_truncated_call_record_and_shows_the_rest(tmp_path, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    record = run / "calls" / "0001.json"
    record.write_text(record.read_text()[:100])
    assert main(["show", str(run)]) == 1
    out, err = capsys.readouterr()
    assert one_line(err, "codeworld show: 1 record(s) could not be read and are left out (the page "
                         f"names them): {record} is not valid JSON (truncated?)"), err
    assert "best score" in out  # the summary is still printed
    page = (run / "report.html").read_text()
    assert "Records that could not be read" in page and f"{record} is not valid JSON" in page


def test_the_page_names_a_corrupt_composition_record_instead_of_dropping_it(tmp_path, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    (run / "compose.json").write_text('{"status": "comp')
    main(["show", str(run)])
    page = (run / "report.html").read_text()
    assert f"{run / 'compose.json'} is not valid JSON" in page


def test_a_run_whose_process_is_gone_reads_interrupted(tmp_path, capsys):
    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    spec = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**spec, "status": "running"}))  # as kill -9 leaves it
    assert main(["show", str(run), "--no-picture"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(", interrupted (process gone)")
    main(["show", str(run)])
    assert "interrupted (process gone)" in (run / "report.html").read_text()


def test_a_running_run_reads_running(tmp_path, capsys):
    from codeworld.synthesis import RunDir

    run = shutil.copytree(LEGACY_RUN, tmp_path / "run")
    spec = json.loads((run / "run.json").read_text())
    (run / "run.json").write_text(json.dumps({**spec, "status": "running"}))
    with RunDir(run).locked():  # a live writer holds the lock
        assert main(["show", str(run), "--no-picture"]) == 0
    assert capsys.readouterr().out.splitlines()[0].endswith(", running")


# ------------------------------------------------------------------ a run keeps its LLM


@pytest.mark.parametrize("argv", [
    ["synthesize", "CartPole-v1", "--llm", "scripted:missing.json", "--out", "a/b/run"],
    ["synthesize", "CartPole-v1", "--llm", "scripted:missing.json"],  # the default runs/...
    ["synthesize", "--world", "objects", "sokoban:corridor", "--llm", "scripted:missing.json",
     "--heldout", "0.5", "--out", "run"],
])
def test_a_run_whose_llm_cannot_be_set_up_leaves_nothing_behind(argv, capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert one_line(err, "codeworld synthesize: cannot read script missing.json"), err
    assert list(tmp_path.iterdir()) == []  # no run directory, and no folder made for it


def test_a_refused_run_in_the_users_empty_folder_leaves_the_folder(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "keep.txt").write_text("the user's")
    assert main(["synthesize", "CartPole-v1", "--llm", "scripted:missing.json", "--out", "mine/run"]) == 2
    assert listing(tmp_path) == {"mine/keep.txt": b"the user's"}
    (tmp_path / "empty").mkdir()
    assert main(["synthesize", "CartPole-v1", "--llm", "scripted:missing.json", "--out", "empty"]) == 2
    assert (tmp_path / "empty").is_dir() and list((tmp_path / "empty").iterdir()) == []



def script(path: Path, *programs: str) -> str:
    path.write_text(json.dumps([f"```python\n{p}```" for p in programs]))
    return f"scripted:{path}"


@pytest.fixture
def one_call_run(tmp_path):
    """A finished GIF-MCTS run of one call, made with ``scripted:a.json``."""
    first = script(tmp_path / "a.json", MODEL.read_text().replace("0.02", "0.03"))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", first, "--budget", "1", "--out", str(out),
                 "--no-fit", "--no-compose", "--no-speed-step", "--quiet"]) == 0
    return out, first


def test_a_resume_keeps_the_runs_llm_whatever_codeworld_llm_says(one_call_run, tmp_path, monkeypatch,
                                                                 capsys):
    out, first = one_call_run
    other = script(tmp_path / "b.json", MODEL.read_text())
    monkeypatch.setenv("CODEWORLD_LLM", other)
    assert main(["synthesize", "--resume", "--out", str(out), "--budget", "2", "--quiet"]) == 0
    assert json.loads((out / "run.json").read_text())["llm"] == first
    second = json.loads((out / "calls" / "0001.json").read_text())
    assert second["llm"] == first and second["completion"]["model"] == "a.json"


def test_another_llm_on_resume_is_refused_unless_switched_and_the_switch_is_shown(one_call_run, tmp_path,
                                                                                  capsys):
    out, first = one_call_run
    other = script(tmp_path / "b.json", MODEL.read_text())
    before = listing(out)
    capsys.readouterr()
    assert main(["synthesize", "--resume", "--out", str(out), "--llm", other, "--budget", "2"]) == 2
    err = capsys.readouterr().err
    assert one_line(err, f"codeworld synthesize: {out} was run with the LLM {first}, not {other}: "
                         "resume without --llm to keep it, or add --switch-llm"), err
    assert listing(out) == before  # no call made, run.json as it was
    assert main(["synthesize", "--resume", "--out", str(out), "--llm", other, "--budget", "2",
                 "--switch-llm", "--quiet"]) == 0
    assert json.loads((out / "run.json").read_text())["llm"] == other
    assert [json.loads((out / "calls" / f"000{i}.json").read_text())["llm"] for i in (0, 1)] == [first, other]
    capsys.readouterr()
    assert main(["show", str(out)]) == 0
    assert f"LLM switched during the run: calls 1-1 by {first}; then calls 2-2 by {other}" in (
        capsys.readouterr().out)
    assert "LLM switched during the run" in (out / "report.html").read_text()


def test_the_printed_resume_command_is_complete(one_call_run, tmp_path, monkeypatch, capsys):
    import shlex

    out, first = one_call_run
    monkeypatch.setenv("CODEWORLD_LLM", "nosuch")  # the hint must not depend on it
    monkeypatch.setattr("codeworld.commands._runs.codeworld_command", lambda: "codeworld")
    from codeworld.synthesis import _runner as runner

    def stop(self, request):
        raise KeyboardInterrupt

    monkeypatch.setattr(runner._Calls, "completion", stop)
    capsys.readouterr()
    assert main(["synthesize", "--resume", "--out", str(out), "--budget", "2", "--quiet",
                 "--llm-retries", "2"]) == 130
    hint = capsys.readouterr().err.split("resume with: ")[1].strip()
    assert shlex.split(hint) == ["codeworld", "synthesize", "--resume", "--out", str(out), "--llm",
                                 first, "--llm-retries", "2"]


def test_the_demo_points_at_a_codeworld_that_runs(monkeypatch, tmp_path):
    """After `make demo` nothing is on the PATH: the printed command names the venv's script."""
    import os
    import sys

    from codeworld.commands._runs import codeworld_command

    monkeypatch.setenv("PATH", str(tmp_path))  # no codeworld on it
    monkeypatch.chdir(ROOT)
    command = codeworld_command()
    script = Path(os.path.abspath(sys.executable)).parent / "codeworld"
    assert command == (os.path.relpath(script, ROOT) if script.is_relative_to(ROOT) else str(script))
    assert os.access(ROOT / command, os.X_OK)  # runs as printed, from the checkout
    (tmp_path / "codeworld").symlink_to(script)  # once it is on the PATH, the short name
    assert codeworld_command() == "codeworld"
