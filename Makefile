# Two commands for a new user: `make run` and `make test`. Both build .venv from pyproject.toml.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEMO := demo

.PHONY: run test lint bench soak clean constraints e2e-harness

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

# constraints.txt pins every package to the versions CI tested (regenerate with `make constraints`).
$(STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e .
	touch $@

$(DEV_STAMP): pyproject.toml constraints.txt | $(BIN)/python
	$(BIN)/pip install --quiet -c constraints.txt -e '.[dev]'
	touch $@ $(STAMP)

run: $(STAMP)
	$(BIN)/python -m roundtable.demo --root $(DEMO)

lint: $(DEV_STAMP)
	$(BIN)/ruff check roundtable tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

test: $(DEV_STAMP)
	$(MAKE) lint
	$(BIN)/python -m pytest

# Not part of `test`: installs Claude Code and Codex from npm into a temp dir and runs a supervised
# implementer session of each against a local stub of its model API (skips where npm is missing).
e2e-harness: $(DEV_STAMP)
	$(BIN)/python -m pytest -m e2e_harness tests/e2e_harness

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

soak: $(DEV_STAMP)
	$(BIN)/python -m bench.soak

clean:
	rm -rf $(VENV) $(DEMO)

constraints: $(DEV_STAMP)
	$(BIN)/pip freeze --exclude-editable | grep -v '^roundtable' > constraints.txt
