# One entry point for set-up and tasks. Every target creates the local
# virtual environment (.venv) on first use. torch is installed first, pinned to 2.13.0:
# on the project's machines pip finds a CPU build of it; elsewhere plain PyPI serves the CUDA
# build, so name PyTorch's CPU wheel index: make test TORCH_INDEX=https://download.pytorch.org/whl/cpu
PYTHON ?= python3
TORCH_INDEX ?=
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: main check test test-slow bench venv clean

venv: $(STAMP)

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX)) torch==2.13.0
	$(PY) -m pip install -q -e ".[dev]"
	touch $(STAMP)

main: $(STAMP)
	$(PY) -m tacocat.cli.main

# The gates: lint and formatting (ruff) and types (mypy), about 1.5 minutes on a cold cache on 2 cores.
check: $(STAMP)
	$(VENV)/bin/ruff check
	$(VENV)/bin/ruff format --check tacocat tests benchmarks tools
	$(VENV)/bin/mypy

# The gates, then every test not marked `slow` (the edit-test loop; CI runs both targets).
test: check
	$(PY) -m pytest -n 2 -q -m "not slow" --durations=25

# The tests marked `slow` (over about 10 s each on the 2-core machine), without the gates.
test-slow: $(STAMP)
	$(PY) -m pytest -n 2 -q -m slow --durations=25

bench: $(STAMP)
	$(PY) benchmarks/env_speed.py

clean:
	rm -rf $(VENV)
