# Two entry points: `make run` and `make test`. The venv is rebuilt only when pyproject.toml changes.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
PIP_INSTALL := $(BIN)/python -m pip install --progress-bar off --disable-pip-version-check
# pip's output (hundreds of lines, setuptools' editable-install banner) goes to a log that is
# shown only when the install fails.
PIP_LOG := $(VENV)/pip-install.log
QUIET_PIP = > $(PIP_LOG) 2>&1 || { cat $(PIP_LOG); echo "== pip install failed (log: $(PIP_LOG))"; exit 1; }

.PHONY: install run chat test test-postgresql lint typecheck unit bench clean

$(BIN)/python:
	@echo "== creating the virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	$(PIP_INSTALL) --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	@echo "== installing dependencies (first run takes about a minute)…"
	@$(PIP_INSTALL) -e . $(QUIET_PIP)
	@echo "== dependencies installed"
	@touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	@echo "== installing dependencies and development tools (first run takes a minute or two)…"
	@$(PIP_INSTALL) -e '.[dev]' $(QUIET_PIP)
	@echo "== dependencies installed"
	@touch $(STAMP) $@

install: $(STAMP)

run: $(STAMP)
	$(BIN)/python -m bot

chat: $(STAMP)
	$(BIN)/python -m bot chat

lint: $(DEV_STAMP)
	@echo "== ruff (lint and format check)"
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(DEV_STAMP)
	@echo "== mypy"
	$(BIN)/mypy

# Two workers (pytest-xdist): much of the suite waits on sockets, child processes and Chromium,
# so a second worker about halves the time even on two cores. worksteal evens out long tests.
PYTEST_WORKERS := -n 2 --dist worksteal
# The suite starts hundreds of Python processes (`python -m bot`, parser and analyzer workers,
# MCP servers); with PYTHONDONTWRITEBYTECODE (set on some machines) each one compiled the
# project's sources again. Their bytecode is kept under the venv instead of the source tree.
PYTEST_ENV := env -u PYTHONDONTWRITEBYTECODE PYTHONPYCACHEPREFIX=$(abspath $(VENV))/pycache

unit: $(DEV_STAMP)
	@echo "== pytest on two workers (about 12 minutes on a busy 2-core machine)"
	$(PYTEST_ENV) $(BIN)/python -m pytest -q $(PYTEST_WORKERS)

test: lint typecheck unit

# The whole suite with every test database on a temporary PostgreSQL cluster (not in `make test`:
# CI time is limited). Needs Debian's postgresql package; .ci/run installs it.
test-postgresql: $(DEV_STAMP)
	@echo "== pytest --database postgresql (a few minutes)"
	$(PYTEST_ENV) $(BIN)/python -m pytest -q $(PYTEST_WORKERS) --database postgresql

bench: $(DEV_STAMP)
	@for f in bench/*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) .mypy_cache .pytest_cache .ruff_cache
