# The two commands: `make run` (serve on 127.0.0.1:8000) and `make test` (the whole suite).
# Both work on a fresh machine with only python3: they create .venv and install what they need.
# Two stamps: serving needs only agentd's own dependencies (`pip install -e .`); the suite, the
# linters, the type checker and the benchmarks add the `dev` extra on top.

PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
HOST ?= 127.0.0.1
PORT ?= 8000
SERVE_STAMP := $(VENV)/.installed-serve
DEV_STAMP := $(VENV)/.installed-dev

.PHONY: run run-pg test fuzz venv dev-venv migrate gc bench bench-artifacts bench-load bench-queue bench-long bench-streams screenshots openapi sdk lint typecheck fmt clean spikes

$(SERVE_STAMP): pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(SERVE_STAMP)

# ADK's dev UI bundle for tests/browser (the `adk-web` extra's files): google-adk's wheel unpacked
# without its dependencies into its own folder, never importable from the venv (its pins conflict
# with ours, see pyproject.toml). The suite points AGENTD_DEV_UI_DIR at its browser/ folder.
ADK_WEB_VERSION ?= 2.13.0
ADK_WEB_DIR := $(VENV)/adk-web

$(DEV_STAMP): $(SERVE_STAMP)
	$(BIN)/python -m pip install --quiet -c constraints.txt -e '.[dev]'
	$(BIN)/python -m pip install --quiet --no-deps --upgrade --target $(ADK_WEB_DIR) google-adk==$(ADK_WEB_VERSION)
	touch $(DEV_STAMP)

venv: $(SERVE_STAMP)

dev-venv: $(DEV_STAMP)

migrate: $(SERVE_STAMP)
	$(BIN)/agentd migrate

gc: $(SERVE_STAMP)
	$(BIN)/agentd gc

bench-artifacts: $(DEV_STAMP)
	$(BIN)/python -m bench.artifact_rss --mib 200

bench: $(DEV_STAMP)
	$(BIN)/python -m bench.compare --postgres
	$(BIN)/python -m bench.pages

# The invocation queue on PostgreSQL: claim latency and throughput with 1 and 2 workers.
bench-queue: $(DEV_STAMP)
	$(BIN)/python -m bench.queue

# Long sessions (issue 30): a 10,000-turn session with and without compaction, GETs of a 250-turn
# session, memory per cached event.
bench-long: $(DEV_STAMP)
	$(BIN)/python -m bench.long_session --turns 10000

# Concurrent streamed invocations (issue 31): a ladder of 100 to 5,000 against a 2 s model.
bench-streams: $(DEV_STAMP)
	$(BIN)/python -m bench.streams

bench-load: $(DEV_STAMP)
	$(BIN)/python -m bench.load --db both

# The README's console screenshots, taken by the console's browser test (tests/browser).
screenshots: $(DEV_STAMP)
	AGENTD_SCREENSHOTS_DIR=$(CURDIR)/docs/images $(BIN)/python -m pytest tests/browser/test_console.py $(PYTEST_ARGS)

openapi: $(SERVE_STAMP)
	$(BIN)/python -m scripts.export_openapi

sdk: openapi $(DEV_STAMP)
	PATH="$(CURDIR)/$(BIN):$$PATH" $(BIN)/openapi-python-client generate --path openapi.json \
		--meta setup --output-path build/agentd-client --overwrite

run: $(SERVE_STAMP)
	$(BIN)/agentd serve --migrate --host $(HOST) --port $(PORT)

# Worker mode without Docker: a throwaway PostgreSQL (Debian's server binaries, as the suite's),
# migrated, one API replica that only queues invocations and one `agentd worker` that runs them.
# Ctrl-C stops all three and deletes the database.
run-pg: $(SERVE_STAMP)
	$(BIN)/python -m scripts.run_pg --host $(HOST) --port $(PORT)

test: $(DEV_STAMP)
	$(BIN)/python -m pytest $(PYTEST_ARGS)

# The schemathesis runs at a larger size than in `make test`. A random seed unless given
# (`make fuzz FUZZ_SEED=4242`); it is printed first, so a finding can be replayed.
FUZZ_EXAMPLES ?= 100
FUZZ_SCENARIOS ?= 300
FUZZ_STEPS ?= 15

fuzz: $(DEV_STAMP)
	@seed="$(FUZZ_SEED)"; [ -n "$$seed" ] || seed=$$(od -An -N2 -tu2 /dev/urandom | tr -d ' '); \
	echo "fuzz seed: $$seed (make fuzz FUZZ_SEED=$$seed runs it again)"; \
	AGENTD_FUZZ_SEED=$$seed AGENTD_FUZZ_EXAMPLES=$(FUZZ_EXAMPLES) \
	AGENTD_FUZZ_SCENARIOS=$(FUZZ_SCENARIOS) AGENTD_FUZZ_STEPS=$(FUZZ_STEPS) \
	$(BIN)/python -m pytest tests/test_schemathesis.py tests/test_schemathesis_stateful.py $(PYTEST_ARGS)

lint: $(DEV_STAMP)
	$(BIN)/ruff check app tests migrations bench agents scripts
	$(BIN)/ruff format --check app tests migrations bench agents scripts
	$(BIN)/lint-imports --no-cache

typecheck: $(DEV_STAMP)
	$(BIN)/mypy app tests bench agents

fmt: $(DEV_STAMP)
	$(BIN)/ruff format app tests migrations bench scripts
	$(BIN)/ruff check --fix app tests migrations bench scripts

# Issue 19's durable-engine spikes (spikes/durable/README.md), in a venv of their own: DBOS,
# procrastinate and pgqueuer never enter pyproject.toml or constraints.txt.
spikes:
	test -x spikes/.venv/bin/python || $(PYTHON) -m venv spikes/.venv
	spikes/.venv/bin/python -m pip install --quiet -r spikes/durable/requirements.txt
	spikes/.venv/bin/python -m spikes.durable.run_all

clean:
	rm -rf $(VENV) data .pytest_cache .mypy_cache
