# zkplatform: `make run` serves, `make test` checks everything CI checks.
SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help
MAKEFLAGS += --warn-undefined-variables --no-builtin-rules
# A recipe that fails leaves no half-made target behind to pass for a made one.
.DELETE_ON_ERROR:

PYTHON ?= python3.11
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
# buf runs the local plugins (protoc-gen-connectrpc, scripts/protoc) from the venv.
export PATH := $(BIN):$(PATH)
STAMP := $(VENV)/.installed
ARGS ?=

.PHONY: help
help: ## Show this help
	@grep -hE '^[a-z-]+:.*## ' $(MAKEFILE_LIST) | awk -F':.*## ' '{printf "  %-16s %s\n", $$1, $$2}'

$(STAMP): pyproject.toml constraints.txt
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev]'
	@touch $@

# The TypeScript client's packages, exactly as the lockfile says.
NODE_STAMP := clients/ts/node_modules/.installed
$(NODE_STAMP): clients/ts/package.json clients/ts/package-lock.json
	npm ci --prefix clients/ts --no-audit --no-fund
	@touch $@

# nginx for the proxy tests (tests/e2e/test_proxy.py): installed from the distribution's
# packages when missing, as root with apt-get, its service left disabled; otherwise those
# tests skip. Never fails: see scripts/install-nginx.
.PHONY: nginx
nginx:
	@scripts/install-nginx

# Headless Chromium for the browser tests (tests/e2e/test_ts_browser.py), likewise from the
# distribution's packages; without it those tests skip. Never fails: see scripts/install-chromium.
.PHONY: chromium
chromium:
	@scripts/install-chromium

.PHONY: install
install: $(STAMP) $(NODE_STAMP) nginx chromium ## Create the venv and install pinned dependencies (Python, Node, nginx and Chromium for tests)

PROTOS := $(shell find proto -name '*.proto' | sort)

# Everything `make gen` writes, which check-gen-clean holds to what is committed.
GENERATED := gen clients/ts/src/gen docs/reference.md

.PHONY: gen
gen: $(STAMP) $(NODE_STAMP) ## Regenerate gen/, clients/ts/src/gen/ and docs/reference.md from proto/
	buf generate
	@# google.api for Python comes from googleapis-common-protos (see buf.yaml)
	rm -rf gen/google
	@# grpcio stubs for gRPC clients: buf has no builtin grpc_python plugin
	$(BIN)/python -m grpc_tools.protoc -Iproto -Ithird_party/proto --grpc_python_out=gen $(PROTOS)
	@# The API reference, from the comments: the image keeps its source info
	buf build proto -o - | $(BIN)/python -m scripts.gen_reference - docs/reference.md

.PHONY: check-gen-clean
check-gen-clean: gen ## Fail when regeneration changes any generated file (code and docs/reference.md)
	@if [ -n "$$(git status --porcelain -- $(GENERATED))" ]; then \
	  git status --short -- $(GENERATED); git --no-pager diff --stat -- $(GENERATED); \
	  echo "generated files are stale: run 'make gen' and commit the result" >&2; exit 1; fi
	@echo "generated files are up to date"

.PHONY: fmt
fmt: $(STAMP) ## Format protos and Python
	buf format -w proto  # vendored third_party files stay as published
	ruff format src tests scripts bench clients/python
	ruff check --fix src tests scripts bench clients/python

.PHONY: lint
lint: $(STAMP) ## buf lint, buf format check, ruff, import layers
	buf lint
	buf format -d --exit-code proto
	ruff check src tests scripts bench clients/python
	ruff format --check src tests scripts bench clients/python
	lint-imports --no-cache  # the import contracts in pyproject.toml

.PHONY: typecheck
typecheck: $(STAMP) ## mypy --strict
	mypy

# The contract as last released: a buf image of proto/ (JSON without comments, so that a commit
# moving it shows the contract's changes in review). See docs/development.md#the-contract-gate.
BASELINE := baseline/platform-v1.json

.PHONY: breaking
breaking: $(STAMP) ## The contract gate: buf breaking and the protovalidate rules, against baseline/
	@# Both checks run, so that one run reports every breaking change.
	@status=0; \
	buf breaking proto --against $(BASELINE) || status=1; \
	buf build proto --exclude-source-info -o - | $(BIN)/python -m scripts.check_rules $(BASELINE) - || status=1; \
	if [ $$status -ne 0 ]; then \
	  echo "breaking: the protos break clients of $(BASELINE); see docs/development.md#the-contract-gate" >&2; \
	  exit 1; fi; \
	echo "breaking: no breaking change against $(BASELINE)"

.PHONY: baseline
baseline: $(STAMP) ## Move the contract gate's baseline to proto/ as it is now (commit it alone, for review)
	buf build proto --exclude-source-info -o '-#format=json' | $(BIN)/python -m json.tool --indent 2 > $(BASELINE).new
	mv $(BASELINE).new $(BASELINE)
	@echo "baseline: $(BASELINE) rewritten; review 'git diff $(BASELINE)' and commit it on its own"

# Markers (pyproject.toml): e2e starts processes, postgres needs the server, packages
# needs the client builds, which its tests make (tests/builds.py) only when they run.
# Parallel workers (pytest-xdist), one test file each, so a module's server starts once;
# WORKERS=0 runs in this process, e.g. for a debugger.
WORKERS ?= auto
XDIST = -n $(WORKERS) --dist loadfile

.PHONY: pytest
pytest: $(STAMP) $(NODE_STAMP) nginx chromium ## Run the whole test suite, every marker (WORKERS=0 for one process)
	pytest $(XDIST) $(ARGS)

.PHONY: test-fast
# Test by test rather than file by file: no server to start once a file here, and the load evens out.
test-fast: $(STAMP) ## Tests in process only: no servers, subprocesses, PostgreSQL, Node or builds (under a minute)
	pytest -n $(WORKERS) --dist load -m 'not e2e and not postgres and not packages' $(ARGS)

.PHONY: test
test: lint typecheck check-gen-clean breaking pytest ## Everything CI runs

# The clients other teams depend on, built into build/clients/: the TypeScript
# package (npm pack: dist/ with its .d.ts) and a wheel of the generated Python
# code with the sync helper (clients/python; no server code, no grpcio stubs).
CLIENTS_DIR := build/clients
PY_CLIENT_STAGE := build/python-client
TS_CLIENT_STAGE := build/ts-client
PY_CLIENT_SOURCES := $(shell find clients/python gen/zkplatform_api gen/buf -name __pycache__ -prune -o -type f -print | sort)
TS_CLIENT_SOURCES := $(shell find clients/ts/src -type f | sort) clients/ts/package.json clients/ts/package-lock.json clients/ts/tsconfig.json clients/ts/README.md
# The demos the tests run and the vector maker: compiled beside the package, never packed.
TS_TOOLS_SOURCES := $(shell find clients/ts/tools -type f | sort)

$(CLIENTS_DIR)/.python-wheel: $(STAMP) $(PY_CLIENT_SOURCES)
	rm -rf $(PY_CLIENT_STAGE) $(CLIENTS_DIR)/zkplatform_client-*.whl
	mkdir -p $(PY_CLIENT_STAGE) $(CLIENTS_DIR)
	cp -R clients/python/. gen/zkplatform_api gen/buf $(PY_CLIENT_STAGE)/
	find $(PY_CLIENT_STAGE) -name __pycache__ -prune -exec rm -rf {} +
	find $(PY_CLIENT_STAGE) -name '*_grpc.py' -delete  # grpcio stubs: grpcio is no dependency of the client
	$(BIN)/python -m pip wheel --quiet --disable-pip-version-check --no-deps --no-build-isolation \
	  --wheel-dir $(CLIENTS_DIR) $(PY_CLIENT_STAGE)
	@touch $@

# Compiled afresh into a staging copy, so that nothing stale in clients/ts/dist is packed.
$(CLIENTS_DIR)/.ts-package: $(NODE_STAMP) $(TS_CLIENT_SOURCES)
	rm -rf $(TS_CLIENT_STAGE) $(CLIENTS_DIR)/zkplatform-client-*.tgz
	mkdir -p $(TS_CLIENT_STAGE) $(CLIENTS_DIR)
	cp clients/ts/package.json clients/ts/README.md $(TS_CLIENT_STAGE)/  # npm packs a README whatever "files" says
	clients/ts/node_modules/.bin/tsc -p clients/ts --outDir $(TS_CLIENT_STAGE)/dist
	cd $(TS_CLIENT_STAGE) && npm pack --ignore-scripts --loglevel=error --pack-destination $(CURDIR)/$(CLIENTS_DIR) >/dev/null
	@touch $@

.PHONY: clients
clients: $(CLIENTS_DIR)/.python-wheel $(CLIENTS_DIR)/.ts-package ## Build the client packages into build/clients/ (npm tarball, wheel)
	@ls $(CLIENTS_DIR)

# The client compiled in place (clients/ts/dist/), and its tools against it (clients/ts/dist-tools/:
# the demos and the sync example the tests run with node, the vector maker).
TS_BUILD_STAMP := clients/ts/dist/.built
$(TS_BUILD_STAMP): $(NODE_STAMP) $(TS_CLIENT_SOURCES) $(TS_TOOLS_SOURCES)
	npm run --prefix clients/ts --silent build
	@touch $@

.PHONY: ts-build
ts-build: $(TS_BUILD_STAMP) ## Compile the TypeScript client into clients/ts/dist/, its demos and tools into clients/ts/dist-tools/

# The web vault page (clients/web-vault), built into build/web-vault/. It imports
# "zkplatform-client" as a web app does: clients/web-vault/node_modules/zkplatform-client is a
# link to clients/ts, which is what npm installs for a `file:../ts` dependency, so that tsc
# (type check only) and esbuild resolve the package by its exports' `browser` conditions, on the
# compiled clients/ts/dist and its pinned node_modules, and nothing new is downloaded.
WEB_VAULT_DIR := build/web-vault
WEB_VAULT_SOURCES := $(addprefix clients/web-vault/,index.html app.ts style.css tsconfig.json)
$(WEB_VAULT_DIR)/.built: $(TS_BUILD_STAMP) $(WEB_VAULT_SOURCES)
	mkdir -p clients/web-vault/node_modules $(WEB_VAULT_DIR)
	ln -sfn ../../ts clients/web-vault/node_modules/zkplatform-client
	clients/ts/node_modules/.bin/tsc -p clients/web-vault
	clients/ts/node_modules/.bin/esbuild clients/web-vault/app.ts --bundle --platform=browser --format=esm \
	  --log-level=warning --outfile=$(WEB_VAULT_DIR)/app.js
	cp clients/web-vault/index.html clients/web-vault/style.css $(WEB_VAULT_DIR)/
	@touch $@

.PHONY: web-vault
web-vault: $(WEB_VAULT_DIR)/.built ## Build the web vault page into build/web-vault/ (make dev serves it)

BENCH_STAMP := $(VENV)/.installed-bench
$(BENCH_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -c constraints.txt -e '.[dev,bench]'
	@touch $@

.PHONY: bench
bench: $(BENCH_STAMP) ## Load figures side by side (wrk, 127.0.0.1); writes docs/benchmarks.md (not part of test)
	$(BIN)/python -m bench.run

.PHONY: run
run: $(STAMP) ## Serve on 127.0.0.1:8080 from var/zkplatform.db, or ARGS='--store URL'; migrates that store first
	zkplatform serve --migrate $(ARGS)

# The web vault page's origin under `make dev`: another origin than the API's, so CORS is real.
WEB_VAULT_PORT ?= 8081

.PHONY: dev
dev: $(STAMP) web-vault ## Serve demo data on 127.0.0.1:8080 (tokens in var/dev-credentials.json) and the web vault on localhost:8081
	$(BIN)/python -m scripts.dev_server --page $(WEB_VAULT_DIR) --page-port $(WEB_VAULT_PORT) -- $(ARGS)

LOCK_VENV := build/lock-venv

.PHONY: lock
lock: ## Regenerate constraints.txt: resolve pyproject.toml's pins (dev and bench extras too) in a fresh venv
	rm -rf $(LOCK_VENV)
	$(PYTHON) -m venv $(LOCK_VENV)
	$(LOCK_VENV)/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev,bench]'
	{ echo "# Every transitive dependency, pinned exactly: pip install -c constraints.txt -e '.[dev]'"; \
	  $(LOCK_VENV)/bin/python -m pip freeze --exclude-editable | LC_ALL=C sort -f; } > constraints.txt.new
	mv constraints.txt.new constraints.txt
	rm -rf $(LOCK_VENV)
	@echo "constraints.txt regenerated: review 'git diff constraints.txt', then run make test"

.PHONY: clean
clean: ## Remove the venv, node_modules, build output and caches (never var/: the database and the pepper)
	rm -rf $(VENV) build dist *.egg-info clients/ts/node_modules clients/ts/dist clients/ts/dist-tools clients/web-vault/node_modules .pytest_cache .mypy_cache .ruff_cache
	find src gen tests scripts bench -name __pycache__ -type d -prune -exec rm -rf {} +
