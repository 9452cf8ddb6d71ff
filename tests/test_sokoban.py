"""Sokoban's rules, levels and generator, and the hand-written model planned over in the sandbox."""

import pytest

from codeworld.worlds.objects._states import state_key
from codeworld.worlds.objects._ops import op_plan
from codeworld.agent._sokoban import LEVELS, GeneratorConfig, SokobanEnv, generate_level, make_sokoban, parse_level, render_level, step_state
from codeworld.sandbox import Sandbox

UP, DOWN, LEFT, RIGHT = range(4)


def state_of(text):
    return parse_level(text)


def test_levels_parse_and_render_back():
    for text in LEVELS.values():
        assert render_level(parse_level(text)) == text


def test_push_moves_box_and_player():
    state = state_of("######\n#@$ .#\n######")
    nxt, reward, done = step_state(state, RIGHT)
    assert nxt["agent"] == [2, 1] and nxt["boxes"] == [[3, 1]]
    assert (reward, done) == (0.0, False)
    nxt, reward, done = step_state(nxt, RIGHT)
    assert nxt["boxes"] == [[4, 1]] and (reward, done) == (1.0, True)


def test_box_against_wall_or_box_does_not_move():
    state = state_of("#####\n#@$$#\n# ..#\n#####")
    nxt, _, _ = step_state(state, RIGHT)
    assert nxt["agent"] == [1, 1] and nxt["boxes"] == [[2, 1], [3, 1]]
    state = state_of("####\n#@$#\n#. #\n####")
    assert step_state(state, RIGHT)[0]["agent"] == [1, 1]


def test_walls_block_and_boxes_are_not_pulled():
    state = state_of("#####\n#$@.#\n#####")
    nxt, _, _ = step_state(state, UP)
    assert nxt["agent"] == [2, 1]
    nxt, _, _ = step_state(state, RIGHT)
    assert nxt["agent"] == [3, 1] and nxt["boxes"] == [[1, 1]]


def test_bad_levels_are_refused():
    with pytest.raises(ValueError):
        parse_level("####\n# $#\n####")  # no player
    with pytest.raises(ValueError):
        parse_level("#####\n#@$ #\n#####")  # a box without a target


def test_env_episode_and_truncation():
    env = SokobanEnv(LEVELS["corridor"], max_steps=3)
    state, mission = env.reset()
    assert "box" in mission and state["agent"] == [1, 1]
    _, r, term, trunc = env.step(LEFT)
    assert (r, term, trunc) == (0.0, False, False)
    env.step(LEFT)
    _, r, term, trunc = env.step(LEFT)
    assert trunc and not term
    env.reset()
    for _ in range(3):
        _, r, term, _ = env.step(RIGHT)
    assert r == 1.0 and term


def test_generator_is_seeded_and_levels_are_solvable():
    assert generate_level(5) == generate_level(5)
    assert generate_level(5) != generate_level(6)
    for seed in range(6):
        text = generate_level(seed, GeneratorConfig(boxes=1 + seed % 2))
        state = parse_level(text)
        assert sorted(state["boxes"]) != sorted(state["targets"])
        assert _solvable(state)


def _solvable(start, limit=20000):
    seen = {state_key(start)}
    frontier = [start]
    while frontier and len(seen) < limit:
        nxt_frontier = []
        for s in frontier:
            for a in range(4):
                n, r, _ = step_state(s, a)
                if r > 0:
                    return True
                if state_key(n) not in seen:
                    seen.add(state_key(n))
                    nxt_frontier.append(n)
        frontier = nxt_frontier
    return False


def test_make_sokoban_names():
    assert make_sokoban("turn").name == "sokoban-turn"
    assert make_sokoban("gen:2").start == parse_level(generate_level(2))
    with pytest.raises(KeyError):
        make_sokoban("nope")


def test_reference_model_plans_a_solution_in_the_sandbox():
    from codeworld.agent._reference import SOKOBAN_MODEL

    env = make_sokoban("two-boxes")
    state, mission = env.reset()
    with Sandbox() as sandbox:
        result = sandbox.call(op_plan, source=SOKOBAN_MODEL, state=state,
                              mission=mission, n_actions=4)
    assert result.ok, result.message
    assert result.value["found"]
    for action, predicted in zip(result.value["actions"], result.value["predicted"]):
        state, reward, done, _ = env.step(action)
        assert state_key(state) == state_key(predicted["next_state"])
    assert reward == 1.0 and done
