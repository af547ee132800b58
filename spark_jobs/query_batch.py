"""A query batch on Spark: the queries cut into tasks, each answered on an executor, the batch committed here.

The driver checks the spec's structure and pins the snapshot (:func:`discovery.surfaces.batch.batch_snapshot`), plans
one :class:`~discovery.surfaces.batch_share.BatchShare` (broadcast once) and spreads the queries over Spark tasks by the
one fan-out (:func:`spark_jobs.fanout.map_items`: contiguous slices, at least :data:`MIN_QUERIES_PER_TASK` a task). Each
task checks and answers its queries from the snapshot its Python worker opened once
(:mod:`discovery.surfaces.batch_share`) and sends back their result rows: a query's ``k`` rows and its summary entry,
small next to the indexes that stay on the executors. The driver then records the batch exactly as the in-process run
does (:func:`discovery.surfaces.batch.record_batch`): one ``query_results`` commit through the warehouse's one write
path, skipped when a run of the same batch id already committed, so a retried batch (or a task Spark re-ran) never
records twice and nothing is written when any query fails.

Entry points: :func:`run_batch_spark` (a session in hand: tests, benchmarks), :func:`run_batch_on_master` (the
``query_batch`` DAG, master from its Spark connection) and ``spark-submit spark_jobs/query_batch.py`` (what
``lakescout batch --master`` runs), which prints ``LAKESCOUT_RESULT {summary}`` or ``{"refused": message}``.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Mapping
from datetime import datetime, UTC


from discovery.config import load_config
from discovery.data.store import Session, WarehouseError
from discovery.query.resolve import QueryError
from discovery.surfaces.batch import BatchError, BatchSpec, batch_snapshot, open_batch, parse_spec, record_batch
from discovery.surfaces.batch_share import answer_share, merge_outcomes, plan_share
from spark_jobs.common import spark_session
from spark_jobs.fanout import cores, map_items, task_count

#: Fewest queries a Spark task answers: a task costs about 0.1 CPU s of scheduling and Python round trip, a few union
#: queries' worth.
MIN_QUERIES_PER_TASK = 8


def run_batch_spark(spark, session: Session, spec: dict | list | str | BatchSpec, batch_id: str | None = None,
                    snapshot_id: int | None = None, standing: bool = False, served: bool = False,
                    uploads: Mapping[str, str] | None = None) -> dict:
    """:func:`discovery.surfaces.batch.run_batch` with the queries answered in Spark tasks: the same checks, result
    rows, commit and summary (``seconds`` apart, and ``spark_tasks``: how many tasks answered); every task answers with
    the driver's ``session`` (its warehouse and configuration), whatever configuration files the executors have."""
    wh = session.warehouse
    batch_id, done = open_batch(wh, batch_id)
    if done is not None:
        return done
    batch = spec if isinstance(spec, BatchSpec) else parse_spec(spec)
    snap = batch_snapshot(wh, batch, snapshot_id)
    started = time.time()
    now = datetime.now(UTC)
    share = plan_share(snap, batch, batch_id, now, session.config, served, uploads)
    n = len(batch.queries)
    n_tasks = task_count(n, cores(spark), MIN_QUERIES_PER_TASK)
    shared = spark.sparkContext.broadcast(share)

    def answer(i: int):
        from pyspark import TaskContext

        from discovery.ground.threads import set_query_threads

        set_query_threads(TaskContext.get().cpus())  # the task's cores, not the machine's: tasks run side by side
        yield from answer_share(shared.value, range(i, i + 1))

    try:
        outcomes = map_items(spark, n, answer, tasks=n_tasks)
    finally:
        shared.unpersist()
    rows, per_query = merge_outcomes(batch, outcomes)
    return record_batch(wh, batch, snap, batch_id, rows, per_query, started, now, standing, n_tasks)


def run_batch_on_master(master: str, session: Session, spec, **kwargs) -> dict:
    """:func:`run_batch_spark` in a session on ``master`` started for it (and stopped after), unless this process
    already runs one."""
    from pyspark.sql import SparkSession

    had = SparkSession.getActiveSession() is not None
    spark = spark_session("lakescout-query-batch", master=master)
    try:
        return run_batch_spark(spark, session, spec, **kwargs)
    finally:
        if not had:
            spark.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.query_batch", description="Run a Lakescout query batch on Spark")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--spec", required=True, help="JSON file of the batch")
    p.add_argument("--batch-id", required=True)
    p.add_argument("--snapshot", type=int, default=None)
    p.add_argument("--config", default=None, help="TOML configuration file")
    args = p.parse_args(argv)
    try:
        with open(args.spec, encoding="utf-8") as fh:
            spec = fh.read()
        spark = spark_session("lakescout-query-batch")
        spark.sparkContext.setLogLevel("ERROR")
        out = run_batch_spark(spark, Session.at(args.warehouse, load_config(args.config)), spec,
                              batch_id=args.batch_id, snapshot_id=args.snapshot)
    except (BatchError, QueryError, WarehouseError) as exc:
        print("LAKESCOUT_RESULT " + json.dumps({"refused": str(exc)}))
        return 2
    print("LAKESCOUT_RESULT " + json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
