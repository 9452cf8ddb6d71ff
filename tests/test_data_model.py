"""The data model (a program written from the training episodes before the first call), the rules
it is made of, and the seeds of a search (`codeworld.worlds.cwmb._data_model`,
`codeworld.worlds.cwmb._rules`, `codeworld.synthesis.types.Seed`). Every environment here is
built in the test."""

from __future__ import annotations

import json
from types import SimpleNamespace

import numpy as np
import pytest

from codeworld.synthesis import GifMcts, GifMctsConfig, Rex, RunDir, RunSpec, synthesize
from codeworld.worlds.cwmb._checks import static_problems
from codeworld.synthesis.fakes import EchoPrompts, FakeEvaluator, ScriptedLLM, fake_program
from codeworld.synthesis.types import GENERATE, IMPROVE, Seed
from codeworld.worlds.cwmb._data_model import build_data_model
from codeworld.worlds.cwmb._relations import find_relations
from codeworld.worlds.cwmb._scaffold import build_scaffold


def _spec(obs_dim: int, n_actions: int, atol: float) -> SimpleNamespace:
    return SimpleNamespace(obs_dim=obs_dim, discrete=True, n_actions=n_actions, action_dim=1,
                           action_low=(), action_high=(), state_atol=atol, state_rtol=0.0)


def _program(source: str):
    """The `step` of a program codeworld wrote (its own code, not an LLM's)."""
    scope: dict = {}
    exec(compile(source, "<data model>", "exec"), scope)
    return scope["step"]


def _run(step, obs, actions):
    out = [step(o, a) for o, a in zip(obs, actions)]
    return (np.array([o[0] for o in out]), np.array([o[1] for o in out]),
            np.array([o[2] for o in out]))


def _model(obs, actions, nxt, rewards, ends, *, n_actions: int, atol: float, names=""):
    spec = _spec(obs.shape[1], n_actions, atol)
    scaffold = build_scaffold(spec, names, rewards=rewards, states=np.concatenate([obs, nxt]))
    return build_data_model(scaffold, obs, actions, nxt, rewards, ends, state_atol=atol,
                            state_rtol=0.0, reward_atol=1e-9, reward_rtol=0.0)


# ----------------------------------------------------------------- a world the fits get exactly


def _rail(n: int, seed: int):
    """A block on a rail: the position moves by the old velocity, the action pushes the velocity,
    a spring pulls it back; the reward is a cost on the new position's square (many values);
    the episode ends when the block leaves [-1.5, 1.5]."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1.6, 1.6, size=(n, 2))
    actions = rng.integers(0, 2, size=n)
    nxt = np.empty_like(obs)
    nxt[:, 0] = obs[:, 0] + 0.05 * obs[:, 1]
    nxt[:, 1] = obs[:, 1] - 0.3 * obs[:, 0] + np.where(actions == 1, 0.1, -0.1)
    rewards = -2.0 * nxt[:, 0] ** 2
    ends = np.abs(nxt[:, 0]) > 1.5
    return obs, actions, nxt, rewards, ends


def test_the_data_model_predicts_like_the_true_dynamics_where_the_fits_are_exact():
    obs, actions, nxt, rewards, ends = _rail(600, seed=0)
    model = _model(obs, actions, nxt, rewards, ends, n_actions=2, atol=1e-8)
    assert [c["exact"] for c in model.components] == [1.0, 1.0]
    assert model.reward["exact"] == 1.0 and model.reward["kind"] == "formula"
    assert model.done["exact"] == 1.0
    assert "def step(state, action):" in model.source and "return next_state" in model.source
    assert static_problems(model.source, state_dim=2, discrete=True, n_actions=2) == []
    # on transitions it never saw, it is the true world
    obs2, actions2, nxt2, rewards2, ends2 = _rail(300, seed=1)
    states, rewards_p, dones = _run(_program(model.source), obs2, actions2)
    assert np.allclose(states, nxt2, atol=1e-8, rtol=0)
    assert np.allclose(rewards_p, rewards2, atol=1e-8, rtol=0)
    assert (dones == ends2).all()
    # a generate from it continues its head and the rules right on every transition
    head = model.source.splitlines()[:model.prefix_lines]
    assert head[-1].strip().startswith("new_") and "reward" not in "\n".join(head)


# --------------------------------------------- rare events, a piecewise reward, a packed code


def _corridor(episodes: int, seed: int):
    """Cells 0 to 8; the exit at 8 opens only with the key, picked up (action 2) in cell 3.
    Reaching the exit ends the episode with reward 10; picking where there is no key costs 1."""
    rng = np.random.default_rng(seed)
    rows = []
    for _ in range(episodes):
        pos, key = 0.0, 0.0
        for _ in range(40):
            a = int(rng.choice(3, p=[0.2, 0.6, 0.2]))
            p2, k2, r = pos, key, 0.0
            if a == 0:
                p2 = max(pos - 1, 0.0)
            elif a == 1:
                p2 = pos + 1 if pos < 7 or key else pos
            elif pos == 3:
                k2 = 1.0
            else:
                r = -1.0
            done = p2 == 8
            rows.append(([pos, key], a, [p2, k2], 10.0 if done else r, done))
            pos, key = p2, k2
            if done:
                break
    obs, actions, nxt, rewards, ends = zip(*rows)
    return (np.array(obs), np.array(actions), np.array(nxt), np.array(rewards),
            np.array(ends))


def test_a_clip_the_data_crosses_is_not_called_exact():
    obs, actions, nxt, _, ends = _corridor(30, seed=0)
    assert ((obs[:, 0] == 7) & (nxt[:, 0] == 8)).any()  # the data shows the exit taken
    found = find_relations(obs, actions, nxt, ["s0", "s1"], discrete=True, n_actions=3,
                           atol=1e-6, rtol=0.0, mask=~ends)
    position = next(r for r in found if r.index == 0)
    assert "min(" in position.formula  # the clip the steps that go on show ...
    assert position.exact < 1.0      # ... is checked on the steps that end the episode too
    assert "right on every recorded transition" not in position.line()


def test_a_rare_done_event_and_a_piecewise_reward_are_recovered_as_rules():
    obs, actions, nxt, rewards, ends = _corridor(30, seed=0)
    assert 0 < ends.sum() < 0.05 * len(ends)
    model = _model(obs, actions, nxt, rewards, ends, n_actions=3, atol=1e-6)
    assert model.reward["kind"] == "tree" and model.reward["exact"] == 1.0
    assert model.done["exact"] == 1.0
    # the key, picked up on a few transitions, is a condition, not a regression
    assert [c["exact"] for c in model.components] == [1.0, 1.0]
    assert model.components[1]["kind"].endswith("+tree")
    # right on episodes it never saw
    obs2, actions2, nxt2, rewards2, ends2 = _corridor(30, seed=7)
    states, rewards_p, dones = _run(_program(model.source), obs2, actions2)
    assert (states == nxt2).all() and (rewards_p == rewards2).all() and (dones == ends2).all()


def _packed(n: int, seed: int):
    """One whole number packs a cell (0..9) and whether a parcel is carried: code = 2 * cell +
    carried. Action 0 moves right (to 9 at most), 1 moves left, 2 drops: dropping a carried
    parcel in cell 6 earns 20, any other drop costs 10, a move costs 1."""
    rng = np.random.default_rng(seed)
    code = rng.integers(0, 20, size=n).astype(np.float64)
    actions = rng.integers(0, 3, size=n)
    cell, carried = code // 2, code % 2
    cell2 = np.where(actions == 0, np.minimum(cell + 1, 9), np.where(actions == 1, np.maximum(cell - 1, 0), cell))
    delivered = (actions == 2) & (cell == 6) & (carried == 1)
    carried2 = np.where(actions == 2, 0, carried)
    rewards = np.where(actions < 2, -1.0, np.where(delivered, 20.0, -10.0))
    return code[:, None], actions, (2 * cell2 + carried2)[:, None], rewards, delivered


def test_rules_read_the_parts_of_a_packed_whole_number():
    obs, actions, nxt, rewards, ends = _packed(800, seed=0)
    model = _model(obs, actions, nxt, rewards, ends, n_actions=3, atol=0.0)
    assert model.reward["exact"] == 1.0 and model.done["exact"] == 1.0
    assert "% 2" in model.source or "// 2" in model.source  # a condition on a decoded part
    obs2, actions2, nxt2, rewards2, ends2 = _packed(400, seed=3)
    _, rewards_p, dones = _run(_program(model.source), obs2, actions2)
    assert (rewards_p == rewards2).all() and (dones == ends2).all()


def _walled(n: int, seed: int):
    """A 6 x 4 grid packed into one integer with a tag that never changes
    (``code = (row * 4 + col) * 3 + tag``): actions move down, up, right, left (code +12, -12,
    +3, -3); the grid's edges and a wall between columns 1 and 2 on rows 0 to 2 block moves
    (the code stays); the reward is -5 for a blocked move, else -1. Random walks of 20 steps."""
    rng = np.random.default_rng(seed)
    obs, actions, nxt, rewards = [], [], [], []
    while len(obs) < n:
        row, col, tag = int(rng.integers(6)), int(rng.integers(4)), int(rng.integers(3))
        for _ in range(20):
            a = int(rng.integers(4))
            r2, c2 = row + (1, -1, 0, 0)[a], col + (0, 0, 1, -1)[a]
            blocked = (not (0 <= r2 < 6 and 0 <= c2 < 4)
                       or (row <= 2 and {col, c2} == {1, 2}))
            if blocked:
                r2, c2 = row, col
            obs.append([(row * 4 + col) * 3 + tag])
            actions.append(a)
            nxt.append([(r2 * 4 + c2) * 3 + tag])
            rewards.append(-5.0 if blocked else -1.0)
            row, col = r2, c2
    obs, nxt = np.array(obs[:n], dtype=np.float64), np.array(nxt[:n], dtype=np.float64)
    return obs, np.array(actions[:n]), nxt, np.array(rewards[:n]), np.zeros(n, dtype=bool)


def test_walls_in_a_packed_code_are_learned_on_its_decoded_parts():
    # few transitions per cell and move: a rule over the code's row and column (its parts at
    # the place values its moves show) holds in cells the walks did not block; a rule over any
    # remainder that happens to fit does not
    obs, actions, nxt, rewards, ends = _walled(300, seed=0)
    model = _model(obs, actions, nxt, rewards, ends, n_actions=4, atol=0.0)
    # the column is a decoded part; the edges are where the rule's value leaves the grid, not a
    # list of the values seen there
    assert "(observation // 3) % 4" in model.source and " in (" not in model.source, model.source
    assert model.reward["exact"] == 1.0 and model.components[0]["exact"] == 1.0
    cells = [[(r * 4 + c) * 3 + t] for r in range(6) for c in range(4) for t in range(3)]
    every = np.array([cell for cell in cells for _ in range(4)], dtype=np.float64)
    moves = np.tile(np.arange(4), len(cells))
    truth = np.empty_like(every)
    for k, (code, a) in enumerate(zip(every[:, 0].astype(int), moves)):
        row, col, tag = code // 12, (code // 3) % 4, code % 3
        r2, c2 = row + (1, -1, 0, 0)[a], col + (0, 0, 1, -1)[a]
        if not (0 <= r2 < 6 and 0 <= c2 < 4) or (row <= 2 and {col, c2} == {1, 2}):
            r2, c2 = row, col
        truth[k, 0] = (r2 * 4 + c2) * 3 + tag
    states, rewards_p, _ = _run(_program(model.source), every, moves)
    assert np.mean(states[:, 0] == truth[:, 0]) >= 0.97  # 0.89 with the values listed
    assert np.all((rewards_p == -5.0) == (states[:, 0] == every[:, 0]))


def test_a_fall_back_to_the_start_is_learned_as_a_value_set():
    # a 4 x 8 grid (code = row * 8 + col; actions up, right, down, left; the edges block) whose
    # bottom row between its corners is a cliff: a step onto it lands on the bottom-left corner,
    # from wherever it came. The recorded falls come from three of the six columns; the rule
    # must send the other three back too (a value set, not a step per column seen)
    def move(code, a):
        row, col = divmod(code, 8)
        r2, c2 = row + (-1, 0, 1, 0)[a], col + (0, 1, 0, -1)[a]
        if not (0 <= r2 < 4 and 0 <= c2 < 8):
            return code
        return 24 if r2 == 3 and 1 <= c2 <= 6 else r2 * 8 + c2

    safe = [c for c in range(32) if not 25 <= c <= 30]
    rng = np.random.default_rng(0)
    obs, actions, nxt = [], [], []
    while len(obs) < 600:
        code, a = int(rng.choice(safe)), int(rng.integers(4))
        if move(code, a) == 24 and code // 8 == 2 and code % 8 in (2, 4, 5):
            continue  # no recorded fall from these columns
        obs.append([code]), actions.append(a), nxt.append([move(code, a)])
    obs, nxt = np.array(obs, dtype=np.float64), np.array(nxt, dtype=np.float64)
    model = _model(obs, np.array(actions), nxt, np.full(len(obs), -1.0),
                   np.zeros(len(obs), dtype=bool), n_actions=4, atol=0.0)
    assert "new_observation = 24\n" in model.source, model.source
    cells = np.array([[c] for c in safe for _ in range(4)], dtype=np.float64)
    moves = np.tile(np.arange(4), len(safe))
    states, _, _ = _run(_program(model.source), cells, moves)
    assert [int(v) for v in states[:, 0]] == [move(int(c), int(a)) for c, a in zip(cells[:, 0], moves)]


def test_a_rule_never_true_on_the_data_is_not_written():
    obs, actions, nxt, _, _ = _rail(200, seed=2)
    rewards = np.full(len(obs), -1.0)
    ends = np.zeros(len(obs), dtype=bool)
    model = _model(obs, actions, nxt, rewards, ends, n_actions=2, atol=1e-8)
    assert "    done = False\n" in model.source and "    reward = -1\n" in model.source
    assert model.done["kind"] == model.reward["kind"] == "constant"


# ------------------------------------------- an end the description states and the data never shows

SWING = """# Swing

## Observation Space

| Num | Observation |
|---|---|
| 0 | Cosine of `phi` |
| 1 | Sine of `phi` |
| 2 | Angular velocity of `phi` |

## Rewards

Every step costs -1. Reaching the top results in termination with a reward of 5.

## Episode End

The episode ends when the tip is high enough: `-cos(phi) > 0.5`.
"""


def _swing(n: int, seed: int, reach: float):
    """A swing held as the cosine and sine of its angle: the angle moves by a tenth of the old
    speed, the action pushes the speed; the episode ends (reward 5) when ``-cos(phi) > 0.5``,
    else the reward is -1. Angles drawn within `reach` of the bottom."""
    rng = np.random.default_rng(seed)
    phi = rng.uniform(-reach, reach, size=n)
    speed = rng.uniform(-1.0, 1.0, size=n)
    actions = rng.integers(0, 3, size=n)
    new_speed = speed + 0.2 * (actions - 1)
    new_phi = phi + 0.1 * speed
    obs = np.column_stack([np.cos(phi), np.sin(phi), speed])
    nxt = np.column_stack([np.cos(new_phi), np.sin(new_phi), new_speed])
    ends = -np.cos(new_phi) > 0.5
    return obs, actions, nxt, np.where(ends, 5.0, -1.0), ends


def _swing_model(obs, actions, nxt, rewards, ends, description=SWING):
    from codeworld.worlds.cwmb._feedback import described_rewards, end_rewards, unseen_rewards
    from codeworld.worlds.cwmb._relations import described_ends, named_angles

    spec = _spec(3, 3, 1e-8)
    scaffold = build_scaffold(spec, description, rewards=rewards,
                              states=np.concatenate([obs, nxt]))
    names = scaffold.references
    stated = described_ends(description, names, named_angles(np.concatenate([obs, nxt]), names))
    unseen = unseen_rewards(described_rewards(description), rewards, 1e-9, 0.0)
    return build_data_model(scaffold, obs, actions, nxt, rewards, ends, state_atol=1e-8,
                            state_rtol=0.0, reward_atol=1e-9, reward_rtol=0.0,
                            stated_ends=stated, end_rewards=end_rewards(unseen))


def test_an_end_the_description_states_is_read_on_the_angle_of_a_cosine_sine_pair():
    from codeworld.worlds.cwmb._relations import described_ends, named_angles

    obs, _, nxt, _, _ = _swing(50, seed=0, reach=1.0)
    names = ("cosine_phi", "sine_phi", "angular_velocity_phi")
    angles = named_angles(np.concatenate([obs, nxt]), names)
    assert angles == {"phi": ("cosine_phi", "sine_phi")}
    assert described_ends(SWING, names, angles) == [
        "-math.cos(math.atan2(new_sine_phi, new_cosine_phi)) > 0.5"]
    # a chained comparison is split into its links; a name the state does not hold is no rule
    text = "## Termination\n`0 < angular_velocity_phi <= 2` or `psi > 1`\n"
    assert described_ends(text, names, angles) == [
        "0 < new_angular_velocity_phi and new_angular_velocity_phi <= 2"]
    assert described_ends(SWING.replace("## Episode End", "## Notes"), names, angles) == []


def test_an_end_the_data_never_reaches_is_written_from_the_description_with_its_reward():
    obs, actions, nxt, rewards, ends = _swing(400, seed=0, reach=1.0)
    assert not ends.any()  # the training episodes never swing high enough
    model = _swing_model(obs, actions, nxt, rewards, ends)
    assert [c["exact"] for c in model.components] == [1.0, 1.0, 1.0]
    assert model.done["kind"] == "described" and model.done["exact"] == 1.0
    assert model.done["reward"] == 5.0  # the record says which reward that end gives
    assert static_problems(model.source, state_dim=3, discrete=True, n_actions=3) == []
    # on swings the data never showed, it ends where the world ends, with the stated reward
    obs2, actions2, nxt2, rewards2, ends2 = _swing(400, seed=1, reach=3.1)
    assert ends2.any()
    states, rewards_p, dones = _run(_program(model.source), obs2, actions2)
    assert np.allclose(states, nxt2, atol=1e-8, rtol=0)
    assert (dones == ends2).all() and np.array_equal(rewards_p, rewards2)
    # without the description's end, the data alone never ends
    plain = _model(obs, actions, nxt, rewards, ends, n_actions=3, atol=1e-8)
    assert plain.done["kind"] == "constant" and "    done = False\n" in plain.source


def test_a_stated_end_the_data_contradicts_is_not_taken():
    obs, actions, nxt, rewards, _ = _swing(400, seed=0, reach=1.0)
    ends = np.abs(nxt[:, 2]) > 1.0  # this world ends on speed, whatever its description says
    model = _swing_model(obs, actions, nxt, np.where(ends, 5.0, -1.0), ends)
    assert model.done["kind"] != "described" and "math.cos(math.atan2" not in model.done["text"]


def test_a_cosine_sine_pair_is_predicted_from_one_angle(monkeypatch):
    """Where the angle's rule is approximate, the regression takes the pair as one, through its
    angle, not each component on its own (which a regression could get right more often, and
    which leaves the unit circle that every recorded state is on)."""
    import codeworld.fitting._regression as regression
    from codeworld.fitting._regression import RegressionConfig

    rng = np.random.default_rng(3)
    phi = rng.uniform(-1.0, 1.0, size=400)
    speed = rng.uniform(-1.0, 1.0, size=400)
    actions = rng.integers(0, 3, size=400)
    new_phi = phi + 0.1 * speed + 3e-3 * np.sin(7 * speed)  # no term of the fits has it
    obs = np.column_stack([np.cos(phi), np.sin(phi), speed])
    nxt = np.column_stack([np.cos(new_phi), np.sin(new_phi), speed + 0.2 * (actions - 1)])

    class Found:  # a regression that gets any one target right (the test's stand-in)
        def __init__(self, labels, base):
            self.base = base
            # a component's new value, or the pair's new angle (its column is the last input)
            self.source = (f"0.5 * {labels[base]} + {base}" if base < 3 else
                           f"{labels[base]} + 0.1 * {labels[2]} + 0.003 * math.sin(7 * {labels[2]})")

        def predict(self, inputs, labels):
            return nxt[:, self.base] if self.base < 3 else phi + 0.1 * speed + 3e-3 * np.sin(7 * speed)

    monkeypatch.setattr(regression, "regress_component",
                        lambda inputs, labels, target, base, **kw: Found(labels, base))
    spec = _spec(3, 3, 1e-3)
    scaffold = build_scaffold(spec, "", rewards=np.full(400, -1.0),
                              states=np.concatenate([obs, nxt]))
    plain = find_relations(obs, actions, nxt, list(scaffold.references), discrete=True,
                           n_actions=3, atol=1e-3, rtol=0.0, angles=True)
    assert 0.0 < next(r for r in plain if r.index == 0).exact < 1.0  # the angle's linear fit
    found = find_relations(obs, actions, nxt, list(scaffold.references), discrete=True,
                           n_actions=3, atol=1e-3, rtol=0.0, angles=True,
                           regression=RegressionConfig(budget_s=1.0))
    c, s = (next(r for r in found if r.index == i) for i in (0, 1))
    # regressed as one, through the angle: both right everywhere, one angle
    assert c.exact == s.exact == 1.0
    assert c.formula.startswith("math.cos(math.atan2(") and s.formula == "math.sin(" + c.formula[9:]
    model = build_data_model(scaffold, obs, actions, nxt, np.full(400, -1.0),
                             np.zeros(400, dtype=bool), state_atol=1e-3, state_rtol=0.0,
                             reward_atol=1e-9, reward_rtol=0.0, relations=found)
    states, _, _ = _run(_program(model.source), obs, actions)
    assert np.allclose(states, nxt, atol=1e-9)
    assert np.allclose(states[:, 0] ** 2 + states[:, 1] ** 2, 1.0, atol=1e-9)


# ------------------------------------------------- an approximate rule that runs away when stepped


def _saturating(n: int, seed: int):
    """A pull that saturates: the new position is tanh(2 x) nudged by the action (recorded only
    on [-0.6, 0.6]); a second component integrates the first."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-0.6, 0.6, size=(n, 2))
    actions = rng.integers(0, 3, size=n)
    nxt = np.column_stack([np.tanh(2 * obs[:, 0]) + 0.05 * (actions - 1), obs[:, 1] + 0.1 * obs[:, 0]])
    return obs, actions, nxt


def _polynomial_relations(obs, actions, nxt):
    """The data section's relations with an odd polynomial for the saturation (a least-squares
    fit of degree 5, right within tolerance on most transitions and close on all, which stepped
    on its own outputs runs to infinity beyond the recorded range), and the exact integrator."""
    from codeworld.worlds.cwmb._relations import Relation

    design = np.column_stack([obs[:, 0], obs[:, 0] ** 3, obs[:, 0] ** 5, actions - 1.0])
    a, b, c, d = np.linalg.lstsq(design, nxt[:, 0], rcond=None)[0]
    formula = f"{a!r} * s0 + {b!r} * s0 ** 3 + {c!r} * s0 ** 5 + {d!r} * (action - 1)"
    right = float(np.mean(np.abs(design @ np.array([a, b, c, d]) - nxt[:, 0]) <= 1e-3))
    assert 0.5 < right < 1.0
    return [Relation(0, "s0", formula, 0.99, right), Relation(1, "s1", "s1 + 0.1 * s0", 1.0, 1.0)]


def _runs_away(source: str, starts) -> dict | None:
    """The test's own stepping of a program codeworld wrote: 100 steps of random actions from
    each start, the failure where a value stops being finite."""
    step, rng = _program(source), np.random.default_rng(1)
    for state in starts:
        for _ in range(100):
            with np.errstate(all="ignore"):
                try:
                    state, _, _ = step(state, int(rng.integers(0, 3)))
                except OverflowError as exc:
                    return {"status": "exception", "message": str(exc)}
            if not np.all(np.isfinite(state)):
                return {"status": "invalid_output", "message": "not finite"}
    return None


def test_a_data_model_that_runs_away_beyond_the_data_is_held_to_the_recorded_range():
    """An approximate rule stepped on its own outputs may run to infinity where the data does
    not go (a plan's rollout fails there, and the search scores the data model as buggy): the
    seed is then the same model with each approximate real-valued component held to its
    recorded range widened by its width, which predicts the same on every training transition
    and stays finite; an exact rule is left alone."""
    from codeworld.synthesis.config import AssistConfig
    from codeworld.worlds.cwmb._data_model import world_seeds

    obs, actions, nxt = _saturating(400, 0)
    relations = _polynomial_relations(obs, actions, nxt)
    ends, rewards = np.zeros(400, dtype=bool), np.full(400, -1.0)
    spec = SimpleNamespace(**vars(_spec(2, 3, 1e-3)), reward_atol=1e-9, reward_rtol=0.0)
    scaffold = build_scaffold(spec, "", rewards=rewards, states=np.concatenate([obs, nxt]))
    kwargs = dict(state_atol=1e-3, state_rtol=0.0, reward_atol=1e-9, reward_rtol=0.0,
                  relations=relations)
    free = build_data_model(scaffold, obs, actions, nxt, rewards, ends, **kwargs)
    held = build_data_model(scaffold, obs, actions, nxt, rewards, ends, bounded=True, **kwargs)
    assert free.approximate and _runs_away(free.source, obs[:8]) is not None
    assert _runs_away(held.source, obs[:8]) is None
    low, high = held.components[0]["bounds"]
    width = nxt[:, 0].max() - nxt[:, 0].min()
    assert low == pytest.approx(nxt[:, 0].min() - width) and high == pytest.approx(nxt[:, 0].max() + width)
    assert "bounds" not in held.components[1]  # the exact integrator is not held
    assert np.array_equal(_run(_program(held.source), obs, actions)[0],
                          _run(_program(free.source), obs, actions)[0])

    buffer = SimpleNamespace(obs=obs, actions=actions.reshape(-1, 1), next_obs=nxt, rewards=rewards,
                             terminated=ends)
    scorer = SimpleNamespace(buffer=buffer, spec=spec, mode="sound")

    def beyond(source):
        return _runs_away(source, obs[:8])

    data = world_seeds(scorer, scaffold, relations, AssistConfig(), beyond=beyond)[0]
    assert data.program == held.source and data.record["bounded"]["status"] in ("invalid_output", "exception")
    off = world_seeds(scorer, scaffold, relations, AssistConfig(bounded_data_model=False), beyond=beyond)[0]
    assert off.program == free.source and "bounded" not in off.record
    # a model that runs everywhere as built is the seed as built
    exact = [relations[1]]
    plain = world_seeds(scorer, scaffold, exact, AssistConfig(), beyond=beyond)[0]
    assert "min(max(" not in plain.program and "bounded" not in plain.record


# -------------------------------------------------------------------------- seeds of a search


def _seeds(data: float | None, floor: float = 0.6) -> tuple[Seed, ...]:
    seeds = [] if data is None else [Seed("data", fake_program(data, tag="data"), start=True,
                                          prefix_lines=3)]
    return tuple(seeds) + (Seed("floor", fake_program(floor, lines=5), start=False),)


@pytest.mark.parametrize("method", ["gif-mcts", "worldcoder"])
def test_a_search_never_returns_a_best_program_below_the_floor(tmp_path, method):
    # every answer is worse than doing nothing, or buggy
    script = [fake_program(0.3, tag=str(k)) if k % 2 else fake_program(bug="boom")
              for k in range(6)]
    search = GifMcts(seed=0) if method == "gif-mcts" else Rex(seed=0)
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec(method))
    result = synthesize(search, llm=ScriptedLLM(script), prompts=EchoPrompts(),
                        evaluator=FakeEvaluator(), budget=6, run_dir=run_dir,
                        seeds=_seeds(0.5, floor=0.6))
    assert result.best_evaluation.score == 0.6 and result.best_seed == "floor"
    assert result.accounting.calls == 6
    best = json.loads((tmp_path / "run" / "best_report.json").read_text())
    assert best["seed"] == "floor" and best["program"] == "best_model.py"
    # the data model scored below the floor, so the search did not start from it
    assert not any(p.get("parent_seed") for p in search.programs())


@pytest.mark.parametrize("method", ["gif-mcts", "worldcoder"])
def test_the_first_calls_improve_the_data_model_where_it_beats_the_floor(tmp_path, method):
    search = GifMcts(seed=0) if method == "gif-mcts" else Rex(seed=0)
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec(method))
    seeds = _seeds(0.8)
    # (fake programs differ in their number of lines: comments are not part of a program's form)
    llm = ScriptedLLM([fake_program(0.85, lines=7), seeds[0].program, fake_program(bug="x", lines=8)])
    evaluator = FakeEvaluator()
    evaluator.detect_copies = True
    result = synthesize(search, llm=llm, prompts=EchoPrompts(), evaluator=evaluator,
                        budget=3, run_dir=run_dir, seeds=seeds)
    first = json.loads((tmp_path / "run" / "calls" / "0000.json").read_text())["request"]
    assert first["action"] == IMPROVE and first["program"] == seeds[0].program
    assert search.programs()[0]["parent_seed"] == "data"
    if method == "gif-mcts":  # the root writes nothing from scratch: it starts at the data model
        assert search.open_actions(0) == []
    # calls by outcome: a new program, a copy (of the data model), a buggy one
    acc = result.accounting
    assert (acc.new_programs, acc.duplicates, acc.buggy_programs) == (1, 1, 1)
    saved = json.loads((tmp_path / "run" / "programs" / "0001.json").read_text())
    assert saved["report"]["duplicate_of"] == "data"
    assert result.best_evaluation.score == 0.85 and result.best_call == 0
    # the seeds are recorded in the run directory, scored, and never counted as calls
    assert (tmp_path / "run" / "seeds" / "data.py").read_text() == seeds[0].program
    tree = json.loads((tmp_path / "run" / "tree.json").read_text())
    assert [s["label"] for s in tree["seeds"]] == ["data", "floor"]
    assert json.loads((tmp_path / "run" / "accounting.json").read_text())["new_programs"] == 1


def test_a_generate_from_the_data_model_continues_its_first_lines():
    search = GifMcts(GifMctsConfig(allow_improve=False), seed=0)
    data = Seed("data", fake_program(0.8, tag="data"), start=True, prefix_lines=3)
    search.seed(0, data, FakeEvaluator().evaluate(data.program), True)
    [request] = search.propose(1)
    assert (request.action, request.parent) == (GENERATE, 1)
    assert request.prefix == "".join(data.program.splitlines(keepends=True)[:3])


def test_a_global_fails_the_static_checks():
    source = ("import numpy as np\n\ncount = 0\n\n\ndef step(state, action):\n"
              "    global count\n    count += 1\n    return np.array(state), 0.0, False\n")
    problems = static_problems(source, state_dim=1, discrete=True, n_actions=2)
    assert [p.kind for p in problems] == ["global"] and problems[0].line == 7


def test_a_run_records_its_data_model_and_show_names_it(tmp_path, capsys):
    from pathlib import Path

    from codeworld.cli import main

    model = (Path(__file__).parent / "models" / "cartpole_functional.py").read_text()
    wrong = model.replace("TAU = 0.02", "TAU = 0.05")  # worse than the data model
    script = tmp_path / "s.json"
    script.write_text(json.dumps([f"```python\n{wrong}```\n"]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--llm", f"scripted:{script}", "--budget", "1",
                 "--out", str(out), "--no-fit", "--no-speed-step", "--no-compose"]) == 0
    printed = capsys.readouterr().out
    assert "best program: the data model (no call)" in printed
    assert "calls by outcome: 1 new program(s), 0 copies, 0 buggy" in printed
    seed = json.loads((out / "seeds" / "data.json").read_text())
    assert not seed["buggy"] and seed["report"]["heldout"]["score"] > seed["report"]["heldout"]["floor"]
    assert seed["record"]["done"]["exact"] == 1.0
    assert (out / "best_model.py").read_text() == (out / "seeds" / "data.py").read_text()
    call = json.loads((out / "calls" / "0000.json").read_text())["request"]
    assert call["action"] == "improve" and "written from the recorded data" in call["program"]
    assert main(["show", str(out)]) == 0
    shown = capsys.readouterr().out
    assert "(the data model)" in shown and "the data model (no call): score" in shown
    assert "the floor (the do-nothing model) (no call)" in shown
    assert "data model" in (out / "report.html").read_text()


def test_a_resumed_run_replays_from_the_seeds_it_saved(tmp_path):
    run_dir = RunDir(tmp_path / "run")
    run_dir.init(RunSpec("gif-mcts"))
    script = [fake_program(0.85, lines=7), fake_program(0.9, lines=8)]
    synthesize(GifMcts(seed=0), llm=ScriptedLLM(script), prompts=EchoPrompts(),
               evaluator=FakeEvaluator(), budget=1, run_dir=run_dir, seeds=_seeds(0.8))
    # the world builds its data model anew (a time-bounded regression may come out otherwise):
    # the run goes on from the one it saved, and its saved call replays
    other = (Seed("data", fake_program(0.7, lines=9), start=True),) + _seeds(0.8)[1:]
    llm = ScriptedLLM(script)
    result = synthesize(GifMcts(seed=0), llm=llm, prompts=EchoPrompts(), evaluator=FakeEvaluator(),
                        budget=2, run_dir=run_dir, seeds=other)
    assert llm.calls == [1] and result.accounting.replayed_calls == 1
    assert (tmp_path / "run" / "seeds" / "data.py").read_text() == _seeds(0.8)[0].program


# --------------------------------------------- a reward of many values that the action moves


def _reaching(n: int, seed: int):
    """A point pushed by a 2-d action toward the origin; the reward is a cost on the old distance
    and on the action's squared norm, recorded with a little noise, so no formula is right within
    the tolerance on any transition (as with a simulator's reward), and every value differs."""
    rng = np.random.default_rng(seed)
    obs = rng.uniform(-1, 1, size=(n, 2))
    actions = rng.uniform(-1, 1, size=(n, 2))
    nxt = obs + 0.1 * actions
    rewards = (-np.abs(obs[:, 0]) - np.abs(obs[:, 1]) - np.sum(actions ** 2, axis=1)
               + rng.normal(0, 1e-3, n))
    return obs, actions, nxt, rewards


def test_a_reward_of_many_values_is_the_fitted_formula_that_the_action_moves():
    """A reward that takes a new value on every transition is the data section's formula, not the
    most frequent value, where the formula's error is below the constant's though neither is
    right within the tolerance: a constant reward makes every plan tie. A control cost,
    `np.sum(action**2)`, is summed per transition when the formula is checked on the data."""
    from codeworld.worlds.cwmb._relations import formula_values

    obs, actions, nxt, rewards = _reaching(300, 0)
    assert np.allclose(formula_values("np.sum(action**2)", obs, actions, ["s0", "s1"], discrete=False),
                       np.sum(actions ** 2, axis=1))
    spec = SimpleNamespace(obs_dim=2, discrete=False, n_actions=0, action_dim=2, action_low=(-1.0, -1.0),
                           action_high=(1.0, 1.0), state_atol=1e-6, state_rtol=0.0)
    scaffold = build_scaffold(spec, "", rewards=rewards, states=np.concatenate([obs, nxt]))
    model = build_data_model(scaffold, obs, actions, nxt, rewards, np.zeros(300, dtype=bool),
                             state_atol=1e-6, state_rtol=0.0, reward_atol=1e-6, reward_rtol=0.0)
    assert model.reward["kind"] == "formula" and "action" in model.reward["text"]
    step = _program(model.source)
    _, predicted, _ = _run(step, obs, actions)
    assert np.mean(np.abs(predicted - rewards)) < 0.05 * np.mean(np.abs(rewards - np.median(rewards)))
    # the plan's signal: a smaller push costs less from the same state
    assert step(obs[0], np.zeros(2))[1] > step(obs[0], np.ones(2))[1]
