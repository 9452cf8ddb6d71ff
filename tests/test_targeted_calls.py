"""Calls that target what is left (issue 41, part 4): an *improve* request names the component
the program gets wrong on the training episodes, with its worst rows, the fits already tried and
the description's sentences about it, and keeps the rest; an equation the description states
is a candidate term of the fits before any call. Every environment here is built in the test."""

from __future__ import annotations

import numpy as np

from codeworld.llm import format_value
from codeworld.synthesis import AssistConfig
from codeworld.synthesis.types import IMPROVE, Request
from codeworld.worlds.cwmb._cwmb import make_cwmb_world
from codeworld.worlds.cwmb._feedback import Targets, mentions, target_of, targeted_errors
from codeworld.worlds.cwmb._relations import description_terms

DESCRIPTION = """# Sled

## Description

A sled slides along a slope; the action pushes it down or up the slope.

## Observation Space

| Num | Observation | Min | Max |
|---|---|---|---|
| 0 | Sled Position | -3 | 3 |
| 1 | Sled Speed | -3 | 3 |

The sled speed grows where the slope is steep.{equation}

## Rewards

A reward of 1 is given on every step.

## Episode End

The episode terminates when the sled position leaves [-2.5, 2.5].
"""

EQUATION = " It follows `sled_speed = sled_speed + 0.05 * tanh(sled_position) * sled_speed`."


def _sled(tmp_path, equation: bool = False, episodes: int = 12, steps: int = 25):
    """Recorded episodes of the sled (its speed changes by 0.05 tanh(position) * speed, and by
    0.02 per push), saved as a dataset with its description beside it."""
    rng = np.random.default_rng(0)
    rows = []
    for episode in range(episodes):
        x = rng.uniform(-1.0, 1.0, size=2)
        for t in range(steps):
            a = int(rng.integers(0, 2))
            nxt = np.array([x[0] + 0.1 * x[1],
                            x[1] + 0.05 * np.tanh(x[0]) * x[1] + (0.02 if a else -0.02)])
            done = abs(nxt[0]) > 2.5
            rows.append((x, a, nxt, done, t == 0))
            x = nxt
            if done:
                break
    obs, actions, nxt, ends, starts = (np.array([r[k] for r in rows]) for k in range(5))
    path = tmp_path / "sled.npz"
    np.savez(path, obs=obs, actions=actions.reshape(-1, 1).astype(np.float64),
             rewards=np.ones(len(rows)), next_obs=nxt, terminated=ends,
             truncated=np.zeros(len(rows), bool), episode_start=np.maximum.accumulate(np.where(starts, np.arange(len(rows)), 0)))
    (tmp_path / "sled.md").write_text(DESCRIPTION.format(equation=EQUATION if equation else ""))
    return f"data:{path}"


# a program right on the position, the reward and done, wrong on the speed (it leaves out the
# slope's term)
WRONG_SPEED = """import numpy as np


def step(state, action):
    sled_position = float(state[0])
    sled_speed = float(state[1])
    action = int(action)
    new_sled_position = sled_position + 0.1 * sled_speed
    new_sled_speed = sled_speed + (0.02 if action == 1 else -0.02)
    reward = 1.0
    done = abs(new_sled_position) > 2.5
    return np.array([new_sled_position, new_sled_speed]), float(reward), bool(done)
"""


def test_an_improve_request_names_the_wrong_component_and_its_worst_training_rows(tmp_path):
    env = _sled(tmp_path)
    world = make_cwmb_world(env, assist=AssistConfig(regression=False), heldout_fraction=0.3)
    evaluator = world.evaluator
    evaluation = evaluator.evaluate(WRONG_SPEED)
    assert not evaluation.buggy and evaluation.score < 1.0
    request = Request(call=1, action=IMPROVE, parent=0, program=WRONG_SPEED,
                      feedback=evaluation.feedback, mispredicted=evaluation.mispredicted)
    text = world.prompts.messages(request)[1]["content"]
    assert target_of(evaluation.feedback) == "new sled_speed"
    assert "Fix one thing: new sled_speed." in text
    assert "Keep as is (right on every transition): sled_position, reward, done." in text
    # its rows of largest error on the training episodes, the largest first
    train = evaluator.scorer.buffer
    error = np.abs(train.obs[:, 1] + np.where(train.actions[:, 0] == 1, 0.02, -0.02)
                   - train.next_obs[:, 1])
    worst = train.obs[int(np.argmax(error))]
    rows = text.split("its largest errors (state, action: predicted, true):\n")[1].splitlines()
    assert rows[0].strip().startswith(format_value(worst))
    # no held-out transition is shown
    held = evaluator.heldout.buffer
    assert len(held) > 0
    assert not any(format_value(state) in text for state in held.obs)
    # what was tried for it, and what the description says of it
    assert "- tried already (the recorded data's fit; do not write it back): new sled_speed = " in text
    assert '- the description says: "| 1 | Sled Speed | -3 | 3 |"' in text
    # short: the data section and the skeleton are left out, the names kept
    assert "## What the recorded data shows" not in text and "Keep this form" not in text
    assert "- state[1]: sled_speed" in text
    # the answer starts where the change is: the program's lines before the one that assigns it
    start = world.prompts.messages(request)[-1]["content"]
    assert start.startswith("```python\n# new sled_speed was wrong")
    assert start.endswith("    new_sled_position = sled_position + 0.1 * sled_speed\n")
    rest = ("    new_sled_speed = sled_speed + 0.05 * np.tanh(sled_position) * sled_speed"
            " + (0.02 if action == 1 else -0.02)\n" + WRONG_SPEED.split("-0.02)\n", 1)[1] + "```")
    corrected = world.prompts.program(request, rest)
    assert corrected is not None and evaluator.evaluate(corrected).score >= 1.0 - 1e-5
    # a closing bracket too many on the rewritten line is dropped, not the rest of the answer
    slip = rest.replace("-0.02)\n", "-0.02))\n", 1)
    assert world.prompts.program(request, slip) == corrected


def test_a_description_equation_becomes_a_fitted_term_stated_as_exact(tmp_path):
    (tmp_path / "plain").mkdir()
    (tmp_path / "stated").mkdir()
    without = make_cwmb_world(_sled(tmp_path / "plain"), assist=AssistConfig(regression=False))
    line = [ln for ln in without.assists.data_section().splitlines()
            if ln.startswith("- new sled_speed = ")]
    assert not line or "right on every recorded transition" not in line[0]
    world = make_cwmb_world(_sled(tmp_path / "stated", equation=True),
                            assist=AssistConfig(regression=False))
    line = [ln for ln in world.assists.data_section().splitlines()
            if ln.startswith("- new sled_speed = ")]
    assert len(line) == 1 and "math.tanh(sled_position) * sled_speed" in line[0]
    assert "(right on every recorded transition)" in line[0]
    # the data model writes it, and is right on every training transition
    data_model = world.assists.data_model()
    assert "math.tanh(sled_position)" in data_model.program
    assert world.evaluator.evaluate(data_model.program).score >= 1.0 - 1e-5


def test_equations_are_read_in_code_math_and_italics_with_constants_and_time_subscripts():
    text = ("The speed follows `v_new = v + 0.05 * tanh(x) * v` and $p = p + 0.1*v^2$.\n\n"
            "*vt+1 = vt + (action - 1) * force - cos(3 * xt) * gravity*\n\n"
            "where force = 0.001 and gravity = 0.0025. A flag `debug=True` is no equation, "
            "nor is `w = q * v` (q is named nowhere).")
    assert description_terms(text, ["x", "v", "p"], discrete=True) == [
        "math.tanh(x) * v", "v ** 2", "action - 1", "math.cos(3 * x)"]
    # a continuous action is a vector: a term on it whole is left out
    assert description_terms(text, ["x", "v", "p"], discrete=False) == [
        "math.tanh(x) * v", "v ** 2", "math.cos(3 * x)"]


def test_the_sentences_about_a_component_are_found_by_its_words():
    text = DESCRIPTION.format(equation="")
    assert mentions(text, ("sled", "speed")) == ("| 1 | Sled Speed | -3 | 3 |",
                                                 "The sled speed grows where the slope is steep.")
    assert mentions(text, ("terminat",), prefix=True) == (
        "The episode terminates when the sled position leaves [-2.5, 2.5].",)


def test_a_rule_the_data_gets_right_everywhere_is_given_to_write_back_and_the_reward_targeted():
    n = 12
    states = np.stack([np.arange(n, dtype=float), np.zeros(n)], axis=1)
    truth = states + np.array([1.0, 0.0])
    rewards = np.where(np.arange(n) % 3 == 0, 5.0, 0.0)
    common = dict(states=states, actions=np.zeros((n, 1)), next_states=truth, rewards=rewards,
                  dones=np.zeros(n, bool), predicted_dones=np.zeros(n, bool), names=("x", "y"),
                  state_atol=1e-6, state_rtol=0.0, reward_atol=1e-6, reward_rtol=0.0,
                  discrete=True)
    targets = Targets(tried={"x": ("- new x = x + 1  (right on every recorded transition)",),
                             "reward": ("- rewards: 0 on 8 transitions; 5 on 4 transitions",)})
    broken = truth.copy()
    broken[:, 0] = states[:, 0]  # x left unchanged
    text = targeted_errors(predicted_states=broken, predicted_rewards=rewards, targets=targets,
                           **common)
    assert target_of(text) == "new x"
    assert "Keep as is (right on every transition): y, reward, done." in text
    assert ("- the recorded data's rule (write it as it is): new x = x + 1  (right on every "
            "recorded transition)") in text
    assert "mostly left unchanged where it should change" in text
    # the reward, wrong on a third, with the state right: its worst rows are the rewards of 5
    text = targeted_errors(predicted_states=truth, predicted_rewards=np.zeros(n), targets=targets,
                           **common)
    assert target_of(text) == "reward" and "Also wrong" not in text
    assert "  [0, 0], 0: 0, true 5" in text and "- tried already" in text


POINT = """# Point

## Description

A point moves on a plane; each action moves it a step of 0.1 left, right, down or up.

## Observation Space

| Num | Observation | Min | Max |
|---|---|---|---|
| 0 | x | -2 | 2 |
| 1 | y | -2 | 2 |

## Rewards

The reward is the negative distance of the new position to the origin,
`reward = -sqrt(x^2 + y^2)`.

## Episode End

The episode never terminates.
"""


def _point(tmp_path) -> str:
    """Recorded episodes of the point (reward: minus its new distance to the origin), saved as a
    dataset with its description beside it."""
    rng = np.random.default_rng(1)
    steps = np.array([[-0.1, 0.0], [0.1, 0.0], [0.0, -0.1], [0.0, 0.1]])
    rows = []
    for _ in range(10):
        x = rng.uniform(-1.0, 1.0, size=2)
        for t in range(30):
            a = int(rng.integers(0, 4))
            nxt = x + steps[a]
            rows.append((x, a, nxt, -float(np.hypot(*nxt)), t == 0))
            x = nxt
    obs, actions, nxt, rewards, starts = (np.array([r[k] for r in rows]) for k in range(5))
    path = tmp_path / "point.npz"
    n = len(rows)
    np.savez(path, obs=obs, actions=actions.reshape(-1, 1).astype(np.float64), rewards=rewards,
             next_obs=nxt, terminated=np.zeros(n, bool), truncated=np.zeros(n, bool),
             episode_start=np.maximum.accumulate(np.where(starts, np.arange(n), 0)))
    (tmp_path / "point.md").write_text(POINT)
    return f"data:{path}"


def test_a_reward_equation_of_the_description_is_a_term_of_the_reward_fit(tmp_path):
    world = make_cwmb_world(_point(tmp_path), assist=AssistConfig(regression=False))
    # the data section states the description's reward, right on every recorded transition
    line = [ln for ln in world.assists.data_section().splitlines()
            if ln.startswith("- reward = ")]
    assert len(line) == 1 and "math.sqrt(new_x ** 2 + new_y ** 2)" in line[0]
    assert "(right on every recorded transition)" in line[0]
    # and the data model writes it: right on every training transition, reward included
    data_model = world.assists.data_model()
    assert "math.sqrt(new_x ** 2 + new_y ** 2)" in data_model.program
    assert world.evaluator.evaluate(data_model.program).score >= 1.0 - 1e-5


CORRIDOR = """# Corridor

## Description

A walker in a corridor of cells 0 to 8 steps left (action 0) or right (action 1); cell 8 is the exit.

## Observation Space

| Num | Observation | Min | Max |
|---|---|---|---|
| 0 | Cell | 0 | 8 |

## Rewards

- -1 for every step.
- +10 for reaching the exit.

## Episode End

The episode terminates when the walker reaches the exit.
"""


def _corridor(tmp_path) -> str:
    """Recorded episodes of the corridor that never reach the exit: at cell 7 the walker always
    turned back. Saved as a dataset with its description beside it."""
    rng = np.random.default_rng(2)
    rows = []
    for _ in range(16):
        x = int(rng.integers(0, 7))
        for t in range(12):
            a = 0 if x == 7 else int(rng.integers(0, 2))
            nxt = max(x + (1 if a else -1), 0)
            rows.append((x, a, nxt, t == 0))
            x = nxt
    obs, actions, nxt, starts = (np.array([r[k] for r in rows], dtype=float) for k in range(4))
    n = len(rows)
    path = tmp_path / "corridor.npz"
    np.savez(path, obs=obs.reshape(-1, 1), actions=actions.reshape(-1, 1), rewards=-np.ones(n),
             next_obs=nxt.reshape(-1, 1), terminated=np.zeros(n, bool), truncated=np.zeros(n, bool),
             episode_start=np.maximum.accumulate(np.where(starts > 0, np.arange(n), 0)))
    (tmp_path / "corridor.md").write_text(CORRIDOR)
    return f"data:{path}"


# what an answer to the unseen-reward request writes after its start: the exit's condition,
# reward and end
EXIT = """new_cell == 8:
        reward = 10.0
        done = True
"""


def test_a_reward_the_description_states_and_the_data_never_shows_is_asked_for(tmp_path):
    from codeworld.synthesis import GifMcts, Rex, synthesize
    from codeworld.synthesis.fakes import ScriptedLLM
    from codeworld.worlds.cwmb._feedback import described_rewards

    assert described_rewards(CORRIDOR) == ((-1.0, "-1 for every step."),
                                           (10.0, "+10 for reaching the exit."))
    # not a threshold to reach, a value under another setting, a bound, a number in a name
    text = ("# X\n\n## Description\n\nA reward of 7 in the text.\n\n## Rewards\n\n- +5 at the goal.\n"
            "The reward threshold is 100. If `dense=True`, a reward of 2 is given. A reward of 1 "
            "while |x| < 0.5 in v1.\n\n## Episode End\n\nAfter 3 steps.\n")
    assert [v for v, _ in described_rewards(text)] == [5.0, 1.0]
    env = _corridor(tmp_path)
    world = make_cwmb_world(env, assist=AssistConfig(regression=False))
    evaluator = world.evaluator
    assert evaluator.unseen_rewards == ((10.0, "+10 for reaching the exit."),)
    # the data model is exact on every training transition, but never returns the exit's +10:
    # not perfect (the search goes on), above a program that is merely close
    data = world.assists.data_model().program
    evaluation = evaluator.evaluate(data)
    assert not evaluation.buggy and 1.0 - 1e-5 < evaluation.score < 1.0 - 1e-6
    assert evaluation.report["described_rewards"] == {"unseen": [10.0], "missing": [10.0]}
    assert target_of(evaluation.feedback) == "reward"
    assert '- reward 10: the description says "+10 for reaching the exit."' in evaluation.feedback
    # the request: the whole description (the episode's end is in it), not the data section;
    # the answer starts where the reward is computed
    request = Request(call=0, action=IMPROVE, parent=1, program=data,
                      feedback=evaluation.feedback, mispredicted=None)
    messages = world.prompts.messages(request)
    assert "right on every recorded transition" in messages[1]["content"]
    assert "## Episode End" in messages[1]["content"]
    assert "## What the recorded data shows" not in messages[1]["content"]
    start = messages[-1]["content"]
    assert start.startswith("```python\n# reward: adds what the description states")
    # the answer goes on after the program's last reward or done line, with the condition
    assert start.endswith('    # the description: "+10 for reaching the exit."\n    if ')
    kept = start.split("\n", 2)[2].rsplit("    # the description", 1)[0]
    assert data.startswith(kept) and "done = " in kept.splitlines()[-1]
    # an answer that writes it where the description says, and stays right on the data: perfect
    rest = EXIT + data[len(kept):] + "```"
    good = world.prompts.program(request, rest)
    scored = evaluator.evaluate(good)
    assert scored.score >= 1.0 - 1e-9 and scored.report["described_rewards"]["missing"] == []
    # one that returns it where the data says otherwise loses to the data model
    wrong = good.replace("if new_cell == 8:", "if action == 1:")
    assert evaluator.evaluate(wrong).score < evaluation.score
    # each search starts from the data model, asks once, and stops on the answer
    for search in (GifMcts(seed=0), Rex(seed=0)):
        result = synthesize(search, llm=ScriptedLLM([rest, rest]), prompts=world.prompts,
                            evaluator=evaluator, budget=2, seeds=world.seeds)
        assert result.accounting.calls == 1 and result.best_call == 0
        assert "reward = 10.0" in result.best_program
    # switched off, the data model is perfect as it is, and no call is made
    off = make_cwmb_world(env, assist=AssistConfig(regression=False, described_rewards=False))
    assert off.evaluator.unseen_rewards == ()
    assert off.evaluator.evaluate(data).score >= 1.0 - 1e-9
