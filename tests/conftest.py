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


# --- how `make test` spreads the suite over the cores (pytest-xdist, ``-n auto --dist loadgroup``)
# Each test file runs whole on one worker (its module fixtures are built once); the files that run
# the embedded model share one worker, since its server uses every core and later calls reuse its
# prompt cache.
EMBEDDED_MODEL_FILES = {"test_llm_local.py", "test_synthesis_local.py", "test_llm_native.py",
                        "test_llm_faults.py"}


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("embedded-model" if name in EMBEDDED_MODEL_FILES else name))
    # The embedded model's files first (in their own order): the longest group starts at once
    # instead of ending the run alone.
    items.sort(key=lambda item: item.path.name not in EMBEDDED_MODEL_FILES)
