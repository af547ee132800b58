# Lakescout: `make demo` and `make test` on a fresh machine (Python 3.11, Java 17, package registries only).
SHELL := /bin/bash
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(CURDIR)/$(VENV)/bin
STAMP := $(VENV)/.installed

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

.PHONY: venv demo test sample-lake clean

venv: $(STAMP)

$(STAMP): requirements.txt pyproject.toml
	@java -version >/dev/null 2>&1 || { echo "Java 17 is required by Spark (apt-get install openjdk-17-jre-headless)"; exit 1; }
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet -r requirements.txt
	$(BIN)/pip install --quiet --no-deps --no-build-isolation -e .
	touch $(STAMP)

sample-lake: venv
	$(BIN)/lakescout demo-lake $(LAKESCOUT_LAKE)

demo: sample-lake
	$(BIN)/airflow db migrate > /dev/null
	$(BIN)/airflow dags test lake_refresh > .airflow/demo-refresh.log 2>&1 || { tail -50 .airflow/demo-refresh.log; exit 1; }
	@echo "lake_refresh DAG run finished (log: .airflow/demo-refresh.log)"
	$(BIN)/lakescout status --warehouse $(LAKESCOUT_WAREHOUSE)

test: venv
	$(BIN)/pytest -q -rs $(PYTEST_ARGS)

clean:
	rm -rf $(LAKESCOUT_WAREHOUSE) $(LAKESCOUT_LAKE) .airflow
