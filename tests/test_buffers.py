"""Replay buffers: the committed files, the format, the paper's layout, validation, regeneration."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

import codeworld
from codeworld.cli import main
from codeworld.envs import get_spec, list_envs
from codeworld.envs._buffers import (
    CODEWORLD_KEYS, PAPER_BUFFER_DIR, BufferError, buffer_path, load_buffer, make_buffer,
    paper_buffer_path, resolve_buffer, save_buffer, sidecar_path,
)
from codeworld.envs._collection import CollectionConfig, collect_buffer

PAPER_ENVS = [e for e in list_envs() if paper_buffer_path(e).is_file()]


def test_paper_reference_buffers_ship_inside_the_package():
    package = Path(codeworld.__file__).resolve().parent
    assert PAPER_BUFFER_DIR.is_dir(), PAPER_BUFFER_DIR
    assert PAPER_BUFFER_DIR.resolve().is_relative_to(package)
    assert (PAPER_BUFFER_DIR / "README.md").is_file()
    assert len(PAPER_ENVS) == 16
    assert buffer_path("CartPole-v1").resolve().is_relative_to(package)


def test_resolve_buffer_names_the_committed_the_papers_or_a_file(tmp_path):
    assert resolve_buffer("CartPole-v1", None) == buffer_path("CartPole-v1")
    assert resolve_buffer("CartPole-v1", "paper") == paper_buffer_path("CartPole-v1")
    assert resolve_buffer("Taxi-v4", "paper").name == "Taxi-v3.npz"  # the paper's id
    assert resolve_buffer("CartPole-v1", tmp_path / "b.npz") == tmp_path / "b.npz"
    with pytest.raises(BufferError, match="no replay buffer"):
        resolve_buffer("Humanoid-v4", "paper")


@pytest.mark.parametrize("env_id", list_envs())
def test_committed_buffer_follows_the_protocol_and_matches_its_sidecar(env_id):
    path = buffer_path(env_id)
    buffer = load_buffer(path)
    meta = json.loads(sidecar_path(path).read_text())
    assert buffer.env_id == env_id == meta["env_id"]
    assert buffer.source == "codeworld"
    assert meta["n_transitions"] == len(buffer) and meta["n_episodes"] == buffer.n_episodes == 10
    assert meta["protocol"]["max_steps"] == 100 and meta["seed"] == 0
    assert {"gymnasium", "mujoco"} <= set(meta["versions"])
    # every episode ends in exactly one of terminated / truncated, and is at most 100 steps
    assert not np.any(buffer.terminated & buffer.truncated)
    starts = np.unique(buffer.episode_start)
    ends = np.append(starts[1:], len(buffer)) - 1
    assert np.all(buffer.dones[ends]) and buffer.dones.sum() == len(starts)
    assert np.all(np.diff(np.append(starts, len(buffer))) <= 100)
    # transitions chain inside an episode
    inside = np.setdiff1d(np.arange(len(buffer) - 1), ends)
    np.testing.assert_array_equal(buffer.next_obs[inside], buffer.obs[inside + 1])


@pytest.mark.parametrize("env_id", ["CartPole-v1", "InvertedPendulum-v4"])
def test_collection_regenerates_the_committed_buffer_bit_identically(env_id, tmp_path):
    committed = buffer_path(env_id)
    if env_id == "CartPole-v1":  # through the CLI
        assert main(["collect", env_id, "--out", str(tmp_path)]) == 0
        fresh = tmp_path / committed.name
    else:
        fresh = save_buffer(collect_buffer(env_id, CollectionConfig()), tmp_path / committed.name)
    assert fresh.read_bytes() == committed.read_bytes()
    fresh_meta = json.loads(sidecar_path(fresh).read_text())
    committed_meta = json.loads(sidecar_path(committed).read_text())
    # the same data and protocol; the sidecar's versions are those of the machine that collected
    # it (a newer patch release of mujoco, say, that gives the same bytes, records its own)
    assert set(fresh_meta.pop("versions")) == set(committed_meta.pop("versions"))
    assert fresh_meta == committed_meta


def test_collection_depends_on_the_seed():
    a = collect_buffer("CartPole-v1", CollectionConfig(episodes=2, max_steps=10, random_episodes=1, seed=1))
    b = collect_buffer("CartPole-v1", CollectionConfig(episodes=2, max_steps=10, random_episodes=1, seed=2))
    assert not np.array_equal(a.obs[:5], b.obs[:5])
    assert a.truncated.sum() + a.terminated.sum() == 2


def test_save_then_load_round_trips(tmp_path):
    buffer = load_buffer(buffer_path("Pendulum-v1"))
    path = save_buffer(buffer.take(50), tmp_path / "p.npz")
    again = load_buffer(path)
    for key in CODEWORLD_KEYS:
        np.testing.assert_array_equal(getattr(again, key), getattr(buffer, key)[:50])
    assert again.env_id == "Pendulum-v1"


@pytest.mark.parametrize("env_id", PAPER_ENVS)
def test_paper_layout_loads_and_keeps_the_papers_done_label(env_id):
    path = paper_buffer_path(env_id)
    with np.load(path) as raw:
        dones = raw["dones"].astype(bool)
        n = len(raw["rewards"])
    buffer = load_buffer(path)
    assert buffer.source == "paper" and buffer.env_id == env_id and len(buffer) == n
    np.testing.assert_array_equal(buffer.dones, dones)
    assert not np.any(buffer.terminated & buffer.truncated)
    limit = get_spec(env_id).max_episode_steps
    steps = np.arange(n) - buffer.episode_start + 1
    if limit is not None:
        np.testing.assert_array_equal(buffer.truncated, dones & (steps == limit))


def test_mountain_car_truncations_in_the_paper_buffer_are_not_terminations():
    buffer = load_buffer(paper_buffer_path("MountainCar-v0"))
    assert buffer.truncated.any()
    # a real termination reaches the goal; a truncation at step 200 does not
    assert np.all(buffer.next_obs[buffer.terminated, 0] >= 0.5)
    assert np.all(buffer.next_obs[buffer.truncated, 0] < 0.5)


def _arrays(env_id="CartPole-v1"):
    with np.load(buffer_path(env_id)) as archive:
        return {k: archive[k].copy() for k in archive.files}


@pytest.mark.parametrize("corrupt, message", [
    (lambda a: a.pop("terminated"), "missing key"),
    (lambda a: a.__setitem__("actions", a["actions"][:-1]), "actions has"),
    (lambda a: a["rewards"].__setitem__(3, np.nan), "NaN"),
    (lambda a: a["next_obs"].__setitem__((2, 1), np.inf), "NaN or inf"),
    (lambda a: a.__setitem__("obs", a["obs"][:, :3]), "needs 4"),
    (lambda a: a.__setitem__("episode_start", a["episode_start"] + 5), "episode_start"),
    (lambda a: a.__setitem__("terminated", a["terminated"] * 3), "other than 0/1"),
])
def test_malformed_buffers_are_refused_with_one_line(tmp_path, corrupt, message):
    arrays = _arrays()
    corrupt(arrays)
    path = tmp_path / "CartPole-v1.npz"
    np.savez(path, **arrays)
    with pytest.raises(BufferError, match=message) as info:
        load_buffer(path)
    assert "\n" not in str(info.value)


def test_unreadable_or_missing_files_are_refused(tmp_path):
    with pytest.raises(BufferError, match="no such buffer"):
        load_buffer(tmp_path / "none.npz", "CartPole-v1")
    bad = tmp_path / "CartPole-v1.npz"
    bad.write_text("not a zip")
    with pytest.raises(BufferError, match="not a readable"):
        load_buffer(bad)
    odd = tmp_path / "mystery.npz"
    np.savez(odd, **_arrays())
    with pytest.raises(BufferError, match="pass env, its id or spec"):
        load_buffer(odd)
    assert len(load_buffer(odd, "CartPole-v1")) == len(_arrays()["rewards"])


def test_make_buffer_validates_like_the_loader():
    arrays = _arrays()
    arrays["rewards"] = arrays["rewards"][:10]
    with pytest.raises(BufferError, match="rows"):
        make_buffer("CartPole-v1", **arrays)


def test_cli_collect_unknown_env_is_one_line(tmp_path, capsys):
    assert main(["collect", "Taxi-v9", "--out", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "did you mean Taxi-v4" in err
    assert not list(tmp_path.iterdir())


def test_collect_without_out_writes_to_the_user_cache_not_the_package(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    committed = buffer_path("Blackjack-v1").read_bytes()
    assert main(["collect", "Blackjack-v1"]) == 0
    written = tmp_path / "cache" / "buffers" / "Blackjack-v1.npz"
    assert str(written) in capsys.readouterr().out
    assert written.read_bytes() == committed  # the same protocol and seed: the same bytes
