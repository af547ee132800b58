"""What every stage driver shares: the SparkSession, argument parsing, fan-out of per-table work, one commit.

The driver plans (small metadata), Spark tasks do the per-table work through ``mapInArrow`` and write their output
files straight into the Delta table folder, and only file metadata comes back to the driver, which commits the new
files and the removal of replaced ones in one transaction carrying the stage's application transaction.
"""
from __future__ import annotations

import argparse
import json
import logging
import math
import os
import sys
import time
import traceback
from typing import Callable, Iterable

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from discovery.config import load_config
from discovery.refresh import StageContext, StageReport, record_stage
from discovery.submit import submit_env
from discovery.store import (SCHEMAS, DataFile, Lease, candidate_files, drop_table_ids, new_attempt_token,
                             write_data_file)
from discovery.store.files import resolve
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
    default :func:`~discovery.submit.driver_java_options` (under spark-submit the submitter chose them).

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
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
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
    with Lease.join(ctx.warehouse, ctx.refresh_id).kept_alive():
        spark = spark_session(f"lakescout-{stage}")
        return execute(spark, stage, body, ctx)


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
        record_stage(ctx.warehouse, ctx.refresh_id, StageReport(stage, status="failed", message=str(exc)[:2000]),
                     started, ctx.attempt)
        return 1
    record_stage(ctx.warehouse, ctx.refresh_id, report, started, ctx.attempt)
    if usage is not None:
        usage.append({"stage": stage, **watch.usage()})
    print(json.dumps({"stage": stage, "refresh_id": ctx.refresh_id, **report.__dict__, **watch.usage()}))
    return 0


def _run_tasks(spark, n_tasks: int, task: Callable[[int], Iterable[dict]]) -> list[dict]:
    """Run ``task(i)`` for i in 0..n_tasks-1 as Spark tasks (``mapInArrow`` over a range, so no shuffle) and collect
    the small metadata records they yield."""
    if n_tasks == 0:
        return []

    def run(batches):
        for batch in batches:
            for i in batch.column(0).to_pylist():
                records = list(task(i))
                if records:
                    yield pa.RecordBatch.from_pylist([{"payload": json.dumps(r)} for r in records])

    rows = spark.range(0, n_tasks, numPartitions=n_tasks).mapInArrow(run, "payload string").collect()
    return [json.loads(r["payload"]) for r in rows]


def _sample_mask(table_ids: np.ndarray, ordinals: np.ndarray, seed: int, rate: float) -> np.ndarray:
    """A seeded hash of each (table_id, ordinal) below ``rate``: the same rows are drawn however files are split."""
    h = (table_ids.astype(np.uint64) * np.uint64(0x9E3779B97F4A7C15)
         ^ (ordinals.astype(np.uint64) + np.uint64(seed)) * np.uint64(0xC2B2AE3D27D4EB4F))
    h ^= h >> np.uint64(31)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(29)
    return (h >> np.uint64(11)).astype(np.float64) / float(1 << 53) < rate


def sample_index_rows(spark, ctx: StageContext, name: str, columns: list[str], rate: float, seed: int,
                      per_row: bool = False) -> pa.Table:
    """Rows of the current version of index table ``name`` (with ``table_id`` and ``ordinal``) whose seeded hash of
    (table_id, ordinal) falls below ``rate`` (all rows at rate >= 1), read in Spark tasks with pyarrow.  With
    ``per_row`` the hash is of (table_id, the row's place in the version's files), so each row of a column is drawn
    on its own (value vectors: many rows per column).

    The data files are read in the Python workers through the warehouse's own filesystem layer, so a warehouse on
    object storage needs no Hadoop connector on the cluster; only the sample comes back to the driver."""
    wh = ctx.store
    fs, root = resolve(wh.table_uri(name))
    paths = [f"{root.rstrip('/')}/{p}" for p in wh.files(name).column("path").to_pylist()]
    if not paths:
        return SCHEMAS[name].empty_table().select(columns)
    cores = max(int(spark.sparkContext.defaultParallelism), 1)
    per_task = max(1, math.ceil(len(paths) / (cores * TASKS_PER_CORE)))
    wanted = list(dict.fromkeys(["table_id", "ordinal", *columns]))

    def run(batches):
        task_fs = resolve(wh.table_uri(name))[0]
        for batch in batches:
            for i in batch.column(0).to_pylist():
                for f in range(i * per_task, min((i + 1) * per_task, len(paths))):
                    t = pq.read_table(paths[f], columns=wanted, filesystem=task_fs)
                    if rate < 1:
                        second = (np.int64(f) << np.int64(32)) + np.arange(t.num_rows, dtype=np.int64) if per_row \
                            else t.column("ordinal").to_numpy()
                        t = t.filter(pa.array(_sample_mask(t.column("table_id").to_numpy(), second, seed, rate)))
                    if t.num_rows:
                        yield pa.RecordBatch.from_pylist([{"payload": to_ipc(t)}])

    n_tasks = math.ceil(len(paths) / per_task)
    rows = spark.range(0, n_tasks, numPartitions=n_tasks).mapInArrow(run, "payload binary").collect()
    parts = [from_ipc(r["payload"]) for r in rows]
    out = pa.concat_tables(parts) if parts else SCHEMAS[name].empty_table().select(wanted)
    return out.sort_by([("table_id", "ascending"), ("ordinal", "ascending")]).select(columns)


#: Tasks per core of the application that a stage's per-table work is cut into, so that every core has work and the
#: last tasks even out.
TASKS_PER_CORE = 4
#: Output files, of ``[spark] tables_per_task`` tables each, that one task writes at most.
MAX_FILES_PER_TASK = 4


def work_chunks(spark, ctx: StageContext, n_tables: int) -> tuple[int, int]:
    """(tables per Spark task, tables per output file) for ``n_tables`` tables of per-table work.

    A file holds ``[spark] tables_per_task`` tables, so each covers a narrow ``table_id`` range and a later
    replacement of a few tables rewrites few rows; it is also what a task holds in memory at once.  But a Spark task
    costs about 0.1 CPU seconds of scheduling and Python round trip whatever it does (100 empty tasks took 16 CPU
    seconds on 2 cores), and one task per file made that most of a stage on a small lake (63 tasks per stage, 126 in
    ``xash``, for UGEN-V1's 1,000 tables).  So a task writes up to :data:`MAX_FILES_PER_TASK` files, one after the
    other, as long as that leaves about :data:`TASKS_PER_CORE` tasks per core."""
    per_file = max(ctx.config.spark.tables_per_task, 1)
    cores = max(int(spark.sparkContext.defaultParallelism), 1)
    files = min(MAX_FILES_PER_TASK, max(1, math.ceil(n_tables / (cores * TASKS_PER_CORE * per_file))))
    return per_file * files, per_file


def file_chunks(work: pa.Table, per_file: int) -> Iterable[pa.Table]:
    """``work`` (one task's tables) in consecutive pieces of ``per_file`` tables, one per output file."""
    for start in range(0, work.num_rows, per_file):
        yield work.slice(start, per_file)


def _work_tasks(spark, work: pa.Table, fn: Callable[[pa.Table, StageContext], tuple[pa.Table, dict]], output: str,
                ctx: StageContext, stage: str) -> tuple[int, Callable[[int], Iterable[dict]]]:
    """Tasks that run ``fn`` over chunks of ``work``, writing each piece's output rows as one file of ``output``.

    Work is sorted by ``table_id`` and cut into contiguous chunks (:func:`work_chunks`), so each output file covers a
    narrow ``table_id`` range and a later replacement of a few tables rewrites few files (the file statistics prune
    the rest).  The work list itself is small metadata shipped to the tasks in a broadcast; rows stay on the
    executors and only file metadata and counters come back to the driver.
    """
    if work.num_rows == 0:
        return 0, lambda i: iter(())
    work = work.sort_by("table_id")
    table_uri = ctx.store.table_uri(output)
    per_task, per_file = work_chunks(spark, ctx, work.num_rows)
    shared = spark.sparkContext.broadcast(to_ipc(work))

    def task(i: int):
        for piece in file_chunks(from_ipc(shared.value).slice(i * per_task, per_task), per_file):
            out, counts = fn(piece, ctx)
            yield {"counts": counts}
            if out.num_rows:
                yield {"file": write_data_file(table_uri, out, ctx.refresh_id, stage, ctx.attempt).to_dict()}

    return math.ceil(work.num_rows / per_task), task


#: Fewest candidate files per copy-on-write removal task.  Rewriting one file takes 3-40 ms (a value-vectors file of
#: about 1,200 rows the most), a Spark task costs about 0.16 CPU s of scheduling and Python round trip, and the changed
#: tables of an incremental refresh are spread over the lake: 1% of 16,000 tables changed touch about 150 files of
#: every index table.  At 8 files per task that was 19 removal tasks per index table and about half of the refresh;
#: now a stage's removals run in at most :data:`TASKS_PER_CORE` tasks per core, of at least this many files.
REWRITE_FILES_PER_TASK = 32


def _rewrite_tasks(spark, name: str, table_ids: np.ndarray, ctx: StageContext, stage: str
                   ) -> tuple[int, Callable[[int], Iterable[dict]]]:
    """Tasks for the copy-on-write removal of the rows of ``table_ids`` from ``name``: the candidate files split
    evenly over at most ``TASKS_PER_CORE`` tasks per core, each of at least :data:`REWRITE_FILES_PER_TASK` files."""
    wh = ctx.store
    paths = candidate_files(wh.files(name), table_ids)
    ids = np.asarray(table_ids, dtype=np.int64)
    table_uri = wh.table_uri(name)
    cores = max(int(spark.sparkContext.defaultParallelism), 1)
    per_task = max(REWRITE_FILES_PER_TASK, math.ceil(len(paths) / (cores * TASKS_PER_CORE)))

    def task(i: int):
        for path in paths[i * per_task:(i + 1) * per_task]:
            touched, repl = drop_table_ids(table_uri, path, ids, ctx.refresh_id, stage, ctx.attempt)
            if touched:
                yield {"removed": path, "file": repl.to_dict() if repl else None}

    return math.ceil(len(paths) / per_task), task


def to_ipc(table: pa.Table) -> bytes:
    """``table`` as Arrow IPC stream bytes: how tables travel in broadcasts and task results."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


def _collect(records: list[dict]) -> tuple[list[DataFile], list[str], dict]:
    files, removes, totals = [], [], {}
    for rec in records:
        if rec.get("file"):
            files.append(DataFile(**rec["file"]))
        if "removed" in rec:
            removes.append(rec["removed"])
        for k, v in rec.get("counts", {}).items():
            totals[k] = totals.get(k, 0) + v
    return files, removes, totals


def fan_out(spark, work: pa.Table, fn, output: str, ctx: StageContext, stage: str) -> tuple[list[DataFile], dict]:
    """Run ``fn`` over ``work`` in Spark tasks that write files of ``output``; returns the files and counters."""
    n, task = _work_tasks(spark, work, fn, output, ctx, stage)
    files, _, totals = _collect(_run_tasks(spark, n, task))
    return files, totals


def merge_small(ctx: StageContext, name: str, stage: str) -> None:
    """After a stage's commit: merge ``name``'s files when it is a small table fragmented into many
    (:meth:`~discovery.store.Warehouse.merge_small_files`), under its own once-per-refresh commit."""
    ctx.store.merge_small_files(name, refresh_id=ctx.refresh_id, stage=f"{stage}_merge")


def replace_tables(spark, name: str, work: pa.Table, remove_ids: np.ndarray, fn, ctx: StageContext,
                   stage: str, merge: bool = False) -> tuple[int | None, dict, int]:
    """Replace the rows of lake tables in ``name``: drop ``remove_ids``' rows, add ``fn``'s output, one commit.

    The rewrite of files holding removed rows and the per-table work run as one Spark job.  With ``merge`` (tables of
    a few rows per lake table: catalog, columns, partitions) a fragmented table is then merged (:func:`merge_small`).
    Returns (new version or None when this refresh's stage had already committed, counters, rows written by ``fn``).
    """
    wh = ctx.store
    if wh.committed(name, stage, ctx.refresh_id):
        return None, {}, 0
    n_rw, rewrite = _rewrite_tasks(spark, name, remove_ids, ctx, stage)
    n_wk, produce = _work_tasks(spark, work, fn, name, ctx, stage)

    def task(i: int):
        return rewrite(i) if i < n_rw else produce(i - n_rw)

    records = _run_tasks(spark, n_rw + n_wk, task)
    files, removes, counts = _collect(records)
    result = wh.commit(name, files, removes, refresh_id=ctx.refresh_id, stage=stage, attempt=ctx.attempt)
    if merge:
        merge_small(ctx, name, stage)
    written = sum(DataFile(**r["file"]).rows for r in records if r.get("file") and "removed" not in r)
    return result.version, counts, written
