"""Evaluation protocols by name, and the reference table of random and oracle returns."""

from __future__ import annotations

import json

import pytest

from codeworld.envs import get_spec
from codeworld.planning import evaluate
from codeworld.planning.evaluate import oracle_key_config
from codeworld.planning._protocol import (PROTOCOLS, default_config, find_reference, get_protocol, reference_key,
                                         store_reference)
from codeworld.planning.registry import config_to_dict


def test_the_paper_protocol_plays_ten_episodes_to_the_envs_limit():
    paper = get_protocol("paper")
    assert (paper.episodes, paper.max_steps) == (10, None)
    assert set(PROTOCOLS) >= {"paper", "short"}
    with pytest.raises(KeyError, match="known: paper"):
        get_protocol("papr")


def test_a_plan_is_no_longer_than_an_episode_may_run():
    # The paper's code: T = min(100, max_episode_steps); Reacher's episodes end after 50 steps.
    assert default_config(get_spec("Reacher-v4")).horizon == 50
    cheetah = default_config(get_spec("HalfCheetah-v4"))
    assert (cheetah.horizon, cheetah.iterations, cheetah.num_samples, cheetah.num_elites) == (100, 20, 1000, 100)
    assert cheetah.replan_every is None  # open loop
    assert default_config(get_spec("HalfCheetah-v4"), max_steps=30).horizon == 30
    assert default_config(get_spec("CartPole-v1")).rollout_depth == 100  # MCTS keeps its own settings


def _reference(tmp_path, monkeypatch):
    path = tmp_path / "reference.json"
    monkeypatch.setenv("CODEWORLD_REFERENCE_RETURNS", str(path))
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    return path


def test_evaluate_reads_random_and_oracle_returns_from_the_reference_table(tmp_path, monkeypatch):
    path = _reference(tmp_path, monkeypatch)
    spec = get_spec("Pendulum-v1")
    config = oracle_key_config(config_to_dict(default_config(spec, 3)))
    stored = {"policy": "oracle", "returns": [-1.5], "lengths": [3], "seconds": 99.0}
    store_reference(reference_key("oracle", spec.env_id, config, 1, 0, 3), stored, {"commit": "abc1234"}, spec)
    store_reference(reference_key("random", spec.env_id, None, 1, 0, 3), {**stored, "policy": "random",
                                                                           "returns": [-7.0]}, {}, spec)
    result = evaluate(spec, episodes=1, seed=0, max_steps=3, policies=("random", "oracle"))
    assert result.oracle.returns == [-1.5] and result.oracle.cached
    assert result.random.returns == [-7.0] and result.random.cached
    # Another seed is not in the table: it is run.
    other = evaluate(spec, episodes=1, seed=1, max_steps=3, policies=("random",))
    assert not other.random.cached and other.random.returns != [-7.0]
    assert json.loads(path.read_text())["entries"][0]["commit"] == "abc1234"


def test_reference_entries_of_other_simulator_versions_are_not_used(tmp_path, monkeypatch):
    path = _reference(tmp_path, monkeypatch)
    spec = get_spec("Pendulum-v1")
    key = reference_key("random", spec.env_id, None, 1, 0, 3)
    store_reference(key, {"policy": "random", "returns": [-7.0], "lengths": [3]}, {}, spec)
    assert find_reference(key) is not None
    data = json.loads(path.read_text())
    data["entries"][0]["versions"]["gymnasium"] = "0.29.1"
    path.write_text(json.dumps(data))
    assert find_reference(key) is None
    assert not evaluate(spec, episodes=1, seed=0, max_steps=3, policies=("random",)).random.cached


def test_a_named_protocol_sets_the_episodes_and_their_cap(tmp_path, monkeypatch):
    _reference(tmp_path, monkeypatch)
    result = evaluate("Pendulum-v1", policies=("random",), protocol="short")
    assert (result.episodes, result.max_steps, result.protocol) == (3, 100, "short")
    assert result.random.lengths == [100, 100, 100]


def _plan(capsys, *argv: str) -> tuple[int, dict | None, str]:
    from codeworld.cli import main

    status = main(["plan", *argv])
    captured = capsys.readouterr()
    return status, json.loads(captured.out) if status == 0 and "--json" in argv else None, captured.err.strip()


def test_plan_under_the_paper_protocol_reads_the_package_reference_table(tmp_path, monkeypatch, capsys):
    """The oracle's paper-protocol returns come from the committed table (no planning here)."""
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    status, record, _ = _plan(capsys, "Pendulum-v1", "--protocol", "paper", "--oracle-only", "--json")
    assert status == 0 and record["protocol"] == "paper"
    assert (record["episodes"], record["max_steps"], record["config"]["horizon"]) == (10, None, 100)
    assert record["oracle"]["cached"] and len(record["oracle"]["returns"]) == 10


def test_plan_takes_a_protocols_episodes_and_cap_unless_given(tmp_path, monkeypatch, capsys):
    _reference(tmp_path, monkeypatch)
    status, record, _ = _plan(capsys, "Pendulum-v1", "--protocol", "short", "--random-only", "--json")
    assert status == 0 and (record["protocol"], record["episodes"], record["max_steps"]) == ("short", 3, 100)
    assert record["random"]["lengths"] == [100, 100, 100]
    # A number given overrides the protocol's, and the record no longer claims to follow it.
    status, record, _ = _plan(capsys, "Pendulum-v1", "--protocol", "short", "--episodes", "1", "--random-only",
                              "--json")
    assert status == 0 and (record["protocol"], record["episodes"], record["max_steps"]) == (None, 1, 100)
    assert record["random"]["lengths"] == [100]


@pytest.mark.parametrize("argv, message", [
    (["--protocol", "papr"], "unknown protocol 'papr' (known: paper, short)"),
    (["--protocol", "short", "--episodes", "0"], "--episodes must be at least 1"),
])
def test_plan_refuses_a_bad_protocol_setting_in_one_line(argv, message, tmp_path, monkeypatch, capsys):
    _reference(tmp_path, monkeypatch)
    status, _, err = _plan(capsys, "Pendulum-v1", "--random-only", *argv)
    assert status == 2 and err == f"codeworld plan: {message}"
