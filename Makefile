# Two commands for a new user: `make run` and `make test`. Both build .venv from pyproject.toml.
# `make install` puts a `roundtable` command on your PATH for use in your own repositories.
PYTHON ?= python3
# `make install`: a virtual environment of its own under $(PREFIX)/lib/roundtable, linked from
# $(PREFIX)/bin/roundtable (pipx install . / uv tool install . do the same where you have them).
PREFIX ?= $(HOME)/.local
INSTALL_VENV := $(PREFIX)/lib/roundtable
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
DEMO := demo

.PHONY: help run test test-install install lint bench soak clean constraints e2e-harness

help:
	@echo "make run      the demo: a console with scripted agents (builds .venv)"
	@echo "make test     lint and the test suite (builds .venv with the dev tools)"
	@echo "make install  the roundtable command for your own projects: PREFIX=$(PREFIX) gives"
	@echo "              $(INSTALL_VENV) (its own venv) and the link $(PREFIX)/bin/roundtable"

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
	$(BIN)/roundtable demo --root $(DEMO)

install:
	$(PYTHON) -m venv $(INSTALL_VENV)
	$(INSTALL_VENV)/bin/pip install --quiet --upgrade pip
	$(INSTALL_VENV)/bin/pip install --quiet -c constraints.txt .
	mkdir -p $(PREFIX)/bin
	ln -sf $(INSTALL_VENV)/bin/roundtable $(PREFIX)/bin/roundtable
	@echo "installed $(PREFIX)/bin/roundtable ($$($(PREFIX)/bin/roundtable --version))"
	@case ":$$PATH:" in *":$(PREFIX)/bin:"*) ;; *) echo "add $(PREFIX)/bin to your PATH";; esac

lint: $(DEV_STAMP)
	$(BIN)/ruff check roundtable tests bench
	$(BIN)/mypy
	$(BIN)/lint-imports

# The suite runs on every core (pytest-xdist; `TEST_WORKERS=1` for one process): most tests wait on
# sockets, child processes and the owner's loop, and one worker's waits leave the core to the other.
# The `solo` tests (process limits, which count every process of the sandbox's uid on the machine)
# run afterwards in one process: beside other sandboxed tests their limit is already used up.
TEST_WORKERS ?= auto
test: $(DEV_STAMP)
	$(MAKE) lint
	$(BIN)/python -m pytest -n $(TEST_WORKERS) --dist loadgroup -m "not solo"
	$(BIN)/python -m pytest -n 0 -m solo

# Not part of `test` (CI runs it after `make test`): `make install` from a fresh clone into a
# temporary prefix, then `init` and `connect` with the installed command.
test-install: $(DEV_STAMP)
	$(BIN)/python -m pytest -m install tests/cli/test_install.py

# Not part of `test`: installs Claude Code and Codex from npm into a temp dir and runs a supervised
# implementer session of each against a local stub of its model API (skips where npm is missing).
e2e-harness: $(DEV_STAMP)
	$(BIN)/python -m pytest -m e2e_harness tests/e2e_harness

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

soak: $(DEV_STAMP)
	$(BIN)/python -m bench.soak --seconds 420

clean:
	rm -rf $(VENV) $(DEMO)

constraints: $(DEV_STAMP)
	$(BIN)/pip freeze --exclude-editable | grep -v '^roundtable' > constraints.txt
