"""REx (WorldCoder's program search) and zero-shot: sampling, updates, stopping."""

from __future__ import annotations

import numpy as np
import pytest

from codeworld.synthesis import (
    FIX,
    GENERATE,
    IMPROVE,
    Outcome,
    Request,
    Rex,
    RexConfig,
    ZeroShot,
    ZeroShotConfig,
)
from codeworld.synthesis.fakes import FakeEvaluator, fake_program

EVAL = FakeEvaluator()


def answer(search, request, program):
    search.apply(request, Outcome(program, EVAL.evaluate(program)))


def seeded_pool(seed: int, scores) -> Rex:
    """A REx search whose pool holds programs with ``scores`` (None: buggy)."""
    search = Rex(seed=seed)
    for score in scores:
        if not search.pool:
            [req] = search.propose(1)  # the first program is generated (no draws)
        else:  # later ones are added as if a refinement of program 0 wrote them
            req = Request(call=search.calls, action=IMPROVE, parent=0)
            search.calls += 1
        answer(search, req, fake_program(score) if score is not None else fake_program(bug="e"))
    return search


def test_default_c_is_five_and_beta_parameters_follow_the_formula():
    search = Rex()
    assert RexConfig().c == 5.0
    [req] = search.propose(1)
    answer(search, req, fake_program(0.6))
    entry = search.pool[0]
    assert search.beta_parameters(entry) == pytest.approx((1 + 5 * 0.6, 1 + 5 * 0.4 + 0))
    entry.refined = 2
    assert search.beta_parameters(entry) == pytest.approx((4.0, 5.0))


def test_empty_pool_generates_from_scratch():
    search = Rex()
    [req] = search.propose(1)
    assert (req.action, req.parent, req.program) == (GENERATE, -1, "")


def test_thompson_pick_matches_the_seeded_draws_and_refines_by_health():
    seed = 7
    search = seeded_pool(seed, [0.2, None, 0.7])
    # the generator consumed no draws while the pool was built (the first call generated)
    rng = np.random.default_rng(seed)
    for _ in range(6):
        params = [search.beta_parameters(e) for e in search.pool]
        expected_draws = [rng.beta(a, b) for a, b in params]
        expected = search.pool[int(np.argmax(expected_draws))]
        before = expected.refined
        [req] = search.propose(1)
        assert search.trace[-1]["draws"] == pytest.approx(expected_draws)
        assert req.parent == expected.call
        assert req.action == (FIX if expected.buggy else IMPROVE)
        assert req.program == expected.program and req.feedback == expected.feedback
        assert expected.refined == before + 1  # N counts refinements
        answer(search, req, fake_program(0.1))


def test_better_programs_are_refined_more_often_and_refinement_count_spreads_picks():
    search = seeded_pool(0, [0.9, 0.1])
    picks = []
    for _ in range(40):
        [req] = search.propose(1)
        picks.append(req.parent)  # unanswered: the pool stays, only N grows
    assert picks.count(0) > picks.count(1)
    assert search.pool[0].refined + search.pool[1].refined == 40
    assert search.pool[1].refined > 0  # N lowers the favourite's draws until the other is tried


def test_parallel_wave_counts_each_pick_at_once():
    search = Rex(RexConfig(parallel=3), seed=1)
    [first] = search.propose(1)
    answer(search, first, fake_program(0.5))
    wave = search.propose(3)
    assert len(wave) == 3 and all(r.parent == 0 for r in wave)
    assert search.pool[0].refined == 3
    assert [r.call for r in wave] == [1, 2, 3]


def test_rex_stops_on_a_perfect_program():
    search = Rex()
    [req] = search.propose(1)
    answer(search, req, fake_program(1.0))
    assert search.finished and search.propose(1) == []
    assert search.best()[2].score == 1.0


def test_zero_shot_generates_independently_and_keeps_the_best():
    search = ZeroShot(ZeroShotConfig(parallel=2))
    scores = [0.3, None, 0.8, 0.5]
    made = 0
    while made < len(scores):
        for req in search.propose(2):
            assert (req.action, req.parent, req.prefix) == (GENERATE, -1, "")
            s = scores[made]
            answer(search, req, fake_program(s) if s is not None else fake_program(bug="x"))
            made += 1
    call, _, evaluation = search.best()
    assert call == 2 and evaluation.score == 0.8
    assert ZeroShot(ZeroShotConfig(stop_on_perfect=False)).config.stop_on_perfect is False


def _improve_requests(search: Rex, calls: int = 10) -> list[tuple[int, str]]:
    """``(parent, feedback)`` of every improve request over `calls` calls whose programs all
    score 0.5 (so that no improvement ever makes progress)."""
    from codeworld.synthesis.types import ProgramEvaluation

    summary = "Over all 10 recorded transitions, the program is wrong on 5 (50%)."
    requests = []
    for _ in range(calls):
        (request,) = search.propose(1)
        if request.action == IMPROVE:
            requests.append((request.parent, request.feedback))
        search.apply(request, Outcome(f"# program {request.call}\n", ProgramEvaluation(0.5, False, summary)))
    return requests


def test_improve_requests_after_no_progress_say_so_and_are_counted():
    search = Rex(seed=0)
    requests = _improve_requests(search)
    improved: dict[int, int] = {}
    for parent, feedback in requests:
        assert feedback.startswith("Over all 10")
        stalls = improved.get(parent, 0)
        # the note comes once an earlier improvement of the same program left it at 0.5
        assert ("earlier improvement" in feedback) == (stalls > 0)
        if stalls:
            assert f"{stalls} earlier improvement" in feedback and "0.5000" in feedback
        improved[parent] = stalls + 1
    assert max(improved.values()) >= 2  # the note was asked for at least once
    assert search.to_json()["no_progress"] == len(requests)


def test_the_no_progress_note_can_be_off_and_is_off_in_a_run_saved_before_it():
    from codeworld.synthesis.registry import config_from_json, config_to_json

    requests = _improve_requests(Rex(RexConfig(no_progress_note=False), seed=0))
    assert not any("earlier improvement" in f for _, f in requests)
    saved = config_to_json(RexConfig())
    del saved["no_progress_note"]
    assert config_from_json(RexConfig, saved).no_progress_note is False
