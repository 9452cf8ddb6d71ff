"""The run directory: everything a synthesis run did, saved after every LLM call.

Layout::

    RUN_DIR/
      run.json            the run's `RunSpec`: method, env, LLM, budget, seed, config, status
      calls/0003.json     call 3: the request, the messages sent, the completion and its cost
      programs/0003.py    the program call 3 wrote
      programs/0003.json  its evaluation (score, buggy, feedback, the scorer's full report)
      repairs/0003.json   the mechanical repairs made to call 3's program before scoring (if any):
                          what was changed, and the program as the LLM wrote it
      fits/0003.json      the constant fit that replaced call 3's program in the search (if any):
                          constants before and after, scores, and the program before the fit
      tree.json           the search state (GIF-MCTS tree, or REx / zero-shot pool)
      accounting.json     calls, tokens, seconds
      best_model.py       the best program so far
      best_report.json    its call and evaluation

Every file is written to a temporary name and renamed, so an interrupted run leaves either the
old or the new version of each, never half of one. A call record is written as soon as the
completion arrives, before the program is scored: a resumed run never pays for it again.
"""

from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path
from typing import Any

from codeworld.synthesis.run_spec import RunSpec, RunStatus
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


def write_atomic(path: Path, text: str) -> None:
    """Write ``text`` to ``path`` through a temporary file and a rename."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


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


class RunDir:
    """Reads and writes one run directory (see the module docstring for its layout).

    Args:
        path: the directory (created by `init`).
    """

    def __init__(self, path: str | os.PathLike):
        self.path = Path(path)

    def __repr__(self) -> str:
        return f"RunDir({str(self.path)!r})"

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
            ValueError: the file is not a run's spec (see `RunSpec.from_json`).
        """
        data = json.loads((self.path / RUN_FILE).read_text(encoding="utf-8"))
        try:
            return RunSpec.from_json(data)
        except (ValueError, TypeError) as exc:
            raise ValueError(f"{self.path / RUN_FILE}: {exc}") from None

    def update_spec(self, **changes: Any) -> RunSpec:
        """Change fields of ``run.json``; returns the new spec."""
        spec = self.spec.replace(**changes)
        self._write_spec(spec)
        return spec

    def set_status(self, status: RunStatus) -> RunSpec:
        """Record where the run stands; returns the new spec."""
        return self.update_spec(status=RunStatus(status))

    def begin(self, spec: RunSpec) -> RunSpec:
        """Mark the run running, as a job that may be rerun does.

        A new run gets ``spec``; a run already started here keeps its own spec and takes only
        the new budget (so a rerun continues the run it finds). Returns the spec written.
        """
        if not self.exists():
            spec = spec.replace(status=RunStatus.RUNNING)
            self.init(spec)
            return spec
        return self.update_spec(status=RunStatus.RUNNING, budget=spec.budget)

    # ------------------------------------------------------------------ calls and programs

    def call_path(self, call: int) -> Path:
        return self.path / CALLS_DIR / f"{call:04d}.json"

    def program_path(self, call: int) -> Path:
        return self.path / PROGRAMS_DIR / f"{call:04d}.py"

    def report_path(self, call: int) -> Path:
        return self.path / PROGRAMS_DIR / f"{call:04d}.json"

    def _load_numbered(self, folder_name: str) -> dict[int, dict]:
        """The JSON records ``NNNN.json`` of one of the run's folders, by call index."""
        out = {}
        folder = self.path / folder_name
        if folder.is_dir():
            for file in sorted(folder.glob("[0-9]*.json")):
                out[int(file.stem)] = json.loads(file.read_text(encoding="utf-8"))
        return out

    def save_call(self, call: int, record: dict) -> None:
        """Save one LLM call (request, messages, completion, cost)."""
        write_atomic(self.call_path(call), _dump(record))

    def load_calls(self) -> dict[int, dict]:
        """Every saved call record, by call index."""
        return self._load_numbered(CALLS_DIR)

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

    def load_repairs(self) -> dict[int, dict]:
        """Every saved repair record, by call index (empty for runs without repairs)."""
        return self._load_numbered(REPAIRS_DIR)

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
        record = json.loads(path.read_text(encoding="utf-8"))
        return record["program"] if record.get("original") == original else None

    def load_fits(self) -> dict[int, dict]:
        """Every saved in-search fit record, by call index (empty for runs without fits)."""
        return self._load_numbered(FITS_DIR)

    def load_evaluation(self, call: int, program: str | None) -> ProgramEvaluation | None:
        """The saved evaluation of a call's program, if it is for this very program."""
        report = self.report_path(call)
        if not report.is_file():
            return None
        record = json.loads(report.read_text(encoding="utf-8"))
        if record.get("has_program") != (program is not None):
            return None
        if program is not None:
            path = self.program_path(call)
            if not path.is_file() or path.read_text(encoding="utf-8") != program:
                return None
        return ProgramEvaluation.from_json(record)

    def program_reports(self) -> dict[int, dict]:
        """Every saved program evaluation, by call index."""
        return self._load_numbered(PROGRAMS_DIR)

    # ------------------------------------------------------------------ state

    def save_state(self, tree: dict, accounting: dict,
                   best: tuple[int, str, ProgramEvaluation] | None) -> None:
        """Save the search state, the accounting and the best program so far."""
        write_atomic(self.path / TREE_FILE, _dump(tree))
        write_atomic(self.path / ACCOUNTING_FILE, _dump(accounting))
        if best is not None:
            call, program, evaluation = best
            write_atomic(self.path / BEST_MODEL_FILE, program)
            full = self.load_evaluation(call, program) or evaluation
            write_atomic(self.path / BEST_REPORT_FILE,
                         _dump({"call": call, "program": f"{PROGRAMS_DIR}/{call:04d}.py",
                                **full.to_json()}))

    def read_json(self, name: str) -> dict:
        """Read one of the run's JSON files by name (``tree.json``, ``accounting.json``, ...)."""
        return json.loads((self.path / name).read_text(encoding="utf-8"))
