"""The scorer: kernel parity on both backends, the two modes, floor and ceiling, sandboxed models, CLI."""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from codeworld.cli import main
from codeworld.envs import get_spec, list_envs
from codeworld.envs._buffers import buffer_path, load_buffer, paper_buffer_path
from codeworld.kernels._check import check_transitions, check_transitions_reference
from codeworld.scoring import PAPER, SOUND, Scorer

CARTPOLE = (Path(__file__).parent / "models" / "cartpole_functional.py").read_text()
CARTPOLE_WRONG_FORCE = CARTPOLE.replace("FORCE_MAG = 10.0", "FORCE_MAG = 11.0")
DO_NOTHING = '''
import numpy as np

def step(state, action):
    return state.copy(), {reward!r}, False
'''
RAISES = '''
import numpy as np

def step(state, action):
    if state[1] > 0.1:
        raise ValueError("velocity too high")
    return state.copy(), 1.0, False
'''
CLASS_FORM = '''
import numpy as np

class Environment:
    def __init__(self):
        self.state = np.zeros(4)

    def set_state(self, state):
        self.state = np.array(state, dtype=float)

    def step(self, action):
        return self.state.copy(), 1.0, False
'''

CLASSIC_CONTROL = ["CartPole-v1", "MountainCar-v0", "Acrobot-v1", "Pendulum-v1"]


def _exec_step(source: str):
    namespace: dict = {}
    exec(compile(source, "trusted_test_model.py", "exec"), namespace)  # test-authored code only
    return namespace["step"]


# ---------------------------------------------------------------------------------------------
# The kernel
# ---------------------------------------------------------------------------------------------


def _random_case(seed: int, n: int = 300, d: int = 6):
    rng = np.random.default_rng(seed)
    obs = rng.normal(size=(n, d))
    true_next = obs + 0.1 * rng.normal(size=(n, d))
    noise = rng.choice([0.0, 1e-9, 1e-6, 1e-4, 1e-2], size=(n, d))
    pred_next = true_next + noise * rng.normal(size=(n, d))
    pred_next[rng.random((n, d)) < 0.02] = np.nan
    pred_next[rng.random((n, d)) < 0.01] = np.inf
    true_reward = rng.choice([0.0, 1.0, -1.0, 0.37], size=n)
    pred_reward = true_reward + rng.choice([0.0, 1e-7, 1e-3], size=n)
    true_done = rng.random(n) < 0.2
    pred_done = rng.random(n) < 0.2
    return obs, true_next, pred_next, true_reward, pred_reward, true_done, pred_done


@pytest.mark.parametrize("seed", [0, 1, 2])
@pytest.mark.parametrize("tol", [(1e-5, 1e-5, 1e-6, 0.0), (0.0, 0.0, 0.0, 0.0), (1e-3, 0.0, 0.0, 1e-2)])
def test_kernel_matches_the_python_reference(kernel_backend, seed, tol):
    case = _random_case(seed)
    ref = check_transitions_reference(*case, *tol)
    got = check_transitions(*case, *tol)
    np.testing.assert_array_equal(got.dims_ok, ref.dims_ok)
    np.testing.assert_array_equal(got.reward_ok, ref.reward_ok)
    np.testing.assert_array_equal(got.done_ok, ref.done_ok)
    np.testing.assert_allclose(got.sq_err_model, ref.sq_err_model, rtol=1e-12)
    np.testing.assert_allclose(got.sq_err_still, ref.sq_err_still, rtol=1e-12)


def test_kernel_rule_on_edge_values(kernel_backend):
    truth = np.array([[1.0, 0.0, 100.0, 5.0, 2.0]])
    pred = np.array([[1.0 + 2e-5, 1e-5, 100.0 + 1.1e-3, np.nan, -np.inf]])
    got = check_transitions(truth, truth, pred, [1.0], [1.0], [True], [1], 1e-5, 1e-5, 0.0, 0.0)
    # |d| <= atol + rtol*|t|: 2e-5 <= 2e-5 yes; 1e-5 <= 1e-5 yes; 1.1e-3 > 1.01e-3 no; NaN/inf no
    assert got.dims_ok.tolist() == [2]
    assert got.reward_ok.tolist() == [True] and got.done_ok.tolist() == [True]


def test_kernel_refuses_mismatched_shapes(kernel_backend):
    obs = np.zeros((3, 2))
    with pytest.raises(ValueError):
        check_transitions(obs, obs, np.zeros((3, 3)), np.zeros(3), np.zeros(3), np.zeros(3),
                          np.zeros(3), 0, 0, 0, 0)
    with pytest.raises(ValueError):
        check_transitions(obs, obs, obs, np.zeros(2), np.zeros(3), np.zeros(3), np.zeros(3), 0, 0, 0, 0)


# ---------------------------------------------------------------------------------------------
# References: ceiling and floor
# ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("env_id", CLASSIC_CONTROL + ["CliffWalking-v1", "Taxi-v4", "HalfCheetah-v4"])
def test_true_simulator_scores_at_least_099_on_committed_buffers(env_id):
    ceiling = Scorer(env_id).ceiling
    assert ceiling is not None and ceiling.score >= 0.99


@pytest.mark.parametrize("env_id", CLASSIC_CONTROL)
def test_true_simulator_scores_at_least_099_on_the_papers_buffers(env_id):
    assert Scorer(env_id, paper_buffer_path(env_id)).ceiling.score >= 0.99


def test_blackjack_has_no_ceiling():
    assert Scorer("Blackjack-v1").ceiling is None


def _modal(rewards):
    counts = Counter(rewards.tolist())
    best = max(counts.values())
    return min(r for r, c in counts.items() if c == best)


def _paper_rule_do_nothing(buffer, exact: bool) -> float:
    """The paper's success rate of the do-nothing model, transition by transition."""
    reward = _modal(buffer.rewards)
    rates = []
    for i in range(len(buffer)):
        reward_ok = float(reward == buffer.rewards[i])
        done_ok = float(not buffer.dones[i])  # the do-nothing model never predicts done
        if buffer.dones[i]:
            rates.append(0.5 * reward_ok + 0.5 * done_ok)
            continue
        same = [buffer.obs[i][j] == buffer.next_obs[i][j] if exact else
                np.allclose(buffer.obs[i][j], buffer.next_obs[i][j], rtol=1e-5, atol=1e-5)
                for j in range(buffer.obs.shape[1])]
        rates.append(sum(same) / len(same) / 3 + reward_ok / 3 + done_ok / 3)
    values = sorted(set(buffer.rewards.tolist()))
    class_weight = {v: len(buffer) / int(np.sum(buffer.rewards == v)) for v in values}
    total = sum(class_weight.values())
    weights = [class_weight[r] / total for r in buffer.rewards.tolist()]
    return float(np.average(rates, weights=weights))


@pytest.mark.parametrize("env_id", [e for e in list_envs() if paper_buffer_path(e).is_file()])
def test_paper_mode_floor_on_the_papers_buffers_follows_the_papers_rule(env_id):
    buffer = load_buffer(paper_buffer_path(env_id))
    expected = _paper_rule_do_nothing(buffer, get_spec(env_id).paper_exact)
    assert Scorer(env_id, buffer, mode=PAPER, references=True).floor.score == pytest.approx(expected, abs=1e-12)


@pytest.mark.parametrize("env_id", ["CartPole-v1", "Taxi-v4", "Pendulum-v1"])
def test_sound_floor_is_the_mean_of_thirds(env_id):
    buffer = load_buffer(buffer_path(env_id))
    spec = get_spec(env_id)
    reward = _modal(buffer.rewards)
    close = np.abs(buffer.obs - buffer.next_obs) <= spec.state_atol + spec.state_rtol * np.abs(buffer.next_obs)
    reward_ok = np.abs(buffer.rewards - reward) <= spec.reward_atol + spec.reward_rtol * np.abs(buffer.rewards)
    expected = np.mean((close.mean(axis=1) + reward_ok + ~buffer.terminated) / 3)
    assert Scorer(env_id).floor.score == pytest.approx(expected, abs=1e-12)


def test_paper_mode_keeps_its_quirks():
    buffer = load_buffer(paper_buffer_path("Pendulum-v1"))
    step = _exec_step(_PENDULUM)
    sound = Scorer("Pendulum-v1", buffer, mode=SOUND, references=False).score_step(step)
    paper = Scorer("Pendulum-v1", buffer, mode=PAPER, references=False).score_step(step)
    assert sound.score >= 0.99
    # exact reward equality against float32-stored rewards: a float64 model never matches
    assert paper.components["reward"] < 0.05 and paper.score < 0.7


def test_sound_mode_compares_done_with_terminated_and_paper_mode_with_dones():
    step = _exec_step(CARTPOLE)
    buffer = load_buffer(buffer_path("CartPole-v1"))
    assert buffer.truncated.any()
    sound = Scorer("CartPole-v1", buffer, references=False).score_step(step)
    paper = Scorer("CartPole-v1", buffer, mode=PAPER, references=False).score_step(step)
    assert sound.components["done"] == 1.0
    assert paper.components["done"] == pytest.approx(1 - buffer.truncated.mean())


_PENDULUM = '''
import math
import numpy as np

def step(state, action):
    th = math.atan2(state[1], state[0])
    thdot = state[2]
    u = min(max(float(action[0]), -2.0), 2.0)
    norm = ((th + math.pi) % (2 * math.pi)) - math.pi
    cost = norm ** 2 + 0.1 * thdot ** 2 + 0.001 * u ** 2
    thdot = thdot + (3 * 10.0 / 2 * math.sin(th) + 3.0 * u) * 0.05
    thdot = min(max(thdot, -8.0), 8.0)
    th = th + thdot * 0.05
    return np.array([math.cos(th), math.sin(th), thdot]), -cost, False
'''


# ---------------------------------------------------------------------------------------------
# Models through the sandbox
# ---------------------------------------------------------------------------------------------


def test_sandboxed_models_score_between_floor_and_ceiling(kernel_backend):
    scorer = Scorer("CartPole-v1")
    true = scorer.score_source(CARTPOLE)
    assert true.ok and true.compiled and true.backend == kernel_backend
    assert true.score >= 0.99 and true.first_error is None and true.skill > 0.99
    wrong = scorer.score_source(CARTPOLE_WRONG_FORCE)
    assert scorer.floor.score < wrong.score < scorer.ceiling.score
    assert wrong.first_error["index"] == 0 and wrong.first_error["wrong"] == ["next_state"]
    assert wrong.first_error["wrong_dims"] == [1, 3]  # the velocities feel the force first
    floor_model = scorer.score_source(DO_NOTHING.format(reward=_modal(scorer.buffer.rewards)))
    assert floor_model.score == pytest.approx(scorer.floor.score, abs=1e-12)
    assert floor_model.strict == pytest.approx(scorer.floor.strict, abs=1e-12)


def test_a_model_that_raises_reports_the_transition_and_line():
    scorer = Scorer("CartPole-v1", references=False)
    report = scorer.score_source(RAISES)
    first_bad = int(np.argmax(scorer.buffer.obs[:, 1] > 0.1))
    assert report.status == "exception" and report.line == 6
    assert "velocity too high" in report.message
    assert report.n_predicted == first_bad
    assert report.first_error["index"] == first_bad and report.first_error["line"] == 6
    assert report.first_error["state"] == scorer.buffer.obs[first_bad].tolist()
    assert 0 < report.score < 1  # the predicted transitions keep their credit


def test_class_form_model_runs_on_the_python_path():
    scorer = Scorer("CartPole-v1")
    report = scorer.score_source(CLASS_FORM)
    assert report.ok and report.compiled is False
    assert report.score == pytest.approx(scorer.floor.score)


def test_a_program_that_is_not_a_model_gets_a_failed_report():
    report = Scorer("CartPole-v1", references=False).score_source("def step(state, action:\n    pass\n")
    assert report.status == "exception" and report.line == 1 and report.score == 0.0
    assert report.n_predicted == 0


# ---------------------------------------------------------------------------------------------
# CLI
# ---------------------------------------------------------------------------------------------


def test_cli_score_json(tmp_path, capsys):
    model = tmp_path / "cartpole.py"
    model.write_text(CARTPOLE)
    buffer = paper_buffer_path("CartPole-v1")
    assert main(["score", "CartPole-v1", str(model), "--buffer", str(buffer), "--mode", "paper", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    for key in ("score", "strict", "components", "floor", "ceiling", "n_transitions", "first_error", "status"):
        assert key in record
    assert record["status"] == "ok" and record["mode"] == "paper" and record["score"] >= 0.99
    assert record["n_transitions"] == len(load_buffer(buffer))


@pytest.mark.parametrize("spelling", [["--buffer", "paper"], ["--paper-buffer"]])
def test_cli_score_on_the_papers_buffer_by_name(tmp_path, capsys, spelling):
    model = tmp_path / "cartpole.py"
    model.write_text(CARTPOLE)
    assert main(["score", "CartPole-v1", str(model), *spelling, "--no-references", "--json"]) == 0
    record = json.loads(capsys.readouterr().out)
    assert record["n_transitions"] == len(load_buffer(paper_buffer_path("CartPole-v1")))
    assert record["buffer"].endswith("CartPole-v1.npz") and "paper_buffers" in record["buffer"]
    assert record["score"] >= 0.99


@pytest.mark.parametrize("case", ["env", "buffer_missing", "buffer_nan", "model_missing", "model_syntax",
                                  "no_paper_buffer"])
def test_cli_score_errors_are_one_line(tmp_path, capsys, case):
    model = tmp_path / "m.py"
    model.write_text(CARTPOLE)
    args = ["score", "CartPole-v1", str(model)]
    if case == "env":
        args[1] = "CartPool-v1"
    elif case == "buffer_missing":
        args += ["--buffer", str(tmp_path / "none.npz")]
    elif case == "buffer_nan":
        with np.load(buffer_path("CartPole-v1")) as archive:
            arrays = {k: archive[k].copy() for k in archive.files}
        arrays["obs"][0, 0] = np.nan
        np.savez(tmp_path / "nan.npz", **arrays)
        args += ["--buffer", str(tmp_path / "nan.npz")]
    elif case == "model_missing":
        args[2] = str(tmp_path / "absent.py")
    elif case == "no_paper_buffer":
        args = ["score", "Humanoid-v4", str(model), "--buffer", "paper"]
    else:
        model.write_text("def step(state, action:\n    pass\n")
        args += ["--no-references"]
    code = main(args)
    err = capsys.readouterr().err
    assert code != 0
    assert err.count("\n") == 1 and "Traceback" not in err


def test_a_hanging_model_times_out_and_keeps_its_partial_predictions():
    hang = CLASS_FORM.replace("        return self.state.copy(), 1.0, False",
                              "        self.calls = getattr(self, 'calls', 0) + 1\n"
                              "        while self.calls > 40:\n"
                              "            pass\n"
                              "        return self.state.copy(), 1.0, False")
    report = Scorer("CartPole-v1", references=False).score_source(hang, timeout_s=2.0)
    assert report.status == "timeout"
    assert 0 < report.n_predicted <= 40
    assert report.first_error["index"] == report.n_predicted
