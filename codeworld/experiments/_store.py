"""The results store: one JSON record per job, written atomically, read back to skip finished jobs.

Layout: ``ROOT/<job key>.json``. A record (`JobRecord`, written as its ``to_json``) is

.. code-block:: text

    {"key": ..., "job": {...}, "status": "finished" | "failed", "result": {...} | null,
     "error": null | "ExcType: message", "traceback": null | "...", "seconds": ..., "host": ...,
     "pid": ..., "finished_at": ...}

Every record is written to a temporary file in the same folder and renamed over the old one, so a
reader (or a rerun after a crash) sees either the previous record or the new one, never half of
one. Only the process that drives the grid writes records; workers hand theirs back.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, fields
from pathlib import Path
from typing import Any, Iterator

from codeworld.experiments._jobs import Job
from codeworld._files import write_atomic
from codeworld.synthesis._run_dir import _json_default

FINISHED = "finished"
FAILED = "failed"


@dataclass(frozen=True)
class JobRecord:
    """One job's record, as the executors make it and the store keeps it (see the module docstring).

    Attributes:
        key: the job's key (`codeworld.experiments.Job.key`).
        job: the job as JSON data (`codeworld.experiments.Job.to_json`).
        host: the machine that ran it.
        pid: the process that ran it.
        status: `FINISHED` or `FAILED`.
        result: what the job function returned (None for a failed job).
        error: ``"ExcType: message"`` for a failed job, else None.
        traceback: the failed job's traceback, when there is one.
        seconds: the job's wall time.
        finished_at: when it ended (UTC, ISO 8601).
    """

    key: str
    job: dict[str, Any]
    host: str
    pid: int
    status: str
    result: dict[str, Any] | None
    error: str | None
    traceback: str | None
    seconds: float
    finished_at: str

    @property
    def finished(self) -> bool:
        """Whether the job finished (a failed one is run again)."""
        return self.status == FINISHED

    def to_json(self) -> dict[str, Any]:
        """The record as the store writes it, its keys in the order of the fields."""
        return {f.name: getattr(self, f.name) for f in fields(self)}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> "JobRecord":
        """A record read back (a key it lacks reads as None; one it does not know is dropped)."""
        return cls(**{f.name: data.get(f.name) for f in fields(cls)})


class ResultsStore:
    """Job records under one folder.

    Args:
        root: the folder (created on the first write).
    """

    def __init__(self, root: str | os.PathLike):
        self.root = Path(root)

    def __repr__(self) -> str:
        return f"ResultsStore({str(self.root)!r})"

    def path(self, job: Job) -> Path:
        """Where the record of `job` lives."""
        return self.root / f"{job.key}.json"

    def load(self, job: Job) -> dict | None:
        """The record of `job`, or None when it has none (or an unreadable one)."""
        path = self.path(job)
        try:
            return json.loads(path.read_text(encoding="utf-8"))
        except (OSError, json.JSONDecodeError):  # missing, or not a whole record
            return None

    def is_finished(self, job: Job) -> bool:
        """Whether `job` has a finished record (a failed one is run again)."""
        record = self.load(job)
        return record is not None and record.get("status") == FINISHED

    def write(self, record: dict) -> Path:
        """Write one job's record atomically (temporary file, then rename). Returns its path."""
        job = Job.from_json(record["job"])
        if record.get("key") not in (None, job.key):
            raise ValueError(f"record key {record['key']!r} does not match its job ({job.key!r})")
        record = {"key": job.key, **record}
        path = self.path(job)
        write_atomic(path, json.dumps(record, indent=2, default=_json_default) + "\n")
        return path

    def records(self) -> Iterator[dict]:
        """Every readable record in the store, in file-name order."""
        if not self.root.is_dir():
            return
        for path in sorted(self.root.glob("*.json")):
            try:
                yield json.loads(path.read_text(encoding="utf-8"))
            except (OSError, json.JSONDecodeError):
                continue
