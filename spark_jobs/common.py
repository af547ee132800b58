"""What every stage driver shares: the SparkSession, its arguments, and running a stage with its outcome recorded.

The per-table work of a stage fans out over Spark tasks through :mod:`spark_jobs.fanout`.
"""
from __future__ import annotations

import argparse
import json
import logging
import os
import sys
import time
import traceback
from dataclasses import replace
from collections.abc import Callable

from discovery.config import load_config
from discovery.data.store import Lease, new_attempt_token
from discovery.orchestration.refresh import record_stage
from discovery.stages import StageContext, StageReport
from discovery.stages.progress import NOTE
from discovery.surfaces.submit import executor_python, submit_env
from spark_jobs.progress import StageProgress


#: Settings of every Lakescout application that its submitter did not set (``--conf``, ``spark-defaults.conf``):
#: Arrow transfers, no console bar (the stages report their own progress), the worker daemon that keeps a task's
#: fixed costs low (:mod:`spark_jobs.worker`), and Spark's log from warnings up (its INFO lines, some 300 a stage,
#: went through every DAG task's log).
SESSION_DEFAULTS = {"spark.sql.execution.arrow.pyspark.enabled": "true", "spark.ui.showConsoleProgress": "false",
                    "spark.python.daemon.module": "spark_jobs.worker", "spark.log.level": "WARN"}
#: ... and of an application on a ``local`` master: no web UI, and the driver on the loopback address.  Starting the
#: UI's web server took 1 to 5 s of a JVM start on a shared 2-core machine, a fixed cost of every refresh (and of
#: every stage of the DAG), and a refresh reports its own progress (``spark.ui.enabled=true`` in
#: ``spark-defaults.conf`` brings it back).  Resolving and binding the host name costs every task a network round
#: trip through the name service, which in sandboxed hosts multiplies per-task overhead.
LOCAL_DEFAULTS = {"spark.ui.enabled": "false", "spark.driver.host": "127.0.0.1",
                  "spark.driver.bindAddress": "127.0.0.1"}


def spark_session(app_name: str, master: str | None = None, java_options: str | None = None):
    """The active session, or a new one on the master spark-submit was given, else ``master``,
    ``LAKESCOUT_SPARK_MASTER`` or local[*], with :data:`SESSION_DEFAULTS` (and on a local master
    :data:`LOCAL_DEFAULTS`) where the submitter set nothing else.  A JVM started here gets ``java_options``, by
    default :func:`~discovery.surfaces.submit.driver_java_options` (under spark-submit the submitter chose them); its
    executors run :func:`~discovery.surfaces.submit.executor_python` (``LAKESCOUT_PYSPARK_PYTHON``, else
    ``PYSPARK_PYTHON`` or this interpreter), as those of a submitted application do.

    Under spark-submit (which hands its JVM to Python through ``PYSPARK_GATEWAY_PORT``) the master and every
    ``--conf`` live in that JVM's configuration, read here before the context exists; the builder must not name a
    master: one set here would override ``--master`` and run a "cluster" refresh on the driver alone.
    """
    from pyspark import SparkConf
    from pyspark.sql import SparkSession

    # py4j logs "Closing down clientserver connection" at INFO from its exit hook, after the streams a host
    # (pytest's capture, a CLI piped to a closed reader) may already have closed: a "--- Logging error ---"
    # traceback on every run's exit.  Its warnings and errors still show.
    logging.getLogger("py4j").setLevel(logging.WARNING)
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    os.environ["PYSPARK_PYTHON"] = executor_python(os.environ.get("PYSPARK_PYTHON", sys.executable))
    builder = SparkSession.builder.appName(app_name)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        given = SparkConf()  # what spark-submit set, read from its JVM
    else:
        master = master or os.environ.get("LAKESCOUT_SPARK_MASTER", "local[*]")
        given = SparkConf(loadDefaults=False).setMaster(master)
        builder = builder.master(master)
    local = (given.get("spark.master") or "local").startswith("local")
    for key, value in {**SESSION_DEFAULTS, **(LOCAL_DEFAULTS if local else {})}.items():
        if not given.contains(key):
            builder = builder.config(key, value)
    if "PYSPARK_GATEWAY_PORT" in os.environ:
        return builder.getOrCreate()
    saved = os.environ.get("SPARK_SUBMIT_OPTS")
    os.environ["SPARK_SUBMIT_OPTS"] = submit_env({"SPARK_SUBMIT_OPTS": saved or ""}, java_options)["SPARK_SUBMIT_OPTS"]
    try:  # the JVM PySpark launches for this session reads them
        return builder.getOrCreate()
    finally:
        if saved is None:
            os.environ.pop("SPARK_SUBMIT_OPTS", None)
        else:
            os.environ["SPARK_SUBMIT_OPTS"] = saved


def _flag(text: str) -> bool:
    if text.lower() in ("true", "1", "yes"):
        return True
    if text.lower() in ("false", "0", "no"):
        return False
    raise argparse.ArgumentTypeError(f"expected true or false, got {text!r}")


def parse_args(argv: list[str] | None, stage: str) -> argparse.Namespace:
    p = argparse.ArgumentParser(prog=f"spark_jobs.{stage}", description=f"Lakescout refresh stage: {stage}")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--lake", required=True)
    p.add_argument("--refresh-id", type=int, required=True)
    p.add_argument("--full", type=_flag, nargs="?", const=True, default=False,
                   help="rebuild everything instead of the changed tables (also --full true|false, for templating)")
    p.add_argument("--config", default=None, help="TOML configuration file")
    add_pattern_args(p)
    return p.parse_args(argv)


def _patterns(text: str) -> tuple:
    """A JSON list of patterns (what the DAG templates), or one plain pattern."""
    text = text.strip()
    if text.startswith("["):
        try:
            value = json.loads(text)
        except json.JSONDecodeError as exc:
            raise argparse.ArgumentTypeError(f"not a JSON list of patterns: {exc}") from None
        return tuple(str(v) for v in value)
    return (text,) if text else ()


def add_pattern_args(p: argparse.ArgumentParser) -> None:
    for name, what in (("include", "index only the lake tables matching"), ("exclude", "leave out the lake tables "
                                                                                       "matching")):
        p.add_argument(f"--{name}", type=_patterns, action="append", default=[], metavar="PATTERN",
                       help=f"{what} this gitignore-style pattern (repeatable; or a JSON list)")


def flat_patterns(values: list[tuple]) -> tuple:
    return tuple(p for group in values for p in group)


def context_from_args(args: argparse.Namespace) -> StageContext:
    return StageContext(warehouse=args.warehouse, lake=args.lake, refresh_id=args.refresh_id,
                        attempt=new_attempt_token(), full=args.full, config=load_config(args.config),
                        include=flat_patterns(args.include), exclude=flat_patterns(args.exclude))


def run_stage(stage: str, body: Callable[[object, StageContext], StageReport], argv: list[str] | None = None) -> int:
    """spark-submit entry point: run ``body`` and record the outcome in ``refresh_runs`` (failures too).

    The stage is a step of a refresh that ``begin`` started in another process (a DAG task): it renews that
    refresh's warehouse lease while it runs, and does not run at all when the refresh no longer holds it (it was
    killed, its lease expired and another run took over)."""
    args = parse_args(argv, stage)
    ctx = context_from_args(args)
    with Lease.join(ctx.warehouse, ctx.refresh_id).kept_alive() as lease:
        spark = spark_session(f"lakescout-{stage}")
        reports: list[StageReport] = []
        code = execute(spark, stage, lambda s, c: reports.append(body(s, c)) or reports[-1], ctx)
        if code or stage != "scan" or not reports or not small_plan(reports[0], ctx):
            return code
        scan = reports[0]
        return rest_in_this_application(spark, ctx, lease, scan.tables_added + scan.tables_changed +
                                        scan.tables_deleted)


def small_plan(scan: StageReport, ctx: StageContext) -> bool:
    """Whether the scan of a DAG refresh found so few tables to index that the remaining stages run in its Spark
    application: each stage task costs a spark-submit (5 to 8 s), which is most of a small change's refresh."""
    limit = ctx.config.refresh.small_plan_tables
    changed = scan.tables_added + scan.tables_changed + scan.tables_deleted
    return not ctx.full and limit > 0 and changed <= limit


def rest_in_this_application(spark, ctx: StageContext, lease, changed: int) -> int:
    """The stages after ``scan``, one after the other in this application, each recorded as its own task would
    record it; their DAG tasks then find them done and end without starting Spark (:func:`stage_done`)."""
    import importlib

    from spark_jobs.stages import STAGES

    why = (f"run in the scan task's application: a small plan ({changed} of at most "
           f"{ctx.config.refresh.small_plan_tables} tables added, changed or deleted, [refresh] small_plan_tables)")
    print(f"{NOTE}the stages after scan {why}", flush=True)
    for module in (importlib.import_module(f"spark_jobs.{m}") for s, m in STAGES.items() if s != "scan"):
        lease.check()
        stage_ctx = replace(ctx, attempt=new_attempt_token())
        code = execute(spark, module.STAGE, lambda s, c, run=module.run: _said(run(s, c), why), stage_ctx)
        if code:
            return code
    return 0


def _said(report: StageReport, why: str) -> StageReport:
    """``report`` with the path its stage took added to its message (what ``refresh_runs`` and status show)."""
    report.message = f"{report.message}; {why}" if report.message else why
    return report


def execute(spark, stage: str, body: Callable[[object, StageContext], StageReport], ctx: StageContext,
            usage: list[dict] | None = None) -> int:
    """Run a stage body with live progress (:mod:`spark_jobs.progress`) and record its outcome in ``refresh_runs``;
    the summary line, and ``usage`` when given, get the stage's seconds and CPU utilisation."""
    started = time.time()
    try:
        with StageProgress(spark, ctx, stage) as watch:
            report = body(spark, ctx)
    except Exception as exc:
        traceback.print_exc()
        record_stage(ctx.store, ctx.refresh_id, StageReport(stage, status="failed", message=str(exc)[:2000]),
                     started, ctx.attempt)
        return 1
    record_stage(ctx.store, ctx.refresh_id, report, started, ctx.attempt)
    if usage is not None:
        usage.append({"stage": stage, **watch.usage()})
    print(json.dumps({"stage": stage, "refresh_id": ctx.refresh_id, **report.__dict__, **watch.usage()}))
    return 0
