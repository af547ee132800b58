"""query_batch: run a list of union / join / n-ary searches against one snapshot and record the results.

Triggered by hand or by the API with Params (validated by JSON schema, so the trigger form is usable) or
``dag_run.conf``.  The batch is served (:mod:`discovery.surfaces.batch`): whoever may trigger the DAG does not own the
worker, so a query names a lake table (table id or catalogued lake path) and any other path is refused unread.  The
``validate`` task checks every query before anything runs and fails naming the query and the field; ``run`` answers
the queries from one snapshot and writes all result rows to ``query_results`` in one commit (the DAG run id is the
batch id, so a retried task never records a batch twice).  The summary goes to the task log and to XCom.

A batch of at least ``[batch] spark_min_queries`` queries runs on Spark, on the master of the ``spark_conn_id``
connection (``spark_default``, as the refresh stages; empty: always in the task): ``run`` drives a Spark application
whose tasks answer the queries (``spark_jobs.query_batch``), with the same answers, commit and failures.  For such a
batch ``validate`` checks the spec and the snapshot only, and the Spark tasks check each query, all before anything
is written, rather than one worker reading every query table twice.

With the OpenLineage provider configured, ``run`` reports the lake tables the batch touched and ``query_results``
(``discovery.orchestration.lineage``).
"""
from __future__ import annotations

import json
import logging
from datetime import datetime

from airflow.sdk import Param, dag, task

from discovery.surfaces import connections
from discovery.config import default_warehouse
from discovery.orchestration.lineage import batch_datasets, report_lineage

WAREHOUSE = default_warehouse()
log = logging.getLogger(__name__)

QUERY_SCHEMA = {
    "type": "object",
    "required": ["kind", "query"],
    "properties": {
        "id": {"type": "string", "description": "Name of the query in the results (default q1, q2, ...)"},
        "kind": {"type": "string", "enum": ["union", "join", "nary"]},
        "query": {"type": ["string", "integer"], "description": "Lake table id or catalogued lake path"},
        "params": {"type": "object",
                   "description": "Parameters of the search (k, method, column or LAT,LNG, tau, key, ...)"},
    },
}


def _lineage(out: dict) -> dict:
    """What the batch read and wrote, for the lineage backend (the store imported here, not at parse)."""
    from discovery.data.store import Warehouse

    return batch_datasets(Warehouse(out["warehouse"]), out)


@dag(
    dag_id="query_batch",
    description="Run a batch of Lakescout searches on a snapshot; results to the query_results Delta table",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={
        "queries": Param([], type="array", items=QUERY_SCHEMA, minItems=1,
                         description='Queries, e.g. [{"kind": "nary", "query": "12", "key": ["city", "year"], '
                                     '"k": 5}]'),
        "snapshot_id": Param(None, type=["null", "integer"], description="Snapshot to answer from (default latest)"),
        "name": Param("batch", type="string", description="Label of the batch"),
        **connections.warehouse_params(WAREHOUSE, spark="Spark connection whose master answers a batch of at least "
                                                         "[batch] spark_min_queries queries (empty: always in the "
                                                         "task)"),
    },
    tags=["lakescout"],
)
def query_batch():
    @task
    def validate(params=None) -> dict:
        """Check every query against the snapshot (a Spark batch: the spec and the snapshot); a bad one fails the run
        before anything is written."""
        from discovery.surfaces.batch import batch_snapshot, parse_spec, validate_batch

        spec = {"name": params["name"], "snapshot_id": params["snapshot_id"], "queries": params["queries"]}
        work = connections.task_session(params, WAREHOUSE)
        batch = parse_spec(spec)
        spark = bool(params.get("spark_conn_id")) and len(batch.queries) >= work.config.batch.spark_min_queries
        if spark:
            snap = batch_snapshot(work.warehouse, batch)
        else:
            batch, snap = validate_batch(work, batch, served=True)
        log.info("batch %r: %d queries %s snapshot %d%s", batch.name, len(batch.queries),
                 "on" if spark else "valid against", snap.snapshot_id, ", to run on Spark" if spark else "")
        return {"spec": batch.to_dict(), "snapshot_id": snap.snapshot_id, "spark": spark}

    @task
    def run(checked: dict, params=None, run_id=None) -> dict:
        """Answer every query (in this task, or on Spark) and record the batch in one commit; the summary (and the
        warehouse) is the XCom value."""
        from discovery.surfaces.batch import run_batch

        work = connections.task_session(params, WAREHOUSE)
        kwargs = {"batch_id": f"dag-{run_id}", "snapshot_id": checked["snapshot_id"], "served": True}
        if checked.get("spark"):
            from spark_jobs.query_batch import run_batch_on_master

            from discovery.surfaces.submit import connection_master

            master = connection_master(params["spark_conn_id"])
            log.info("batch runs on Spark master %s", master)
            summary = run_batch_on_master(master, work, checked["spec"], **kwargs)
        else:
            summary = run_batch(work, checked["spec"], **kwargs)
        log.info("batch summary: %s", json.dumps(summary, default=str))
        return {**summary, "warehouse": work.root}

    answered = run(validate())
    report_lineage(answered.operator, _lineage)


query_batch()
