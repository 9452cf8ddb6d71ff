"""The results store: one JSON record per job, written atomically, read back to skip finished jobs.

Layout: ``ROOT/<job key>.json``. A record is

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
from pathlib import Path
from typing import Iterator

from codeworld.experiments.jobs import Job
from codeworld.synthesis.run_dir import _json_default, write_atomic

FINISHED = "finished"
FAILED = "failed"


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
