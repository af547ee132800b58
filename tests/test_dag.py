"""The real lake_refresh DAG, run by Airflow (`airflow dags test`, SQLite metadata DB) with SparkSubmitOperator."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest

from airflow_env import airflow_env

from discovery.store import Warehouse, load_snapshot

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

BIN = os.path.dirname(sys.executable)


def test_dag_imports_without_errors(tmp_path):
    env = airflow_env(str(tmp_path / "airflow"), str(tmp_path / "wh"), str(tmp_path / "lake"))
    code = ("from airflow.models.dagbag import DagBag; b = DagBag(include_examples=False); "
            "print(sorted(b.dag_ids)); assert not b.import_errors, b.import_errors")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lake_refresh" in proc.stdout


def test_lake_refresh_dag_run_publishes_a_snapshot(tmp_path, small_lake):
    home, wh = str(tmp_path / "airflow"), str(tmp_path / "wh")
    env = airflow_env(home, wh, small_lake)
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    proc = subprocess.run([airflow, "dags", "test", "lake_refresh"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    snap = load_snapshot(Warehouse(wh))
    assert snap.counts["tables_ok"] > 0 and snap.counts["tables_error"] > 0
    stages = {r["stage"] for r in Warehouse(wh).read("refresh_runs").to_pylist() if r["status"] == "ok"}
    assert {"scan", "profile", "publish"} <= stages
