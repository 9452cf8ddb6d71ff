"""Bringing your own environment: any Gymnasium id with keyword arguments, an environment defined
here and registered nowhere else, logged data (npz and Minari) without a simulator."""

from __future__ import annotations

import json
import threading
import warnings

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from codeworld.cli import main
from codeworld.envs import UnsupportedSpaceError, env_spec, get_spec, register_env
from codeworld.envs._buffers import load_buffer

GRID_ID = "CodeworldTestGrid-v0"
GOAL = (4, 4)

GRID_MODEL = """
import numpy as np

MOVES = [(-1, 0), (1, 0), (0, -1), (0, 1)]


def step(state, action):
    dx, dy = MOVES[int(action)]
    x = min(max(state[0] + dx, 0.0), 4.0)
    y = min(max(state[1] + dy, 0.0), 4.0)
    at_goal = x == 4.0 and y == 4.0
    reward = 1.0 if at_goal else -0.1 * (abs(4.0 - x) + abs(4.0 - y)) / 8.0
    return np.array([x, y]), reward, at_goal
"""

FROZEN_LAKE_MODEL = """
import numpy as np

MAP = ["SFFF", "FHFH", "FFFH", "HFFG"]


def step(state, action):
    row, col = divmod(int(state[0]), 4)
    if action == 0:
        col = max(col - 1, 0)
    elif action == 1:
        row = min(row + 1, 3)
    elif action == 2:
        col = min(col + 1, 3)
    elif action == 3:
        row = max(row - 1, 0)
    cell = MAP[row][col]
    return np.array([float(row * 4 + col)]), float(cell == "G"), cell in "GH"
"""

MOUNTAIN_CAR_CONTINUOUS_MODEL = """
import math
import numpy as np


def step(state, action):
    position, velocity = float(state[0]), float(state[1])
    force = min(max(float(action[0]), -1.0), 1.0)
    velocity += force * 0.0015 - 0.0025 * math.cos(3 * position)
    velocity = min(max(velocity, -0.07), 0.07)
    position += velocity
    position = min(max(position, -1.2), 0.6)
    if position == -1.2 and velocity < 0:
        velocity = 0.0
    done = bool(position >= 0.45 and velocity >= 0)
    reward = (100.0 if done else 0.0) - math.pow(float(action[0]), 2) * 0.1
    return np.array([position, velocity], dtype=np.float32).astype(np.float64), reward, done
"""


class GridEnv(gym.Env):
    """A walker on a 5 x 5 grid that must reach the far corner.

    ## Description
    The walker starts at (0, 0); the goal is the cell (4, 4).

    ## Action Space
    Four actions: 0 moves x down by one, 1 moves x up, 2 moves y down, 3 moves y up; a move off
    the grid leaves the walker where it is.

    ## Observation Space
    The position (x, y), two integers in 0..4.

    ## Rewards
    1 on reaching the goal, otherwise -0.1 times the Manhattan distance to the goal divided by 8.

    ## Episode End
    The episode ends on reaching the goal.

    ## Arguments
    None.
    """

    def __init__(self):
        self.observation_space = spaces.Box(0, 4, shape=(2,), dtype=np.int64)
        self.action_space = spaces.Discrete(4)
        self.pos = np.zeros(2, dtype=np.int64)  # the whole state, under a name codeworld does not know

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.pos = np.zeros(2, dtype=np.int64)
        return self.pos.copy(), {}

    def step(self, action):
        dx, dy = [(-1, 0), (1, 0), (0, -1), (0, 1)][int(action)]
        self.pos = np.clip(self.pos + np.array([dx, dy]), 0, 4)
        at_goal = bool(self.pos[0] == GOAL[0] and self.pos[1] == GOAL[1])
        distance = abs(GOAL[0] - int(self.pos[0])) + abs(GOAL[1] - int(self.pos[1]))
        reward = 1.0 if at_goal else -0.1 * distance / 8.0
        return self.pos.copy(), reward, at_goal, False, {}


class DictGridEnv(GridEnv):
    """The grid walker, observed as a dict: the position and the goal."""

    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Dict({
            "position": spaces.Box(0, 4, shape=(2,), dtype=np.int64),
            "goal": spaces.Box(0, 4, shape=(2,), dtype=np.int64),
        })

    def _obs(self, pos):
        return {"position": pos, "goal": np.array(GOAL, dtype=np.int64)}

    def reset(self, *, seed=None, options=None):
        pos, info = super().reset(seed=seed)
        return self._obs(pos), info

    def step(self, action):
        pos, reward, done, truncated, info = super().step(action)
        return self._obs(pos), reward, done, truncated, info


class LockedGridEnv(GridEnv):
    """The grid walker holding a lock: its state cannot be copied, saved or set."""

    def __init__(self):
        super().__init__()
        self.lock = threading.Lock()


class TextEnv(GridEnv):
    """An environment whose observations are text."""

    def __init__(self):
        super().__init__()
        self.observation_space = spaces.Text(5)


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    return tmp_path / "cache"


@pytest.fixture
def test_envs():
    """Register the environments of this file with Gymnasium for one test, then remove them."""
    ids = {GRID_ID: GridEnv, "CodeworldTestDictGrid-v0": DictGridEnv,
           "CodeworldTestLockedGrid-v0": LockedGridEnv, "CodeworldTestText-v0": TextEnv}
    for env_id, cls in ids.items():
        gym.register(id=env_id, entry_point=cls, max_episode_steps=30)
    yield
    for env_id in ids:
        gym.registry.pop(env_id, None)


def _write(tmp_path, name, text):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_an_environment_defined_here_goes_through_every_command(tmp_path, cache, test_envs, capsys):
    model = _write(tmp_path, "grid.py", GRID_MODEL)
    spec = get_spec(GRID_ID)
    assert spec.obs_dim == 2 and spec.discrete and spec.n_actions == 4 and spec.planner == "mcts"
    assert spec.has_oracle and spec.sim_state.name == "deep_copy"  # its state is `pos`: copied whole
    assert not spec.settable and "does not determine" in spec.ceiling_note

    assert main(["describe", GRID_ID]) == 0
    text = capsys.readouterr().out
    assert "## Rewards" in text and "far corner" in text and "## Arguments" not in text
    assert "World-model contract" in text and "an int in 0..3" in text

    assert main(["collect", GRID_ID]) == 0
    path = capsys.readouterr().out.split(":")[0]
    buffer = load_buffer(path)
    assert str(cache) in path and buffer.env_id == GRID_ID
    assert buffer.metadata["protocol"]["policies"][-1].startswith("random_shooting")

    assert main(["score", GRID_ID, model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 1.0 and report["strict"] == 1.0 and report["floor"]["score"] < 1.0
    assert report["ceiling"] is None and "does not determine" in report["extra"]["ceiling_unavailable"]

    assert main(["plan", GRID_ID, model, "--episodes", "2", "--json", "--max-steps", "30",
                 "--set", "num_simulations=16", "--set", "rollout_depth=10"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["return_oracle"] > record["return_random"]
    assert record["normalized_return"] >= 0.8

    script = _write(tmp_path, "script.json", json.dumps([f"```python\n{GRID_MODEL}```"]))
    out = tmp_path / "run"
    assert main(["synthesize", GRID_ID, "--llm", f"scripted:{script}", "--budget", "1",
                 "--out", str(out), "--quiet"]) == 0
    assert "score 1.0000" in capsys.readouterr().out
    assert json.loads((out / "run.json").read_text())["env_id"] == GRID_ID
    assert main(["show", str(out), "--no-picture"]) == 0
    assert GRID_ID in capsys.readouterr().out


def test_frozen_lake_by_id_with_keyword_arguments(tmp_path, cache, capsys):
    model = _write(tmp_path, "lake.py", FROZEN_LAKE_MODEL)
    args = ["--env-kwargs", "is_slippery=false"]
    spec = env_spec("FrozenLake-v1", is_slippery=False)
    assert spec.env_id == "FrozenLake-v1,is_slippery=false" and spec.settable and spec.has_oracle
    assert get_spec("FrozenLake-v1,is_slippery=False") is spec
    assert main(["describe", "FrozenLake-v1", *args]) == 0
    assert capsys.readouterr().out.startswith("# FrozenLake-v1,is_slippery=false\n")
    assert main(["score", "FrozenLake-v1", model, *args, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 1.0 and report["ceiling"]["score"] == 1.0
    assert main(["plan", "FrozenLake-v1", model, *args, "--episodes", "2", "--json",
                 "--set", "num_simulations=30"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["return_oracle"] == 1.0 and record["return_model"] == 1.0
    # The slippery lake is random: the observation cannot set it, but a deep copy restores it.
    slippery = get_spec("FrozenLake-v1")
    assert not slippery.settable and slippery.stochastic and slippery.has_oracle
    assert main(["score", "FrozenLake-v1", model]) == 0
    assert "ceiling     unavailable: setting the simulator" in capsys.readouterr().out


def test_mountain_car_continuous_by_id(tmp_path, cache, capsys):
    model = _write(tmp_path, "car.py", MOUNTAIN_CAR_CONTINUOUS_MODEL)
    spec = get_spec("MountainCarContinuous-v0")
    assert not spec.discrete and spec.planner == "cem" and spec.action_low == (-1.0,)
    assert spec.settable and spec.has_oracle
    assert main(["score", "MountainCarContinuous-v0", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 1.0 and report["ceiling"]["score"] == 1.0
    assert main(["plan", "MountainCarContinuous-v0", "--oracle-only", "--episodes", "1", "--max-steps", "3",
                 "--json", "--set", "num_samples=8", "--set", "num_elites=2", "--set", "horizon=4",
                 "--set", "iterations=2"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["oracle"]["status"] == "ok" and record["oracle"]["lengths"] == [3]


def test_dict_observations_are_flattened_with_their_names(tmp_path, cache, test_envs, capsys):
    spec = get_spec("CodeworldTestDictGrid-v0")
    assert spec.obs_dim == 4 and spec.state_names == ("goal[0]", "goal[1]", "position[0]", "position[1]") \
        or spec.state_names == ("position[0]", "position[1]", "goal[0]", "goal[1]")
    assert main(["describe", "CodeworldTestDictGrid-v0"]) == 0
    contract = capsys.readouterr().out.split("World-model contract")[1]
    assert "4 numbers: " + ", ".join(spec.state_names) in contract
    position = spec.state_names.index("position[0]")
    model = GRID_MODEL.replace("def step(state, action):", "def _step(state, action):") + f"""

def step(state, action):
    pos = state[{position}:{position + 2}]
    nxt, reward, done = _step(pos, action)
    out = state.copy()
    out[{position}:{position + 2}] = nxt
    return out, reward, done
"""
    assert main(["score", "CodeworldTestDictGrid-v0", _write(tmp_path, "m.py", model), "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["score"] == 1.0


def test_an_environment_whose_state_cannot_be_saved(tmp_path, cache, test_envs, capsys):
    spec = get_spec("CodeworldTestLockedGrid-v0")
    assert not spec.has_oracle and not spec.settable and "cannot be saved and restored" in spec.oracle_note
    assert main(["collect", "CodeworldTestLockedGrid-v0"]) == 0
    out = capsys.readouterr().out
    assert "random episodes only" in out
    buffer = load_buffer(out.split(":")[0])
    assert set(buffer.metadata["protocol"]["policies"]) == {"random"}
    assert "random_only" in buffer.metadata["protocol"]
    assert main(["plan", "CodeworldTestLockedGrid-v0", "--oracle-only", "--episodes", "1"]) == 0
    assert "unavailable: the simulator's state cannot be saved and restored" in capsys.readouterr().out


def test_an_unsupported_space_is_a_one_line_error(test_envs, capsys):
    with pytest.raises(UnsupportedSpaceError, match="Text"):
        get_spec("CodeworldTestText-v0")
    for command in (["describe"], ["collect"]):
        assert main([*command, "CodeworldTestText-v0"]) == 2
        err = capsys.readouterr().err
        assert err.count("\n") == 1 and "observation space Text(" in err and "not supported" in err


def test_unknown_ids_and_bad_keyword_arguments_are_one_line_errors(capsys):
    assert main(["describe", "FrozenLake-v1", "--env-kwargs", "no_such_argument=1"]) == 2
    assert capsys.readouterr().err.count("\n") == 1
    assert main(["describe", "no_such_module_here:Thing-v0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "cannot import 'no_such_module_here'" in err


def test_register_env_and_module_form(tmp_path, cache, monkeypatch):
    package = tmp_path / "mypkg_codeworld_test"
    package.mkdir()
    (package / "__init__.py").write_text(
        "import gymnasium\n"
        "gymnasium.register(id='ModuleLake-v0', entry_point='gymnasium.envs.toy_text:FrozenLakeEnv',"
        " kwargs={'is_slippery': False}, max_episode_steps=20)\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    try:
        spec = get_spec("mypkg_codeworld_test:ModuleLake-v0")
        assert spec.env_id == "mypkg_codeworld_test:ModuleLake-v0" and spec.settable
        described = register_env("mypkg_codeworld_test:ModuleLake-v0", kwargs={"map_name": "4x4"},
                                 description="A lake.")
        assert described.env_id == "mypkg_codeworld_test:ModuleLake-v0,map_name=4x4"
        assert get_spec(described.env_id).description == "A lake."
    finally:
        gym.registry.pop("ModuleLake-v0", None)


def _chain_dataset(tmp_path):
    """Logged transitions of a counter that the action adds to, with a description beside them."""
    rng = np.random.default_rng(0)
    obs = rng.integers(0, 10, size=(40, 1)).astype(np.float64)
    actions = rng.integers(0, 3, size=(40, 1)).astype(np.float64)
    next_obs = obs + actions
    rewards = (next_obs[:, 0] >= 10).astype(np.float64)
    path = tmp_path / "counter.npz"
    np.savez(path, obs=obs, actions=actions, rewards=rewards, next_obs=next_obs,
             terminated=next_obs[:, 0] >= 10, truncated=np.zeros(40, bool),
             episode_start=np.arange(40))
    return path


COUNTER_MODEL = """
import numpy as np


def step(state, action):
    nxt = state + action
    return nxt, float(nxt[0] >= 10), bool(nxt[0] >= 10)
"""


def test_an_npz_dataset_scores_and_synthesizes_but_cannot_plan(tmp_path, cache, capsys):
    data = _chain_dataset(tmp_path)
    desc = _write(tmp_path, "counter.md", "# Counter\n\nThe action (0, 1 or 2) is added to the counter; "
                                          "reaching 10 ends the episode with reward 1.\n")
    model = _write(tmp_path, "counter_model.py", COUNTER_MODEL)
    assert main(["score", str(data), model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 1.0 and report["ceiling"] is None
    assert "no simulator" in report["extra"]["ceiling_unavailable"]
    spec = get_spec(f"data:{data}")
    assert spec.discrete and spec.n_actions == 3 and not spec.simulator
    assert main(["describe", str(data)]) == 0  # counter.md beside the data is its description
    assert capsys.readouterr().out.startswith("# Counter")
    assert main(["plan", str(data), model]) == 2
    assert "planning needs an environment" in capsys.readouterr().err
    script = _write(tmp_path, "script.json", json.dumps([f"```python\n{COUNTER_MODEL}```"]))
    other_desc = _write(tmp_path, "other.md", "# A counter\n\nIt counts.\n")
    out = tmp_path / "run"
    # The data model is off: this asks what the LLM's prompt says, so the first call must be made.
    assert main(["synthesize", str(data), "--description", other_desc, "--llm", f"scripted:{script}",
                 "--budget", "1", "--out", str(out), "--quiet", "--set", "assist.data_model=false"]) == 0
    assert "score 1.0000" in capsys.readouterr().out
    prompt = (out / "calls" / "0000.json").read_text()
    assert "It counts." in prompt and "reaching 10 ends" not in prompt and desc != other_desc


def test_a_minari_dataset_scores_a_model(tmp_path, cache, monkeypatch, capsys):
    import minari  # in the dev extra (codeworld[minari] for users)
    from minari.data_collector.episode_buffer import EpisodeBuffer

    monkeypatch.setenv("MINARI_DATASETS_PATH", str(tmp_path / "minari"))
    env = gym.make("FrozenLake-v1", is_slippery=False)
    rng = np.random.default_rng(0)
    episodes = []
    for episode in range(4):
        obs, _ = env.reset(seed=episode)
        observations, actions, rewards, terms, truncs = [obs], [], [], [], []
        for _ in range(30):
            action = int(rng.integers(0, 4))
            obs, reward, terminated, truncated, _ = env.step(action)
            observations.append(obs)
            actions.append(action)
            rewards.append(reward)
            terms.append(terminated)
            truncs.append(truncated)
            if terminated or truncated:
                break
        episodes.append(EpisodeBuffer(id=episode, observations=observations, actions=actions,
                                      rewards=rewards, terminations=terms, truncations=truncs,
                                      infos={}))
    with warnings.catch_warnings():  # Minari's advice to give an author and a code link
        warnings.simplefilter("ignore", UserWarning)
        minari.create_dataset_from_buffers("codeworld/lake-test-v0", episodes, env=env,
                                           algorithm_name="random", description="A frozen lake.")
    model = _write(tmp_path, "lake.py", FROZEN_LAKE_MODEL)
    desc = _write(tmp_path, "lake.md", "# Lake\n\nA 4 x 4 frozen lake.\n")
    assert main(["score", "minari:codeworld/lake-test-v0", model, "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["score"] == 1.0 and report["n_transitions"] == sum(len(e.rewards) for e in episodes)
    assert main(["describe", "minari:codeworld/lake-test-v0"]) == 0  # the dataset's own description
    assert capsys.readouterr().out.startswith("A frozen lake.")
    assert main(["describe", "minari:codeworld/lake-test-v0", "--description", desc]) == 0
    assert capsys.readouterr().out.startswith("# Lake")


def test_the_documented_example_runs(cache, capsys):
    from pathlib import Path

    page = (Path(__file__).parent.parent / "docs" / "environments.md").read_text()
    example = page.split("A complete example, from Python")[1].split("```python\n")[1].split("```")[0]
    try:
        exec(compile(example, "docs/environments.md", "exec"), {})
        printed = capsys.readouterr().out
        assert "World-model contract" in printed and "score       1.0000" in printed
        assert printed.rstrip().endswith("1.0")  # the normalized return of the true model
    finally:
        gym.registry.pop("Walker-v0", None)


def test_the_cwmb_harness_takes_a_gymnasium_id_with_keyword_arguments(tmp_path, cache):
    import importlib.util
    from pathlib import Path

    from codeworld.experiments import Job, run_cwmb_job

    path = Path(__file__).resolve().parents[1] / "benchmarks" / "cwmb.py"
    module_spec = importlib.util.spec_from_file_location("cwmb_harness_custom", path)
    harness = importlib.util.module_from_spec(module_spec)
    module_spec.loader.exec_module(harness)
    envs = harness.resolve_envs("rtfm,FrozenLake-v1,is_slippery=false,Taxi-v3")
    assert envs == ["RTFM-v0", "FrozenLake-v1,is_slippery=false", "Taxi-v4"]
    assert [harness.group_of(e) for e in envs] == ["rtfm", "discrete", "discrete"]

    script = _write(tmp_path, "script.json", json.dumps([f"```python\n{FROZEN_LAKE_MODEL}```"]))
    job = Job(envs[1], "worldcoder", 0, f"scripted:{script}", 1, {"episodes": 2, "max_steps": 20})
    result = run_cwmb_job(job, str(tmp_path / "work"))
    assert result["scores"]["sound"]["score"] == 1.0
    assert result["scores"]["paper_on_paper_buffer"] is None
    planning = result["planning"]
    for policy in ("random", "oracle", "model"):  # all three ran on the real environment
        assert planning[policy]["status"] == "ok" and len(planning[policy]["returns"]) == 2


def test_the_oracle_of_a_random_environment_samples_its_dynamics(cache):
    from codeworld.planning._oracle import OracleModel

    spec = get_spec("FrozenLake-v1")  # slippery: the move goes astray two times in three
    assert spec.stochastic
    oracle = OracleModel(spec.env_id)
    try:
        env = gym.make("FrozenLake-v1")
        env.reset(seed=0)
        root = oracle.state_of(env)
        states = np.repeat(root[None, :], 60, axis=0)
        next_states, _, _ = oracle.step_batch(states, np.full((60, 1), 2.0))  # "move right", 60 times
        cells = {int(env.unwrapped.s)}
        for state in next_states:
            oracle._restore(state)
            cells.add(int(oracle.sim.s))
        assert len(cells) >= 3  # stayed, went right, went down: not one replayed outcome
    finally:
        oracle.close()
