# The README's two commands (demo, test), plus build and bench.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip
# Serialises concurrent rebuilds of the extension in one checkout.
LOCK   := flock $(VENV)/.build.lock

.PHONY: demo test build bench clean venv

$(PY):
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

venv: $(PY)

# Installs the package (editable, building codeworld._core) with the test extras.
$(VENV)/.installed-dev: pyproject.toml CMakeLists.txt | $(PY)
	$(LOCK) $(PIP) install -q -e ".[dev]"
	touch $@

$(VENV)/.installed-local: pyproject.toml | $(PY)
	$(LOCK) $(PIP) install -q -e ".[local]"
	touch $@

# Rebuild the C++ extension after editing csrc/.
build: $(VENV)/.installed-dev
	$(LOCK) $(PIP) install -q --no-build-isolation --no-deps -e .

test: $(VENV)/.installed-dev build
	$(PY) -m pytest

demo: $(VENV)/.installed-local $(VENV)/.installed-dev build
	$(PY) -m codeworld demo

bench: $(VENV)/.installed-dev build
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) build
