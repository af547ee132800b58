"""standing_queries: re-run every saved standing query whenever lake_refresh publishes a snapshot.

Scheduled on the ``lakescout_snapshot`` asset that ``lake_refresh`` emits (same name and URI, declared here so this
file does not import another DAG file).  Standing queries are batch specs saved as ``<warehouse>/standing/<name>.json``
(:func:`discovery.surfaces.standing.save_standing`); each one runs on the newest snapshot as its own mapped task,
and what changed
since its previous run (new, dropped and rescored results) is recorded in ``standing_changes``.  Standing queries are
served batches: their queries name lake tables, never other files of the worker.
"""
from __future__ import annotations

import json
import logging
from datetime import datetime

from airflow.sdk import dag, task

from discovery.surfaces import connections
from discovery.config import default_warehouse

WAREHOUSE = default_warehouse()
SNAPSHOT_ASSET = connections.snapshot_asset(WAREHOUSE)
log = logging.getLogger(__name__)


@dag(
    dag_id="standing_queries",
    description="Re-run saved Lakescout standing queries on every new snapshot and record what changed",
    schedule=[SNAPSHOT_ASSET],
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params=connections.warehouse_params(WAREHOUSE),
    tags=["lakescout"],
)
def standing_queries():
    @task
    def saved(params=None) -> list[str]:
        """Names of the saved standing queries."""
        from discovery.surfaces.standing import standing_queries as saved_queries

        names = sorted(saved_queries(connections.task_session(params, WAREHOUSE).warehouse))
        log.info("standing queries: %s", ", ".join(names) or "none")
        return names

    @task
    def rerun(name: str, params=None) -> dict:
        """Run one standing query on the newest snapshot and record its changes."""
        from discovery.surfaces.standing import run_standing

        out = run_standing(connections.task_session(params, WAREHOUSE), name)
        log.info("standing query %s: %s", name, json.dumps(out, default=str))
        return out

    rerun.expand(name=saved())


standing_queries()
