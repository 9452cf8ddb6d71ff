"""The data's fitted relations shown in the prompts (`codeworld.worlds.cwmb._relations`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from codeworld.synthesis import AssistConfig
from codeworld.worlds.cwmb._cwmb import make_cwmb_world
from codeworld.worlds.cwmb._relations import (angle_pairs, find_done_rule, find_relations,
                                           find_reward_relation, outcomes_text, relations_text)
from codeworld.synthesis.types import GENERATE, Request


def _evaluate(formula: str, names, state, action) -> float:
    """The formula's value for one transition, as the LLM's code would compute it."""
    scope = dict(zip(names, (float(v) for v in state)))
    scope["action"] = action
    scope["np"], scope["math"] = np, math
    return eval(formula, {"__builtins__": {}}, scope)  # trusted: the formula is codeworld's own


def _sliding_block(n: int = 400, seed: int = 0):
    """A block on a rail: position moves by its old velocity, the action pushes the velocity and
    a spring pulls it back. The true rule is linear, so the fit must be exact."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, size=(n, 3))        # position, velocity, an unrelated sensor
    actions = rng.integers(0, 2, size=n)
    nxt = obs.copy()
    nxt[:, 0] = obs[:, 0] + 0.05 * obs[:, 1]
    nxt[:, 1] = obs[:, 1] - 0.3 * obs[:, 0] + np.where(actions == 1, 0.1, -0.1)
    nxt[:, 2] = rng.uniform(-1, 1, size=n)       # noise: no rule
    return obs, actions, nxt


def test_an_exact_linear_rule_is_found_written_as_code_and_right_on_every_transition():
    obs, actions, nxt = _sliding_block()
    names = ["position", "velocity", "sensor"]
    found = find_relations(obs, actions, nxt, names, discrete=True, n_actions=2, atol=1e-8, rtol=1e-8)
    by_name = {r.name: r for r in found}
    assert set(by_name) == {"position", "velocity"}          # the noise gets no rule
    assert by_name["position"].formula == "position + 0.05*velocity"
    assert "(-0.1, 0.1)[action]" in by_name["velocity"].formula
    for r in found:
        assert r.exact == 1.0
        for k in range(20):
            assert abs(_evaluate(r.formula, names, obs[k], int(actions[k])) - nxt[k, r.index]) < 1e-8
    text = relations_text(found, len(obs))
    assert "new position = position + 0.05*velocity  (right on every recorded transition)" in text
    assert "sensor" not in text


def test_whole_number_states_get_the_most_frequent_step_of_each_action():
    # A 4x5 grid as one number (row * 5 + column); moves off the grid leave it where it is.
    rng = np.random.default_rng(1)
    obs = rng.integers(0, 20, size=600).astype(np.float64)[:, None]
    actions = rng.integers(0, 4, size=600)
    row, col = obs[:, 0] // 5, obs[:, 0] % 5
    row2 = np.clip(row + np.select([actions == 0, actions == 2], [-1, 1], 0), 0, 3)
    col2 = np.clip(col + np.select([actions == 1, actions == 3], [1, -1], 0), 0, 4)
    nxt = (row2 * 5 + col2)[:, None]
    found = find_relations(obs, actions, nxt, ["cell"], discrete=True, n_actions=4, atol=0, rtol=0)
    assert len(found) == 1
    r = found[0]
    assert r.formula == "cell + (-5, 1, 5, -1)[action]"
    wall = ((actions == 0) & (row == 0)) | ((actions == 2) & (row == 3)) | \
        ((actions == 1) & (col == 4)) | ((actions == 3) & (col == 0))
    # the moves off the top and bottom rows are exceptions the data shows: the cell stays
    top_bottom = ((actions == 0) & (row == 0)) | ((actions == 2) & (row == 3))
    assert r.exceptions[0].startswith("when that value is one of {-5, -4, -3, -2, -1, 20, 21, 22, 23, 24}: "
                                      "new cell = cell (unchanged)")
    rule = obs[:, 0] + np.array([-5, 1, 5, -1])[actions]
    listed = np.isin(rule, [-5, -4, -3, -2, -1, 20, 21, 22, 23, 24])
    assert listed[top_bottom].all()
    assert abs(r.exact - np.mean(np.where(listed, obs[:, 0], rule) == nxt[:, 0])) < 1e-12
    assert r.exact > 1 - wall.mean()
    assert "right within tolerance on" in r.line() and "\n  - except when that value" in r.line()


def test_continuous_actions_and_unchanged_components():
    rng = np.random.default_rng(2)
    obs = rng.uniform(-2, 2, size=(300, 2))
    actions = rng.uniform(-1, 1, size=(300, 1))
    nxt = obs.copy()
    nxt[:, 0] = obs[:, 0] + 0.25 * actions[:, 0]
    found = find_relations(obs, actions, nxt, ["x", "level"], discrete=False, n_actions=0,
                           atol=1e-6, rtol=1e-6)
    assert [(r.name, r.formula, r.exact) for r in found] == [
        ("x", "x + 0.25*action[0]", 1.0), ("level", "level", 1.0)]
    assert found[1].constant


def test_random_data_and_tiny_buffers_give_no_rule():
    rng = np.random.default_rng(3)
    obs = rng.uniform(size=(200, 2))
    nxt = rng.uniform(size=(200, 2))
    actions = rng.integers(0, 3, size=200)
    assert find_relations(obs, actions, nxt, ["a", "b"], discrete=True, n_actions=3,
                          atol=1e-5, rtol=1e-5) == []
    assert relations_text([], 200) == ""
    assert find_relations(obs[:1], actions[:1], nxt[:1], ["a", "b"], discrete=True, n_actions=3,
                          atol=1e-5, rtol=1e-5) == []


def test_prompts_show_the_relations_of_the_buffer_unless_switched_off():
    request = Request(action=GENERATE, parent=0, prefix="", call=0)
    world = make_cwmb_world("CartPole-v1")
    prompts, evaluator = world.prompts, world.evaluator
    text = prompts.messages(request)[1]["content"]
    assert "## What the recorded data shows" in text
    # The kinematic updates of the committed buffer are exact: position from the old velocity.
    assert "new cart_position = cart_position + 0.02*cart_velocity  (right on every" in text
    assert text.index("## The form of the program") < text.index("## What the recorded data shows")
    # built from the training episodes alone: their counts, not the whole buffer's (568, 5 ends)
    train = evaluator.scorer.buffer
    n, ends = len(train), int(train.terminated.sum())
    assert n + len(evaluator.heldout.buffer) == 568 and n < 568
    assert f"- rewards: 1 on {n} transitions\n- the episode ends (done) on {ends} of {n}" in text
    assert "568" not in text
    # the done rule found in the training episodes (which may see the pole fall one way only)
    assert "new pole_angle" in text.split("- done = ", 1)[1].split("\n", 1)[0]
    world = make_cwmb_world("CartPole-v1", assist=AssistConfig(relations=False))
    off, _ = world.prompts, world.evaluator
    assert "What the recorded data shows" not in off.messages(request)[1]["content"]


def test_a_run_saved_before_the_switch_existed_resumes_without_relations():
    from codeworld.synthesis import GifMctsConfig
    from codeworld.synthesis.registry import config_from_json, config_to_json

    saved = config_to_json(GifMctsConfig())
    assert saved["assist"]["relations"] is True
    del saved["assist"]["relations"]
    assert config_from_json(GifMctsConfig, saved).assist.relations is False


def test_many_unchanged_components_are_named_on_one_line():
    rng = np.random.default_rng(4)
    obs = rng.uniform(size=(100, 12))
    nxt = obs.copy()
    nxt[:, 0] = obs[:, 0] + 0.5 * obs[:, 1]
    names = [f"s{i}" for i in range(12)]
    text = relations_text(find_relations(obs, np.zeros(100, dtype=int), nxt, names, discrete=True,
                                         n_actions=1, atol=1e-6, rtol=1e-6), 100)
    assert "- new s0 = s0 + 0.5*s1  (right on every recorded transition)" in text
    assert "- these 11 components never change (right on every recorded transition): s1, s2," in text
    assert "new s5 = s5" not in text


def test_rewards_and_episode_ends_are_counted_with_an_example_of_each_rare_one():
    obs = np.array([[0.0], [1.0], [2.0], [3.0]])
    nxt = np.array([[1.0], [2.0], [3.0], [0.0]])
    actions = np.array([[1], [1], [0], [1]])
    text = outcomes_text(obs, actions, nxt, np.array([-1.0, -1.0, -100.0, 10.0]),
                         np.array([False, False, False, True]), discrete=True)
    assert text.splitlines() == [
        "- rewards: -1 on 2 transitions; -100 on 1 transition (for example state [2], action 0 -> "
        "next state [3], done false); 10 on 1 transition (for example state [3], action 1 -> "
        "next state [0], done true)",
        "- the episode ends (done) on 1 of 4 transitions (for example state [3], action 1 -> "
        "next state [0], reward 10)"]
    many = outcomes_text(obs, actions, nxt, np.linspace(-2, 0, 4), np.zeros(4, dtype=bool),
                         discrete=True, max_values=3)
    assert many.splitlines() == ["- rewards: 4 different values from -2 to 0",
                                 "- no recorded transition ends the episode"]
    section = relations_text([], 4, outcomes=text)
    assert section.startswith("## What the recorded data shows\n\nOver the 4 recorded transitions.")
    assert "Rewards and episode ends:\n\n- rewards: -1 on 2" in section
    assert "Least-squares" not in section


def test_a_done_rule_right_on_every_transition_is_found_when_one_exists():
    rng = np.random.default_rng(5)
    nxt = rng.uniform(-1, 1, size=(300, 2))
    ends = np.abs(nxt[:, 1]) > 0.8                      # ends when the angle leaves +-0.8
    rule = find_done_rule(nxt, np.zeros(300, dtype=int), ends, ["x", "angle"], discrete=True,
                          n_actions=2)
    assert rule is not None and rule.startswith("abs(new angle) > ")
    t = float(rule.split("> ")[1])
    assert np.array_equal(np.abs(nxt[:, 1]) > t, ends)
    # whole-number states: equality with the goal cell; the action can end it too
    cells = rng.integers(0, 10, size=200).astype(np.float64)[:, None]
    actions = rng.integers(0, 3, size=200)
    ends = (cells[:, 0] == 9) | (actions == 2)
    assert find_done_rule(cells, actions, ends, ["cell"], discrete=True, n_actions=3) in (
        "(action == 2) or (new cell == 9)", "(new cell == 9) or (action == 2)")
    # no rule of this form: ends at random
    assert find_done_rule(nxt, np.zeros(300, dtype=int), rng.uniform(size=300) < 0.1, ["x", "angle"],
                          discrete=True, n_actions=2) is None
    assert find_done_rule(nxt, np.zeros(300, dtype=int), np.zeros(300, dtype=bool), ["x", "angle"],
                          discrete=True, n_actions=2) is None
    text = outcomes_text(nxt, np.zeros(300, dtype=int), nxt, np.ones(300), np.abs(nxt[:, 1]) > 0.8,
                         discrete=True, names=["x", "angle"], n_actions=2)
    assert f"- done = {rule}  (right on every recorded transition" in text


def test_a_component_set_from_the_action_alone_does_not_mention_its_old_value():
    rng = np.random.default_rng(6)
    obs = rng.uniform(-1, 1, size=(200, 2))
    actions = rng.uniform(-1, 1, size=(200, 2))
    nxt = np.stack([obs[:, 0], 50 * actions[:, 1]], axis=1)   # an actuator force reading
    found = find_relations(obs, actions, nxt, ["x", "force"], discrete=False, n_actions=0,
                           atol=1e-8, rtol=1e-8)
    assert [(r.name, r.formula, r.exact) for r in found] == [
        ("x", "x", 1.0), ("force", "50*action[1]", 1.0)]


def test_long_states_get_counts_without_examples():
    obs = np.zeros((3, 40))
    text = outcomes_text(obs, np.zeros(3, dtype=int), obs, np.array([0.0, 0.0, 5.0]),
                         np.array([False, False, True]), discrete=True)
    assert text.splitlines() == ["- rewards: 0 on 2 transitions; 5 on 1 transition",
                                 "- the episode ends (done) on 1 of 3 transitions"]


def test_nonlinear_terms_clips_and_wraps_are_recovered_from_data():
    # an environment made up here: a pendulum-like velocity (a sine of the angle), a clipped
    # speed and an angle kept in [-pi, pi); none of it is named anywhere in the package
    rng = np.random.default_rng(4)
    n = 400
    actions = rng.integers(0, 2, size=n)
    obs = np.column_stack([rng.uniform(-np.pi, np.pi, n), rng.uniform(-3, 3, n),
                           rng.uniform(0, 2, n)])

    def step(o, a):
        angle, omega, speed = o
        omega2 = omega + 0.05 * math.sin(angle) + (0.1 if a else -0.1)
        angle2 = (angle + 0.5 * omega + np.pi) % (2 * np.pi) - np.pi
        speed2 = min(max(speed + 0.3 * (1 if a else -1), 0.0), 2.0)
        return [angle2, omega2, speed2]

    nxt = np.array([step(o, a) for o, a in zip(obs, actions)])
    found = {r.name: r for r in find_relations(obs, actions, nxt, ["angle", "omega", "speed"],
                                               discrete=True, n_actions=2, atol=1e-8, rtol=1e-8)}
    omega = found["omega"]
    assert omega.exact == 1.0 and "0.05*math.sin(angle)" in omega.formula
    speed = found["speed"]
    assert speed.exact == 1.0 and speed.formula.startswith("max(min(") and ", 2), 0)" in speed.formula
    angle = found["angle"]
    assert angle.exact == 1.0 and "% (2*math.pi) - math.pi" in angle.formula
    # the formulas are Python: evaluated on the data they give the recorded next values
    for r, j in ((omega, 1), (speed, 2), (angle, 0)):
        got = [eval(r.formula, {"math": math, "np": np},
                    {"angle": o[0], "omega": o[1], "speed": o[2], "action": int(a)})
               for o, a in zip(obs, actions)]
        assert np.allclose(got, nxt[:, j], atol=1e-7)


def test_an_angle_held_as_its_cosine_and_sine_is_fitted_through_the_angle():
    # A pendulum of this test's own, its angle stored as (cos, sin): the new velocity is linear in
    # the old sine, the new angle moves by the new velocity. No fit of the cosine's own change is
    # right; through the angle both are, on episodes the fit never saw too.
    rng = np.random.default_rng(3)

    def rollouts(n_episodes: int):
        obs, actions, nxt = [], [], []
        for _ in range(n_episodes):
            theta, omega = rng.uniform(-np.pi, np.pi), rng.uniform(-1, 1)
            for _ in range(40):
                u = rng.uniform(-1, 1)
                omega2 = omega + 0.4 * math.sin(theta) + 0.2 * u
                theta2 = theta + 0.1 * omega2
                obs.append([math.cos(theta), math.sin(theta), omega])
                actions.append([u])
                nxt.append([math.cos(theta2), math.sin(theta2), omega2])
                theta, omega = theta2, omega2
        return np.array(obs), np.array(actions), np.array(nxt)

    names = ["c", "s", "w"]
    obs, actions, nxt = rollouts(10)
    kwargs = dict(discrete=False, n_actions=0, atol=1e-6, rtol=1e-6)
    plain = {r.name: r for r in find_relations(obs, actions, nxt, names, **kwargs)}
    assert all(plain[name].exact < 0.5 for name in ("c", "s") if name in plain)
    found = {r.name: r for r in find_relations(obs, actions, nxt, names, angles=True, **kwargs)}
    assert found["w"].exact == 1.0
    for name in ("c", "s"):
        assert found[name].exact == 1.0 and "math.atan2(s, c)" in found[name].formula
    held_obs, held_actions, held_next = rollouts(3)
    for j, name in enumerate(names):
        got = [_evaluate(found[name].formula, names, o, np.asarray(a))
               for o, a in zip(held_obs, held_actions)]
        assert np.allclose(got, held_next[:, j], atol=1e-6)


def test_a_reward_formula_of_the_new_state_is_recovered():
    rng = np.random.default_rng(5)
    n = 300
    nxt = rng.uniform(-2, 2, size=(n, 2))
    actions = rng.uniform(-1, 1, size=(n, 1))
    rewards = -(nxt[:, 0] ** 2 + 0.1 * nxt[:, 1] ** 2 + 0.01 * actions[:, 0] ** 2)
    r = find_reward_relation(nxt, actions, rewards, ["x", "v"], discrete=False, n_actions=0,
                             atol=1e-8, rtol=1e-8)
    assert r is not None and r.exact == 1.0
    assert r.line().startswith("- reward = -new_x**2 - 0.1*new_v**2 - 0.01*action[0]**2")


def test_a_reward_on_the_old_angle_held_as_its_cosine_and_sine_is_recovered_exactly():
    # An environment built here: a pendulum whose state is (cos th, sin th, w), rewarded by a
    # cost on the angle it started from, its speed and the torque. The new state alone gives an
    # approximate fit; with the old state and its cosine-sine pair read as an angle, the exact one.
    rng = np.random.default_rng(8)
    n = 400
    th, w = rng.uniform(-np.pi, np.pi, n), rng.uniform(-8, 8, n)
    u = rng.uniform(-2, 2, size=(n, 1))
    w2 = np.clip(w + 0.75 * np.sin(th) + 0.15 * u[:, 0], -8, 8)
    th2 = th + 0.05 * w2
    obs = np.column_stack([np.cos(th), np.sin(th), w])
    nxt = np.column_stack([np.cos(th2), np.sin(th2), w2])
    rewards = -(th ** 2 + 0.1 * w ** 2 + 0.001 * u[:, 0] ** 2)
    names = ["c", "s", "w"]
    new_only = find_reward_relation(nxt, u, rewards, names, discrete=False, n_actions=0,
                                    atol=1e-6, rtol=1e-6)
    assert new_only is None or new_only.exact < 0.5
    found = find_reward_relation(nxt, u, rewards, names, discrete=False, n_actions=0,
                                 atol=1e-6, rtol=1e-6, obs=obs)
    assert found is not None and found.exact == 1.0
    assert found.formula == "-math.atan2(s, c)**2 - 0.1*w**2 - 0.001*action[0]**2"
    # the formula runs on the names the scaffold reads at the top of `step`
    row = {"c": obs[0, 0], "s": obs[0, 1], "w": obs[0, 2], "action": u[0], "math": math}
    assert eval(found.formula, row) == pytest.approx(rewards[0])


def test_a_cosine_sine_pair_is_read_as_one_angle_and_nothing_else_is():
    rng = np.random.default_rng(9)
    th = rng.uniform(-np.pi, np.pi, 50)
    x = np.column_stack([np.cos(th), rng.normal(size=50), np.sin(th), 0.5 * np.cos(th)])
    columns, labels = angle_pairs(x, ["a", "b", "c", "d"])
    assert labels == ["math.atan2(c, a)", "math.atan2(c, a)**2"]
    assert np.allclose(columns[0], th)


def test_without_structure_the_fits_are_plain_linear_ones():
    rng = np.random.default_rng(6)
    obs = rng.uniform(-np.pi, np.pi, size=(300, 2))
    actions = rng.integers(0, 2, size=300)
    nxt = np.column_stack([obs[:, 0], obs[:, 1] + 0.05 * np.sin(obs[:, 0])])
    full = find_relations(obs, actions, nxt, ["a", "b"], discrete=True, n_actions=2, atol=1e-8,
                          rtol=1e-8)
    plain = find_relations(obs, actions, nxt, ["a", "b"], discrete=True, n_actions=2, atol=1e-8,
                           rtol=1e-8, structure=False)
    assert "math.sin(a)" in full[1].formula and full[1].exact == 1.0
    assert all("math." not in r.formula for r in plain)


def test_an_approximate_reward_of_many_values_with_a_control_cost_on_the_whole_action_is_shown():
    # A running robot's reward: its new forward speed, less a cost on the squared size of a
    # six-entry action, and a small unmodelled part: no formula is exact, one explains most of it.
    rng = np.random.default_rng(7)
    n = 400
    nxt = rng.normal(size=(n, 20))  # more components than the nonlinear library takes
    actions = rng.uniform(-1, 1, size=(n, 6))
    rewards = nxt[:, 8] - 0.1 * (actions ** 2).sum(axis=1) + 0.05 * rng.normal(size=n)
    r = find_reward_relation(nxt, actions, rewards, [f"s{j}" for j in range(20)],
                             discrete=False, n_actions=0, atol=1e-6, rtol=1e-6)
    # a constant right on one of 400 distinct values does not win over a fit explaining 99%
    assert r is not None and r.explained > 0.95 and r.exact < 0.01
    assert "new_s8" in r.formula and "np.sum(action**2)" in r.formula
    a = actions[0]
    value = _evaluate(r.formula, [f"new_s{j}" for j in range(20)], nxt[0], a)
    assert abs(value - rewards[0]) < 0.3
