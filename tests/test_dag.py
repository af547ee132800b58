"""The real lake_refresh DAG, run by Airflow (`airflow dags test`, SQLite metadata DB) with SparkSubmitOperator."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from discovery.store import Warehouse, load_snapshot

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def _airflow_env(home: str, lake: str, warehouse: str) -> dict:
    return dict(
        os.environ,
        AIRFLOW_HOME=home,
        AIRFLOW__CORE__DAGS_FOLDER=os.path.join(ROOT, "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=os.path.join(ROOT, "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        LAKESCOUT_LAKE=lake,
        LAKESCOUT_WAREHOUSE=warehouse,
        PYSPARK_PYTHON=sys.executable,
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
    )


def test_dag_imports_without_errors(tmp_path):
    env = _airflow_env(str(tmp_path / "airflow"), str(tmp_path / "lake"), str(tmp_path / "wh"))
    code = ("from airflow.models.dagbag import DagBag; b = DagBag(include_examples=False); "
            "print(sorted(b.dag_ids)); assert not b.import_errors, b.import_errors")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "lake_refresh" in proc.stdout


def test_lake_refresh_dag_run_publishes_a_snapshot(tmp_path, small_lake):
    home, wh = str(tmp_path / "airflow"), str(tmp_path / "wh")
    env = _airflow_env(home, small_lake, wh)
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    proc = subprocess.run([airflow, "dags", "test", "lake_refresh"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    snap = load_snapshot(Warehouse(wh))
    assert snap.counts["tables_ok"] > 0 and snap.counts["tables_error"] > 0
    stages = {r["stage"] for r in Warehouse(wh).read("refresh_runs").to_pylist() if r["status"] == "ok"}
    assert {"scan", "profile", "publish"} <= stages
