"""The run directory: everything a synthesis run did, saved after every LLM call.

Layout::

    RUN_DIR/
      run.json            the run's `RunSpec`: method, env, LLM, budget, seed, config, status
      calls/0003.json     the call of index 3 (call 4 to the command line, `codeworld show` and
                          the page, which count calls from 1): the request, the messages sent,
                          the completion and its cost, and the LLM spec that answered (``llm``;
                          a resume may switch it)
      programs/0003.py    the program that call wrote
      programs/0003.json  its evaluation (score, buggy, feedback, the scorer's full report)
      repairs/0003.json   the mechanical repairs made to its program before scoring (if any):
                          what was changed, and the program as the LLM wrote it
      fits/0003.json      the constant fit that replaced its program in the search (if any):
                          constants before and after, scores, and the program before the fit
      tree.json           the search state (GIF-MCTS tree, or REx / zero-shot pool)
      accounting.json     calls, tokens, seconds
      best_model.py       the best program so far
      best_report.json    its call and evaluation

      .lock               the pid of the process writing the run (see `RunDir.acquire`)

Every file is written to a temporary name, flushed to disk and renamed, so an interrupted run
(or a full disk) leaves either the old or the new version of each, never half of one. A call
record is written as soon as the completion arrives, before the program is scored: a resumed run
never pays for it again.

The faults a run must survive each end in one error with a one-line message, a `ValueError` or an
`OSError`, which the command line prints without a traceback:

- `RunLockedError`: a second process wants to write a run directory that one is writing;
- `RunWriteError`: a file could not be written (disk full, quota, permissions);
- `RunRecordError`: a saved record is truncated or not what this version wrote (edited by hand).

An agent's run (`AgentRunDir`) is a folder of its levels, its rewrites' run directories and its
accounting.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from codeworld._files import RunWriteError, write_atomic
from codeworld.synthesis._run_spec import KIND_NAMES, RunSpec, RunStatus, kind_problem
from codeworld.synthesis.types import ProgramEvaluation

RUN_FILE = "run.json"
CALLS_DIR = "calls"
PROGRAMS_DIR = "programs"
REPAIRS_DIR = "repairs"
FITS_DIR = "fits"
TREE_FILE = "tree.json"
ACCOUNTING_FILE = "accounting.json"
BEST_MODEL_FILE = "best_model.py"
BEST_REPORT_FILE = "best_report.json"
LOCK_FILE = ".lock"


class RunLockedError(ValueError):
    """Another process holds the lock of the run directory (see `RunDir.acquire`).

    Attributes:
        path: the run directory.
        pid: the holder's process id (None when the lock file names none yet).
    """

    def __init__(self, path: Path, pid: int | None):
        self.path, self.pid = path, pid
        if pid == os.getpid():
            message = (f"{path} is already in use in this process (pid {pid}): one writer at a "
                       "time")
        else:
            holder = f"pid {pid}" if pid is not None else "pid unknown"
            message = (f"{path} is in use by another codeworld process ({holder}); wait for it "
                       "to end or choose another --out")
        super().__init__(message)


class RunRecordError(ValueError):
    """A saved record of the run is truncated, not JSON, or has a field of the wrong type.

    Attributes:
        path: the file.
    """

    def __init__(self, path: Path, message: str):
        self.path = path
        super().__init__(message)


def _read_text(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except UnicodeDecodeError as exc:
        raise RunRecordError(path, f"{path} is not UTF-8 text (byte {exc.start})") from None


# The fields of each numbered record that the readers (`synthesize`'s replay, `codeworld show`)
# depend on: dotted name -> (the JSON kinds allowed, required).
_CALL_FIELDS = {
    "messages": ((list,), True),
    "completion": ((dict,), True),
    "completion.text": ((str,), True),
    "completion.prompt_tokens": ((int,), True),
    "completion.completion_tokens": ((int,), True),
    "completion.latency_s": ((float,), True),
    "completion.cached": ((bool,), True),
    "request": ((dict,), False),
}
_PROGRAM_FIELDS = {
    "score": ((float,), True),
    "buggy": ((bool,), True),
    "has_program": ((bool,), False),
    "feedback": ((str,), False),
    "mispredicted": ((dict, type(None)), False),
    "report": ((dict,), False),
}
_REPAIRS_FIELDS = {"original": ((str,), True), "program": ((str,), True),
                   "repairs": ((list,), True)}
_FIT_FIELDS = {"original": ((str,), True), "program": ((str,), True), "fit": ((dict,), True)}


def load_record(path: Path, fields: dict[str, tuple[tuple[type, ...], bool]] | None = None,
                hint: str = "") -> dict:
    """A JSON object from ``path``, its ``fields`` checked (see `_CALL_FIELDS` for the form).

    Raises:
        RunRecordError: the file is not UTF-8 JSON, holds no object, or lacks a required field
            or has one of the wrong kind; the message names the file, what is wrong and ``hint``.
    """
    try:
        data = json.loads(_read_text(path))
    except json.JSONDecodeError as exc:
        raise RunRecordError(path, f"{path} is not valid JSON (truncated?): {exc}{hint}") from None
    if not isinstance(data, dict):
        found = KIND_NAMES.get(type(data), type(data).__name__)
        raise RunRecordError(path, f"{path} should hold a JSON object, not {found}{hint}")
    for name, (kinds, required) in (fields or {}).items():
        holder: Any = data
        *parents, key = name.split(".")
        for parent in parents:
            holder = holder.get(parent) if isinstance(holder, dict) else None
        if not isinstance(holder, dict) or key not in holder:
            if required:
                raise RunRecordError(path, f"{path} has no {name!r}{hint}")
            continue
        problem = kind_problem(name, holder[key], kinds)
        if problem:
            raise RunRecordError(path, f"{path}: {problem}{hint}")
    return data


def _dump(data: Any) -> str:
    return json.dumps(data, indent=2, sort_keys=False, default=_json_default) + "\n"


def _json_default(value: Any) -> Any:
    if hasattr(value, "tolist"):
        return value.tolist()
    if hasattr(value, "item"):
        return value.item()
    if hasattr(value, "to_json"):
        return value.to_json()
    return str(value)


class RunLock:
    """A process's hold on a run directory (`RunDir.acquire`); a context manager.

    Attributes:
        holds: how many times it was taken through its `RunDir` and not yet released.
    """

    def __init__(self, fd: int):
        self._fd: int | None = fd
        self.holds = 1

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self) -> None:
        """Give one hold back; the last one unlocks the directory (releasing twice is harmless)."""
        if self._fd is None:
            return
        self.holds -= 1
        if self.holds > 0:
            return
        import fcntl

        fd, self._fd = self._fd, None
        with contextlib.suppress(OSError):
            os.ftruncate(fd, 0)  # no pid: the next reader knows no one holds it
        fcntl.flock(fd, fcntl.LOCK_UN)
        os.close(fd)

    def __enter__(self) -> RunLock:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.release()


class RunDir:
    """Reads and writes one run directory (see the module docstring for its layout).

    Args:
        path: the directory (created by `init`).

    Attributes:
        call_llm: the LLM spec written into each call record saved from now on (``llm``; set by
            `Run` for its session, so a run resumed with another LLM shows which answered what).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)
        self._lock: RunLock | None = None
        self.call_llm: str | None = None

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

    # ------------------------------------------------------------------ the lock

    def acquire(self) -> RunLock:
        """Take the run directory for this process alone, until `RunLock.release` (or the
        process ends: the lock is an ``flock`` on ``.lock``, which the kernel drops with the
        process, however it dies).

        Creates the directory if need be, and removes the temporary files a writer killed
        mid-write left behind (no other writer can be at work). Taking it again through the same
        `RunDir` while held is allowed (the lock is released with the last hold).

        Returns:
            The lock, a context manager that releases it.

        Raises:
            RunLockedError: another process (or another `RunDir` of this process) holds it; the
                message names the holder's pid.
            RunWriteError: the lock file could not be created.
        """
        if self._lock is not None and self._lock.held:
            self._lock.holds += 1
            return self._lock
        import fcntl

        lock_path = self.path / LOCK_FILE
        try:
            self.path.mkdir(parents=True, exist_ok=True)
            fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o644)
        except OSError as exc:
            raise RunWriteError(lock_path, exc) from exc
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as exc:
            holder = os.read(fd, 32).decode("ascii", "replace").strip()
            os.close(fd)
            if exc.errno not in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise RunWriteError(lock_path, exc) from exc
            raise RunLockedError(self.path, int(holder) if holder.isdigit() else None) from None
        try:
            os.ftruncate(fd, 0)
            os.write(fd, f"{os.getpid()}\n".encode("ascii"))
        except OSError:
            pass  # the lock holds without its pid; a second process is told "pid unknown"
        self._lock = RunLock(fd)
        for stale in self.path.glob("**/.*.tmp"):
            with contextlib.suppress(OSError):
                stale.unlink()
        return self._lock

    def writer_gone(self) -> bool:
        """Whether no process holds the run directory now (a run recorded as running whose
        writer was killed, or lost with its machine). Looks without taking the lock from anyone."""
        import fcntl

        try:
            fd = os.open(self.path / LOCK_FILE, os.O_RDONLY | os.O_CLOEXEC)
        except FileNotFoundError:
            return True
        except OSError:
            return False  # cannot tell: say nothing
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except OSError:
            return False
        else:
            fcntl.flock(fd, fcntl.LOCK_UN)
            return True
        finally:
            os.close(fd)

    def shown_status(self, spec: RunSpec | None = None) -> str | None:
        """The run's status as ``codeworld show`` and the report page say it: a run recorded
        as running whose process is gone reads ``interrupted (process gone)``."""
        status = (spec or self.spec).status
        if status is RunStatus.RUNNING and self.writer_gone():
            return f"{RunStatus.INTERRUPTED} (process gone)"
        return None if status is None else str(status)

    def foreign_files(self) -> list[str]:
        """The names in the directory that are not a run's (a user's own files): a run starts
        only in a new folder, an empty one or a run directory."""
        if not self.path.is_dir() or self.exists():
            return []
        return sorted(p.name for p in self.path.iterdir()
                      if p.name != LOCK_FILE and not (p.name.startswith(".") and p.name.endswith(".tmp")))

    @contextlib.contextmanager
    def locked(self) -> Iterator[RunDir]:
        """``with run_dir.locked():`` holds the lock of `acquire` for the block; yields the run
        directory."""
        with self.acquire():
            yield self

    # ------------------------------------------------------------------ metadata

    def exists(self) -> bool:
        """Whether a run was started here (its ``run.json`` exists)."""
        return (self.path / RUN_FILE).is_file()

    def init(self, spec: RunSpec) -> None:
        """Create the directory and write ``run.json``."""
        self.path.mkdir(parents=True, exist_ok=True)
        self._write_spec(spec)

    def _write_spec(self, spec: RunSpec) -> None:
        # The one place that writes run.json.
        write_atomic(self.path / RUN_FILE, _dump(spec.to_json()))

    @property
    def spec(self) -> RunSpec:
        """The run's `RunSpec`, read from ``run.json`` (also one written by an earlier version).

        Raises:
            RunRecordError: the file is not JSON, or not a run's spec (see `RunSpec.from_json`).
        """
        path = self.path / RUN_FILE
        data = load_record(path)
        try:
            return RunSpec.from_json(data)
        except (ValueError, TypeError) as exc:
            raise RunRecordError(path, f"{path}: {exc}") from None

    def update_spec(self, **changes: Any) -> RunSpec:
        """Change fields of ``run.json``; returns the new spec."""
        spec = self.spec.replace(**changes)
        self._write_spec(spec)
        return spec

    def set_status(self, status: RunStatus) -> RunSpec:
        """Record where the run stands; returns the new spec."""
        return self.update_spec(status=RunStatus(status))

    # ------------------------------------------------------------------ calls and programs

    def call_path(self, call: int) -> Path:
        return self.path / CALLS_DIR / f"{call:04d}.json"

    def program_path(self, call: int) -> Path:
        return self.path / PROGRAMS_DIR / f"{call:04d}.py"

    def report_path(self, call: int) -> Path:
        return self.path / PROGRAMS_DIR / f"{call:04d}.json"

    def _load_numbered(self, folder_name: str, fields: dict,
                       problems: list[str] | None = None) -> dict[int, dict]:
        """The JSON records ``NNNN.json`` of one of the run's folders, by call index.

        Args:
            folder_name: the folder.
            fields: the fields each record must have (see `load_record`).
            problems: for a reader that shows what it can (``codeworld show``): a record that
                is truncated or wrong is left out and its message appended here.

        Raises:
            RunRecordError: a record is truncated or lacks a field of ``fields`` (without
                ``problems``).
        """
        out = {}
        folder = self.path / folder_name
        if folder.is_dir():
            for file in sorted(folder.glob("[0-9]*.json")):
                if file.stem.isdigit():
                    try:
                        out[int(file.stem)] = self._load_numbered_record(file, fields)
                    except RunRecordError as exc:
                        if problems is None:
                            raise
                        problems.append(str(exc))
        return out

    @staticmethod
    def _load_numbered_record(file: Path, fields: dict) -> dict:
        call = int(file.stem)
        # A call record cannot be redone without changing the calls after it; the records
        # derived from it (evaluation, repairs, fit) are redone on resume when missing.
        hint = "" if file.parent.name == CALLS_DIR else "; delete it to have it redone on resume"
        record = load_record(file, fields, hint)
        if "call" in record and record["call"] != call:
            raise RunRecordError(file, f"{file}: it says it is call {record['call']!r}, its "
                                       f"name says {call}")
        return record

    def save_call(self, call: int, record: dict) -> None:
        """Save one LLM call (request, messages, completion, cost, and `call_llm`)."""
        if self.call_llm and "llm" not in record:
            record = {**record, "llm": self.call_llm}
        write_atomic(self.call_path(call), _dump(record))

    def load_calls(self, problems: list[str] | None = None) -> dict[int, dict]:
        """Every saved call record, by call index.

        Args:
            problems: a list to name bad records in, leaving them out, instead of raising (for
                readers that show what they can; the same for the other ``load_*`` methods).

        Raises:
            RunRecordError: a record is truncated, or lacks (or has a wrong-typed) field the
                replay reads: ``messages``, ``completion.text``, its tokens, latency and cache flag.
        """
        return self._load_numbered(CALLS_DIR, _CALL_FIELDS, problems)

    def save_program(self, call: int, program: str | None, evaluation: ProgramEvaluation) -> None:
        """Save the program a call wrote and its evaluation."""
        if program is not None:
            write_atomic(self.program_path(call), program)
        record = {"call": call, "has_program": program is not None, **evaluation.to_json()}
        write_atomic(self.report_path(call), _dump(record))

    def repairs_path(self, call: int) -> Path:
        return self.path / REPAIRS_DIR / f"{call:04d}.json"

    def save_repairs(self, call: int, original: str, program: str, repairs: list[dict]) -> None:
        """Save the mechanical repairs made to a call's program (not an LLM call)."""
        write_atomic(self.repairs_path(call), _dump({"call": call, "repairs": repairs,
                                                     "original": original, "program": program}))

    def load_repairs(self, problems: list[str] | None = None) -> dict[int, dict]:
        """Every saved repair record, by call index (empty for runs without repairs).

        Raises:
            RunRecordError: a record is truncated or wrong (see `load_calls`).
        """
        return self._load_numbered(REPAIRS_DIR, _REPAIRS_FIELDS, problems)

    def fit_path(self, call: int) -> Path:
        return self.path / FITS_DIR / f"{call:04d}.json"

    def save_fit(self, call: int, original: str, program: str, fit: dict) -> None:
        """Save the constant fit that replaced a call's program (not an LLM call)."""
        write_atomic(self.fit_path(call), _dump({"call": call, "fit": fit, "original": original,
                                                 "program": program}))

    def fitted_program(self, call: int, original: str | None) -> str | None:
        """The saved fitted program of a call, if it was fitted from this very `original`."""
        path = self.fit_path(call)
        if original is None or not path.is_file():
            return None
        record = self._load_numbered_record(path, _FIT_FIELDS)
        return record["program"] if record["original"] == original else None

    def load_fits(self, problems: list[str] | None = None) -> dict[int, dict]:
        """Every saved in-search fit record, by call index (empty for runs without fits).

        Raises:
            RunRecordError: a record is truncated or wrong (see `load_calls`).
        """
        return self._load_numbered(FITS_DIR, _FIT_FIELDS, problems)

    def load_evaluation(self, call: int, program: str | None) -> ProgramEvaluation | None:
        """The saved evaluation of a call's program, if it is for this very program.

        Raises:
            RunRecordError: the evaluation record is truncated or wrong (see `load_calls`), or
                the program file is not UTF-8 text.
        """
        report = self.report_path(call)
        if not report.is_file():
            return None
        record = self._load_numbered_record(report, _PROGRAM_FIELDS)
        if record.get("has_program") != (program is not None):
            return None
        if program is not None:
            path = self.program_path(call)
            if not path.is_file() or _read_text(path) != program:
                return None
        return ProgramEvaluation.from_json(record)

    def program_reports(self, problems: list[str] | None = None) -> dict[int, dict]:
        """Every saved program evaluation, by call index.

        Raises:
            RunRecordError: a record is truncated or wrong (see `load_calls`).
        """
        return self._load_numbered(PROGRAMS_DIR, _PROGRAM_FIELDS, problems)

    # ------------------------------------------------------------------ state

    def save_state(self, tree: dict, accounting: dict,
                   best: tuple[int, str, ProgramEvaluation] | None) -> None:
        """Save the search state, the accounting and the best program so far."""
        write_atomic(self.path / TREE_FILE, _dump(tree))
        write_atomic(self.path / ACCOUNTING_FILE, _dump(accounting))
        if best is not None:
            call, program, evaluation = best
            self.save_best(call, program, self.load_evaluation(call, program) or evaluation)

    def save_best(self, call: int | None, program: str, evaluation: ProgramEvaluation,
                  origin: dict | None = None) -> None:
        """Save the run's best program (``best_model.py``) and its record (``best_report.json``:
        the call that wrote it, the file that holds it, how it was made from that call's program
        when it was (``origin``, e.g. ``{"fitted_from": 3}``), and its evaluation)."""
        write_atomic(self.path / BEST_MODEL_FILE, program)
        file = (f"{PROGRAMS_DIR}/{call:04d}.py" if call is not None and not origin
                else BEST_MODEL_FILE)
        write_atomic(self.path / BEST_REPORT_FILE,
                     _dump({"call": call, "program": file, **(origin or {}), **evaluation.to_json()}))

    def save_record(self, name: str, data: Any) -> None:
        """Save one more JSON record of the run under ``name`` (the finish step's ``fit.json``,
        the demo's ``demo.json``, an agent run's ``accounting.json`` ...)."""
        write_atomic(self.path / name, _dump(data))

    def save_text(self, name: str, text: str) -> None:
        """Save one more text file of the run under ``name`` (a program: ``fitted_model.py`` ...)."""
        write_atomic(self.path / name, text)

    def read_json(self, name: str) -> dict:
        """Read one of the run's JSON files by name (``tree.json``, ``accounting.json``, ...).

        Raises:
            RunRecordError: the file is truncated, not JSON or holds no JSON object.
        """
        return load_record(self.path / name)

    def check(self) -> None:
        """Read every record of the run, as a resume and ``codeworld show`` will.

        Raises:
            RunRecordError: the first record that is truncated or wrong, named with what is wrong.
        """
        self.spec
        for load in (self.load_calls, self.program_reports, self.load_repairs, self.load_fits):
            load()
        for name in (TREE_FILE, ACCOUNTING_FILE, BEST_REPORT_FILE):
            if (self.path / name).is_file():
                self.read_json(name)
        for program in sorted((self.path / PROGRAMS_DIR).glob("[0-9]*.py")):
            _read_text(program)


# ------------------------------------------------------------------------------ an agent's run

AGENT_LEVELS_DIR = "levels"
AGENT_REWRITES_DIR = "rewrites"
LEVEL_FILE = "level.json"
LEVEL_MODEL_FILE = "model.py"
LEVEL_TRANSITIONS_FILE = "transitions.jsonl"


@dataclass(frozen=True)
class AgentAccounting:
    """An agent run's ``accounting.json``: the agent's settings and a row per level played.

    Attributes:
        config: the agent's config as JSON data (`codeworld.agent.AgentConfig`'s fields).
        levels: a row per level (`codeworld.agent._loop.summary_row`: episodes, successes, steps,
            calls and tokens, the first and the reliable success).
    """

    config: dict = field(default_factory=dict)
    levels: tuple[dict, ...] = ()

    def to_json(self) -> dict:
        """The accounting as JSON data (``config``, then ``levels``)."""
        return {"config": self.config, "levels": list(self.levels)}

    @classmethod
    def from_json(cls, data: dict) -> "AgentAccounting":
        """The accounting `to_json` wrote (a missing key: empty)."""
        return cls(config=data.get("config") or {}, levels=tuple(data.get("levels") or ()))


class AgentRunDir:
    """The folder of a WorldCoder agent's run (`codeworld.agent.WorldCoderAgent`), beside the
    synthesis runs (`RunDir`) its rewrites are.

    Layout::

        AGENT_DIR/
          levels/00-NAME/      one per level played, in order: level.json (its `LevelResult`),
                               model.py (the program at its end), transitions.jsonl (the data)
          rewrites/0003/       the fourth rewrite: a synthesis run's `RunDir`
          accounting.json      the agent's config and a row per level (`AgentAccounting`)

    Every file is written atomically (`codeworld._files.write_atomic`).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"AgentRunDir({str(self.path)!r})"

    def exists(self) -> bool:
        """Whether the folder holds an agent's run (its levels or its rewrites)."""
        return ((self.path / AGENT_LEVELS_DIR).is_dir() or (self.path / AGENT_REWRITES_DIR).is_dir())

    def rewrite_path(self, index: int) -> Path:
        """The run directory of the rewrite of index ``index`` (from 0)."""
        return self.path / AGENT_REWRITES_DIR / f"{index:04d}"

    def rewrites(self) -> list[tuple[int, RunDir]]:
        """The rewrites' run directories that hold a run, by index."""
        out = []
        for folder in sorted((self.path / AGENT_REWRITES_DIR).glob("[0-9]*")):
            if folder.name.isdigit() and RunDir(folder).exists():
                out.append((int(folder.name), RunDir(folder)))
        return out

    def level_path(self, index: int, name: str) -> Path:
        """The folder of the level of index ``index`` (from 0) played, named ``name``."""
        return self.path / AGENT_LEVELS_DIR / f"{index:02d}-{name}"

    def save_level(self, index: int, name: str, record: dict, model: str | None,
                   transitions: list[dict]) -> Path:
        """Save a level played: its record, the program at its end (if any) and the data (one
        transition a line); returns its folder."""
        folder = self.level_path(index, name)
        write_atomic(folder / LEVEL_FILE, json.dumps(record, indent=2, default=str) + "\n")
        if model is not None:
            write_atomic(folder / LEVEL_MODEL_FILE, model)
        write_atomic(folder / LEVEL_TRANSITIONS_FILE, "".join(json.dumps(t) + "\n" for t in transitions))
        return folder

    def save_accounting(self, accounting: AgentAccounting) -> None:
        """Save the run's accounting (after each level, and at the end of a curriculum)."""
        write_atomic(self.path / ACCOUNTING_FILE,
                     json.dumps(accounting.to_json(), indent=2, default=str) + "\n")

    def accounting(self) -> AgentAccounting:
        """The run's accounting; empty before the first level ends (it is written then).

        Raises:
            RunRecordError: ``accounting.json`` is truncated, not JSON or holds no object.
        """
        if not (self.path / ACCOUNTING_FILE).is_file():
            return AgentAccounting()
        return AgentAccounting.from_json(load_record(self.path / ACCOUNTING_FILE))
