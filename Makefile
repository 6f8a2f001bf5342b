# NightWatch. `make run` and `make test` set everything up from nothing (uv + the locked environment).
SHELL := /bin/bash
PYTHON ?= python3
UV_VERSION := 0.13.8
VENV := .venv
UV := .tools/uv/bin/uv
BUGSINK := .tools/bugsink
export NIGHTWATCH_HOME ?= $(CURDIR)/.nightwatch
export UV_PROJECT_ENVIRONMENT := $(CURDIR)/$(VENV)
export PREFECT_SERVER_ANALYTICS_ENABLED := false
export DO_NOT_TRACK := 1
export NO_MKDOCS_2_WARNING := 1
UI_PORT ?= 4200
DOCS_PORT ?= 8000

.PHONY: setup bugsink testenvs run test test-fast test-calendar ui deploy screenshots benchmark lint docs docs-build clean

$(UV):
	$(PYTHON) -m venv .tools/uv
	.tools/uv/bin/pip install --quiet --disable-pip-version-check "uv==$(UV_VERSION)"

# Bytecode is compiled at install: where PYTHONDONTWRITEBYTECODE is set (many CI images), every process (a worker's
# flow run, the CLI, each test worker) would otherwise compile Prefect and the rest from source, ~2 s of CPU each.
$(VENV)/.synced: $(UV) pyproject.toml uv.lock Makefile
	$(UV) sync --frozen --quiet --compile-bytecode
	@touch $@

setup: $(VENV)/.synced ## create the locked environment

# A real Bugsink for the tests that send it the Python demo's errors through the real sentry-sdk
# (tests/sources/test_bugsink_night.py): its own environment, from a hashed lock (tests/bugsink/requirements.txt, made by
# `uv pip compile --universal --python-version 3.11 --generate-hashes tests/bugsink/requirements.in`), and its two
# databases migrated once into template/, which each test session's server starts from a copy of (migrating them
# took 6.7 s on two busy cores, about 12 s on one loaded core; copying them, nothing to speak of).
$(BUGSINK)/.installed: $(UV) tests/bugsink/requirements.txt Makefile
	test -x $(BUGSINK)/bin/python || $(UV) venv --quiet --python $(PYTHON) $(BUGSINK)
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python $(BUGSINK)/bin/python tests/bugsink/requirements.txt
	rm -rf $(BUGSINK)/template && mkdir $(BUGSINK)/template
	cd $(BUGSINK)/template && ../bin/bugsink-create-conf --template=local --output-file=bugsink_conf.py >/dev/null && \
	  for db in default snappea; do env -u DATABASE_PATH -u SNAPPEA_DATABASE_PATH DJANGO_SETTINGS_MODULE=bugsink_conf \
	    ../bin/bugsink-manage migrate --database=$$db -v0 || exit 1; done
	@touch $@

bugsink: $(BUGSINK)/.installed ## install the Bugsink the tests start (.tools/bugsink)

# Real applications' test environments, as a team's CI image has them (NIGHTWATCH_TEST_ENV): CTFd's and Healthchecks'
# requirements at an eval case's commit (CTFd's with the pytest its development requirements pin), each from a hashed
# lock (tests/testenvs/<app>/requirements.txt, made by `uv pip compile --universal --python-version 3.11
# --generate-hashes` from requirements.in). Wheels where PyPI has them; flask-script from its source archive, and
# Healthchecks' psycopg2 and pycurl built here, with the headers .ci/run installs (libpq-dev, libcurl4-openssl-dev).
# tests/verify/test_own_test_runner.py runs each application's own tests with them in the sandbox. The interpreter is
# the system's where it has one (the sandbox mounts /usr), else $(PYTHON)'s.
TESTENVS := ctfd healthchecks
.tools/testenvs/%/.installed: $(UV) tests/testenvs/%/requirements.txt Makefile
	test -x .tools/testenvs/$*/bin/python || $(UV) venv --quiet --python $$(test -x /usr/bin/python3.11 && echo /usr/bin/python3.11 || echo $(PYTHON)) .tools/testenvs/$*
	$(UV) pip sync --quiet --require-hashes --compile-bytecode --python .tools/testenvs/$*/bin/python tests/testenvs/$*/requirements.txt
	@touch $@

testenvs: $(TESTENVS:%=.tools/testenvs/%/.installed) ## install the real applications' test environments the tests use (.tools/testenvs)

run: setup ## run one night on the embedded defaults (demo data, offline model) or your configured services; DEMO=python for the Python demo, SOURCE=sentry for its errors as Sentry has them
	$(if $(DEMO),NIGHTWATCH_DEMO=$(DEMO) )$(if $(SOURCE),NIGHTWATCH_SOURCE=$(SOURCE) )$(VENV)/bin/nightwatch run $(ARGS)

test: setup bugsink testenvs lint ## the linter and the type checker, then the test suite
	bash scripts/run-tests.sh

test-fast: setup ## the tests that start no flow and no process (under a minute), while working on the core
	bash scripts/run-tests.sh -m "not flow and not slow"

# The suite as if the calendar had moved on past the dates tests name (a month, a year): a test that passes only in
# the week it was written fails here. NIGHTWATCH_TEST_NOW sets NightWatch's clock for every test that names no date.
CALENDAR_DATES ?= 2027-01-15T12:00:00Z 2027-12-07T12:00:00Z
test-calendar: setup bugsink testenvs ## the suite as if today were each of CALENDAR_DATES (no test may hang on the real calendar)
	@for at in $(CALENDAR_DATES); do echo "== the suite as if at $$at"; NIGHTWATCH_TEST_NOW=$$at bash scripts/run-tests.sh $(ARGS) || exit 1; done

ui: setup ## local Prefect server with its UI on 127.0.0.1:$(UI_PORT), serving the deployments
	bash scripts/serve-ui.sh $(UI_PORT)

lint: setup ## ruff over the project, mypy over the core (nightwatch/)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/mypy

deploy: setup ## on the Prefect server PREFECT_API_URL names: the work pool, every deployment, how to start a worker
	bash scripts/deploy.sh

screenshots: setup ## the documentation's pictures: a served offline night's run page, logs and report (needs Chromium)
	bash scripts/ui_screenshot.sh docs/images

# The documentation site (mkdocs.yml, docs/). make test builds it with --strict too (tests/test_docs.py), so CI does.
docs: setup ## serve the documentation site on 127.0.0.1:$(DOCS_PORT), rebuilt as its pages change
	$(VENV)/bin/mkdocs serve --dev-addr 127.0.0.1:$(DOCS_PORT)

docs-build: setup ## build the documentation site into site/ with --strict: a broken link or a missing page fails
	$(VENV)/bin/mkdocs build --strict

benchmark: setup ## the demo night, cold and warm
	$(VENV)/bin/python benchmarks/run_demo.py

clean: ## remove the environment and everything runs wrote
	rm -rf $(VENV) .tools .nightwatch site
