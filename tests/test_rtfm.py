"""RTFM: the game's rules, its registration, description and buffer, and scoring and planning on it."""

from __future__ import annotations

import json

import numpy as np
import pytest

from codeworld.envs import encode_obs, get_spec, list_envs, make_env, step_from_obs
from codeworld.envs import _rtfm as rtfm
from codeworld.envs._buffers import buffer_path, load_buffer, save_buffer, sidecar_path
from codeworld.envs._collection import CollectionConfig, collect_buffer
from codeworld.envs._descriptions import KEPT_SECTIONS, describe, description_path

ENV = "RTFM-v0"
FIRE, COLD, LIGHTNING, POISON = 1, 2, 3, 4
BLESSED, GLEAMING, FANATICAL, ARCANE = 1, 2, 3, 4

# A correct world model, written from the description alone (Numba can compile it).
MODEL = '''
import numpy as np

SIZE = 6
BEATS = np.array([0.0, 4.0, 3.0, 1.0, 2.0])  # element beaten by modifier 1..4


def step(state, action):
    s = state.copy()
    row = s[0]
    col = s[1]
    a = int(action)
    if a == 1:
        row -= 1.0
    elif a == 2:
        row += 1.0
    elif a == 3:
        col -= 1.0
    elif a == 4:
        col += 1.0
    if row < 0.0 or row > SIZE - 1 or col < 0.0 or col > SIZE - 1:
        row = s[0]
        col = s[1]
    s[0] = row
    s[1] = col
    for m in (3, 6):
        if s[m] == row and s[m + 1] == col:
            held = int(s[2])
            won = s[m + 2] == s[15] and held > 0 and BEATS[held] == s[m + 2]
            return s, (1.0 if won else -1.0), True
    if s[2] == 0.0:
        for i in (9, 12):
            if s[i] == row and s[i + 1] == col:
                s[2] = s[i + 2]
                s[i] = -1.0
                s[i + 1] = -1.0
                break
    return s, 0.0, False
'''

# A model that never reads the manual: any fight with an item in hand is a win.
NO_MANUAL = MODEL.replace("held > 0 and BEATS[held] == s[m + 2]", "held > 0")


def state(agent=(2, 2), held=0, monsters=((0, 0, FIRE), (5, 5, COLD)),
          items=((2, 3, FANATICAL), (4, 4, ARCANE)), target=FIRE) -> np.ndarray:
    obs = [*agent, held]
    for monster in monsters:
        obs += list(monster)
    for item in items:
        obs += list(item)
    obs.append(target)
    return np.array(obs, dtype=np.float64)


def test_registered_like_the_other_environments():
    spec = get_spec(ENV)
    assert get_spec("RTFM") is spec  # the paper's name is an alias
    assert spec.discrete and spec.n_actions == rtfm.N_ACTIONS == 5 and spec.planner == "mcts"
    assert spec.obs_dim == rtfm.OBS_DIM and spec.family == "toy_text" and spec.paper_exact
    assert spec.settable and not spec.stochastic
    assert ENV not in list_envs() and list_envs(include_rtfm=True)[-1] == ENV
    env = make_env(ENV)
    obs, _ = env.reset(seed=4)
    assert env.action_space.n == spec.n_actions
    assert env.spec.max_episode_steps == spec.max_episode_steps == rtfm.MAX_EPISODE_STEPS
    assert encode_obs(ENV, obs).shape == (spec.obs_dim,) and env.observation_space.contains(obs)
    assert rtfm.N_STATES < 2 ** 53  # the integer state is exact as a float64 (the oracle's vector)


@pytest.mark.parametrize("action, agent", [(0, (2, 2)), (1, (1, 2)), (2, (3, 2)), (3, (2, 1))])
def test_moves(action, agent):
    nxt, reward, done = rtfm.rtfm_step(state(), action)
    np.testing.assert_array_equal(nxt, state(agent=agent))
    assert reward == 0.0 and done is False


@pytest.mark.parametrize("agent, action", [((0, 3), 1), ((5, 3), 2), ((3, 0), 3), ((3, 5), 4)])
def test_a_move_off_the_grid_stays(agent, action):
    start = state(agent=agent, items=((1, 1, FANATICAL), (4, 4, ARCANE)))
    nxt, reward, done = rtfm.rtfm_step(start, action)
    np.testing.assert_array_equal(nxt, start)
    assert reward == 0.0 and not done


def test_empty_hands_pick_up_an_item():
    nxt, reward, done = rtfm.rtfm_step(state(), 4)  # onto the fanatical item at (2, 3)
    np.testing.assert_array_equal(nxt, state(agent=(2, 3), held=FANATICAL,
                                             items=((-1, -1, FANATICAL), (4, 4, ARCANE))))
    assert reward == 0.0 and not done


def test_full_hands_walk_over_the_other_item():
    start = state(agent=(2, 2), held=ARCANE, items=((2, 3, FANATICAL), (-1, -1, ARCANE)))
    nxt, _, _ = rtfm.rtfm_step(start, 4)
    np.testing.assert_array_equal(nxt, state(agent=(2, 3), held=ARCANE,
                                             items=((2, 3, FANATICAL), (-1, -1, ARCANE))))
    # and on leaving, the item is still there
    after, _, _ = rtfm.rtfm_step(nxt, 4)
    assert after[9:12].tolist() == [2, 3, FANATICAL]


@pytest.mark.parametrize("held, monster, target, reward", [
    (FANATICAL, FIRE, FIRE, 1.0),      # the target, with the item the manual names: win
    (ARCANE, FIRE, FIRE, -1.0),        # the target with the wrong item
    (0, FIRE, FIRE, -1.0),             # the target bare-handed
    (ARCANE, COLD, FIRE, -1.0),        # the other monster, even with the item that beats it
    (BLESSED, POISON, POISON, 1.0),
    (GLEAMING, LIGHTNING, LIGHTNING, 1.0),
    (ARCANE, COLD, COLD, 1.0),
])
def test_fights_follow_the_manual(held, monster, target, reward):
    other = COLD if monster != COLD else FIRE
    start = state(agent=(0, 1), held=held, monsters=((0, 0, monster), (5, 5, other)),
                  items=((-1, -1, FANATICAL), (4, 4, ARCANE)), target=target)
    nxt, got, done = rtfm.rtfm_step(start, 3)
    assert got == reward and done is True
    assert nxt[:2].tolist() == [0, 0] and np.array_equal(nxt[2:], start[2:])


def test_monsters_and_items_do_not_move_and_steps_are_deterministic():
    env = make_env(ENV)
    obs, _ = env.reset(seed=11)
    rng = np.random.default_rng(0)
    for _ in range(60):
        action = int(rng.integers(5))
        expected = rtfm.rtfm_step(obs, action)
        nxt, reward, terminated, truncated, _ = env.step(action)
        np.testing.assert_array_equal(nxt, expected[0])
        assert (reward, terminated) == expected[1:]
        np.testing.assert_array_equal(nxt[3:9], obs[3:9])  # stationary monsters
        assert nxt[15] == obs[15]
        obs = nxt
        if terminated or truncated:
            obs, _ = env.reset(seed=int(rng.integers(1000)))


@pytest.mark.parametrize("seed", range(20))
def test_reset_places_a_solvable_game(seed):
    obs, _ = make_env(ENV).reset(seed=seed)
    cells = {tuple(obs[i:i + 2]) for i in (0, 3, 6, 9, 12)}
    assert len(cells) == 5 and obs[2] == 0
    elements = [obs[5], obs[8]]
    assert elements[0] != elements[1] and obs[15] in elements
    beaten = sorted(rtfm.BEATS[int(obs[i])] for i in (11, 14))
    assert beaten == sorted(int(e) for e in elements)  # one item for each monster
    assert np.array_equal(rtfm.decode_state(rtfm.encode_state(obs)), obs)


def test_same_seed_same_game_and_the_observation_sets_the_simulator():
    a, _ = make_env(ENV).reset(seed=5)
    b, _ = make_env(ENV).reset(seed=5)
    np.testing.assert_array_equal(a, b)
    real, sim = make_env(ENV), make_env(ENV)
    obs, _ = real.reset(seed=2)
    rng = np.random.default_rng(1)
    for _ in range(80):
        action = int(rng.integers(5))
        nxt, reward, terminated, truncated, _ = real.step(action)
        pred, pred_reward, pred_done = step_from_obs(sim, ENV, obs, np.array([action], float))
        np.testing.assert_array_equal(pred, nxt)
        assert (pred_reward, pred_done) == (reward, terminated)
        obs = nxt
        if terminated or truncated:
            obs, _ = real.reset(seed=int(rng.integers(1000)))


def test_encoding_rejects_what_is_not_a_state():
    with pytest.raises(ValueError, match="16 numbers"):
        rtfm.encode_state(np.zeros(3))
    with pytest.raises(ValueError, match="out of range"):
        rtfm.encode_state(state(agent=(6, 0)))


def test_description_has_the_manual_and_its_reviewable_copy_is_current():
    text = describe(ENV)
    assert text.startswith("# RTFM-v0\n")
    titles = [line[3:].lower() for line in text.splitlines() if line.startswith("## ")]
    assert set(titles) - {"world-model contract"} <= set(KEPT_SECTIONS)
    for sentence in rtfm.manual().split(". "):
        assert sentence.rstrip(".") in text
    assert "16 numbers" in text and "an int in 0..4" in text
    assert description_path(ENV).read_text(encoding="utf-8") == text


def test_committed_buffer_follows_the_protocol_and_regenerates(tmp_path):
    path = buffer_path(ENV)
    buffer = load_buffer(path)
    meta = json.loads(sidecar_path(path).read_text())
    assert buffer.env_id == ENV and buffer.n_episodes == 10 and meta["protocol"]["max_steps"] == 100
    assert set(np.unique(buffer.rewards)) == {-1.0, 0.0, 1.0}  # wins, losses and plain steps
    assert not np.any(buffer.terminated & buffer.truncated)
    fresh = save_buffer(collect_buffer(ENV, CollectionConfig()), tmp_path / path.name)
    assert fresh.read_bytes() == path.read_bytes()


def test_scores_like_the_other_environments():
    from codeworld.scoring import Scorer

    scorer = Scorer(ENV)
    report = scorer.score_source(MODEL)
    assert report.ok and report.score == 1.0 and report.strict == 1.0
    assert report.ceiling.score == 1.0 and report.floor.score < 1.0
    wrong = scorer.score_source(NO_MANUAL)
    assert wrong.ok and wrong.components["reward"] < 1.0 and wrong.first_error["index"] >= 0
    paper = Scorer(ENV, mode="paper").score_source(MODEL)
    assert paper.score == pytest.approx(paper.ceiling.score)  # only truncations labelled done differ


def test_plans_like_the_other_environments():
    from codeworld.planning import evaluate

    ev = evaluate(ENV, MODEL, episodes=2, max_steps=25, seed=1, use_cache=False)
    assert ev.model.ok and ev.oracle.ok
    # a perfect model plans exactly as the true simulator does (same seeds, same decisions)
    assert ev.model.returns == ev.oracle.returns and ev.model.lengths == ev.oracle.lengths
    assert ev.model.model_steps > 0
