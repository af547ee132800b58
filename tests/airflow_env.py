"""Environment of a real Airflow process run by the tests: a private AIRFLOW_HOME (SQLite) with this repository's
DAGs and plugins, Spark on local[2], and the venv's tools on PATH (no tests of its own)."""
from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)


def airflow_env(home: str, warehouse: str, lake: str | None = None, **extra: str) -> dict:
    env = dict(
        os.environ,
        AIRFLOW_HOME=home,
        AIRFLOW__CORE__DAGS_FOLDER=os.path.join(ROOT, "dags"),
        AIRFLOW__CORE__PLUGINS_FOLDER=os.path.join(ROOT, "plugins"),
        AIRFLOW__CORE__LOAD_EXAMPLES="False",
        AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
        LAKESCOUT_WAREHOUSE=warehouse,
        PYSPARK_PYTHON=sys.executable,
        PATH=BIN + os.pathsep + os.environ.get("PATH", ""),
        **extra,
    )
    if lake is not None:
        env["LAKESCOUT_LAKE"] = lake
    return env


def openlineage_env(env: dict, events_file: str) -> dict:
    """``env`` with Airflow's OpenLineage provider configured to write every event to ``events_file`` (OpenLineage's
    file transport, one JSON event a line)."""
    return {**env, "AIRFLOW__OPENLINEAGE__TRANSPORT": json.dumps({"type": "file", "log_file_path": events_file,
                                                                   "append": True})}


def lineage_events(events_file: str) -> dict[str, dict]:
    """The COMPLETE event of each job (``dag_id.task_id``) in ``events_file``, by job name."""
    with open(events_file, encoding="utf-8") as fh:
        events = [json.loads(line) for line in fh if line.strip()]
    return {e["job"]["name"]: e for e in events if e.get("eventType") == "COMPLETE"}


def datasets(event: dict, side: str) -> set[tuple[str, str]]:
    """``(namespace, name)`` of an event's ``inputs`` or ``outputs``."""
    return {(d["namespace"], d["name"]) for d in event.get(side) or []}
