"""The sandbox: hostile and broken candidates end as structured records; the parent survives."""

from __future__ import annotations

import os
import sys
import time
import types

import numpy as np
import psutil
import pytest

from codeworld import ModelWorker, Sandbox, SandboxLimits

TIMEOUT_S = 3.0
GRACE_S = 5.0  # start-up of a fresh interpreter plus the kill, on a loaded 2-core machine

STATES = np.zeros((5, 4))
ACTIONS = np.zeros(5)


def _model(body: str, header: str = "") -> str:
    lines = "\n".join("    " + line for line in body.strip().splitlines())
    return f"{header}\ndef step(state, action):\n{lines}\n"


def _children() -> set[int]:
    return {p.pid for p in psutil.Process().children(recursive=True)}


def _run(source: str, discrete: bool = True, timeout_s: float = TIMEOUT_S, limits: SandboxLimits | None = None):
    """Predict 5 transitions in a fresh worker; return the prediction, elapsed time and the workdir."""
    worker = ModelWorker(source, discrete=discrete, compile=False, limits=limits)
    begin = time.monotonic()
    try:
        loaded = worker.load()
        workdir = worker.sandbox.workdir
        pid = worker.sandbox.pid
        pred = worker.predict(STATES, ACTIONS, timeout_s=timeout_s) if loaded.ok else None
    finally:
        worker.close()
    elapsed = time.monotonic() - begin
    return (pred.result if pred is not None else loaded), pred, elapsed, workdir, pid


# (name, body of step, header, expected status, a fragment of the message)
HOSTILE = [
    ("endless loop", "while True:\n    pass", "", "timeout", "wall-clock"),
    ("tens of GiB", "import numpy as np\nblock = np.ones(int(5e9))\nreturn state, 0.0, False", "", "memory", "memory"),
    ("list of tens of GiB", "block = [0] * (5 * 10**9)\nreturn state, 0.0, False", "", "memory", "memory"),
    ("os.fork", "import os\nfor _ in range(20):\n    os.fork()\nreturn state, 0.0, False", "", "exception",
     "starting a process"),
    ("sys.exit", "import sys\nsys.exit(3)", "", "exception", "sys.exit(3)"),
    ("os._exit", "import os\nos._exit(3)", "", "crashed", "code 3"),
    ("kill itself", "import os\nos.kill(os.getpid(), 9)", "", "killed", "SIGKILL"),
    ("KeyboardInterrupt", "raise KeyboardInterrupt", "", "exception", "KeyboardInterrupt"),
    ("null pointer", "import ctypes\nreturn ctypes.string_at(0), 0.0, False", "", "crashed", "SIGSEGV"),
    ("unbounded recursion", "return step(state, action)", "", "exception", "RecursionError"),
    ("socket to 127.0.0.1",
     "import socket\nconn = socket.create_connection(('127.0.0.1', 9))\nreturn state, 0.0, False", "",
     "exception", "network"),
    ("shell command", "import os\nos.system('true')\nreturn state, 0.0, False", "", "exception", "shell"),
    ("subprocess", "import subprocess\nsubprocess.run(['true'])\nreturn state, 0.0, False", "", "exception",
     "starting a process"),
    ("kill the parent", "import os\nos.kill(os.getppid(), 9)\nreturn state, 0.0, False", "", "exception",
     "signalling other processes"),
    ("raise limits", "import resource\nresource.setrlimit(resource.RLIMIT_AS, (-1, -1))\nreturn state, 0.0, False",
     "", "exception", "resource limits"),
    ("division by zero", "x = 1\ny = x / 0\nreturn state, y, False", "", "exception", "ZeroDivisionError"),
]


@pytest.mark.parametrize("name, body, header, status, fragment", HOSTILE, ids=[h[0] for h in HOSTILE])
def test_hostile_candidate_gets_its_status(name, body, header, status, fragment):
    before = _children()
    result, _, elapsed, workdir, pid = _run(_model(body, header))
    assert result.status == status, (result.status, result.message, result.stderr[-500:])
    assert fragment.lower() in (result.message or "").lower(), result.message
    assert elapsed < TIMEOUT_S + GRACE_S
    assert not os.path.exists(workdir)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert _children() <= before


def test_exception_message_names_the_candidate_line():
    source = "import numpy as np\n\ndef step(state, action):\n    scale = 0\n    return state / scale.missing, 0.0, False\n"
    result, *_ = _run(source)
    assert result.status == "exception"
    assert result.line == 5
    assert "AttributeError" in result.message and "line 5" in result.message
    assert "scale.missing" in result.code
    assert result.transition == 0


def test_fork_through_ctypes_is_refused_by_seccomp():
    # Going around Python's audit hook still meets the seccomp filter: fork() returns -1.
    source = _model(
        "import ctypes\nlibc = ctypes.CDLL(None)\n"
        "results = [libc.fork() for _ in range(20)]\n"
        "return np.array([min(results), max(results), 0.0, 0.0]), 0.0, False",
        header="import numpy as np",
    )
    before = _children()
    result, pred, *_ = _run(source)
    assert result.status == "ok", result.message
    assert pred.next_states[0, 0] == -1 and pred.next_states[0, 1] == -1
    assert _children() <= before


def test_socket_through_ctypes_is_refused_by_seccomp():
    source = _model(
        "import ctypes\nfd = ctypes.CDLL(None).socket(2, 1, 0)\n"
        "return np.array([fd, 0.0, 0.0, 0.0]), 0.0, False",
        header="import numpy as np",
    )
    result, pred, *_ = _run(source)
    assert result.status == "ok", result.message
    assert pred.next_states[0, 0] == -1


def test_huge_output_is_captured_truncated():
    source = _model("print('x' * 100_000_000)\nreturn state, 0.0, False")
    limits = SandboxLimits(output_bytes=4096)
    result, pred, elapsed, *_ = _run(source, limits=limits)
    assert result.status == "ok"
    assert pred.n_predicted == 5
    assert 4096 <= len(result.stdout) <= 4096 + 100
    assert "truncated" in result.stdout


def test_files_written_stay_in_the_private_directory():
    source = _model("import os\nwith open('scratch.txt', 'w') as f:\n    f.write(os.getcwd())\n"
                    "return state, float(len(os.listdir('.'))), False")
    result, pred, _, workdir, _ = _run(source)
    assert result.status == "ok"
    assert pred.rewards[0] >= 1  # the file is there while the worker runs
    assert not os.path.exists(workdir)  # and gone afterwards
    assert not os.path.exists(os.path.join(os.getcwd(), "scratch.txt"))


def test_api_keys_do_not_reach_the_worker(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-secret")
    source = _model("import os\nreturn state, float('OPENAI_API_KEY' in os.environ), False")
    result, pred, *_ = _run(source)
    assert result.status == "ok"
    assert pred.rewards[0] == 0.0


MALFORMED = [
    ("None", "return None", "returned None"),
    ("two values", "return state, 1.0", "2 values"),
    ("wrong shape", "return state[:2], 1.0, False", "2 elements, expected 4"),
    ("NaN state", "return state * float('nan'), 1.0, False", "NaN"),
    ("NaN reward", "return state, float('nan'), False", "reward is NaN"),
    ("string reward", "return state, 'high', False", "reward is str"),
    ("None state", "return None, 1.0, False", "next_state is None"),
    ("text state", "return 'abc', 1.0, False", "not numeric"),
    ("done is text", "return state, 1.0, 'no'", "done is 'no'"),
    ("a dict", "return {'state': state}", "expected a tuple"),
]


@pytest.mark.parametrize("name, body, fragment", MALFORMED, ids=[m[0] for m in MALFORMED])
def test_malformed_output_is_invalid_output_naming_the_transition(name, body, fragment):
    source = _model("if state[0] < 2:\n    return state + 1.0, 0.0, False\n" + body)
    states = np.zeros((6, 4))
    states[3:] = 5.0  # transitions 3.. hit the malformed branch
    with ModelWorker(source, discrete=True, compile=False) as worker:
        pred = worker.predict(states, np.zeros(6))
    assert pred.result.status == "invalid_output", pred.result.message
    assert pred.result.transition == 3
    assert "transition 3" in pred.result.message and fragment in pred.result.message
    assert pred.n_predicted == 3  # the good ones before it are kept
    np.testing.assert_array_equal(pred.next_states[:3], 1.0)


@pytest.mark.parametrize("body, status", [("return state[:2], 1.0, False", "invalid_output"),
                                          ("return state, math.inf, False", "invalid_output"),
                                          ("return state, float(1 // int(state[0] - 5.0)), False", "exception")])
def test_compiled_model_failures_are_reported_like_python_ones(kernel_backend, body, status):
    source = _model("if state[0] < 2:\n    return state + 1.0, 0.0, False\n" + body,
                    header="import math\nimport numpy as np")
    states = np.zeros((6, 4))
    states[3:] = 5.0
    with ModelWorker(source, discrete=True) as worker:
        assert worker.load().value["compiled"]
        pred = worker.predict(states, np.zeros(6))
    assert pred.result.status == status, pred.result.message
    assert pred.result.transition == 3
    assert pred.n_predicted == 3


def test_partial_results_survive_a_timeout():
    source = _model("if state[0] > 0:\n    while True:\n        pass\nreturn state + 1.0, 0.0, False")
    states = np.zeros((50, 4))
    states[40:] = 1.0
    with ModelWorker(source, discrete=True, compile=False) as worker:
        pred = worker.predict(states, np.zeros(50), timeout_s=2.0)
    assert pred.result.status == "timeout"
    assert pred.n_predicted == 40
    np.testing.assert_array_equal(pred.next_states[:40], 1.0)


def test_a_worker_serves_many_batches_and_restarts_after_a_crash():
    source = _model("import os\nif state[0] < 0:\n    os._exit(1)\nreturn state + 1.0, 0.0, False")
    with ModelWorker(source, discrete=True, compile=False) as worker:
        pid = None
        for _ in range(5):
            pred = worker.predict(np.zeros((3, 4)), np.zeros(3))
            assert pred.ok
            pid = pid or worker.sandbox.pid
            assert worker.sandbox.pid == pid  # the same worker
        crashed = worker.predict(-np.ones((3, 4)), np.zeros(3))
        assert crashed.result.status == "crashed"
        again = worker.predict(np.zeros((3, 4)), np.zeros(3))
        assert again.ok
        assert worker.sandbox.pid != pid and worker.sandbox.restarts == 1


def test_module_level_failure_is_a_load_failure():
    source = "import numpy as np\nTABLE = np.load('/nonexistent.npy')\n\ndef step(state, action):\n    return state, 0.0, False\n"
    with ModelWorker(source, discrete=True, compile=False) as worker:
        loaded = worker.load()
        pred = worker.predict(np.zeros((2, 4)), np.zeros(2))
    assert loaded.status == "exception"
    assert loaded.line == 2 and "FileNotFoundError" in loaded.message
    assert pred.result.status == "exception" and pred.n_predicted == 0


def test_an_op_is_passed_as_the_function_itself_never_by_name():
    def nested(ctx):
        return None

    box = Sandbox()
    for op, fragment in [("op_predict", "not by name"), ("codeworld._model_worker:op_load", "not by name"),
                         (lambda ctx: None, "module-level"), (nested, "module-level"), (42, "a function")]:
        with pytest.raises(TypeError, match=fragment):
            box.call(op)
    assert box.pid is None  # refused in the parent: no worker was started for any of them


def test_an_op_the_worker_cannot_import_is_an_error_record_not_a_crash(monkeypatch):
    from codeworld._model_worker import op_load

    # A module the parent has and the worker does not (as a module created at run time would be).
    module = types.ModuleType("codeworld_parent_only_ops")

    def parent_only(ctx):
        return "ran"

    parent_only.__module__, parent_only.__qualname__ = module.__name__, "parent_only"
    module.parent_only = parent_only
    monkeypatch.setitem(sys.modules, module.__name__, module)
    with Sandbox() as box:
        result = box.call(parent_only)
        assert result.status == "exception" and "ModuleNotFoundError" in result.message, result.message
        pid = box.pid
        loaded = box.call(op_load, source=_model("return state, 1.0, False"), discrete=True, compile=False)
        assert loaded.ok and loaded.value["compiled"] is False
        assert box.pid == pid  # the same worker serves the next request


def test_two_hundred_candidates_do_not_leak_descriptors_or_processes():
    me = psutil.Process()
    _run(_model("return state + 1.0, 0.0, False"))  # warm-up: lazy imports, caches
    fds_before = me.num_fds()
    children_before = _children()
    failures = ["while True:\n    pass", "import os\nos._exit(1)", "raise ValueError('bad')", "return None"]
    statuses = []
    for index in range(200):
        body = failures[index % 4] if index % 5 == 0 else f"return state + {index}.0, 0.0, False"
        result, *_ = _run(_model(body), timeout_s=0.3 if "while" in body else TIMEOUT_S)
        statuses.append(result.status)
    assert statuses.count("ok") == 160
    assert {"timeout", "crashed", "exception", "invalid_output"} <= set(statuses)
    assert me.num_fds() <= fds_before
    assert _children() <= children_before


# A candidate writes `frame` to every descriptor it can (the worker's reply pipe among them).
_PIPE_WRITE = ("import os, pickle, struct, time\n{setup}\nfor fd in range(3, 64):\n    try:\n"
               "        os.write(fd, {frame})\n    except OSError:\n        pass\n{after}\n"
               "return state, 0.0, False")


def test_a_forged_pickle_on_the_reply_pipe_never_runs_in_the_parent(tmp_path):
    marker = tmp_path / "ran"
    setup = ("class Payload:\n    def __reduce__(self):\n        return (eval, (\"(open(%r, 'w').write("
             "str(__import__('os').getpid())), {})[1]\",))\nFRAME = pickle.dumps(('ok', Payload()))"
             % str(marker))
    source = _model(_PIPE_WRITE.format(setup=setup, frame="struct.pack('!i', len(FRAME)) + FRAME", after=""))
    result, pred, _, workdir, pid = _run(source)
    assert result.status == "invalid_reply", (result.status, result.message)
    assert "builtins.eval" in result.message  # the refused global is named
    assert not marker.exists()  # the payload ran nowhere: not in the parent, not in the worker
    assert pred.n_predicted == 0
    assert not os.path.exists(workdir)


def test_a_forged_partial_result_is_a_failure_of_the_candidate_not_of_the_parent():
    setup = "FRAME = pickle.dumps(('partial', {'start': 'x', 'rewards': [1, 2]}))"
    source = _model(_PIPE_WRITE.format(setup=setup, frame="struct.pack('!i', len(FRAME)) + FRAME", after=""))
    with ModelWorker(source, discrete=True, compile=False) as worker:
        pred = worker.predict(STATES, ACTIONS, timeout_s=TIMEOUT_S)
        assert pred.result.status == "invalid_reply", (pred.result.status, pred.result.message)
        assert pred.n_predicted == 0 and np.isnan(pred.rewards).all()
        assert not worker.sandbox.alive  # the worker whose pipe was written to is gone


@pytest.mark.parametrize("frame, status", [
    ("struct.pack('!i', 1000) + b'half a frame'", "timeout"),  # a length, then too little
    ("b'garbage' * 64", "invalid_reply"),  # a length of 1.7 GB: over the limit, refused at once
], ids=["short frame", "garbage"])
def test_garbage_on_the_reply_pipe_never_hangs_the_parent(frame, status):
    import threading

    source = _model(_PIPE_WRITE.format(setup="", frame=frame, after="time.sleep(60)"))
    outcome = []
    reader = threading.Thread(target=lambda: outcome.append(_run(source, timeout_s=2.0)), daemon=True)
    reader.start()
    reader.join(60)  # the parent's own wait; the old sandbox blocked in recv until the worker wrote
    assert outcome, "the parent hung reading the worker's pipe"
    result, pred, _, workdir, pid = outcome[0]
    assert result.status == status, (result.status, result.message)
    assert not psutil.pid_exists(pid) or psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    assert not os.path.exists(workdir)


_PARENT = """
import sys
from codeworld import ModelWorker
worker = ModelWorker("def step(state, action):\\n    while True:\\n        pass\\n", discrete=True,
                     compile=False)
worker.load()
print(worker.sandbox.pid, worker.sandbox.workdir, flush=True)
worker.predict([[0.0]], [0], timeout_s=600)
"""


def _gone(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return True


def test_a_killed_parent_takes_its_worker_with_it_and_its_folder_is_cleaned_later(tmp_path, monkeypatch):
    import signal
    import subprocess
    import tempfile

    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    # A temp folder of this test's own: a sandbox started by another process meanwhile (a second
    # test worker) would clean the orphan in the shared one before the checks below.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    env = {**os.environ, "PYTHONPATH": root + os.pathsep + os.environ.get("PYTHONPATH", ""),
           "TMPDIR": str(tmp_path)}
    parent = subprocess.Popen([sys.executable, "-c", _PARENT], stdout=subprocess.PIPE, text=True, env=env)
    pid = None
    try:
        pid, workdir = parent.stdout.readline().split()
        pid = int(pid)
        time.sleep(1.0)  # the endless loop is running
        assert not _gone(pid)
        os.kill(parent.pid, signal.SIGKILL)
        parent.wait()
        waited = 0.0
        while not _gone(pid) and waited < 30:
            time.sleep(0.1)
            waited += 0.1
        assert _gone(pid), "the worker outlived its parent"
    finally:
        parent.kill()
        parent.wait()
        parent.stdout.close()
        if pid is not None and not _gone(pid):  # the old sandbox: the orphan would spin until its CPU limit
            os.kill(pid, signal.SIGKILL)
    assert os.path.isdir(workdir) and os.path.dirname(workdir) == str(tmp_path)  # nobody closed it
    with Sandbox() as box:  # the next sandbox to start removes it
        assert box.start().ok
    assert not os.path.exists(workdir)


def test_a_compiling_load_may_take_longer_than_a_step_may():
    # Compiling with Numba takes seconds no step takes; a short per-step limit must not fail the load.
    slow = "import time\n_begin = time.monotonic()\nwhile time.monotonic() - _begin < 1.5:\n    pass\n"
    worker = ModelWorker(_model("return state + 1.0, 0.0, False", header=slow), discrete=True, compile=True,
                         limits=SandboxLimits(timeout_s=1.0, preload_numba=True))
    try:
        assert worker.load().ok
        pred = worker.predict(STATES, ACTIONS)
        assert pred.ok
        np.testing.assert_array_equal(pred.next_states, STATES + 1.0)
    finally:
        worker.close()
