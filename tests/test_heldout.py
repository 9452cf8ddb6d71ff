"""Held out, or it did not happen: a run's split, its training-only search, its held-out reports,
the paper's tolerance for "perfect", and copies recognised before they cost a scoring pass."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

from codeworld.cli import main
from codeworld.envs._buffers import EpisodeSplit, default_buffer, load_buffer
from codeworld.scoring import Scorer
from codeworld.synthesis import AssistConfig, GifMcts, Rex, RunDir, RunSpec, synthesize
from codeworld.worlds.cwmb._cwmb import NEAR_PERFECT, make_cwmb_world
from codeworld.synthesis.fakes import ScriptedLLM

MODEL = Path(__file__).parent / "models" / "cartpole_functional.py"


def fence(program: str) -> str:
    return f"```python\n{program}```"


@pytest.fixture(scope="module")
def cartpole():
    return load_buffer(default_buffer("CartPole-v1"))


def test_a_split_holds_out_whole_episodes_drawn_with_the_seed(cartpole):
    split = EpisodeSplit.draw(cartpole, 0.3, seed=0)
    assert split == EpisodeSplit.draw(cartpole, 0.3, seed=0)  # the same seed, the same split
    assert EpisodeSplit.from_json(json.loads(json.dumps(split.to_json()))) == split
    assert len(split.heldout_episodes) == 3 and split.n_episodes == 10
    assert not set(split.heldout_episodes) & set(split.train_episodes)
    train, held = split.parts(cartpole)
    assert len(train) + len(held) == len(cartpole) == split.n_train + split.n_heldout
    assert (train.n_episodes, held.n_episodes) == (7, 3)
    # every held-out transition is one of the buffer's, none of them in training
    rows = {tuple(r) for r in np.column_stack([cartpole.obs, cartpole.actions])}
    train_rows = {tuple(r) for r in np.column_stack([train.obs, train.actions])}
    held_rows = {tuple(r) for r in np.column_stack([held.obs, held.actions])}
    assert held_rows <= rows and not held_rows & train_rows
    others = {EpisodeSplit.draw(cartpole, 0.3, seed=s).heldout_episodes for s in range(1, 6)}
    assert len(others | {split.heldout_episodes}) > 1  # the seed draws
    nothing = EpisodeSplit.draw(cartpole, 0.0)
    assert nothing.parts(cartpole) == (cartpole, None)
    one = cartpole.subset(cartpole.episode_start == 0)  # one episode: split by position
    by_position = EpisodeSplit.draw(one, 0.3)
    assert by_position.by_position and by_position.n_heldout == round(0.3 * len(one))
    with pytest.raises(ValueError, match="recorded split"):
        split.parts(one)


def test_the_search_sees_training_episodes_and_reports_held_out_ones(tmp_path, capsys):
    script = tmp_path / "s.json"
    script.write_text(json.dumps([fence(MODEL.read_text().replace("TAU = 0.02", "TAU = 0.021"))]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "1",
                 "--out", str(out), "--no-fit", "--no-speed-step", "--quiet", "--seed", "3"]) == 0
    printed = capsys.readouterr().out
    split = json.loads((out / "run.json").read_text())["split"]
    assert split["seed"] == 3 and split["heldout_fraction"] == 0.3
    report = json.loads((out / "programs" / "0000.json").read_text())["report"]
    assert report["n_transitions"] == split["n_train"]  # the search signal: training only
    held = report["heldout"]
    assert held["n_transitions"] == split["n_heldout"]
    # the held-out figures are the scorer's on the held-out episodes, floor and ceiling beside
    buffer = load_buffer(default_buffer("CartPole-v1"))
    _, episodes = EpisodeSplit.from_json(split).parts(buffer)
    truth = Scorer("CartPole-v1", episodes).score_source((out / "programs" / "0000.py").read_text())
    assert held["score"] == pytest.approx(truth.score) and held["floor"] == truth.floor.score
    assert held["normalized"] == pytest.approx(
        (truth.score - truth.floor.score) / (truth.ceiling.score - truth.floor.score))
    # the run's best (here the data model, which beats the call's program) is printed held out
    best = json.loads((out / "best_report.json").read_text())["report"]["heldout"]
    assert f"held-out:      {best['score']:.4f}" in printed and "training:" in printed
    assert main(["show", str(out), "--no-picture"]) == 0
    shown = capsys.readouterr().out
    assert "held-out" in shown and f"{split['n_heldout']} transitions, never shown" in shown


def test_heldout_must_be_a_fraction(capsys):
    with pytest.raises(SystemExit):
        main(["synthesize", "CartPole-v1", "--heldout", "1.5"])
    assert "must be in [0, 1)" in capsys.readouterr().err


def test_a_model_right_only_within_the_loose_tolerance_does_not_stop_the_search(tmp_path):
    # 5e-5 off on the cart's position: right by the sound tolerance (1e-4), not by the paper's
    near = MODEL.read_text().replace("x = x + TAU * x_dot", "x = x + TAU * x_dot + 5e-5")
    assert near != MODEL.read_text()
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    first = evaluator.evaluate(near)
    assert first.report["score"] == 1.0 and not first.report["exact"]["exact"]
    assert first.score == NEAR_PERFECT and "not exact" in first.feedback
    assert first.report["exact"]["where"] == "s0"
    llm = ScriptedLLM([fence(near), fence(MODEL.read_text())])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("worldcoder"))
    result = synthesize(Rex(seed=0), llm=llm, prompts=prompts, evaluator=evaluator, budget=3,
                        run_dir=run_dir)
    # the near model did not stop the search; the exact one did, and is the best
    assert result.accounting.calls == 2 and result.best_call == 1
    assert result.best_evaluation.score == 1.0 and result.best_evaluation.report["exact"]["exact"]


def test_a_copy_of_the_skeleton_or_of_an_earlier_program_is_recognised(tmp_path):
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    skeleton = evaluator.skeleton
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    # the skeleton with other comments and blank lines is still the skeleton
    restyled = skeleton.replace("    done = False\n", "\n    done = False  # never\n")
    llm = ScriptedLLM([fence(restyled), fence(wrong), fence("# again\n" + wrong),
                       fence(MODEL.read_text())])
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("gif-mcts"))
    search = GifMcts(seed=0)
    result = synthesize(search, llm=llm, prompts=prompts, evaluator=evaluator, budget=4,
                        run_dir=run_dir)
    records = {c: json.loads((tmp_path / "run" / "programs" / f"{c:04d}.json").read_text())
               for c in range(result.accounting.calls)}
    assert records[0]["report"]["duplicate_of"] == "skeleton"
    assert "same as the skeleton" in records[0]["feedback"]
    copies = [c for c, r in records.items() if r["report"].get("duplicate_of") == 2]
    assert copies, "the second writing of the wrong program is a copy of call 2"
    copy = copies[0]
    assert records[copy]["score"] == records[1]["score"]
    assert result.accounting.duplicates == 2
    # the search does not expand a copy: its node offers no action
    for node in search.nodes[1:]:
        if node.id - 1 in (0, copy):
            assert node.duplicate and search.open_actions(node.id) == []
    history = {e["call"]: e for e in result.history}
    assert history[0]["duplicate_of"] == "skeleton" and history[copy]["duplicate_of"] == 2
    # the next generate at the root is not the same request again: it says what happened
    calls = run_dir.load_calls()
    root_generates = [c for c in sorted(calls) if calls[c]["request"]["action"] == "generate"
                      and calls[c]["request"]["parent"] == 0]
    assert len(root_generates) >= 2 and root_generates[0] == 0
    assert "handed back the skeleton" not in calls[0]["messages"][1]["content"]
    assert "new_cart_position" not in calls[0]["messages"][-1]["content"]
    for c in root_generates[1:]:
        assert "1 earlier answer to this request handed back the skeleton" in calls[c]["messages"][1]["content"]
        # ... and it starts from another partial program: the data's exact rules as code
        prefill = calls[c]["messages"][-1]["content"]
        assert calls[c]["messages"][-1]["role"] == "assistant"
        assert "    new_cart_position = cart_position + 0.02*cart_velocity\n" in prefill


def test_the_skeleton_handed_back_twice_is_scored_once(tmp_path):
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    llm = ScriptedLLM([fence(evaluator.skeleton)] * 2)
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("zero-shot"))
    from codeworld.synthesis import ZeroShot

    result = synthesize(ZeroShot(), llm=llm, prompts=prompts, evaluator=evaluator, budget=2,
                        run_dir=run_dir)
    assert [e["duplicate_of"] for e in result.history] == ["skeleton", "skeleton"]
    assert result.accounting.duplicates == 2
    # the do-nothing model: the floor, on the training episodes
    assert result.history[0]["score"] == pytest.approx(evaluator.scorer.floor.score)


def test_a_model_that_fails_beyond_the_recorded_states_goes_to_fix():
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    largest = float(np.abs(evaluator.scorer.buffer.obs[:, 3]).max())
    # right on every recorded transition, but it raises on a state no transition starts from
    fragile = MODEL.read_text().replace(
        "    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]\n",
        "    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]\n"
        f"    if abs(theta_dot) > {largest!r}:\n"
        "        raise ValueError('no table entry for this state')\n")
    assert fragile != MODEL.read_text()
    evaluation = evaluator.evaluate(fragile)
    assert evaluation.buggy and evaluation.report["stage"] == "beyond_data"
    assert evaluation.report["score"] == 1.0  # on the data itself it is right
    assert "where the recorded data does not go" in evaluation.feedback
    assert "no table entry for this state" in evaluation.feedback
    failed_on = evaluation.report["beyond_data"]["state"]
    assert abs(failed_on[3]) > largest
    lenient = make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False,
                                                                 beyond_data=False)).evaluator
    assert lenient.evaluate(fragile).score == 1.0
    assert not evaluator.evaluate(MODEL.read_text()).buggy  # the true model runs everywhere


def test_the_rollouts_beyond_the_data_go_as_far_as_the_planner_looks_ahead():
    # Right on every recorded transition, but it raises once the pole has turned past 4 radians:
    # a random rollout reaches that after 30 steps and before 100, the planner's lookahead.
    fragile = MODEL.read_text().replace(
        "    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]\n",
        "    x, x_dot, theta, theta_dot = state[0], state[1], state[2], state[3]\n"
        "    if abs(theta) > 4.0:\n"
        "        raise ValueError('the pole has turned too far')\n")
    assert fragile != MODEL.read_text()

    def evaluate(**assist):
        return make_cwmb_world("CartPole-v1", assist=AssistConfig(fit_constants=False, **assist)
                               ).evaluator.evaluate(fragile)

    short = evaluate(beyond_steps=30)  # the old default
    assert not short.buggy and short.score == 1.0
    planned = evaluate()
    assert planned.buggy and planned.report["stage"] == "beyond_data"
    assert "the pole has turned too far" in planned.feedback


CLIFF = """
import numpy as np


def step(state, action):
    pos = int(state[0])
    row, col = divmod(pos, 12)
    if action == 0:
        row = max(row - 1, 0)
    elif action == 1:
        col = min(col + 1, 11)
    elif action == 2:
        row = min(row + 1, 3)
    else:
        col = max(col - 1, 0)
    new = row * 12 + col
    reward = -1.0
    if 37 <= new <= 46:
        new = 36
        REWARD_LINE
    return np.array([float(new)]), reward, new == 47
"""


def test_the_composition_keeps_a_rare_reward_that_the_common_case_would_drop():
    from codeworld.worlds.cwmb._compose import compose_programs

    scorer = Scorer("CliffWalking-v1")
    cliff = scorer.buffer.rewards == -100
    assert 0 < cliff.mean() < 0.1  # the cliff's reward is rare in the recorded data
    never = CLIFF.replace("REWARD_LINE", "pass")  # right on every state, never the cliff's reward
    # the cliff's reward right, and a wrong -100 on about a fifth of the other transitions
    noisy = CLIFF.replace("REWARD_LINE", "reward = -100.0").replace(
        "    return np.array", "    if (pos * 7 + int(action)) % 5 == 0:\n        reward = -100.0\n"
        "    return np.array").replace("        new = 36\n", "        new = 0\n")
    composition = compose_programs([(0, never), (1, noisy)], scorer)
    assert composition.status == "composed"
    assert composition.choice["reward"] == 1 and composition.choice["state[0]"] == 0
    assert composition.choice["done"] == 0
    # on the plain score alone, the common case would have won the reward
    assert composition.candidate_scores[0] > composition.candidate_scores[1]


def test_held_out_reports_say_how_rare_outcomes_went():
    world = make_cwmb_world("CliffWalking-v1", assist=AssistConfig(fit_constants=False))
    prompts, evaluator = world.prompts, world.evaluator
    never = CLIFF.replace("REWARD_LINE", "pass")
    rare = evaluator.evaluate(never).report["heldout"]["rare"]
    held = evaluator.heldout.buffer
    if (held.rewards == -100).any():  # the cliff's reward in the held-out episodes: never right
        assert rare["reward"]["-100"] == 0.0
    right = evaluator.evaluate(CLIFF.replace("REWARD_LINE", "reward = -100.0")).report["heldout"]["rare"]
    assert all(v == 1.0 for v in right["reward"].values())
    assert rare["n_ends"] == int(held.terminated.sum())


def test_a_resumed_run_keeps_its_split(tmp_path, capsys):
    wrong = MODEL.read_text().replace("TAU = 0.02", "TAU = 0.03")
    script = tmp_path / "s.json"
    script.write_text(json.dumps([fence(wrong), fence(MODEL.read_text())]))
    out = tmp_path / "run"
    common = ["--llm", f"scripted:{script}", "--out", str(out), "--no-fit", "--no-speed-step",
              "--quiet"]
    assert main(["synthesize", "CartPole-v1", "--budget", "1", "--heldout", "0.5", *common]) == 0
    first = json.loads((out / "run.json").read_text())["split"]
    assert first["heldout_fraction"] == 0.5 and first["n_heldout"] > 0
    assert main(["synthesize", "--resume", "--budget", "2", *common]) == 0
    capsys.readouterr()
    assert json.loads((out / "run.json").read_text())["split"] == first
    reports = [json.loads((out / "programs" / f"000{c}.json").read_text())["report"] for c in (0, 1)]
    assert {r["n_transitions"] for r in reports} == {first["n_train"]}
    assert {r["heldout"]["n_transitions"] for r in reports} == {first["n_heldout"]}



def test_improve_requests_after_no_progress_say_so():
    from codeworld.synthesis import GifMctsConfig
    from codeworld.synthesis.types import IMPROVE, Outcome, ProgramEvaluation

    # no stall limit: the improvements go on, and each later one carries the note
    search = GifMcts(GifMctsConfig(allow_generate=False, stall_limit=None), seed=0)
    summary = "Over all 10 recorded transitions, the program is wrong on 5 (50%)."
    notes = []
    for _ in range(8):
        (request,) = search.propose(1)
        if request.action == IMPROVE and request.parent == 1:
            notes.append(request.feedback)
        # every program scores 0.5: no improvement ever makes progress
        search.apply(request, Outcome(f"# program {request.call}\n",
                                      ProgramEvaluation(0.5, False, summary)))
    assert notes and notes[0] == summary  # the first improvement is asked as usual
    later = [n for n in notes[1:]]
    assert later and all("earlier improvement" in n and "0.5000" in n for n in later)
    assert search.to_json()["no_progress"] >= len(notes)
