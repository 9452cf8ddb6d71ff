"""Constant fitting: literals found and rewritten with ast, fits run in the sandbox, kept only when
the held-out score improves; the `codeworld fit` command."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from codeworld.cli import main
from codeworld.fitting import FitConfig, find_literals, fit_constants, parametrize, rewrite_literals, split_buffer
from codeworld.scoring import Scorer

MODELS = Path(__file__).parent / "models"
TRUE_MODEL = (MODELS / "cartpole_functional.py").read_text()
PERTURBED = TRUE_MODEL.replace("FORCE_MAG = 10.0", "FORCE_MAG = 8.5")


@pytest.fixture(scope="module")
def scorer():
    return Scorer("CartPole-v1", references=False, compile=False)


def test_the_rule_fits_floats_and_leaves_structure_alone():
    source = (
        "import numpy as np\n"
        "G = 9.8  # gravity\n"
        "N = 4\n"
        "def helper(x, k=0.5):\n"
        "    return x ** 2.0 + 1.0 * x\n"
        "def step(state, action):\n"
        "    v = state[1] + -0.05 * G + state[int(2.0)]\n"
        "    return np.array([state[0], v]), 0.0, abs(v) > 1e3\n")
    found = find_literals(source)
    assert [lit.text for lit in found] == ["9.8", "0.05", "1e3"]
    rewritten = rewrite_literals(source, found, [-3.0, 0.05, 250.0])
    assert "G = (-3.0)  # gravity" in rewritten  # comments kept, a negative value parenthesized
    assert "+ -0.05 * G" in rewritten  # an unchanged literal keeps its text
    assert "abs(v) > 250.0" in rewritten
    assert "k=0.5" in rewritten and "** 2.0" in rewritten and "int(2.0)" in rewritten
    assert [lit.value for lit in find_literals(rewritten)] == [3.0, 0.05, 250.0]


def test_parametrized_program_reads_module_constants_at_run_time():
    text = parametrize(TRUE_MODEL, find_literals(TRUE_MODEL))
    assert text is not None
    step_body = text[text.index("def step"):]
    # Names computed from fitted literals are inlined in the function, so a compiled step reads
    # the parameters on every call instead of freezing the values of the first run.
    assert "TOTAL_MASS" not in step_body and "POLE_MASS_LENGTH" not in step_body
    assert "_cw_param(3)" in step_body  # FORCE_MAG
    looping = "A = 2.5\nfor i in range(2):\n    A = A * 2.0\ndef step(s, a):\n    return s * A, 0.0, False\n"
    assert parametrize(looping, find_literals(looping)) is None


def test_split_holds_out_whole_episodes(scorer):
    train, heldout = split_buffer(scorer.buffer, 0.3)
    assert len(train) + len(heldout) == len(scorer.buffer)
    assert 0 < heldout.n_episodes < scorer.buffer.n_episodes
    assert train.n_episodes + heldout.n_episodes == scorer.buffer.n_episodes
    assert set(train.episode_start.tolist()) <= set(range(len(train)))


def test_fit_recovers_a_perturbed_constant_of_the_true_model(scorer):
    result = fit_constants(PERTURBED, scorer, FitConfig(max_seconds=120))
    assert result.score_before < 0.95
    assert result.accepted
    assert result.heldout_after > result.heldout_before
    assert result.score_after == pytest.approx(1.0)
    force = next(c for c in result.constants if c["text"] == "8.5")
    assert force["before"] == 8.5 and force["after"] == pytest.approx(10.0, rel=1e-2)
    assert result.source == result.fitted_source != PERTURBED
    assert Scorer("CartPole-v1", references=False, compile=False).score_source(result.source).score \
        == pytest.approx(1.0)


def test_fit_on_the_python_path_agrees(scorer):
    result = fit_constants(PERTURBED, scorer, FitConfig(max_seconds=120), compile=False)
    assert result.path == "python" and result.accepted and result.score_after == pytest.approx(1.0)


def test_fit_is_refused_when_the_heldout_score_does_not_improve(scorer):
    # The true model is already right: fitting cannot raise its held-out score.
    result = fit_constants(TRUE_MODEL, scorer, FitConfig(max_seconds=60))
    assert result.status == "fitted" and not result.accepted
    assert result.heldout_after <= result.heldout_before == pytest.approx(1.0)
    assert result.source == TRUE_MODEL


def test_fit_cannot_fix_a_wrong_structure(scorer):
    # The velocity update is missing: no value of the constants brings it back.
    broken = TRUE_MODEL.replace("    x_dot = x_dot + TAU * x_acc\n", "")
    result = fit_constants(broken, scorer, FitConfig(max_seconds=60, max_evaluations=300))
    assert result.status == "fitted"
    assert result.score_after is not None and result.score_after < 0.95


def test_fit_command_json(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(PERTURBED)
    out = tmp_path / "fitted.py"
    assert main(["fit", "CartPole-v1", str(model), "--out", str(out), "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    for key in ("score_before", "score_after", "heldout_before", "heldout_after", "constants", "accepted"):
        assert key in data
    assert data["accepted"] is True and data["score_after"] == pytest.approx(1.0)
    assert {"before", "after", "line", "text"} <= set(data["constants"][0])
    fitted = out.read_text()
    assert re.search(r"^FORCE_MAG = 10\.0\d*|^FORCE_MAG = 9\.9\d*", fitted, re.M)


def test_fit_command_text_and_usage_errors(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(TRUE_MODEL)
    assert main(["fit", "CartPole-v1", str(model)]) == 0
    printed = capsys.readouterr().out
    assert "not kept" in printed and "FORCE_MAG = 10.0" in printed
    assert main(["fit", "NoSuchEnv-v0", str(model)]) == 2
    assert main(["fit", "CartPole-v1", str(tmp_path / "missing.py")]) == 2
