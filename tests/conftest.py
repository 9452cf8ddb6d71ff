"""Shared fixtures: the kernel backend (tests that touch kernels run on C++ and on Numba)."""

from __future__ import annotations

import os

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


def pytest_configure(config):
    # known to pytest without pytest-xdist too (the installed-wheel check runs without it)
    config.addinivalue_line("markers", "xdist_group(name): the tests of one group share an xdist worker")
    # Under N workers the embedded model's server takes its share of the cores, not all of them:
    # its threads wait for each other at every layer, so one descheduled by the other workers'
    # tests stalls the rest (measured beside one busy core: 105 s on one thread, 118 s on two).
    workers = int(os.environ.get("PYTEST_XDIST_WORKER_COUNT", "1"))
    if workers > 1 and "CODEWORLD_LOCAL_THREADS" not in os.environ:
        os.environ["CODEWORLD_LOCAL_THREADS"] = str(max(1, len(os.sched_getaffinity(0)) // workers))


def pytest_collection_modifyitems(config, items):
    for item in items:
        name = item.path.name
        item.add_marker(pytest.mark.xdist_group("embedded-model" if name in EMBEDDED_MODEL_FILES else name))
    # The longest groups first (the embedded model's files in their own order, then the slowest
    # files), so that the run ends on short files on both workers, not on one long file alone.
    items.sort(key=lambda item: _ORDER.get(item.path.name, len(_ORDER)))


# The slowest files after the embedded model's (from `pytest --durations`, about 25-90 s each).
SLOW_FILES = ["test_experiments_cwmb.py", "test_household.py", "test_sandbox.py", "test_train.py",
              "test_model_loader.py", "test_report_page.py", "test_custom_envs.py", "test_plan.py",
              "test_extending.py", "test_fitting.py"]
_ORDER = {name: 0 for name in EMBEDDED_MODEL_FILES} | {name: 1 + i for i, name in enumerate(SLOW_FILES)}
