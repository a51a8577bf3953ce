# Every target creates and reuses its own virtual environment in .venv.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
CONTRACTS := .cache/contracts
OPENAPI_VERSION := 23.0.2
GRAPHQL_SCHEMA_VERSION := 15.26.1
# The real coding-agent CLIs, pinned; `make agents` installs them into .cache/agents.
AGENTS := .cache/agents
CODEX_VERSION := 0.169.0
CLAUDE_CODE_VERSION := 2.1.197
PI_VERSION := 0.73.1
AGENTS_STAMP := $(AGENTS)/.installed-codex-$(CODEX_VERSION)-claude-$(CLAUDE_CODE_VERSION)-pi-$(PI_VERSION)
PYTEST_ARGS ?=
# Two workers, a test file at a time, the longest files first (tests/conftest.py);
# `make test PYTEST_PARALLEL=` runs the suite in one process.
PYTEST_PARALLEL ?= -n 2 --dist loadfile --no-loadscope-reorder

.PHONY: all demo test lint guard-rails bench contracts agents postgres-server systemd-tools sandbox-tools browser clean

all: test

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

# The daemon and, beside it, the emulator's own distribution (sim/): tests and the demo need both.
$(STAMP): pyproject.toml sim/pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[dev]' -e ./sim
	touch $(STAMP)

# GitHub's published REST description and GraphQL schema: the emulator's contract.
$(CONTRACTS)/openapi/api.github.com.json:
	mkdir -p $(CONTRACTS)/openapi
	cd $(CONTRACTS)/openapi && npm pack --silent @octokit/openapi@$(OPENAPI_VERSION) >/dev/null \
	  && tar -xzf octokit-openapi-$(OPENAPI_VERSION).tgz package/generated/api.github.com.json \
	  && mv package/generated/api.github.com.json . && rm -rf package *.tgz

$(CONTRACTS)/graphql/schema.json:
	mkdir -p $(CONTRACTS)/graphql
	cd $(CONTRACTS)/graphql && npm pack --silent @octokit/graphql-schema@$(GRAPHQL_SCHEMA_VERSION) >/dev/null \
	  && tar -xzf octokit-graphql-schema-$(GRAPHQL_SCHEMA_VERSION).tgz package/schema.json \
	  && mv package/schema.json . && rm -rf package *.tgz

contracts: $(CONTRACTS)/openapi/api.github.com.json $(CONTRACTS)/graphql/schema.json

# The real agent CLIs (Codex, Claude Code, Pi) at pinned versions, for the tests that
# run them against the local model-API stand-in (tests/support/model_api.py), alone and
# through the daemon; `make test` installs them and fails (never skips) without them. The stamp names
# the versions, so changing one reinstalls all three; a failed npm leaves no stamp.
$(AGENTS_STAMP):
	rm -rf $(AGENTS) && mkdir -p $(AGENTS)
	cd $(AGENTS) && npm install --no-audit --no-fund --save-exact --loglevel=error \
	  @openai/codex@$(CODEX_VERSION) \
	  @anthropic-ai/claude-code@$(CLAUDE_CODE_VERSION) \
	  @mariozechner/pi-coding-agent@$(PI_VERSION)
	$(AGENTS)/node_modules/.bin/codex --version
	$(AGENTS)/node_modules/.bin/claude --version
	$(AGENTS)/node_modules/.bin/pi --version
	touch $@

agents: $(AGENTS_STAMP)

# Debian's PostgreSQL server, installed only when no pg_ctl is present.
postgres-server:
	@if [ -z "$$ORCHESTRATOR_TEST_PG_URL" ] && ! ls /usr/lib/postgresql/*/bin/pg_ctl >/dev/null 2>&1 \
	  && ! command -v pg_ctl >/dev/null 2>&1; then \
	  echo "installing Debian's postgresql package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq postgresql >/dev/null; \
	fi

# systemd-analyze checks the shipped unit file (Debian's systemd package).
systemd-tools:
	@command -v systemd-analyze >/dev/null 2>&1 || { echo "installing Debian's systemd package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends systemd >/dev/null; }

# bubblewrap, the agents' OS sandbox (Debian's package): the sandbox tests run it for real,
# and the daemon's default (agent.sandbox: auto) uses it.
sandbox-tools:
	@command -v bwrap >/dev/null 2>&1 || { echo "installing Debian's bubblewrap package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends bubblewrap >/dev/null; }

# Headless Chromium for the dashboard's browser test (Debian's package; Playwright
# drives /usr/bin/chromium and never downloads a browser of its own).
browser:
	@command -v chromium >/dev/null 2>&1 || { echo "installing Debian's chromium package"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
	  --no-install-recommends chromium >/dev/null; }

demo: $(STAMP)
	$(BIN)/orchestrator demo

test: $(STAMP) guard-rails contracts agents postgres-server systemd-tools sandbox-tools browser
	ORCHESTRATOR_REQUIRE_PG=1 ORCHESTRATOR_REQUIRE_SYSTEMD=1 ORCHESTRATOR_REQUIRE_BROWSER=1 \
	  ORCHESTRATOR_REQUIRE_SANDBOX=1 ORCHESTRATOR_REQUIRE_AGENTS=1 bash tests/support/with-postgres.sh $(BIN)/python -m pytest $(PYTEST_PARALLEL) $(PYTEST_ARGS)

lint: $(STAMP) guard-rails
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

# The code's shape (docs/architecture.md, "Guard rails"): import contracts, module sizes, and
# ruff's complexity and argument ceilings; part of `make lint` and, cheaply, of `make test`.
guard-rails: $(STAMP)
	$(BIN)/lint-imports --no-logo --no-cache
	$(BIN)/python -m tests.support.guard_rails
	$(BIN)/ruff check --select C901,PLR0913 .

bench: $(STAMP) postgres-server agents
	bash tests/support/with-postgres.sh $(BIN)/python -m benchmarks.run_all
	@echo "== real agent CLIs: labelled issue to blocked when the model API fails (tests.support.agent_failure_bench)"
	$(BIN)/python -m tests.support.agent_failure_bench

clean:
	rm -rf $(VENV) .cache .pytest_cache .mypy_cache .ruff_cache
