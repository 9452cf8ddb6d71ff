"""The agent benchmark's baselines: PPO (stable-baselines3) and a ReAct agent, on object-level levels."""

import importlib.util
import tempfile
import json
from pathlib import Path

import numpy as np
import pytest

from codeworld.agent import make_object_env
from codeworld.agent._loop import LevelResult, summary_row
from codeworld.agent._ppo import ObjectGymEnv, PPOConfig, StateEncoder, ppo_baseline
from codeworld.agent._react import ReActAgent, ReActConfig, parse_action, react_baseline
from codeworld.llm import LLMClient
from codeworld.llm._scripted import ScriptedBackend
from codeworld.synthesis.fakes import ScriptedLLM

ROOT = Path(__file__).resolve().parents[1]
MILESTONE_KEYS = {"episodes", "env_steps", "llm_calls", "tokens"}
# the columns every row of the benchmark's table reads, as the agent's rows have them
ROW_KEYS = set(summary_row(LevelResult(level="x"))) - {"rewrites", "plan_timeouts"}
SMALL_PPO = PPOConfig(n_envs=2, n_steps=32, batch_size=32, n_epochs=1)
needs_sb3 = pytest.mark.skipif(importlib.util.find_spec("stable_baselines3") is None,
                               reason="needs the train extra (stable-baselines3)")


# ---------------------------------------------------------------- the observation encoding

@pytest.mark.parametrize("levels", [["sokoban:corridor", "sokoban:turn", "sokoban:gen:3"],
                                    ["minigrid:empty", "minigrid:doorkey", "minigrid:unlockpickup"],
                                    ["household:place", "household:clean", "household:two"]])
def test_encoding_is_fixed_size_and_deterministic_across_a_family(levels):
    envs = [make_object_env(name) for name in levels]
    encoder = StateEncoder.for_family(envs[0].family)
    vectors = []
    for env in envs:
        state, mission = env.reset(seed=1)
        first = encoder.encode(state, mission)
        again = encoder.encode(env.reset(seed=1)[0], mission)
        assert first.shape == (encoder.size,) and first.dtype == np.float32
        np.testing.assert_array_equal(first, again)
        assert set(np.unique(first)) <= {0.0, 1.0}
        vectors.append(first)
    assert len({v.tobytes() for v in vectors}) == len(levels)  # the levels are told apart


def test_encoding_paints_the_agent_where_it_stands_and_sees_moves():
    env = make_object_env("sokoban:corridor")
    encoder = StateEncoder.for_family("sokoban")
    state, mission = env.reset()
    cells = encoder.cells(encoder.encode(state, mission))
    x, y = state["agent"]
    assert cells[y, x, encoder.channel("agent")] == 1.0
    assert cells[:, :, encoder.channel("agent")].sum() == 1.0
    moved, _, _, _ = env.step(3)  # right
    assert not np.array_equal(encoder.encode(moved, mission), encoder.encode(state, mission))


def test_minigrid_words_reach_their_own_channels():
    env = make_object_env("minigrid:doorkey")
    encoder = StateEncoder.for_family("minigrid")
    state, mission = env.reset(seed=0)
    cells = encoder.cells(encoder.encode(state, mission))
    key = next(o for o in state["objects"] if o["type"] == "key")
    for word in ("objects", "key", key["color"]):
        assert cells[key["y"], key["x"], encoder.channel(word)] == 1.0
    agent = state["agent"]
    assert cells[agent["y"], agent["x"], encoder.channel(f"dir={agent['dir']}")] == 1.0
    door = next(o for o in state["objects"] if o["type"] == "door")
    assert cells[door["y"], door["x"], encoder.channel("locked")] == 1.0


def test_a_state_without_positions_is_encoded_by_its_facts():
    env = make_object_env("household:place")
    encoder = StateEncoder.for_family(env.family)
    state, mission = env.reset(seed=0)
    before = encoder.encode(state, mission)
    assert before[-encoder.fact_channels:].sum() >= 10  # one fact per leaf, a few may share a hash
    drawer = sorted(state["open"])[0]
    opened = {**state, "open": {**state["open"], drawer: not state["open"][drawer]}}
    after = encoder.encode(opened, mission)
    assert not np.array_equal(before, after)
    np.testing.assert_array_equal(before[:-encoder.fact_channels], after[:-encoder.fact_channels])


def test_encoding_refuses_a_state_larger_than_its_grid():
    encoder = StateEncoder(["walls"], grid=4)
    with pytest.raises(ValueError, match="outside the encoder's 4x4 grid"):
        encoder.encode({"walls": [[5, 0]]})


@pytest.mark.parametrize("level", ["sokoban:turn", "minigrid:doorkey"])
def test_gym_view_passes_gymnasiums_env_checker(level):
    from gymnasium.utils.env_checker import check_env

    env = make_object_env(level)
    check_env(ObjectGymEnv(env, StateEncoder.for_family(env.family)), skip_render_check=True)


def test_gym_view_cycles_the_episode_seeds():
    env = ObjectGymEnv(make_object_env("minigrid:unlockpickup"), StateEncoder.for_family("minigrid"),
                       seeds=[3, 7], offset=1)
    seeds = [env.reset()[1]["seed"] for _ in range(3)]
    assert seeds == [7, 3, 7]
    obs, reward, terminated, truncated, info = env.step(0)
    assert env.observation_space.contains(obs) and info == {"success": False} and reward == 0.0


# ---------------------------------------------------------------- PPO

@needs_sb3
def test_ppo_spends_exactly_its_budget_and_reports_the_agents_fields(tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    row = ppo_baseline("minigrid:empty", 256, seed=0, reliable=3, seeds=[0, 1],
                       max_episode_steps=20, config=SMALL_PPO)
    assert ROW_KEYS <= set(row)
    assert row["method"] == "ppo" and row["llm_calls"] == 0 and row["tokens"] == 0
    assert row["env_steps"] == 256  # both copies' steps, stopped at the budget
    # every finished episode took at most 20 steps, and at least one per episode
    assert row["episodes"] <= 256 and row["episodes"] >= 256 // 20 - 2
    for key in ("first_success", "reliable_success", "valid_policy"):
        m = row[key]
        assert m is None or (set(m) == MILESTONE_KEYS and m["env_steps"] <= 256 and m["tokens"] == 0)
    assert not list(tmp_path.glob("SB3-*"))  # no empty log folder of stable-baselines3 left behind


@needs_sb3
def test_ppo_stops_at_its_milestones_and_counts_the_steps_to_them():
    # On the corridor a random policy succeeds within a few episodes; with a window of one
    # episode, the first success is also a valid policy, and the run stops right there.
    row = ppo_baseline("sokoban:corridor", 5000, seed=0, reliable=1, valid_rate=1.0, window=1,
                       config=SMALL_PPO)
    first = row["first_success"]
    assert first is not None and first == row["reliable_success"] == row["valid_policy"]
    assert row["env_steps"] == first["env_steps"] < 5000
    assert row["successes"] >= 1 and row["episodes"] >= first["episodes"]
    assert row["env_steps"] % SMALL_PPO.n_envs == 0


def test_ppo_rejects_a_bad_budget():
    with pytest.raises(ValueError, match="budget_steps"):
        ppo_baseline("sokoban:corridor", 0)


# ---------------------------------------------------------------- ReAct

SOKOBAN_NAMES = ("up", "down", "left", "right")
MINIGRID_NAMES = ("turn left", "turn right", "move forward", "pick up", "drop", "toggle")


@pytest.mark.parametrize("text, names, expected", [
    ("Thought: the goal is ahead.\nAction: 2 (move forward)", MINIGRID_NAMES, 2),
    ("Thought: face it.\nAction: turn left", MINIGRID_NAMES, 0),
    ("**Action:** `1`", MINIGRID_NAMES, 1),
    ("Action: 1\nOn second thought, the key is behind me.\nAction: 4", MINIGRID_NAMES, 4),
    ("Action: move forward, then pick up", MINIGRID_NAMES, 3),
    ("Action: 9\nAction: right", SOKOBAN_NAMES, 3),
    ("Action: 9", SOKOBAN_NAMES, None),
    ("I would move right.", SOKOBAN_NAMES, None),
    ("", SOKOBAN_NAMES, None),
])
def test_parse_action(text, names, expected):
    assert parse_action(text, names) == expected


def test_react_episode_takes_the_named_actions_and_counts_calls_and_tokens():
    # corridor: the agent at x=1, the box at x=3, the target at x=5: three pushes right solve it
    answers = [{"text": "Thought: the box is to my right.\nAction: 3", "prompt_tokens": 100, "completion_tokens": 10},
               {"text": "Thought: push it.\nAction: right", "prompt_tokens": 120, "completion_tokens": 8},
               {"text": "I am not sure what to do here.", "prompt_tokens": 130, "completion_tokens": 7}]
    answers += [{"text": "Action: 3", "prompt_tokens": 140, "completion_tokens": 3}] * 10
    backend = ScriptedBackend(answers)
    agent = ReActAgent(LLMClient(backend), ReActConfig(history=2, max_episode_steps=12, seed=5))
    env = make_object_env("sokoban:corridor")
    record = agent.run_episode(env, seed=0)
    assert record["success"] and record["actions"][:2] == [3, 3] and record["actions"][-1] == 3
    assert record["calls"] == record["steps"] == len(backend.requests) == agent.calls
    assert record["parse_failures"] == agent.parse_failures == 1
    spent = sum(a["prompt_tokens"] + a["completion_tokens"] for a in answers[:record["calls"]])
    assert record["tokens"] == agent.tokens == spent
    # the prompt shows the mission, the actions, the current state and the last steps
    first, third = backend.requests[0][0][-1]["content"], backend.requests[2][0][-1]["content"]
    assert "push every box onto a target" in first and "3 = right" in first
    assert '"agent": [1, 1]' in first and "first step" in first
    assert '"agent": [3, 1]' in third and "3 (right): agent: [2, 1] -> [3, 1]" in third


def test_react_baseline_reports_success_rate_calls_and_milestones():
    llm = ScriptedLLM(lambda call, messages: "Thought: keep pushing.\nAction: 3")
    row = react_baseline("sokoban:corridor", llm, episodes=3, seed=0, reliable=2)
    assert ROW_KEYS <= set(row)
    assert row["successes"] == 3 and row["success_rate"] == 1.0
    assert row["env_steps"] == 9 and row["llm_calls"] == 9 and row["calls_per_episode"] == 3.0
    assert row["first_success"]["episodes"] == 1 and row["first_success"]["llm_calls"] == 3
    assert row["reliable_success"]["episodes"] == 2 and row["reliable_success"]["env_steps"] == 6
    assert row["tokens"] > 0 and row["tokens_per_episode"] == pytest.approx(row["tokens"] / 3, abs=0.1)


# ---------------------------------------------------------------- the benchmark script

def load_benchmark():
    spec = importlib.util.spec_from_file_location("worldcoder_bench", ROOT / "benchmarks" / "worldcoder.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@needs_sb3
def test_benchmark_puts_agent_and_ppo_in_one_table_with_plots(tmp_path):
    bench = load_benchmark()
    stem = tmp_path / "wc"
    code = bench.main(["--llm", "reference", "--methods", "agent,ppo", "--levels", "sokoban:corridor",
                       "--variants", "optimism+transfer", "--reliable", "2", "--ppo-steps", "256", "--n-seeds", "1",
                       "--out", str(stem)])
    assert code == 0
    rows = json.loads(stem.with_suffix(".json").read_text())["rows"]
    assert [r["variant"] for r in rows] == ["optimism+transfer", "ppo"]
    assert rows[1]["env_steps"] <= 256 and rows[1]["llm_calls"] == 0
    table = stem.with_suffix(".md").read_text()
    assert "| optimism+transfer | sokoban-corridor |" in table and "| ppo | sokoban-corridor |" in table
    for suffix in ("_steps.png", "_tokens.png"):
        assert (tmp_path / f"wc{suffix}").read_bytes()[:4] == b"\x89PNG"


def test_benchmark_runs_react_with_a_scripted_llm(tmp_path):
    script = tmp_path / "script.jsonl"
    script.write_text("\n".join(json.dumps({"text": "Thought: push.\nAction: 3", "prompt_tokens": 50,
                                            "completion_tokens": 5}) for _ in range(6)) + "\n")
    bench = load_benchmark()
    stem = tmp_path / "react"
    code = bench.main(["--llm", f"scripted:{script}", "--methods", "react", "--levels", "sokoban:corridor",
                       "--react-episodes", "2", "--reliable", "2", "--n-seeds", "1", "--out", str(stem),
                       "--llm-cache-dir", str(tmp_path / "cache")])
    assert code == 0
    (row,) = json.loads(stem.with_suffix(".json").read_text())["rows"]
    assert row["variant"] == "react" and row["successes"] == 2 and row["tokens"] == 6 * 55
    assert "2/2 (100%), 3 calls and 165 tokens per episode" in stem.with_suffix(".md").read_text()


def test_benchmark_refuses_react_with_the_reference_llm():
    with pytest.raises(SystemExit, match="react needs an LLM"):
        load_benchmark().main(["--llm", "reference", "--methods", "react"])


def test_reference_llm_answers_with_the_levels_family_model():
    from codeworld.agent._reference import REFERENCE_MODELS

    bench = load_benchmark()
    for family, program in REFERENCE_MODELS.items():
        text = bench.ReferenceLLM(family).complete([{"role": "user", "content": "Sokoban"}]).text
        assert program in text
    with pytest.raises(KeyError, match="no hand-written model for family 'chess'"):
        bench.ReferenceLLM("chess")
