"""Faults of the LLM layer: the local model's server dies in the middle of a call (a new one is
started and the call sent again, counted once), and a run killed with ``kill -9`` and resumed
keeps one accounting that agrees with its call records.

The server that dies is a stand-in for llama.cpp's native server: a small HTTP server in a child
process, started, watched and restarted through the same code as the real one
(`codeworld.llm._local.LocalServer` with the native engine, `codeworld.llm._native.NativeProcess`).
The embedded model's other engine, ``xllamacpp``, runs inside the test's own process, where it
cannot be killed alone.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest

from codeworld.cli import main
from codeworld.llm import LLMUnavailableError, RetryPolicy, make_llm
from codeworld.llm import _local as local, _native as native
from codeworld.llm._accounting import COMPLETIONS_LOG, LLMAccounting

HELLO = [{"role": "user", "content": "hello"}]

# Speaks the two endpoints the local backend uses. The first chat request it ever gets (across
# restarts: the marker file remembers) is never answered: the test kills the process under it.
FAKE_SERVER = r'''
import json, os, sys, time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT = int(sys.argv[sys.argv.index("--port") + 1])
MARKER = os.environ["FAKE_LLAMA_MARKER"]


class Handler(BaseHTTPRequestHandler):
    def log_message(self, *args):
        pass

    def do_GET(self):
        self.send({"status": "ok"})

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not os.path.exists(MARKER):
            with open(MARKER + ".tmp", "w") as marker:
                marker.write(str(os.getpid()))
            os.replace(MARKER + ".tmp", MARKER)  # the test sees the marker whole
            time.sleep(600)
        self.send({"id": "x", "object": "chat.completion", "created": 0, "model": body["model"],
                   "choices": [{"index": 0, "finish_reason": "stop",
                                "message": {"role": "assistant",
                                            "content": f"answered by {os.getpid()}"}}],
                   "usage": {"prompt_tokens": 5, "completion_tokens": 3, "total_tokens": 8}})

    def send(self, payload):
        data = json.dumps(payload).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
'''


def _wait_for(path: Path, timeout_s: float = 120.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists():
        if time.monotonic() > deadline:
            raise TimeoutError(f"{path} did not appear")
        time.sleep(0.05)


@pytest.fixture
def fake_native(tmp_path, monkeypatch):
    """The native engine, played by FAKE_SERVER; yields the marker the first request writes."""
    binary = tmp_path / "llama-server"
    binary.write_text(f"#!{sys.executable}\n{FAKE_SERVER}")
    binary.chmod(0o755)
    marker = tmp_path / "in-flight"
    monkeypatch.setenv("FAKE_LLAMA_MARKER", str(marker))
    monkeypatch.setattr(native, "native_server_binary", lambda: binary)
    monkeypatch.setattr(local, "ensure_model_file", lambda: tmp_path / "model.gguf")
    monkeypatch.delenv(local.LOCAL_URL_ENV, raising=False)
    monkeypatch.setattr(local, "_server", None)
    try:
        yield marker
    finally:
        local.shutdown_server()


class _ExitNotYetSeen:
    """A server process whose exit cannot be read until codeworld ends it (terminate or kill):
    the moment between a killed process closing its sockets and its exit being readable,
    stretched as far as a busy machine may stretch it."""

    def __init__(self, popen: subprocess.Popen):
        self._popen = popen
        self._ended = False

    def poll(self):
        return self._popen.poll() if self._ended else None

    def wait(self, timeout=None):
        if not self._ended:
            raise subprocess.TimeoutExpired(self._popen.args, timeout)
        return self._popen.wait(timeout)

    def terminate(self):
        self._ended = True
        self._popen.terminate()

    def kill(self):
        self._ended = True
        self._popen.kill()

    def __getattr__(self, name):
        return getattr(self._popen, name)


@pytest.mark.parametrize("exit_seen", [True, False], ids=["exit-seen", "exit-not-yet-seen"])
def test_a_server_killed_during_a_call_is_restarted_and_the_call_counted_once(fake_native, tmp_path,
                                                                              capsys, exit_seen):
    # No retry is expected; were one made, a fake sleep keeps the failure quick.
    llm = make_llm("local", options=local.LocalOptions(engine="native", threads=1),
                   cache_dir=str(tmp_path / "cache"), run_dir=str(tmp_path / "run"),
                   sleep=lambda s: None)
    first = llm.backend.server.pid
    if not exit_seen:
        process = llm.backend.server._process
        process._process = _ExitNotYetSeen(process._process)

    def kill_while_in_flight():
        _wait_for(fake_native)
        os.kill(first, signal.SIGKILL)

    killer = threading.Thread(target=kill_while_in_flight)
    killer.start()
    completion = llm.complete(HELLO, max_tokens=8)
    killer.join()

    assert fake_native.read_text() == str(first)  # the request was in flight on the killed server
    second = llm.backend.server.pid
    assert second != first and completion.text == f"answered by {second}"
    assert f"server stopped; a new one answers on port {llm.backend.server.port}" in capsys.readouterr().err
    with pytest.raises(ProcessLookupError):
        os.kill(first, 0)  # the dead server was reaped
    assert local._server is llm.backend.server  # one server for the process, the new one

    # Counted once: one call, no retry, one record in the log.
    assert (llm.accounting.calls, llm.accounting.retries, llm.accounting.failures) == (1, 0, 0)
    assert llm.accounting.prompt_tokens == 5 and llm.accounting.completion_tokens == 3
    log = (tmp_path / "run" / COMPLETIONS_LOG).read_text().splitlines()
    assert len(log) == 1 and json.loads(log[0])["text"] == completion.text

    # The next call goes to the new server directly.
    again = llm.complete([{"role": "user", "content": "again"}], max_tokens=8)
    assert again.text == f"answered by {second}" and llm.accounting.calls == 2
    llm.close()


def test_a_server_another_process_runs_is_not_restarted_here(monkeypatch, tmp_path):
    # A worker pointed at its parent's server (CODEWORLD_LOCAL_URL) retries and then gives up:
    # starting a server of its own would take the cores the parent's was started to share.
    port = local._free_port()  # nothing listens there
    monkeypatch.setenv(local.LOCAL_URL_ENV, f"http://127.0.0.1:{port}/v1")
    monkeypatch.setattr(local, "shared_server", lambda settings: pytest.fail("started a server"))
    llm = make_llm("local", cache_dir=str(tmp_path), sleep=lambda s: None,
                   retry=RetryPolicy(max_attempts=2, initial_delay_s=0.0))
    with pytest.raises(LLMUnavailableError, match="connection"):
        llm.complete(HELLO, max_tokens=8)
    assert llm.accounting.failures == 1 and llm.accounting.calls == 0


# --- a run killed with kill -9 and resumed --------------------------------------------------------

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"

# A backend that answers two calls and then hangs on the third, where the test kills its process.
PACED_MODULE = '''
import json, os, time

from codeworld.llm import RawCompletion


class PacedBackend:
    name = "paced"
    cacheable = False

    def __init__(self, arg, options=None):
        self.model = "paced"
        with open(arg) as handle:
            self.script = json.load(handle)
        self.calls = 0

    def chat(self, messages, sampling):
        self.calls += 1
        if self.calls > len(self.script):
            with open(os.environ["PACED_MARKER"], "w") as marker:
                marker.write(str(self.calls))
            time.sleep(600)
        return RawCompletion(**self.script[self.calls - 1], model=self.model)

    def close(self):
        pass
'''


def _answers(programs: list[str], first_tokens: int) -> list[dict]:
    return [{"text": f"Here it is:\n```python\n{p}```\n", "prompt_tokens": first_tokens + 100 * i,
             "completion_tokens": 40 + i} for i, p in enumerate(programs)]


def test_a_run_killed_during_a_call_and_resumed_keeps_one_accounting(tmp_path):
    good = MODEL.read_text()
    bad = good.replace("return", "return undefined_name +", 1)
    wrong = good.replace("0.02", "0.03")
    (tmp_path / "paced_backend.py").write_text(PACED_MODULE)
    first = _answers([bad, wrong], 2000)
    (tmp_path / "first.json").write_text(json.dumps(first))
    marker, out = tmp_path / "call-3", tmp_path / "run"

    # Session 1, in a process of its own: calls 1 and 2 answered, killed during call 3.
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "PACED_MARKER": str(marker)}
    errors = tmp_path / "session-1.err"
    with open(errors, "w") as stderr:
        process = subprocess.Popen(
            [sys.executable, "-m", "codeworld", "synthesize", "CartPole-v1", "--llm",
             f"paced_backend:PacedBackend:{tmp_path / 'first.json'}", "--budget", "4",
             "--out", str(out), "--no-fit"], env=env, stdout=subprocess.DEVNULL, stderr=stderr)
        try:
            _wait_for(marker)
        except TimeoutError:
            process.kill()
            process.wait()
            raise AssertionError(errors.read_text()[-2000:]) from None
        process.send_signal(signal.SIGKILL)
        process.wait()
    assert marker.read_text() == "3"
    assert sorted(p.name for p in (out / "calls").iterdir()) == ["0000.json", "0001.json"]

    # Session 2: resumed with another LLM for the two calls left.
    second = _answers([wrong, good], 3000)
    script = tmp_path / "second.json"
    script.write_text(json.dumps(second))
    assert main(["synthesize", "--resume", "--out", str(out), "--llm", f"scripted:{script}",
                 "--switch-llm", "--budget", "4", "--no-fit"]) == 0

    run = json.loads((out / "accounting.json").read_text())
    llm = LLMAccounting.from_log(out)
    records = first + second
    assert (run["replayed_calls"], run["new_calls"]) == (2, 2)
    assert run["calls"] == llm.calls == len(records) == 4
    assert run["prompt_tokens"] == llm.prompt_tokens == sum(r["prompt_tokens"] for r in records)
    assert run["completion_tokens"] == llm.completion_tokens == sum(r["completion_tokens"] for r in records)
    assert llm.by_model == {"paced:paced": {"calls": 2, "prompt_tokens": 4100, "completion_tokens": 81},
                            f"scripted:{script.name}": {"calls": 2, "prompt_tokens": 6100,
                                                        "completion_tokens": 81}}
    assert not (out / "llm_accounting.json").exists()  # no second account to disagree


def test_the_accounting_of_a_run_directory_sums_every_session(tmp_path):
    script = tmp_path / "s.json"
    script.write_text(json.dumps(_answers(["a = 1\n"] * 4, 10)))
    run = tmp_path / "run"
    one = make_llm(f"scripted:{script}", run_dir=str(run))
    one.complete(HELLO)
    one.complete(HELLO)
    # a second session (a resumed run) appends to the same log
    two = make_llm(f"scripted:{script}", run_dir=str(run))
    two.complete(HELLO)
    with (run / COMPLETIONS_LOG).open("a") as log:
        log.write('{"text": "cut sho')  # a line a killed process left unfinished
    total = LLMAccounting.from_log(run)
    assert total.calls == one.accounting.calls + two.accounting.calls == 3
    assert total.prompt_tokens == one.accounting.prompt_tokens + two.accounting.prompt_tokens == 10 + 110 + 10
    assert total.completion_tokens == 40 + 41 + 40
    assert LLMAccounting.from_log(tmp_path / "missing").calls == 0


def test_a_run_directory_written_before_reads_with_every_session_counted(tmp_path):
    # Before, the log was appended by every session (records without the retry fields) while
    # llm_accounting.json held the last session's totals: 2 calls of the run's 4.
    old = [{"text": f"t{i}", "prompt_tokens": 1000 + i, "completion_tokens": 10, "latency_s": 1.5,
            "finish_reason": "stop", "backend": "openai", "model": "gpt-4o-mini", "prefill": "",
            "cached": False, "messages": HELLO, "sampling": {"temperature": 1.0}} for i in range(4)]
    (tmp_path / COMPLETIONS_LOG).write_text("".join(json.dumps(r) + "\n" for r in old))
    (tmp_path / "llm_accounting.json").write_text(json.dumps({"calls": 2, "prompt_tokens": 2005}))
    total = LLMAccounting.from_log(tmp_path)
    assert (total.calls, total.prompt_tokens, total.completion_tokens) == (4, 4006, 40)
    assert total.wall_time_s == pytest.approx(6.0) and total.retries == 0
    assert total.cost_usd == pytest.approx((4006 * 0.15 + 40 * 0.60) / 1e6)


def test_a_run_stopped_with_sigterm_ends_as_after_ctrl_c(tmp_path):
    # kill, timeout(1) and job schedulers stop a process with SIGTERM: the run is recorded as
    # interrupted and resumable, as after Ctrl-C, instead of being left marked as running.
    good = MODEL.read_text()
    (tmp_path / "paced_backend.py").write_text(PACED_MODULE)
    (tmp_path / "first.json").write_text(json.dumps(_answers([good.replace("0.02", "0.03")] * 2, 2000)))
    marker, out = tmp_path / "call-3", tmp_path / "run"
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), os.environ.get("PYTHONPATH", "")]),
           "PACED_MARKER": str(marker)}
    process = subprocess.Popen(
        [sys.executable, "-m", "codeworld", "synthesize", "CartPole-v1", "--llm",
         f"paced_backend:PacedBackend:{tmp_path / 'first.json'}", "--budget", "4",
         "--out", str(out), "--no-fit"], env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
        text=True)
    try:
        _wait_for(marker)
    except TimeoutError:
        process.kill()
        raise AssertionError(process.communicate()[1][-2000:]) from None
    process.send_signal(signal.SIGTERM)
    _, err = process.communicate(timeout=60)
    assert process.returncode == 130, err[-2000:]
    assert f"codeworld synthesize --resume --out {out} --llm " in err  # the complete command
    assert json.loads((out / "run.json").read_text())["status"] == "interrupted"
