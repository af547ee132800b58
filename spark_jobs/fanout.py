"""The one Spark fan-out: work cut into tasks by one rule, run as Python tasks, small results collected.

Every Spark job Lakescout runs is a fan-out of Python work over tasks: a refresh stage's per-table work and its
copy-on-write removals, a materialised answer's lake units, a query batch's queries, a sample of an index table.
They all go through this module, so how work is cut into tasks, what a task may send back and how it travels is
written once:

* :func:`task_count` is the one task rule: at most :data:`TASKS_PER_CORE` tasks per core of the application, each
  of at least ``least`` items (a task costs about 0.1 CPU s of scheduling and Python round trip whatever it does);
  :func:`item_range` gives task ``t`` a contiguous range of items, sizes differing by at most one.
* :func:`map_items` runs ``body(i)`` for every item in Spark tasks (``mapInArrow`` over a range of task ids, so no
  shuffle) and returns what the bodies yield, in item order: any picklable value (counters, file metadata, Arrow
  IPC bytes of small tables), never the rows a task wrote.  :func:`items_frame` is the same fan-out as a DataFrame
  for a Spark aggregation to follow (a union's row hashes); :func:`map_groups` hands a DataFrame's rows grouped by
  a key column to Python tasks (a union's kept rows, part by part); :func:`map_frame` maps a DataFrame's partitions
  to another DataFrame (the two-table matcher's blocks).
* :func:`run_tasks` runs a stage's fan-outs (:data:`Tasks`: a count and a body per task) as one job.

The driver plans (small metadata), Spark tasks do the per-table work and write their output files straight into the
Delta table folder, and only file metadata comes back to the driver, which commits the new files and the removal of
replaced ones in one transaction carrying the stage's application transaction.  Every stage driver builds its tasks
from the same pieces (:func:`work_tasks`, :func:`rewrite_tasks`), runs them as one job (:func:`run_tasks`) and sums
what came back (:func:`collect`).
"""
from __future__ import annotations

import math
import pickle
from collections import defaultdict
from dataclasses import dataclass, field
from collections.abc import Callable, Iterable, Iterator

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from discovery.data.store import SCHEMAS, DataFile, candidate_files, drop_table_ids, write_data_file
from discovery.data.store.files import resolve
from discovery.stages import StageContext

#: Tasks per core of the application that a fan-out is cut into at most, so that every core has work and the last
#: tasks even out.
TASKS_PER_CORE = 4


def cores(spark) -> int:
    return max(int(spark.sparkContext.defaultParallelism), 1)


def task_count(items: int, n_cores: int, least: int = 1) -> int:
    """The one task rule: how many tasks ``items`` pieces of work are cut into on ``n_cores`` cores (module
    docstring); 0 for no work."""
    if items <= 0:
        return 0
    return max(1, min(math.ceil(items / max(least, 1)), max(n_cores, 1) * TASKS_PER_CORE))


def item_range(task: int, n_tasks: int, items: int) -> range:
    """The items of task ``task`` of ``n_tasks``: contiguous, in order, sizes differing by at most one."""
    return range(task * items // n_tasks, (task + 1) * items // n_tasks)


def _payloads(n_tasks: int, items: int, body: Callable[[int], Iterable[object]]):
    def run(batches):
        for batch in batches:
            for t in batch.column(0).to_pylist():
                out = [pickle.dumps(r) for i in item_range(t, n_tasks, items) for r in body(i)]
                if out:
                    yield pa.RecordBatch.from_pydict({"payload": out}, schema=_PAYLOAD)
    return run


_PAYLOAD = pa.schema([("payload", pa.binary())])


def map_items(spark, items: int, body: Callable[[int], Iterable[object]], least: int = 1,
              tasks: int | None = None) -> list:
    """Run ``body(i)`` for ``i`` in ``range(items)`` in ``tasks`` Spark tasks (default :func:`task_count`) and
    return everything the bodies yield, in item order (module docstring).  A body runs in a Python worker: what it
    needs from the driver comes in its closure or a broadcast."""
    n_tasks = task_count(items, cores(spark), least) if tasks is None else tasks
    if n_tasks == 0:
        return []
    rows = spark.range(0, n_tasks, numPartitions=n_tasks).mapInArrow(_payloads(n_tasks, items, body),
                                                                     "payload binary").collect()
    return [pickle.loads(r["payload"]) for r in rows]


def items_frame(spark, items: int, body: Callable[[int], Iterable[pa.RecordBatch]], schema: str, least: int = 1):
    """The record batches ``body(i)`` yields for every item, as a DataFrame of ``schema`` (a Spark DDL string),
    computed in :func:`task_count` tasks when the frame is used: for results too large for the driver that a Spark
    aggregation reduces first."""
    n_tasks = task_count(items, cores(spark), least)

    def run(batches):
        for batch in batches:
            for t in batch.column(0).to_pylist():
                for i in item_range(t, n_tasks, items):
                    yield from body(i)

    return spark.range(0, max(n_tasks, 1), numPartitions=max(n_tasks, 1)).mapInArrow(run, schema)


def map_groups(frame, key: str, tasks: int, body: Callable[[Iterator[pa.RecordBatch]], Iterable[object]]) -> list:
    """``frame``'s rows hashed by ``key`` into ``tasks`` Spark tasks, each task's rows handed to ``body`` as record
    batches (every row of one key in one task); returns what the bodies yield (any picklable value)."""
    def run(batches):
        for r in body(batches):
            yield pa.RecordBatch.from_pydict({"payload": [pickle.dumps(r)]}, schema=_PAYLOAD)

    rows = frame.repartition(max(tasks, 1), key).mapInArrow(run, "payload binary").collect()
    return [pickle.loads(r["payload"]) for r in rows]


def map_frame(frame, body: Callable[[Iterator[pa.RecordBatch]], Iterable[pa.RecordBatch]], schema: str,
              key: str | None = None, tasks: int | None = None):
    """``frame``'s partitions (its rows hashed by ``key`` into ``tasks`` first, when given) handed to ``body`` as
    record batches, what it yields a DataFrame of ``schema`` (a Spark DDL string): Python work whose result a Spark
    join, window or aggregation takes up (the two-table matcher's blocks, :mod:`spark_jobs.match`)."""
    parted = frame.repartition(max(tasks or 1, 1), key) if key else frame
    return parted.mapInArrow(body, schema)


#: A stage's fan-out: how many Spark tasks, and the body Spark task ``i`` runs, yielding small metadata records.
#: Every stage's per-table work, copy-on-write removal and training is one of these, so one Spark job can run several
#: side by side (:func:`run_tasks`) and one reader sums what comes back (:func:`collect`).
Tasks = tuple[int, Callable[[int], Iterable[dict]]]
#: The fan-out of no work.
NO_TASKS: Tasks = (0, lambda i: iter(()))


def run_tasks(spark, *fan_outs: Tasks) -> list[dict]:
    """Run the tasks of every fan-out in ``fan_outs`` as one Spark job (:func:`map_items`, one item a task) and
    collect the small metadata records they yield, in task order.

    One job for all of them, not one each: a job's tasks are scheduled together, so a stage's removals of replaced
    rows run beside its new work instead of before it, and the stage pays one job's start and straggler wait."""
    sizes = [n for n, _ in fan_outs]
    bodies = [task for _, task in fan_outs]

    def task(i: int) -> Iterable[dict]:
        for size, body in zip(sizes, bodies):
            if i < size:
                return body(i)
            i -= size
        raise IndexError(i)

    return map_items(spark, sum(sizes), task, tasks=sum(sizes))


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
    wanted = list(dict.fromkeys(["table_id", "ordinal", *columns]))
    uri, opened = wh.table_uri(name), {}

    def sample(f: int):
        if "fs" not in opened:  # once per task: the closure travels with each task
            opened["fs"] = resolve(uri)[0]
        t = pq.read_table(paths[f], columns=wanted, filesystem=opened["fs"])
        if rate < 1:
            second = (np.int64(f) << np.int64(32)) + np.arange(t.num_rows, dtype=np.int64) if per_row \
                else t.column("ordinal").to_numpy()
            t = t.filter(pa.array(_sample_mask(t.column("table_id").to_numpy(), second, seed, rate)))
        if t.num_rows:
            yield to_ipc(t)

    parts = [from_ipc(p) for p in map_items(spark, len(paths), sample)]
    out = pa.concat_tables(parts) if parts else SCHEMAS[name].empty_table().select(wanted)
    return out.sort_by([("table_id", "ascending"), ("ordinal", "ascending")]).select(columns)


#: Output files, of ``[spark] tables_per_task`` tables each, that one task writes at most.
MAX_FILES_PER_TASK = 4


def work_chunks(spark, ctx: StageContext, n_tables: int) -> tuple[int, int]:
    """(tables per Spark task, tables per output file) for ``n_tables`` tables of per-table work.

    A file holds ``[spark] tables_per_task`` tables, so each covers a narrow ``table_id`` range and a later
    replacement of a few tables rewrites few rows; it is also what a task holds in memory at once.  But a Spark task
    costs about 0.1 CPU seconds of scheduling and Python round trip whatever it does (100 empty tasks took 16 CPU
    seconds on 2 cores), and one task per file made that most of a stage on a small lake (63 tasks per stage, 126 in
    ``xash``, for UGEN-V1's 1,000 tables).  So a task writes up to :data:`MAX_FILES_PER_TASK` files, one after the
    other, as long as that leaves about :data:`TASKS_PER_CORE` tasks per core.

    Work of fewer tables than a file per core is shared evenly, a task (and a file) per core: 20 tables on 2 cores
    ran as tasks of 16 and 4 tables, and in the embed stage the one of 16 encoded for 1.0 s while the other core sat
    idle after 0.16 s."""
    per_file = max(ctx.config.spark.tables_per_task, 1)
    if n_tables < cores(spark) * per_file:
        per_file = max(1, math.ceil(n_tables / cores(spark)))
        return per_file, per_file
    files = min(MAX_FILES_PER_TASK, max(1, math.ceil(n_tables / (cores(spark) * TASKS_PER_CORE * per_file))))
    return per_file * files, per_file


def file_chunks(work: pa.Table, per_file: int) -> Iterable[pa.Table]:
    """``work`` (one task's tables) in consecutive pieces of ``per_file`` tables, one per output file."""
    for start in range(0, work.num_rows, per_file):
        yield work.slice(start, per_file)


def work_tasks(spark, work: pa.Table, ctx: StageContext, piece: Callable[[pa.Table], Iterable[dict]]) -> Tasks:
    """Tasks that run ``piece`` over consecutive pieces of ``work``, one piece per output file; ``piece`` yields the
    records of its rows (:func:`file_record` for each file it writes, counters as ``{"counts": {...}}``).

    Work is sorted by ``table_id`` and cut into contiguous chunks (:func:`work_chunks`), so each output file covers a
    narrow ``table_id`` range and a later replacement of a few tables rewrites few files (the file statistics prune
    the rest).  The work list itself is small metadata shipped to the tasks in a broadcast; rows stay on the
    executors and only file metadata and counters come back to the driver.
    """
    if work.num_rows == 0:
        return NO_TASKS
    work = work.sort_by("table_id")
    per_task, per_file = work_chunks(spark, ctx, work.num_rows)
    shared = spark.sparkContext.broadcast(to_ipc(work))

    def task(i: int):
        for rows in file_chunks(from_ipc(shared.value).slice(i * per_task, per_task), per_file):
            yield from piece(rows)

    return math.ceil(work.num_rows / per_task), task


def file_record(output: str, uri: str, rows: pa.Table, ctx: StageContext, stage: str) -> dict:
    """Write ``rows`` as a new data file of index table ``output`` (at ``uri``, resolved on the driver) and return
    the record :func:`collect` reads: the file's metadata travels back, never its rows."""
    return {"output": output, "file": write_data_file(uri, rows, ctx.refresh_id, stage, ctx.attempt).to_dict()}


def output_piece(fn: Callable[[pa.Table, StageContext], tuple[pa.Table, dict]], output: str, ctx: StageContext,
                 stage: str) -> Callable[[pa.Table], Iterable[dict]]:
    """The piece of :func:`work_tasks` of a stage with one output: ``fn(rows, ctx)`` gives the output rows and
    counters of the lake tables in ``rows``."""
    uri = ctx.store.table_uri(output)

    def piece(rows: pa.Table):
        out, counts = fn(rows, ctx)
        yield {"counts": counts}
        if out.num_rows:
            yield file_record(output, uri, out, ctx, stage)

    return piece


#: Fewest candidate files per copy-on-write removal task.  Rewriting one file takes 3-40 ms (a value-vectors file of
#: about 1,200 rows the most), a Spark task costs about 0.16 CPU s of scheduling and Python round trip, and the changed
#: tables of an incremental refresh are spread over the lake: 1% of 16,000 tables changed touch about 150 files of
#: every index table.  At 8 files per task that was 19 removal tasks per index table and about half of the refresh;
#: now a stage's removals run in at most :data:`TASKS_PER_CORE` tasks per core, of at least this many files.
REWRITE_FILES_PER_TASK = 32


def rewrite_tasks(spark, name: str, table_ids: np.ndarray, ctx: StageContext, stage: str) -> Tasks:
    """Tasks for the copy-on-write removal of the rows of ``table_ids`` from ``name``: the candidate files split
    evenly over at most ``TASKS_PER_CORE`` tasks per core, each of at least :data:`REWRITE_FILES_PER_TASK` files.
    Each rewritten file's record names the file it replaces (``removed``) and its replacement, if any rows remain."""
    wh = ctx.store
    paths = candidate_files(wh.files(name), table_ids)
    ids = np.asarray(table_ids, dtype=np.int64)
    table_uri = wh.table_uri(name)
    n_tasks = task_count(len(paths), cores(spark), REWRITE_FILES_PER_TASK)

    def task(t: int):
        for f in item_range(t, n_tasks, len(paths)):
            touched, repl = drop_table_ids(table_uri, paths[f], ids, ctx.refresh_id, stage, ctx.attempt)
            if touched:
                yield {"output": name, "removed": paths[f], "file": repl.to_dict() if repl else None}

    return n_tasks, task


def to_ipc(table: pa.Table) -> bytes:
    """``table`` as Arrow IPC stream bytes: how tables travel in broadcasts and task results."""
    sink = pa.BufferOutputStream()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue().to_pybytes()


def from_ipc(data: bytes) -> pa.Table:
    return pa.ipc.open_stream(data).read_all()


@dataclass
class Collected:
    """What a stage's tasks sent back, per index table: the files to add (new and rewritten), the files they
    replace, the summed counters, and the rows of the new files (a rewrite's replacement rows are not new)."""
    files: dict[str, list[DataFile]] = field(default_factory=lambda: defaultdict(list))
    removes: dict[str, list[str]] = field(default_factory=lambda: defaultdict(list))
    counts: dict[str, int] = field(default_factory=dict)
    written: int = 0


def collect(records: Iterable[dict]) -> Collected:
    """Sum the records of :func:`file_record`, :func:`rewrite_tasks` and counters; the caller reads any other keys
    its own tasks yield."""
    out = Collected()
    for rec in records:
        if rec.get("file"):
            f = DataFile(**rec["file"])
            out.files[rec["output"]].append(f)
            if "removed" not in rec:
                out.written += f.rows
        if "removed" in rec:
            out.removes[rec["output"]].append(rec["removed"])
        for k, v in rec.get("counts", {}).items():
            out.counts[k] = out.counts.get(k, 0) + v
    return out


def fan_out(spark, work: pa.Table, fn, output: str, ctx: StageContext, stage: str) -> tuple[list[DataFile], dict]:
    """Run ``fn`` over ``work`` in Spark tasks that write files of ``output``; returns the files and counters."""
    got = collect(run_tasks(spark, work_tasks(spark, work, ctx, output_piece(fn, output, ctx, stage))))
    return got.files[output], got.counts


def merge_small(ctx: StageContext, name: str, stage: str) -> None:
    """After a stage's commit: merge ``name``'s files when it is a small table fragmented into many
    (:meth:`~discovery.data.store.Warehouse.merge_small_files`), under its own once-per-refresh commit."""
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
    got = collect(run_tasks(spark, rewrite_tasks(spark, name, remove_ids, ctx, stage),
                            work_tasks(spark, work, ctx, output_piece(fn, name, ctx, stage))))
    result = wh.commit(name, got.files[name], got.removes[name], refresh_id=ctx.refresh_id, stage=stage,
                       attempt=ctx.attempt)
    if merge:
        merge_small(ctx, name, stage)
    return result.version, got.counts, got.written
