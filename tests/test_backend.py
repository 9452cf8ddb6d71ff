"""Backend choice: one switch, read at each call, honest about what is in use."""

from __future__ import annotations

import subprocess
import sys

import pytest

import codeworld
from codeworld import _backend


def test_default_is_cpp_when_the_extension_is_built(monkeypatch):
    monkeypatch.delenv("CODEWORLD_BACKEND", raising=False)
    assert codeworld.core_available(), "make test builds codeworld._core; it must import"
    assert codeworld.backend() == "cpp"


def test_environment_variable_forces_numba(monkeypatch):
    monkeypatch.setenv("CODEWORLD_BACKEND", "numba")
    assert codeworld.backend() == "numba"


def test_unknown_backend_is_a_clear_error(monkeypatch):
    monkeypatch.setenv("CODEWORLD_BACKEND", "fortran")
    with pytest.raises(RuntimeError, match="not one of cpp, numba"):
        codeworld.backend()


def test_asking_for_cpp_without_the_extension_fails_loudly(monkeypatch):
    monkeypatch.setattr(_backend, "_core_module", None)
    monkeypatch.setattr(_backend, "_core_import_error", "No module named 'codeworld._core'")
    monkeypatch.setenv("CODEWORLD_BACKEND", "cpp")
    with pytest.raises(RuntimeError, match="extension codeworld._core is missing"):
        codeworld.backend()
    monkeypatch.delenv("CODEWORLD_BACKEND")
    assert codeworld.backend() == "numba"  # unset: the fallback, silently


def test_a_fresh_interpreter_reports_the_forced_backend():
    code = "import codeworld; print(codeworld.backend())"
    env_run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                             env={**__import__("os").environ, "CODEWORLD_BACKEND": "numba"}, check=True)
    assert env_run.stdout.strip() == "numba"
