"""Shared fixtures: the kernel backend (tests that touch kernels run on C++ and on Numba)."""

from __future__ import annotations

import pytest

from codeworld import core_available

BACKENDS = ["cpp", "numba"]


@pytest.fixture(params=BACKENDS)
def kernel_backend(request, monkeypatch):
    """Run the test once per backend; CODEWORLD_BACKEND reaches sandbox workers too."""
    if request.param == "cpp" and not core_available():
        pytest.fail("the C++ extension codeworld._core is not built; `make build` builds it")
    monkeypatch.setenv("CODEWORLD_BACKEND", request.param)
    return request.param
