"""Each of the four kinds of extension in CONTRIBUTING.md is picked up once registered: a planner, an
LLM backend, a synthesis method and an environment, each defined here and used through the same
commands as the built-in ones."""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass, field
from pathlib import Path

import gymnasium as gym
import numpy as np
import pytest
from gymnasium import spaces

from codeworld.cli import main
from codeworld.llm import backends, make_llm, register_backend
from codeworld.llm.types import RawCompletion
from codeworld.planning import PLANNERS
from codeworld.synthesis import GENERATE, METHODS, Method, Request, register_method
from codeworld.synthesis.config import AssistConfig, SamplingConfig

MODELS = Path(__file__).parent / "models"
CARTPOLE = (MODELS / "cartpole_functional.py").read_text()

# A planner defined outside codeworld lives in a module of its own, which registers it on import:
# the sandbox worker that plans with a model imports that module too (codeworld.planning._ops).
GREEDY_PLANNER = '''
from dataclasses import dataclass

import numpy as np

from codeworld.planning import PlannerEntry, register_planner


@dataclass(frozen=True)
class GreedyConfig:
    """One-step lookahead.

    Attributes:
        tie_break_last: among equally rewarded actions take the last, not the first.
    """

    tie_break_last: bool = False


class GreedyPlanner:
    """The action whose predicted reward is highest, from one batched model call."""

    def __init__(self, config, n_actions, **_):
        self.config = config
        self.n_actions = int(n_actions)
        self.model_steps = 0
        self.last_info = {}

    def reset(self):
        pass

    def act(self, access, state, seed):
        states = np.tile(state, (self.n_actions, 1))
        actions = np.arange(self.n_actions, dtype=np.float64).reshape(-1, 1)
        _, rewards, _ = access.step_batch(states, actions)
        self.model_steps += self.n_actions
        rewards = np.asarray(rewards)
        order = np.arange(self.n_actions)[::-1] if self.config.tie_break_last else np.arange(self.n_actions)
        best = int(order[np.argmax(rewards[order])])
        self.last_info = {"rewards": rewards.tolist()}
        return [best]


register_planner(PlannerEntry("greedy", GreedyConfig, GreedyPlanner, discrete=True,
                              summary="one-step lookahead on the predicted reward"))
'''


@pytest.fixture
def greedy_planner(tmp_path, monkeypatch):
    """The module above, importable here and in sandbox workers, for one test."""
    (tmp_path / "greedy_planner_plugin.py").write_text(GREEDY_PLANNER)
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.setenv("PYTHONPATH", str(tmp_path))
    import greedy_planner_plugin  # noqa: F401  (registers the planner)

    yield
    PLANNERS.unregister("greedy")
    sys.modules.pop("greedy_planner_plugin", None)


def test_a_registered_planner_is_offered_by_plan_and_plans_with_a_model(greedy_planner, tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    assert "greedy" in capsys.readouterr().out

    model = tmp_path / "cartpole.py"
    model.write_text(CARTPOLE)
    assert main(["plan", "CartPole-v1", str(model), "--planner", "greedy", "--set", "tie_break_last=true",
                 "--episodes", "2", "--max-steps", "30", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["config"] == {"planner": "greedy", "tie_break_last": True}
    # the model is the true dynamics: planned with in the sandbox it acts as on the oracle
    assert record["model"]["status"] == "ok" and record["model"]["model_steps"] > 0
    assert record["model"]["returns"] == record["oracle"]["returns"]

    assert main(["plan", "Pendulum-v1", "--planner", "greedy", "--oracle-only"]) == 2
    assert "discrete actions" in capsys.readouterr().err


class EchoBackend:
    """Answers with the last message, upper-cased when asked to shout."""

    name = "echo"
    cacheable = False

    def __init__(self, arg: str):
        self.model = arg or "plain"

    def chat(self, messages, sampling):
        text = messages[-1]["content"]
        return RawCompletion(text=text.upper() if self.model == "shout" else text, prompt_tokens=1,
                             completion_tokens=1, finish_reason="stop", model=self.model)

    def close(self):
        pass


def test_a_registered_llm_backend_is_chosen_by_its_name(capsys, monkeypatch):
    monkeypatch.setattr(backends, "_REGISTRY", backends._REGISTRY.copy())  # restored after the test
    register_backend("echo", lambda arg, options: EchoBackend(arg))

    assert make_llm("echo:shout").complete([{"role": "user", "content": "hi"}]).text == "HI"
    assert main(["llm", "hello there", "--llm", "echo"]) == 0
    assert capsys.readouterr().out.splitlines()[0] == "hello there"
    with pytest.raises(SystemExit):
        main(["synthesize", "--help"])
    assert "echo" in capsys.readouterr().out  # listed wherever --llm is taken


@dataclass(frozen=True)
class FirstDraftConfig:
    """Generations from scratch until one is perfect (a method for this test).

    Attributes:
        sampling: the LLM's sampling settings.
        assist: scaffold, checks and repairs shared by every method.
    """

    sampling: SamplingConfig = field(default_factory=SamplingConfig)
    assist: AssistConfig = field(default_factory=AssistConfig)


class FirstDraft:
    """Asks for one program at a time, from scratch, and stops at the first perfect one."""

    method = "first-draft"

    def __init__(self, config: FirstDraftConfig, seed: int = 0):
        self.config = config
        self.calls = 0
        self.results: list[tuple[int, str, object]] = []

    @property
    def finished(self) -> bool:
        return any(not ev.buggy and ev.score >= 1.0 for _, _, ev in self.results)

    def propose(self, max_requests: int) -> list[Request]:
        if self.finished or max_requests < 1:
            return []
        self.calls += 1
        return [Request(call=self.calls - 1, action=GENERATE, parent=-1)]

    def apply(self, request: Request, outcome) -> None:
        if outcome.program is not None:
            self.results.append((request.call, outcome.program, outcome.evaluation))

    def best(self):
        healthy = [r for r in self.results if not r[2].buggy]
        return max(healthy, key=lambda r: r[2].score) if healthy else None

    def programs(self) -> list[dict]:
        return [{"call": call, "parent_call": -1, "action": GENERATE, "score": ev.score,
                 "buggy": ev.buggy} for call, _, ev in self.results]

    def to_json(self) -> dict:
        return {"calls": self.calls}


def test_a_registered_synthesis_method_runs_through_synthesize(tmp_path, capsys):
    from codeworld.synthesis.config import ASSIST_ABLATIONS

    register_method(Method("first-draft", FirstDraftConfig, FirstDraft, "generations until a perfect one",
                           ablations=ASSIST_ABLATIONS))
    try:
        _synthesize_with_first_draft(tmp_path, capsys)
    finally:
        METHODS.unregister("first-draft")


def _synthesize_with_first_draft(tmp_path, capsys):
    with pytest.raises(SystemExit):
        main(["synthesize", "--help"])
    assert "first-draft" in capsys.readouterr().out
    wrong = CARTPOLE.replace("0.02", "0.03")
    script = tmp_path / "script.json"
    script.write_text(json.dumps([f"```python\n{p}```\n" for p in (wrong, CARTPOLE, CARTPOLE)]))
    out = tmp_path / "run"
    assert main(["synthesize", "CartPole-v1", "--method", "first-draft", "--llm", f"scripted:{script}",
                 "--budget", "3", "--out", str(out), "--no-fit", "--no-speed-step", "--quiet"]) == 0
    meta = json.loads((out / "run.json").read_text())
    assert meta["method"] == "first-draft" and meta["status"] == "finished"
    assert json.loads((out / "best_report.json").read_text())["score"] == 1.0
    assert len(list((out / "calls").glob("*.json"))) == 2  # it stopped at the perfect program

    # `codeworld show` reads its programs (the method-neutral records every search writes)
    capsys.readouterr()
    assert main(["show", str(out), "--no-picture", "--json"]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert [row["call"] for row in summary["per_call"]] == [1, 2]
    assert summary["per_call"][1]["score"] == 1.0

    # an ablation it declares runs as a CWMB job, the variant switched off in its config
    from codeworld.experiments import Job, run_cwmb_job

    job = Job("CartPole-v1", "first-draft/no-scaffold", 0, f"scripted:{script}", 2,
              {"plan": False, "finish": {"fit_constants": False, "speed_step": False}})
    result = run_cwmb_job(job, str(tmp_path / "work"))
    saved = json.loads((Path(result["run_dir"]) / "run.json").read_text())
    assert saved["variant"] == "first-draft/no-scaffold" and saved["config"]["assist"]["scaffold"] is False
    assert result["calls"] >= 1 and result["scores"]["sound"]["score"] == 1.0


class LineWorld(gym.Env):
    """A walker on a line of 7 cells that must reach the right end.

    ## Description
    The walker starts in cell 0; the goal is cell 6.

    ## Action Space
    Two actions: 0 moves left, 1 moves right; a move off the line leaves the walker where it is.

    ## Observation Space
    The cell, an integer in 0..6.

    ## Rewards
    1 on reaching the goal, otherwise 0.

    ## Episode End
    The episode ends on reaching the goal.
    """

    def __init__(self):
        self.observation_space = spaces.Discrete(7)
        self.action_space = spaces.Discrete(2)
        self.cell = 0

    def reset(self, *, seed=None, options=None):
        super().reset(seed=seed)
        self.cell = 0
        return self.cell, {}

    def step(self, action):
        self.cell = min(max(self.cell + (1 if int(action) == 1 else -1), 0), 6)
        done = self.cell == 6
        return self.cell, float(done), done, False, {}


LINE_MODEL = """
import numpy as np


def step(state, action):
    cell = min(max(state[0] + (1.0 if int(action) == 1 else -1.0), 0.0), 6.0)
    return np.array([cell]), float(cell == 6.0), bool(cell == 6.0)
"""


def test_a_registered_environment_is_collected_and_scored(tmp_path, capsys, monkeypatch):
    from codeworld.envs import register_env

    monkeypatch.setenv("CODEWORLD_CACHE_DIR", str(tmp_path / "cache"))
    env_id = "CodeworldTestLine-v0"
    try:
        spec = register_env(env_id, LineWorld, max_episode_steps=20)
        assert spec.discrete and spec.n_actions == 2 and spec.planner == "mcts"
        assert main(["collect", env_id]) == 0
        capsys.readouterr()
        model = tmp_path / "line.py"
        model.write_text(LINE_MODEL)
        assert main(["score", env_id, str(model), "--json"]) == 0
        report = json.loads(capsys.readouterr().out)
        assert report["score"] == 1.0 and report["env_id"] == env_id
        wrong = tmp_path / "wrong.py"
        wrong.write_text(LINE_MODEL.replace("1.0 if", "2.0 if"))
        assert main(["score", env_id, str(wrong), "--json"]) == 0
        assert json.loads(capsys.readouterr().out)["score"] < 1.0
    finally:
        gym.registry.pop(env_id, None)
