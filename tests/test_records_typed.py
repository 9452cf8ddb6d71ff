"""Typed frozen records for what crosses layers (issue 39): the fit note of a program the search
replaced by its fitted constants, and an agent run's directory. Their JSON on disk is what it was,
and runs written before them are still read."""

from __future__ import annotations

import json

from codeworld.synthesis.types import FitNote, ProgramEvaluation


def test_the_fit_note_is_a_record_and_keeps_its_json_form():
    plain = ProgramEvaluation(0.9, False, report={"score": 0.9, "status": "ok"})
    assert plain.fit_note is None
    fitted = plain.with_fit_note(FitNote(score_before=0.5, constants=3))
    assert fitted.fit_note == FitNote(0.5, 3) and plain.report == {"score": 0.9, "status": "ok"}
    # the evaluation's JSON, as calls/NNNN.json and fits/ hold it: the report's "fitted" last
    data = json.loads(json.dumps(fitted.to_json()))
    assert list(data["report"]) == ["score", "status", "fitted"]
    assert data["report"]["fitted"] == {"score_before": 0.5, "constants": 3}
    assert ProgramEvaluation.from_json(data).fit_note == FitNote(0.5, 3)


def test_an_evaluation_saved_before_the_record_reads_its_fit_note():
    saved = {"score": 1.0, "buggy": False, "feedback": "", "mispredicted": None,
             "report": {"score": 1.0, "fitted": {"score_before": 0.8125, "constants": 2}}}
    note = ProgramEvaluation.from_json(saved).fit_note
    assert note is not None and note.score_before == 0.8125 and note.constants == 2
