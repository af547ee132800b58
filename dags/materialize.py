"""materialize: write a recorded answer -- a query batch's results -- as the table it describes.

Triggered with a batch id and query id (``query_batch`` runs are ``dag-<run id>``; page searches ``ui-...``) and the
ranks to write (default: every result of a union, the first of a join; several ranks of a join are added one after
the other).  ``check`` rebuilds the plan from ``query_results`` and ``query_batches``
(:mod:`discovery.surfaces.materialize .stored`) and checks the output location before anything is read: it must lie
under ``LAKESCOUT_OUTPUT_ROOT`` (default ``./outputs``; a bare name is put there) or a root of
``LAKESCOUT_ALLOWED_ROOTS``.  ``write`` reads the lake tables at the versions the batch's snapshot indexed and writes
the output atomically (one Delta commit by default); lake tables of at least ``[materialize] spark_min_bytes`` are read
by a Spark job on the ``spark_conn_id`` connection's master.  It emits the asset ``lakescout_output`` (extra: path,
rows, batch, query), so downstream DAGs can run on every written table.  Served: the query must be a lake table, as in
``query_batch``.
"""
from __future__ import annotations

import json
import logging
import os
from datetime import datetime

from airflow.sdk import Asset, Param, dag, task

from discovery import storage

from discovery.surfaces import connections
from discovery.config import default_warehouse

WAREHOUSE = default_warehouse()
OUTPUT_ROOT = os.environ.get("LAKESCOUT_OUTPUT_ROOT", os.path.abspath("outputs"))
OUTPUT_ASSET = Asset(name="lakescout_output", uri=storage.file_uri(OUTPUT_ROOT))
log = logging.getLogger(__name__)


def _plans(work, params: dict, master: str | None = None):
    from discovery.surfaces.materialize.stored import stored_plans

    return stored_plans(work, params["batch_id"], params["query_id"], params["ranks"] or None,
                        fan_out=params["fan_out"], max_matches=params["max_matches"],
                        columns=params["columns"] or None, query_rows=params["query_rows"], dedupe=params["dedupe"],
                        strict=params["strict"], matcher=params["matcher"] or None,
                        precision=params["precision"], master=master)[1]


@dag(
    dag_id="materialize",
    description="Write a recorded Lakescout answer (union or join) as a table under the output root",
    schedule=None,
    start_date=datetime(2026, 1, 1),
    catchup=False,
    params={
        "batch_id": Param("", type="string", minLength=1, description="Batch whose answer to write"),
        "query_id": Param("", type="string", minLength=1, description="Query of the batch"),
        "ranks": Param([], type="array", items={"type": "integer", "minimum": 1},
                       description="Result ranks to write (default: a union's all, a join's first)"),
        "output": Param("", type="string", minLength=1,
                        description="Output: a name under LAKESCOUT_OUTPUT_ROOT, or a path or URI under an "
                                    "allowed root"),
        "format": Param("delta", type="string", enum=["delta", "parquet", "csv"], description="Output format"),
        "overwrite": Param(False, type="boolean", description="Replace an existing output"),
        "fan_out": Param("nearest", type="string", enum=["nearest", "all", "aggregate"],
                         description="Rows per query row of a join"),
        "max_matches": Param(None, type=["null", "integer"], minimum=1,
                             description="Fan-out all: most lake rows per query row"),
        "columns": Param([], type="array", items={"type": "string"},
                         description="Lake columns a join adds (default all)"),
        "matcher": Param("", type="string", enum=["", "auto", "search"],
                         description="A text join's pairs: the two-table matcher (auto) or the search's (search); "
                                     "empty: [materialize] matcher"),
        "precision": Param(None, type=["null", "number"], exclusiveMinimum=0, exclusiveMaximum=1,
                           description="The auto matcher's precision target (empty: [materialize] precision)"),
        "query_rows": Param(True, type="boolean", description="A union keeps the query's own rows"),
        "dedupe": Param(False, type="boolean", description="A union writes identical rows once"),
        "strict": Param(False, type="boolean", description="Refuse a plain lake file changed since the snapshot"),
        **connections.warehouse_params(WAREHOUSE, spark="Spark connection whose master reads lake tables of at "
                                                         "least [materialize] spark_min_bytes (empty: always in the "
                                                         "task)"),
    },
    tags=["lakescout"],
)
def materialize():
    @task
    def check(params=None) -> dict:
        """The output location and the plan, checked before anything is read or written."""
        from discovery.orchestration.allowed_roots import check_location
        from discovery.surfaces.materialize.output import check_target

        name = params["output"]
        target = storage.under(OUTPUT_ROOT, name)
        target = check_location("output", target, OUTPUT_ROOT)
        check_target(target, params["format"], params["overwrite"])
        plans = _plans(connections.task_session(params, WAREHOUSE), params)
        size = sum(s.table.bytes for p in plans for s in p.sources)
        log.info("writing %d plan(s) over %d lake table byte(s) to %s", len(plans), size, target)
        return {"output": target, "bytes": size, "plans": len(plans)}

    @task(outlets=[OUTPUT_ASSET])
    def write(checked: dict, params=None, outlet_events=None) -> dict:
        """Read the lake tables (on Spark when large) and write the output in one atomic step."""
        from discovery.surfaces.materialize.output import write_table
        from discovery.surfaces.materialize.execute import run_plans

        work = connections.task_session(params, WAREHOUSE)
        target, fmt = checked["output"], params["format"]
        master = None
        if params["spark_conn_id"] and checked["plans"] == 1 and \
                checked["bytes"] >= work.config.materialize.spark_min_bytes:
            from discovery.surfaces.submit import connection_master

            master = connection_master(params["spark_conn_id"])
        plans = _plans(work, params, master)      # a large lake column's values paired on Spark too
        if master:
            from spark_jobs.materialize import run_plan_on_master

            described = run_plan_on_master(master, plans[0], target, fmt, work.config.limits, params["overwrite"])
        else:
            m = run_plans(plans, work.config.limits)
            size = write_table(m.with_metadata(), target, fmt, params["overwrite"])
            described = {**m.description, "output": {"path": target, "format": fmt, "bytes": size}}
        outlet_events[OUTPUT_ASSET].extra = {"path": target, "format": fmt, "rows": described["rows"],
                                             "batch_id": params["batch_id"], "query_id": params["query_id"]}
        log.info("written: %s", json.dumps(described, default=str))
        return described

    write(check())


materialize()
