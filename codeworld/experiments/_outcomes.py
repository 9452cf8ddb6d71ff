"""What became of each program a search wrote, in a few classes (the program-outcome table).

`program_outcome(record)` reads one saved evaluation (``programs/NNNN.json`` of a run directory)
and names its class:

* ``prompt too long``: the prompt did not fit the model's context window, so no answer came;
* ``no program``: the answer held no Python program;
* ``does not parse``: a syntax error;
* ``no step``: it parses but defines no usable ``step`` (or ``class Environment``);
* ``static check``: refused before running (an undefined name, unpacking that does not match
  the state, ...), with the first problem's kind;
* ``raises <ExceptionType>``: it ran and raised (or timed out, crashed, returned malformed output:
  the sandbox's status then stands in for the type);
* ``runs, wrong``: it predicted every transition, not all of them right;
* ``right``: every transition right (score 1 within 1e-9, or exact on every transition and
  just under 1 for a reward the description states and the data never shows).
"""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path
from typing import Any, Iterable

PERFECT = 1.0 - 1e-9
_EXCEPTION = re.compile(r"\b([A-Z][A-Za-z]*(?:Error|Exception|Interrupt|Exit))\b")


def program_outcome(record: dict[str, Any]) -> str:
    """The outcome class of one saved program evaluation (see the module docstring)."""
    report = record.get("report") or {}
    status = report.get("status")
    if status == "prompt_too_long":
        return "prompt too long"
    if status == "no_code" or record.get("has_program") is False:
        return "no program"
    message = str(report.get("message") or record.get("feedback") or "")
    if report.get("stage") == "static_check":
        problems = report.get("problems") or [{}]
        return f"static check: {problems[0].get('kind', 'problem')}"
    if not record.get("buggy"):
        exact = float(record.get("score", 0.0)) >= PERFECT or "described_rewards" in report
        return "right" if exact else "runs, wrong"
    if message.startswith("syntax error"):
        return "does not parse"
    if message.startswith(("no world model found", "step must", "class Environment must",
                           "Environment.", "`step` is not callable")):
        return "no step"
    if status in (None, "exception"):
        found = _EXCEPTION.search(message)
        return f"raises {found.group(1) if found else 'an exception'}"
    return f"raises ({status})"


def run_outcomes(run_dir: Path | str) -> list[dict[str, Any]]:
    """Per program of a run directory, in call order: its call (1-based) and outcome."""
    from codeworld.synthesis import RunDir

    return [{"call": call + 1, "outcome": program_outcome(record)}
            for call, record in sorted(RunDir(run_dir).program_reports().items())]


def outcome_counts(outcomes: Iterable[str]) -> dict[str, int]:
    """How many programs fell in each class, the most frequent first."""
    return dict(Counter(outcomes).most_common())
