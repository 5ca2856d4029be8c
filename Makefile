# One task runner for the common commands. `make test` and `make demo` bootstrap
# a local virtual environment from the locked requirements (versions and hashes) first.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed
WHEELS := $(VENV)/wheels
THIRD  := third_party/.installed

.PHONY: setup lock postgresql test lint typecheck unit wheel-check schema demo bench bench-verify bench-crash \
	bench-startup bench-plan bench-store bench-peers bench-hostile screenshots clean

setup: $(STAMP) $(THIRD) postgresql

# Everything (toolkit, every extra, dev tools) exactly as locked; a download whose hash differs fails.
# The wheels are kept in $(WHEELS), from which tests/test_toolkit_only_install.py installs offline.
$(STAMP): requirements.lock pyproject.toml
	@echo "setup 1/4: a virtual environment in $(VENV)"
	$(PYTHON) -m venv $(VENV)
	@echo "setup 2/4: downloading the locked packages, hashes checked (about a minute on a fresh machine)"
	$(PY) -m pip download --quiet --require-hashes --dest $(WHEELS) -r requirements.lock
	@echo "setup 3/4: installing them"
	$(PY) -m pip install --quiet --require-hashes --no-index --find-links $(WHEELS) -r requirements.lock
	@echo "setup 4/4: installing hatp-journal itself (editable)"
	$(PY) -m pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# Rewrite requirements.lock from pyproject.toml with pip-tools (in the lock itself), keeping the
# pinned versions that still fit; `make lock LOCK_ARGS=--upgrade` moves everything to the newest.
lock: $(STAMP)
	CUSTOM_COMPILE_COMMAND="make lock" $(PY) -m piptools compile --quiet --generate-hashes --allow-unsafe \
		--no-build-isolation --strip-extras --no-emit-index-url --no-emit-find-links \
		--extra serve --extra servers --extra web --extra browser --extra postgresql --extra tracing --extra dev \
		$(LOCK_ARGS) --output-file requirements.lock pyproject.toml

# MCP servers written by others, run behind the Recorder in tests (Node.js ones and two Python ones).
$(THIRD): third_party/package-lock.json third_party/sqlite/requirements.lock third_party/fetch/requirements.lock \
		scripts/third_party.sh
	PYTHON=$(PYTHON) sh scripts/third_party.sh

# PostgreSQL's server programs for the store tests (they run a throwaway cluster of their own).
postgresql:
	sh scripts/postgresql.sh

test: $(STAMP) lint typecheck unit wheel-check

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

typecheck: $(STAMP)
	PYTHON=$(PY) sh scripts/typecheck.sh

unit: $(STAMP) $(THIRD) postgresql
	# One worker per core, each test file kept on one worker (module-scoped servers and browsers);
	# files in collection order, which puts the slow ones first (tests/conftest.py), not by test count.
	$(PY) -m pytest -n auto --dist loadfile --no-loadscope-reorder

wheel-check: $(STAMP)
	$(PY) scripts/check_wheel.py

schema: $(STAMP)
	$(PY) -m hatp_journal.toolkit.schema docs/schema
	$(PY) -m hatp_journal.recorder.record.schema docs/schema
	$(PY) -m hatp_journal.recorder.undo.schema docs/schema
	$(PY) -m hatp_journal.recorder.policy.registry_schema docs/schema
	$(PY) -m hatp_journal.conformance.schema docs/schema
	$(PY) -m hatp_journal.recorder.runs.wire docs/schema

# Retake the README's screenshot of the Reversal Plan page (a browser test writes it).
screenshots: $(STAMP)
	HATP_UPDATE_SCREENSHOTS=1 $(PY) -m pytest -q tests/scenarios/test_d881_in_the_browser.py

demo: $(STAMP)
	$(VENV)/bin/hatp-demo d881

bench: $(STAMP)
	$(PY) bench/recorder_overhead.py

# The latency bench with unwind-mcp beside the Recorder, installed into a venv of its own
# ($(PEERS), not the locked one); BENCH_ARGS passes options on, e.g. BENCH_ARGS="--calls 300".
PEERS := .venv-peers
$(PEERS)/.installed:
	$(PYTHON) -m venv $(PEERS)
	$(PEERS)/bin/python -m pip install --quiet unwind-mcp==0.1.0
	touch $@

bench-peers: $(STAMP) $(PEERS)/.installed
	$(PY) bench/recorder_overhead.py --unwind $(PEERS)/bin/unwind $(BENCH_ARGS)

# Export and verify runs of 10k and 100k entries (several minutes; the in-memory roads peak near 2 GB).
bench-verify: $(STAMP)
	$(PY) bench/verify_scale.py

# Undo trials with kill -9 of the Recorder and the tool servers (a few seconds a trial; 200 by default).
bench-crash: $(STAMP)
	$(PY) bench/crash_trials.py

# Every console script's --help, and each demo server from spawn to answering initialize + tools/list.
bench-startup: $(STAMP)
	$(PY) bench/startup.py

# The hostile-data fuzz with a long profile: 600 runs (over 10k signed objects) and 10k planted tokens.
bench-hostile: $(STAMP)
	$(PY) bench/hostile_data.py

# Plan the undo of runs of 1k to 30k entries, the planner alone and with slow checks (a few minutes).
bench-plan: $(STAMP)
	$(PY) bench/plan_scale.py

# Appends/s (1, 8, 32 writers) and calls/s (1, 4 Recorders) on SQLite beside PostgreSQL (a few minutes).
bench-store: $(STAMP)
	$(PY) bench/store_scale.py

clean:
	rm -rf $(VENV) $(PEERS) build dist *.egg-info third_party/node_modules third_party/sqlite/.venv $(THIRD)
