"""The speed step: compile as written, or port (mechanically or by a given porter) and keep the port
only when it predicts the same as the original on every transition of the buffer."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from codeworld.envs._buffers import buffer_path, load_buffer
from codeworld._porting import mechanical_port
from codeworld._speed import check_port, speed_step

MODELS = Path(__file__).parent / "models"
FUNCTIONAL = (MODELS / "cartpole_functional.py").read_text()
CLASS_FORM = (MODELS / "cartpole_class.py").read_text()

# The same dynamics with the constants in a dict: correct, but Numba cannot compile it and no
# mechanical rewrite handles it.
DICT_FORM = FUNCTIONAL.replace(
    "def step(state, action):",
    "P = {'force': FORCE_MAG}\n\n\ndef step(state, action):").replace(
    "force = FORCE_MAG if action == 1 else -FORCE_MAG",
    "force = P['force'] if action == 1 else -P['force']")


@pytest.fixture(scope="module")
def buffer():
    return load_buffer(buffer_path("CartPole-v1"))


def test_a_program_that_compiles_as_written_is_not_ported(buffer):
    report = speed_step(FUNCTIONAL, buffer.obs, buffer.actions, discrete=True, measure_s=0.1)
    assert report.compiled and not report.ported and report.how == "as_written"
    assert report.source == FUNCTIONAL and report.steps_per_s > 0


def test_class_form_is_ported_mechanically_and_kept_when_it_predicts_the_same(buffer):
    report = speed_step(CLASS_FORM, buffer.obs, buffer.actions, discrete=True, measure_s=0.1)
    assert report.compile_error  # the class form does not compile as written
    assert report.compiled and report.ported and report.how == "mechanical_port"
    assert "class_to_function" in report.rewrites
    check = report.ports_tried[-1]
    assert check["equal"] and check["transitions"] == len(buffer) and check["first_difference"] is None
    assert "class Environment" not in report.source and report.steps_per_s > 0


def test_a_port_that_differs_on_some_transitions_is_refused(buffer):
    # A port that changes the force only where theta_dot is among the buffer's largest values.
    threshold = float(np.quantile(buffer.obs[:, 3], 0.98))
    differing = FUNCTIONAL.replace(
        "    cos_t = math.cos(theta)\n",
        f"    if theta_dot > {threshold!r}:\n        force = force * 1.001\n    cos_t = math.cos(theta)\n")
    check = check_port(FUNCTIONAL, differing, buffer.obs, buffer.actions, discrete=True)
    assert check.compiled and not check.equal
    assert check.first_difference == int(np.flatnonzero(buffer.obs[:, 3] > threshold)[0])
    assert f"transition {check.first_difference}" in check.message
    same = check_port(FUNCTIONAL, mechanical_port(CLASS_FORM).source, buffer.obs, buffer.actions,
                      discrete=True)
    assert same.equal and same.first_difference is None


def test_extra_porters_are_tried_in_order_and_only_an_equal_port_is_kept(buffer):
    asked = []

    def wrong_porter(source, error):
        asked.append(error)
        return FUNCTIONAL.replace("TAU = 0.02", "TAU = 0.021")

    def right_porter(source, error):
        return FUNCTIONAL

    report = speed_step(DICT_FORM, buffer.obs, buffer.actions, discrete=True,
                        porters=[wrong_porter, right_porter], measure_s=0.1)
    assert asked and asked[0] == report.compile_error  # the porter is told why compilation failed
    assert [p["how"] for p in report.ports_tried] == ["porter_0", "porter_1"]
    assert report.ports_tried[0]["equal"] is False and report.ports_tried[0]["first_difference"] == 0
    assert report.compiled and report.ported and report.how == "porter_1"
    assert report.source == FUNCTIONAL


def test_without_an_equal_port_the_program_stays_on_the_python_path(buffer):
    report = speed_step(DICT_FORM, buffer.obs, buffer.actions, discrete=True, measure_s=0.1)
    assert not report.compiled and report.how == "python" and report.source == DICT_FORM
    assert report.steps_per_s > 0


def test_mechanical_rewrites_are_general():
    source = ("import numpy as np\n"
              "OFFSETS = [0.5, -1.0]\n"
              "def shift(x):\n"
              "    return x + OFFSETS[0]\n"
              "def step(state, action):\n"
              "    s = np.array(state, dtype=float)\n"
              "    return s * 0.0 + shift(s[0]), 0.0, False\n")
    port = mechanical_port(source)
    assert set(port.rewrites) == {"global_lists_to_arrays", "builtin_dtypes", "array_copies",
                                  "jit_helpers"}
    assert "@_cw_numba.njit" in port.source and "np.asarray(state).astype(np.float64)" in port.source
    mutated = "X = [1.5, 2.5]\ndef step(state, action):\n    X[0] = 2.0\n    return state, 0.0, False\n"
    assert "global_lists_to_arrays" not in mechanical_port(mutated).rewrites
    assert mechanical_port(FUNCTIONAL).rewrites == []
