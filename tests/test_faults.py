"""A run survives its faults: a second process on its directory, a full disk mid-write, a
truncated or hand-edited record. Each fault is injected and ends in one clear line, and the run
resumes once the fault is gone."""

from __future__ import annotations

import errno
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from codeworld.cli import main
from codeworld.synthesis import RunDir, RunSpec, get_method, synthesize
from codeworld.synthesis.fakes import EchoPrompts, FakeEvaluator, ScriptedLLM, fake_program
from codeworld._files import RunWriteError, write_atomic
from codeworld.synthesis._run_dir import RunLockedError, RunRecordError

BUDGET = 6
ROOT = Path(__file__).resolve().parent.parent
MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


def script(call: int, messages) -> str:
    if call == 1:
        return fake_program(bug="ZeroDivisionError at call 1")
    return fake_program(round(0.1 + 0.1 * call, 4), feedback=f"transition {call} wrong",
                        tag=str(call))


def run(path: Path, llm: ScriptedLLM, budget: int = BUDGET):
    run_dir = RunDir(path)
    if not run_dir.exists():
        run_dir.init(RunSpec("gif-mcts", seed=3, budget=budget))
    return synthesize(get_method("gif-mcts").make(None, seed=3), llm=llm, prompts=EchoPrompts(),
                      evaluator=FakeEvaluator(), budget=budget, run_dir=run_dir, seed=3)


def snapshot(path: Path) -> dict:
    """Every file of a run directory except the timings in the accounting."""
    out = {}
    for file in sorted(path.rglob("*")):
        if file.is_file():
            rel = str(file.relative_to(path))
            text = file.read_text()
            if rel == "accounting.json":
                text = {k: json.loads(text)[k] for k in ("calls", "prompt_tokens")}
            out[rel] = text
    return out


def one_line(message: str) -> str:
    assert message and "\n" not in message and "Traceback" not in message
    return message


def python(code: str, **kwargs) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", textwrap.dedent(code)], cwd=ROOT,
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, **kwargs)


# ------------------------------------------------------------------ two processes, one directory

HOLD = """
    import sys
    from codeworld.synthesis._run_dir import RunDir
    lock = RunDir(sys.argv[1]).acquire()
    print("held", flush=True)
    sys.stdin.read()
"""


def test_a_second_process_is_refused_with_the_holders_pid_until_the_holder_dies(tmp_path):
    path = tmp_path / "run"
    holder = subprocess.Popen([sys.executable, "-c", textwrap.dedent(HOLD), str(path)], cwd=ROOT,
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(RunLockedError) as info:
            RunDir(path).acquire()
        assert isinstance(info.value, ValueError) and info.value.pid == holder.pid
        message = one_line(str(info.value))
        assert message.startswith(str(path)) and f"pid {holder.pid}" in message
        assert "another --out" in message
    finally:
        holder.kill()  # SIGKILL: no clean-up runs, the kernel drops the lock with the process
        holder.communicate()
    with RunDir(path).locked() as run_dir:
        assert run_dir.path == path
        assert (path / ".lock").read_text().strip() == str(os.getpid())


def test_a_process_that_finds_the_run_in_use_is_told_who_holds_it(tmp_path):
    path = tmp_path / "run"
    with RunDir(path).locked():
        child = python("""
            import sys
            from codeworld.synthesis._run_dir import RunDir
            try:
                RunDir(sys.argv[1]).acquire()
            except ValueError as exc:
                print(exc)
        """.replace("sys.argv[1]", repr(str(path))))
        out, err = child.communicate(timeout=120)
    assert child.returncode == 0, err
    assert one_line(out.strip()) == (f"{path} is in use by another codeworld process "
                                     f"(pid {os.getpid()}); wait for it to end or choose another "
                                     "--out")
    with RunDir(path).locked():  # released at the end of the block
        pass


def test_the_lock_is_reentrant_through_one_run_dir_and_exclusive_across_two(tmp_path):
    run_dir, other = RunDir(tmp_path / "run"), RunDir(tmp_path / "run")
    with run_dir.locked():
        with run_dir.locked():
            pass
        with pytest.raises(RunLockedError, match="already in use in this process"):
            other.acquire()  # still held by the outer block
    lock = other.acquire()
    with pytest.raises(RunLockedError):
        run_dir.acquire()
    lock.release()
    lock.release()  # a second release is harmless
    run_dir.acquire().release()


def test_taking_the_lock_clears_what_a_writer_killed_mid_write_left(tmp_path):
    run(tmp_path / "run", ScriptedLLM(script))
    stale = [tmp_path / "run" / "calls" / ".0002.json.x1.tmp", tmp_path / "run" / ".tree.json.x2.tmp"]
    for file in stale:
        file.write_text('{"call": 2, "messa')
    with RunDir(tmp_path / "run").locked():
        assert not any(file.exists() for file in stale)
    RunDir(tmp_path / "run").check()


# ------------------------------------------------------------------ a full disk


class DiskFull:
    """A disk that fills up while the ``at``-th version of ``target`` is written under ``root``:
    half of that write reaches the file, then every write under ``root`` fails with ENOSPC
    until `free`. (Writes are told apart by the file their descriptor is open on.)"""

    def __init__(self, monkeypatch, root: Path, target: str, at: int = 1):
        self.root, self.target, self.at = root.resolve(), Path(target), at
        self.seen, self.full = 0, False
        self._write = os.write
        monkeypatch.setattr(os, "write", self.write)

    def free(self) -> None:
        self.full, self.at = False, 0

    def write(self, fd: int, data) -> int:
        try:
            name = Path(os.readlink(f"/proc/self/fd/{fd}"))
        except OSError:
            return self._write(fd, data)
        if self.root not in name.parents:
            return self._write(fd, data)
        if self.full:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        if (name.parent == self.root / self.target.parent
                and name.name.startswith(f".{self.target.name}.")):
            self.seen += 1
            if self.seen == self.at:
                self.full = True
                return self._write(fd, data[:max(1, len(data) // 2)])
        return self._write(fd, data)


needs_proc = pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="needs /proc")


@needs_proc
@pytest.mark.parametrize("target, at", [
    ("calls/0003.json", 1),       # the completion of call 3, before its program is scored
    ("programs/0003.py", 1),      # call 3's program (its call record is saved)
    ("programs/0003.json", 1),    # call 3's evaluation
    ("tree.json", 4),             # the search state after call 3
    ("best_model.py", 3),
])
def test_a_full_disk_leaves_no_partial_file_and_the_run_resumes(tmp_path, monkeypatch, target, at):
    run(tmp_path / "whole", ScriptedLLM(script))
    path = tmp_path / "cut"
    disk = DiskFull(monkeypatch, path, target, at)
    first = ScriptedLLM(script)
    with pytest.raises(RunWriteError) as info:
        run(path, first)
    assert disk.full
    error = info.value
    assert isinstance(error, OSError) and error.errno == errno.ENOSPC
    assert error.filename == str(path / target)
    assert one_line(str(error)) == (f"could not write {path / target}: No space left on device "
                                    "(free some space, then resume the run)")
    assert not list(path.rglob("*.tmp"))  # no temporary file left behind
    if at == 1:
        assert not (path / target).exists()  # no half of it either
    RunDir(path).check()  # every record written before the disk filled is whole
    saved = sorted(RunDir(path).load_calls())
    assert saved == [c for c in first.calls if c != 3 or target != "calls/0003.json"]

    disk.free()
    second = ScriptedLLM(script)
    run(path, second)
    assert second.calls == [c for c in range(BUDGET) if c not in saved]  # saved calls not paid
    assert snapshot(path) == snapshot(tmp_path / "whole")


def test_a_failed_overwrite_keeps_the_old_version(tmp_path, monkeypatch):
    path = tmp_path / "accounting.json"
    write_atomic(path, '{"calls": 3}\n')

    def full(fd):  # a full disk seen only when the data is flushed (delayed allocation)
        raise OSError(errno.EDQUOT, os.strerror(errno.EDQUOT))

    monkeypatch.setattr(os, "fsync", full)
    with pytest.raises(RunWriteError, match="free some space") as info:
        write_atomic(path, '{"calls": 4}\n')
    assert info.value.errno == errno.EDQUOT
    assert path.read_text() == '{"calls": 3}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["accounting.json"]


def test_a_write_the_file_system_refuses_is_one_line_without_the_space_hint(tmp_path):
    (tmp_path / "calls").write_text("a file where the folder should be")
    with pytest.raises(RunWriteError) as info:
        RunDir(tmp_path).save_call(0, {"call": 0})
    message = one_line(str(info.value))
    assert message.startswith(f"could not write {tmp_path / 'calls' / '0000.json'}: ")
    assert "free some space" not in message


# ------------------------------------------------------------------ truncated and edited records


def truncate(text: str) -> str:
    return text[: len(text) // 2]


def edit(key: str, value):
    """A change to one (dotted) field of a JSON record."""
    def change(text: str) -> str:
        data = json.loads(text)
        holder = data
        *parents, last = key.split(".")
        for parent in parents:
            holder = holder[parent]
        if value is DROP:
            del holder[last]
        else:
            holder[last] = value
        return json.dumps(data)
    return change


DROP = object()
RESUME = "resume"
SPEC = "spec"


@pytest.mark.parametrize("file, change, loader, expected", [
    ("run.json", truncate, SPEC, "is not valid JSON (truncated?): "),
    ("run.json", lambda t: "[1, 2]", SPEC, "should hold a JSON object, not a list"),
    ("run.json", edit("budget", "ten"), SPEC, "'budget' should be an integer or null, not 'ten'"),
    ("run.json", edit("seed", 1.5), SPEC, "'seed' should be an integer, not 1.5"),
    ("run.json", edit("config", [1]), SPEC, "'config' should be an object or null, not [1]"),
    ("run.json", edit("status", "paused"), SPEC, "unknown run status 'paused'"),
    ("run.json", edit("method", DROP), SPEC, "names no method"),
    ("calls/0002.json", truncate, RESUME, "is not valid JSON (truncated?): "),
    ("calls/0002.json", lambda t: "", RESUME, "is not valid JSON (truncated?): Expecting value"),
    ("calls/0002.json", edit("messages", DROP), RESUME, "has no 'messages'"),
    ("calls/0002.json", edit("completion.text", None), RESUME,
     "'completion.text' should be a string, not None"),
    ("calls/0002.json", edit("completion.prompt_tokens", "12"), RESUME,
     "'completion.prompt_tokens' should be an integer, not '12'"),
    ("calls/0002.json", edit("call", 5), RESUME, "it says it is call 5, its name says 2"),
    ("programs/0002.json", truncate, RESUME, "is not valid JSON (truncated?): "),
    ("programs/0002.json", edit("score", "high"), RESUME, "'score' should be a number, not 'high'"),
    ("programs/0002.json", edit("buggy", 0), RESUME, "'buggy' should be true or false, not 0"),
    ("programs/0002.py", lambda t: b"\xff\xfe", RESUME, "is not UTF-8 text (byte 0)"),
    ("fits/0002.json", truncate, RESUME, "is not valid JSON (truncated?): "),
    ("fits/0002.json", edit("program", 3), RESUME, "'program' should be a string, not 3"),
    ("repairs/0002.json", truncate, "repairs", "is not valid JSON (truncated?): "),
    ("repairs/0002.json", edit("repairs", {}), "repairs", "'repairs' should be a list, not {}"),
    ("tree.json", truncate, "tree.json", "is not valid JSON (truncated?): "),
    ("accounting.json", truncate, "accounting.json", "is not valid JSON (truncated?): "),
    ("accounting.json", lambda t: "null", "accounting.json", "should hold a JSON object, not null"),
    ("best_report.json", truncate, "best_report.json", "is not valid JSON (truncated?): "),
])
def test_a_broken_record_is_named_in_one_line(tmp_path, file, change, loader, expected):
    path = tmp_path / "run"
    run(path, ScriptedLLM(script), budget=4)
    run_dir = RunDir(path)
    # a fit and repairs for call 2 (FakeEvaluator makes neither), as the real scorer writes them
    run_dir.save_fit(2, "the program before the fit", "the fitted program", {"constants": []})
    run_dir.save_repairs(2, "as written", "repaired", [{"kind": "import"}])
    target = path / file
    changed = change(target.read_text(encoding="utf-8", errors="replace"))
    if isinstance(changed, bytes):
        target.write_bytes(changed)
    else:
        target.write_text(changed)

    loaders = {SPEC: lambda: run_dir.spec,
               RESUME: lambda: run(path, ScriptedLLM(script), budget=5),
               "repairs": run_dir.load_repairs}
    with pytest.raises(RunRecordError) as info:
        loaders.get(loader, lambda: run_dir.read_json(loader))()
    error = info.value
    assert isinstance(error, ValueError) and error.path == target
    message = one_line(str(error))
    assert message.startswith(f"{target}") and expected in message
    with pytest.raises(RunRecordError) as checked:  # the same finding from the check of all
        run_dir.check()
    assert str(checked.value) == message


def test_a_broken_derived_record_says_deleting_it_is_safe_and_it_is(tmp_path):
    path = tmp_path / "run"
    run(path, ScriptedLLM(script), budget=4)
    report = path / "programs" / "0002.json"
    report.write_text(truncate(report.read_text()))
    with pytest.raises(RunRecordError, match="delete it to have it redone on resume"):
        RunDir(path).check()
    report.unlink()
    llm = ScriptedLLM(script)
    run(path, llm, budget=4)
    assert llm.calls == []  # rescored from the saved call, not asked again
    assert json.loads(report.read_text())["call"] == 2


def test_a_resume_rewrites_a_truncated_search_state(tmp_path):
    run(tmp_path / "whole", ScriptedLLM(script))
    path = tmp_path / "cut"
    run(path, ScriptedLLM(script), budget=3)
    for name in ("tree.json", "accounting.json"):
        (path / name).write_text(truncate((path / name).read_text()))
    RunDir(path).update_spec(budget=BUDGET)
    llm = ScriptedLLM(script)
    run(path, llm)  # the state is rebuilt from the saved calls, not read
    assert llm.calls == [3, 4, 5]
    assert snapshot(path) == snapshot(tmp_path / "whole")


# ------------------------------------------------------------------ the command line

@pytest.fixture(scope="module")
def cli_run(tmp_path_factory):
    """A finished one-call `codeworld synthesize` run on CartPole (scripted LLM, real scorer)."""
    folder = tmp_path_factory.mktemp("cli")
    script_file = folder / "s.json"
    script_file.write_text(json.dumps([f"```python\n{MODEL.read_text()}```\n"]))
    out = folder / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script_file}", "--budget", "1",
                 "--out", str(out), "--no-fit", "--no-compose", "--no-speed-step",
                 "--quiet"]) == 0
    return out, f"scripted:{script_file}"


def resume(out: Path, llm: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "codeworld", "synthesize", "--resume", "--out",
                           str(out), "--llm", llm, "--quiet", "--no-fit", "--no-compose",
                           "--no-speed-step"], cwd=ROOT, capture_output=True, text=True,
                          timeout=600)


def copy_run(source: Path, to: Path) -> Path:
    import shutil

    shutil.copytree(source, to)
    return to


def test_cli_resume_of_a_truncated_run_json_prints_one_line(cli_run, tmp_path):
    out = copy_run(cli_run[0], tmp_path / "run")
    (out / "run.json").write_text(truncate((out / "run.json").read_text()))
    done = resume(out, cli_run[1])
    assert done.returncode == 2
    assert one_line(done.stderr.strip()).startswith(
        f"codeworld synthesize: {out / 'run.json'} is not valid JSON (truncated?): ")


def test_cli_resume_of_a_truncated_call_record_prints_one_line(cli_run, tmp_path):
    out = copy_run(cli_run[0], tmp_path / "run")
    call = out / "calls" / "0000.json"
    call.write_text(truncate(call.read_text()))
    done = resume(out, cli_run[1])
    assert done.returncode != 0
    assert one_line(done.stderr.strip()).startswith(
        f"codeworld synthesize: {call} is not valid JSON (truncated?): ")


def test_cli_resume_of_a_run_in_use_prints_one_line_naming_the_holder(cli_run, tmp_path):
    out = copy_run(cli_run[0], tmp_path / "run")
    with RunDir(out).locked():
        done = resume(out, cli_run[1])
    assert done.returncode != 0
    assert one_line(done.stderr.strip()) == (
        f"codeworld synthesize: {out} is in use by another codeworld process (pid {os.getpid()}); "
        "wait for it to end or choose another --out")


@needs_proc
def test_cli_run_on_a_full_disk_prints_one_line(cli_run, tmp_path, monkeypatch, capsys):
    out = tmp_path / "run"
    DiskFull(monkeypatch, out, "calls/0000.json")
    status = main(["synthesize", "CartPole-v1", "--llm", cli_run[1], "--budget", "1", "--out",
                   str(out), "--no-fit", "--no-compose", "--no-speed-step", "--quiet"])
    assert status != 0
    err = capsys.readouterr().err
    assert "Traceback" not in err
    message, *hint = err.strip().splitlines()
    assert message.startswith(f"codeworld synthesize: could not write {out}")
    assert message.endswith("No space left on device (free some space, then resume the run)")
    assert len(hint) == 1 and hint[0].startswith("  resume with: ")
    assert hint[0].endswith(f"codeworld synthesize --resume --out {out} --llm {cli_run[1]}")
