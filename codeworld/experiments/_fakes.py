"""A job function for trying executors without an LLM: it does what its job's options say.

``fake_job(job, workdir)`` reads ``job.options``:

* ``"sleep"``: seconds to sleep first;
* ``"fail"``: raise ``RuntimeError`` with this message;
* ``"exit"``: end the process at once with this exit code (``os._exit``), as a crash would;
* otherwise return ``{"score": options.get("score", 1.0), "pid": ...}``.

Every call first appends a line to ``<workdir>/calls/<job key>``, so that a test can count how
often each job really ran (the job runs in another process).
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from codeworld.experiments._jobs import Job


def fake_job(job: Job, workdir: str) -> dict:
    calls = Path(workdir) / "calls"
    calls.mkdir(parents=True, exist_ok=True)
    with open(calls / job.key, "a", encoding="utf-8") as handle:
        handle.write(f"{os.getpid()}\n")
    options = job.options
    if options.get("sleep"):
        time.sleep(float(options["sleep"]))
    if "exit" in options:
        os._exit(int(options["exit"]))
    if "fail" in options:
        raise RuntimeError(str(options["fail"]))
    return {"score": float(options.get("score", 1.0)), "pid": os.getpid()}


def calls_of(workdir: str | os.PathLike, job: Job) -> int:
    """How many times `fake_job` ran `job` with this workdir."""
    path = Path(workdir) / "calls" / job.key
    return len(path.read_text(encoding="utf-8").splitlines()) if path.is_file() else 0
