"""lakescout_maintenance: snapshot retention, compaction and vacuum of the Lakescout warehouse.

Scheduled from ``[maintenance] schedule`` (weekly by default).  The work and its guarantees live in
:mod:`discovery.surfaces.maintenance`: the last N snapshots and every snapshot a standing query compares with stay
queryable (time travel keeps working), per-lake-table index tables are compacted sorted by ``table_id``, and vacuum
deletes only files no retained snapshot references.  Maintenance takes the warehouse lease a refresh takes; while
another run holds it, the run is skipped with a message naming that run.  A remote warehouse is reached with the keys of
the run's ``aws_conn_id`` connection, as the other DAGs reach it (:mod:`discovery.surfaces.connections`).
"""
from __future__ import annotations

import json
import logging
from dataclasses import replace
from datetime import datetime

from airflow.exceptions import AirflowSkipException
from airflow.sdk import Param, dag, task

from discovery.surfaces import connections
from discovery.config import default_warehouse, load_config

WAREHOUSE = default_warehouse()
CONFIG = load_config().maintenance
log = logging.getLogger(__name__)


@dag(
    dag_id="lakescout_maintenance",
    description="Snapshot retention, Delta compaction (sorted by table_id) and vacuum of the Lakescout warehouse",
    schedule=CONFIG.schedule,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    params={
        **connections.warehouse_params(WAREHOUSE),
        "keep_snapshots": Param(CONFIG.keep_snapshots, type="integer", minimum=1,
                                description="Snapshots kept (besides those pinned by standing queries)"),
    },
    tags=["lakescout"],
)
def lakescout_maintenance():
    @task
    def maintain(params=None, run_id=None) -> dict:
        from discovery.surfaces.maintenance import run_maintenance

        work = connections.task_session(params, WAREHOUSE)
        report = run_maintenance(work.warehouse,
                                 replace(work.config.maintenance, keep_snapshots=params["keep_snapshots"]),
                                 tables_per_file=work.config.spark.tables_per_task,
                                 run=f"lakescout_maintenance {run_id}")
        log.info("maintenance: %s", json.dumps(report, default=str))
        if report["status"] == "skipped":
            raise AirflowSkipException(report["reason"])
        return report

    maintain()


lakescout_maintenance()
