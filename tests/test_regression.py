"""Symbolic regression of a component the sparse linear fits miss (`codeworld.fitting._regression`)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from codeworld.fitting import _regression as regression
from codeworld.fitting._regression import RegressionConfig, regress_component
from codeworld.worlds.cwmb._relations import find_relations

pytest.importorskip("pyoperon")

DT, G_OVER_L, GAIN = 0.05, 9.8, 3.0
NAMES = ["theta", "omega"]
# a small, deterministic search: it ends on its evaluation count, long before the budget
CONFIG = RegressionConfig(budget_s=60.0, max_evaluations=300_000, population=300)


@pytest.fixture(autouse=True)
def fresh_answers(tmp_path, monkeypatch):
    """Each test searches afresh: its own user cache, nothing remembered in the process."""
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    regression._ANSWERS.clear()


def _pendulum(episodes: int, seed: int):
    """A driven pendulum, semi-implicit: the speed moves by a torque through the angle's
    cosine, the angle by the NEW speed; 20-step episodes from random states and torques."""
    rng = np.random.default_rng(seed)
    obs, actions, nxt, episode = [], [], [], []
    for e in range(episodes):
        theta, omega = rng.uniform(-1.5, 1.5), rng.uniform(-1.0, 1.0)
        for _ in range(20):
            a = rng.uniform(-1.0, 1.0)
            new_omega = omega + DT * (-G_OVER_L * math.sin(theta) + GAIN * a * math.cos(theta))
            new_theta = theta + DT * new_omega
            obs.append([theta, omega]), actions.append([a]), nxt.append([new_theta, new_omega])
            episode.append(e)
            theta, omega = new_theta, new_omega
    return np.array(obs), np.array(actions), np.array(nxt), np.array(episode)


def _inputs(obs, actions):
    return np.column_stack([obs, actions]), ["theta", "omega", "action[0]"]


def _compiled(expression, name="regressed"):
    """The emitted function, compiled by Numba in nopython mode."""
    numba = pytest.importorskip("numba")
    source = expression.function(name).replace("action[0]", "action0")
    namespace = {"math": math}
    exec(compile("import math\n" + source, "<regressed>", "exec"), namespace)
    return numba.njit(namespace[name])


def test_a_nonlinear_speed_is_recovered_where_the_linear_fits_miss_it(tmp_path, monkeypatch):
    obs, actions, nxt, episode = _pendulum(12, seed=0)
    linear = {r.name: r for r in find_relations(obs, actions, nxt, NAMES, discrete=False,
                                                n_actions=0, atol=1e-6, rtol=1e-6)}
    assert "omega" not in linear or linear["omega"].exact < 0.5  # a torque times a cosine

    x, names = _inputs(obs, actions)
    found = regress_component(x, names, nxt[:, 1], atol=1e-6, rtol=1e-6, base=1, groups=episode,
                              seed=0, config=CONFIG)
    assert found is not None and found.form == "change"
    assert found.heldout_right == 1.0 and found.train_right == 1.0
    assert found.heldout_error < found.baseline_error
    assert found.budget_s == 60.0 and 0 < found.seconds < 60.0 and not found.budget_hit

    # on transitions of episodes it never saw, compiled as a code world model would be
    obs2, actions2, nxt2, _ = _pendulum(5, seed=1)
    step = _compiled(found)
    args = [{"theta": obs2[:, 0], "omega": obs2[:, 1], "action[0]": actions2[:, 0]}[name]
            for name in found.names]
    pred = np.array([step(*row) for row in zip(*args)])
    assert np.all(np.abs(pred - nxt2[:, 1]) <= 1e-6 + 1e-6 * np.abs(nxt2[:, 1]))
    assert np.allclose(found.predict(*_inputs(obs2, actions2)), pred, rtol=1e-12, atol=1e-12)

    # the answer is kept in the user cache; the same seed searching afresh finds the same
    assert list((tmp_path / "cache" / "regression").glob("*.json"))
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "elsewhere"))
    regression._ANSWERS.clear()
    again = regress_component(x, names, nxt[:, 1], atol=1e-6, rtol=1e-6, base=1, groups=episode,
                              seed=0, config=CONFIG)
    assert again is not None and again.source == found.source


def test_a_position_moved_by_the_new_speed_reads_the_new_speed():
    obs, actions, nxt, episode = _pendulum(12, seed=0)
    x = np.column_stack([obs, actions, nxt[:, 1]])
    found = regress_component(x, ["theta", "omega", "action[0]", "new_omega"], nxt[:, 0],
                              atol=1e-6, rtol=1e-6, base=0, groups=episode, seed=0,
                              config=RegressionConfig(budget_s=60.0, max_evaluations=50_000))
    assert found is not None and found.heldout_right == 1.0
    assert found.source == "theta + 0.05*new_omega"


def test_nothing_is_kept_where_the_held_out_error_does_not_fall():
    rng = np.random.default_rng(0)
    x = rng.normal(size=(200, 2))
    noise = rng.normal(size=200)  # no law to find: held-out error cannot fall below the mean's
    assert regress_component(x, ["a", "b"], noise, atol=1e-6, rtol=1e-6,
                             groups=np.repeat(np.arange(10), 20), seed=0,
                             config=RegressionConfig(budget_s=30.0, max_evaluations=5_000,
                                                     population=100, max_length=40)) is None


def test_without_the_library_regression_is_skipped_with_a_note(monkeypatch):
    monkeypatch.setattr(regression, "unavailable", lambda: "pyoperon is not installed")
    obs, actions, nxt, episode = _pendulum(4, seed=0)
    x, names = _inputs(obs, actions)
    assert regress_component(x, names, nxt[:, 1], atol=1e-6, rtol=1e-6, base=1,
                             groups=episode) is None


def test_bad_settings_are_refused():
    with pytest.raises(ValueError, match="budget_s"):
        RegressionConfig(budget_s=0)
    with pytest.raises(ValueError, match="Python form"):
        RegressionConfig(symbols="add,pow")
    with pytest.raises(ValueError, match="disagree"):
        regress_component(np.zeros((10, 2)), ["a"], np.zeros(10), atol=0, rtol=0)


def test_the_data_section_shows_a_regressed_rule_where_the_linear_fit_misses():
    from codeworld.worlds.cwmb._cwmb import starter_lines
    from codeworld.worlds.cwmb._relations import relations_text

    obs, actions, nxt, episode = _pendulum(12, seed=0)
    fit = dict(discrete=False, n_actions=0, atol=1e-6, rtol=1e-6)
    plain = {r.name: r for r in find_relations(obs, actions, nxt, NAMES, **fit)}
    found = find_relations(obs, actions, nxt, NAMES, **fit, regression=CONFIG, episodes=episode)
    by_name = {r.name: r for r in found}
    assert all(plain[name].exact < 1.0 for name in NAMES if name in plain)
    assert by_name["omega"].exact == 1.0 and by_name["theta"].exact == 1.0
    text = relations_text(found, len(obs))
    assert f"new omega = {by_name['omega'].formula}  (right on every recorded transition" in text

    # the rules as the first lines of a program, each new value after those it reads: Numba
    # compiles it, and it steps as the data did
    numba = pytest.importorskip("numba")
    source = ("import math\nimport numpy as np\n\ndef step(state, action):\n"
              "    theta, omega = state[0], state[1]\n" + starter_lines(found)
              + "    return np.array([new_theta, new_omega])\n")
    namespace: dict = {}
    exec(compile(source, "<data section>", "exec"), namespace)
    step = numba.njit(namespace["step"])
    pred = np.array([step(s, a) for s, a in zip(obs, actions)])
    assert np.allclose(pred, nxt, rtol=1e-6, atol=1e-6)
