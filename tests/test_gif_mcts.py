"""GIF-MCTS step by step against hand-worked trees (paper defaults unless a test says otherwise)."""

from __future__ import annotations

import math

import pytest

from codeworld.synthesis import FIX, GENERATE, IMPROVE, GifMcts, GifMctsConfig, Outcome
from codeworld.synthesis.fakes import FakeEvaluator, fake_program

EVAL = FakeEvaluator()
C = 0.1


def bonus(n_parent: int, n: int) -> float:
    return C * math.sqrt(math.log(n_parent) / (n + 1))


def step(search: GifMcts, program: str):
    """One simulation: propose one request, answer it with ``program``."""
    [request] = search.propose(1)
    search.apply(request, Outcome(program, EVAL.evaluate(program)))
    return request


def test_paper_defaults():
    cfg = GifMctsConfig()
    assert cfg.ucb_c == 0.1
    assert (cfg.prior_generate, cfg.prior_improve, cfg.prior_fix) == (0.5, 0.55, 0.5)
    assert cfg.fix_limit == 3 and cfg.bug_values == (0.99, 0.66, 0.33, 0.0)
    assert cfg.lines_per_generate == 2 and cfg.parallel == 1
    with pytest.raises(ValueError):
        GifMctsConfig(fix_limit=2)  # bug_values must match


def test_root_offers_only_generate_from_the_empty_program():
    search = GifMcts()
    assert search.open_actions(0) == [GENERATE]
    [request] = search.propose(1)
    assert (request.call, request.action, request.parent, request.prefix) == (0, GENERATE, 0, "")


def test_hand_worked_tree_improve_then_fix_chain_repaired():
    search = GifMcts()
    p1 = fake_program(0.6, feedback="state[2] wrong at transition 7")
    # call 0: the root's generate
    r = step(search, p1)
    assert (r.action, r.parent) == (GENERATE, 0)
    assert search.prior(GENERATE) == pytest.approx((0.5 * 2 + 0.6) / 3)
    assert search.open_actions(1) == [GENERATE, IMPROVE]  # healthy node
    assert search.value(1) == pytest.approx(0.6)

    # call 1: root N=2: node 1 (0.6 + b) beats generate (0.533 + b); at node 1 (N=1, no bonus)
    # improve's prior 0.55 beats generate's running 0.533.
    cands = {c.target: c.uct for c in search.candidates(0)}
    assert cands[1] == pytest.approx(0.6 + bonus(2, 1))
    assert cands[GENERATE] == pytest.approx(1.6 / 3 + bonus(2, 1))
    r = step(search, fake_program(bug="NameError: name 'th' is not defined (line 4)"))
    assert (r.action, r.parent, r.program) == (IMPROVE, 1, p1)
    assert r.feedback == "state[2] wrong at transition 7"  # one mispredicted transition
    assert search.open_actions(2) == [FIX]  # a buggy node offers only fix
    assert search.own_value(2) == pytest.approx(0.99)
    assert search.value(1) == pytest.approx((0.6 + 0.99) / 2)
    assert search.prior(IMPROVE) == pytest.approx((0.55 * 2 + 0.0) / 3)

    # call 2: down to node 2 (0.99 + b wins at node 1), fix it; the fix fails.
    r = step(search, fake_program(bug="IndexError (line 9)"))
    assert (r.action, r.parent) == (FIX, 2)
    assert r.feedback == "NameError: name 'th' is not defined (line 4)"
    assert search.nodes[3].failed_fixes == 1
    assert search.own_value(2) == search.own_value(3) == pytest.approx(0.66)
    assert search.open_actions(2) == []  # the chain continues from node 3
    assert search.open_actions(3) == [FIX]
    assert search.value(1) == pytest.approx((0.6 + 0.66 + 0.66) / 3)
    assert search.visits(1) == 3 and search.visits(0) == 4

    # call 3: root -> node 1 -> node 2 -> node 3 -> fix; it succeeds with 0.8.
    r = step(search, fake_program(0.8))
    assert (r.action, r.parent) == (FIX, 3)
    assert [t["path"] for t in search.trace][-1] == [0, 1, 2, 3]
    # the repaired value replaces the temporary ones all up the chain
    assert search.own_value(2) == search.own_value(3) == pytest.approx(0.8)
    assert search.value(2) == pytest.approx(0.8)
    assert search.value(1) == pytest.approx((0.6 + 0.8 * 3) / 4)
    assert search.prior(FIX) == pytest.approx((0.5 * 2 + 0.0 + 0.8) / 4)
    assert search.open_actions(4) == [GENERATE, IMPROVE]
    best_call, best_program, best_eval = search.best()
    assert best_call == 3 and best_eval.score == 0.8


def test_three_failed_fixes_make_the_chain_a_dead_end_with_value_zero():
    # No generate beyond the root's first, so the fix chain is the only way on.
    search = GifMcts(GifMctsConfig(allow_generate=False))
    step(search, fake_program(bug="boom"))
    values = [search.own_value(1)]
    for k in range(3):
        r = step(search, fake_program(bug=f"still broken {k}"))
        assert r.action == FIX and r.parent == k + 1
        values.append(search.own_value(1))
    assert values == pytest.approx([0.99, 0.66, 0.33, 0.0])
    assert all(search.is_dead(i) for i in (1, 2, 3, 4))
    assert search.value(1) == 0.0
    assert search.finished and search.propose(1) == []


def test_dead_chain_is_never_selected_again():
    search2 = GifMcts()
    # Grow a tree where fixes always fail and check that selection avoids the dead chain.
    step(search2, fake_program(bug="a"))
    for _ in range(10):
        [req] = search2.propose(1)
        if req.action == FIX:
            search2.apply(req, Outcome("x", EVAL.evaluate(fake_program(bug="b"))))
        else:
            search2.apply(req, Outcome("x", EVAL.evaluate(fake_program(0.1))))
    dead = [n.id for n in search2.nodes if search2.is_dead(n.id)]
    assert dead, "the chain should have died within 10 calls"
    for _ in range(5):
        [req] = search2.propose(1)
        assert req.parent not in dead
        search2.apply(req, Outcome("x", EVAL.evaluate(fake_program(0.1))))


def test_generate_continues_the_partial_program_with_two_more_lines():
    search = GifMcts(GifMctsConfig(allow_improve=False))
    p1 = fake_program(0.6, lines=10, tag="one")
    step(search, p1)
    assert search.nodes[1].prefix_lines == 2
    r = step(search, fake_program(0.7, lines=10, tag="two"))
    assert (r.action, r.parent) == (GENERATE, 1)
    assert r.prefix == "".join(p1.splitlines(keepends=True)[:2])
    p2 = search.nodes[2].program
    assert search.nodes[2].prefix_lines == 4
    r = step(search, fake_program(0.65, lines=10, tag="three"))
    assert (r.action, r.parent) == (GENERATE, 2)
    assert r.prefix == "".join(p2.splitlines(keepends=True)[:4])


def test_early_stop_on_a_perfect_score_by_tolerance():
    search = GifMcts()
    step(search, fake_program(0.5))
    assert not search.finished
    step(search, fake_program(1.0 - 1e-9))  # perfect within the tolerance, not bit-equal
    assert search.finished and search.propose(1) == []
    search = GifMcts(GifMctsConfig(perfect_tolerance=1e-12))
    step(search, fake_program(1.0 - 1e-9))
    assert not search.finished


def test_ablation_no_fix_makes_a_buggy_program_a_dead_end():
    search = GifMcts(GifMctsConfig(allow_fix=False))
    step(search, fake_program(bug="x"))
    assert search.open_actions(1) == [] and search.is_dead(1) and search.own_value(1) == 0.0
    for _ in range(4):
        r = step(search, fake_program(0.3))
        assert r.action != FIX


def test_ablation_no_improve_and_no_generate():
    search = GifMcts(GifMctsConfig(allow_improve=False))
    step(search, fake_program(0.4))
    assert search.open_actions(1) == [GENERATE]
    search = GifMcts(GifMctsConfig(allow_generate=False))
    step(search, fake_program(0.4))
    assert search.open_actions(0) == []  # the root made its one program
    assert search.open_actions(1) == [IMPROVE]
    actions = [step(search, fake_program(0.3)).action for _ in range(5)]
    assert set(actions) == {IMPROVE}


def test_ties_are_broken_by_the_seeded_generator():
    # generate and improve carry the same fixed prior: at node 1 (no bonus) they tie.
    cfg = GifMctsConfig(prior_generate=0.55, prior_improve=0.55, prior_count=1e12)
    choices = {}
    for seed in range(12):
        search = GifMcts(cfg, seed=seed)
        step(search, fake_program(0.9))
        [req] = search.propose(1)
        assert req.parent == 1
        choices[seed] = req.action
        again = GifMcts(cfg, seed=seed)
        step(again, fake_program(0.9))
        assert again.propose(1)[0].action == req.action  # same seed, same choice
    assert set(choices.values()) == {GENERATE, IMPROVE}


def test_parallel_wave_uses_virtual_loss():
    seq = GifMcts()
    step(seq, fake_program(0.6))
    [only] = seq.propose(1)
    assert (only.action, only.parent) == (IMPROVE, 1)

    par = GifMcts(GifMctsConfig(parallel=2))
    [first] = par.propose(1)
    par.apply(first, Outcome(fake_program(0.6), EVAL.evaluate(fake_program(0.6))))
    wave = par.propose(2)
    # the first pick is the sequential one; its pending child counts at value 0, pulling node 1
    # down to (0.6 + 0) / 2, so the second pick goes to a fresh generate at the root
    assert [(r.action, r.parent) for r in wave] == [(IMPROVE, 1), (GENERATE, 0)]
    assert par.nodes[2].pending and par.visits(1) == 2 and par.value(1) == pytest.approx(0.3)
    for r in wave:
        par.apply(r, Outcome(fake_program(0.5), EVAL.evaluate(fake_program(0.5))))
    assert not any(n.pending for n in par.nodes)
    assert par.value(1) == pytest.approx(0.55)
    with pytest.raises(ValueError):
        par.apply(wave[0], Outcome("x", EVAL.evaluate(fake_program(0.5))))


def test_a_wave_never_exceeds_the_requested_size():
    search = GifMcts(GifMctsConfig(parallel=4))
    assert len(search.propose(3)) == 3
    assert [n.action for n in search.nodes[1:]] == [GENERATE] * 3  # the root's only option


def _requests_when_improvements_stall(config: GifMctsConfig, calls: int = 10) -> list:
    """The requests of a search whose first program scores 0.8, whose improvements all give back
    its score (the small model's habit of answering with the program it was shown), and whose
    later generates all score 0.3."""
    search = GifMcts(config, seed=0)
    requests = [step(search, fake_program(0.8, tag="first"))]
    for k in range(calls - 1):
        [request] = search.propose(1)
        score = 0.8 if request.action == IMPROVE else 0.3
        program = fake_program(score, tag=f"call {k}")
        search.apply(request, Outcome(program, EVAL.evaluate(program)))
        requests.append(request)
    return requests, search


def test_improvements_that_stall_twice_make_the_search_ask_something_else():
    requests, search = _requests_when_improvements_stall(GifMctsConfig())
    improves = [r for r in requests if r.action == IMPROVE]
    # node 1 is improved and the answer stalls; that answer is a stalled improvement of node 1, so
    # one more stall on either closes improve on both; then the calls go to generate
    assert len(improves) == 2
    stalled = [search.node_of(r).id for r in improves]
    assert all(search.stalls(n) == 2 for n in [1, *stalled])
    assert not any(IMPROVE in search.open_actions(n) for n in [1, *stalled])
    assert [r.action for r in requests[3:]].count(GENERATE) >= 5
    # a program from a generate that did not stall may still be improved
    assert any(IMPROVE in search.open_actions(n.id) for n in search.nodes[1:]
               if n.action == GENERATE and n.id != 1)
    # the paper's rule (no limit) keeps improving the 0.8 program
    paper, _ = _requests_when_improvements_stall(GifMctsConfig(stall_limit=None))
    assert sum(r.action == IMPROVE for r in paper) >= 8


def test_a_run_saved_before_the_stall_limit_has_none():
    from codeworld.synthesis.registry import config_from_json, config_to_json

    saved = config_to_json(GifMctsConfig())
    assert saved["stall_limit"] == 2
    del saved["stall_limit"]
    assert config_from_json(GifMctsConfig, saved).stall_limit is None
    with pytest.raises(ValueError, match="stall_limit"):
        GifMctsConfig(stall_limit=0)
