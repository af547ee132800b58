"""A query batch split into shares: each process answers its share of the queries from a snapshot it opens once.

This is what a Spark task of ``spark_jobs.query_batch`` runs; the driver plans the shares (:func:`plan_shares`),
hands every task the same :class:`BatchShare` and merges what they answer (:func:`merge_outcomes`) into the rows
and summary :func:`discovery.surfaces.batch.record_batch` commits, as the in-process
:func:`discovery.surfaces.batch.run_batch` does.

Equal answers.  A share checks each query exactly as :func:`discovery.surfaces.batch.validate_batch` does and answers it
with the same search kind (:mod:`discovery.orchestration.searches`) and :func:`~discovery.surfaces.batch.result_rows`,
all rows stamped with the driver's batch id and time.  What a process would otherwise take from its own surroundings is
fixed on the driver: the configuration the searches take their defaults from (an executor may have none),
the object-storage settings (``AWS_*``,
``PYICEBERG_*``, applied when the share is unpickled, as :class:`~discovery.stages.StageContext` does), absolute
warehouse paths, and the tables only the driver can read (a served batch's uploads, the files an unserved batch
names outside the lake), resolved and checked there and shipped with the share.  The batch then fails as in process:
no row is written, and the error is that of the first query (in batch order) that fails its checks, else of the
first whose search fails.

One open per process.  A share opens its snapshot through the process-wide index cache
(:data:`discovery.data.store.cache.INDEXES`), so a Spark Python worker that runs several tasks of a batch (workers are
reused) loads the snapshot and its union, join and n-ary indexes once.

When Spark pays.  ``[batch] spark_min_queries`` (default 500) is the smallest batch sent to Spark.  A Spark run
pays a fixed cost before its first answer: the application and its JVM, Python workers that start and import this
package, and each worker opening the snapshot's indexes.  ``benchmarks/batches.py`` (union queries on the sample
lake, k 10, a 2-core machine shared with other work) measured that cost at about 40-60 s wall there, against about
0.12 s a query in one process: ``lakescout batch --master local[2]`` had 0.48x the throughput of one process at 250
queries, 1.63x at 1,000 and 1.11x at 2,500 (the load of the machine changed between runs), with identical rows each
time.  Below a few hundred queries, one process answers first.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from datetime import datetime

import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from ..config import Config
from ..data.store import Session, Snapshot, load_snapshot
from ..data.store.cache import INDEXES
from ..data.store.snapshot import CATALOG_COLUMNS
from ..query.resolve import QueryTable
from .batch import BatchError, BatchQuery, BatchSpec, answer_query, check_query_table

@dataclass(frozen=True)
class BatchShare:
    """What every task of one batch gets: the snapshot, the queries, the batch id and time, the driver's
    configuration, the tables resolved on the driver (or the error their checks raised) and the driver's storage
    settings."""

    warehouse: str
    snapshot_id: int
    batch_id: str
    now: datetime
    queries: tuple[BatchQuery, ...]
    config: Config
    served: bool = False
    resolved: dict = field(default_factory=dict)     # query index -> QueryTable, or the BatchError message
    storage_env: dict = field(default_factory=storage.client_env)

    def __setstate__(self, state: dict) -> None:
        """Unpickled in a task: the driver's object-storage settings become the process's environment before
        anything opens the warehouse or the lake."""
        for key, value in state.items():
            object.__setattr__(self, key, value)
        os.environ.update(self.storage_env)


@dataclass(frozen=True)
class Outcome:
    """One query's answer in a share: its result rows and summary entry, or the error that stops the batch
    (``checked`` False when the query failed its checks, True when its search failed after them)."""

    index: int
    rows: tuple = ()
    entry: dict | None = None
    error: str | None = None
    checked: bool = True


def _lake_paths(snap: Snapshot, batch: BatchSpec) -> set[str]:
    """The query names of ``batch`` that are catalogued lake paths of tables not deleted (one pass over the
    catalog, however many queries)."""
    names = sorted({q.query for q in batch.queries if isinstance(q.query, str) and not q.query.isdigit()})
    if not names:
        return set()
    catalog = snap.cached("catalog", CATALOG_COLUMNS)
    hit = catalog.filter(pc.is_in(catalog["path"], value_set=pa.array(names, pa.string())))
    return {p for p, s in zip(hit.column("path").to_pylist(), hit.column("status").to_pylist()) if s != "deleted"}


def _driver_only(q: BatchQuery, served: bool, uploads: dict, lake_paths: set[str]) -> bool:
    """Whether only the driver can read ``q``'s table: an upload, or (unserved) a name that is neither a table id
    nor a catalogued lake path, i.e. a file of the machine the batch was started on."""
    if isinstance(q.query, str) and q.query in uploads:
        return True
    if served or isinstance(q.query, int) or q.query.isdigit():
        return False
    return q.query not in lake_paths


def plan_share(snap: Snapshot, batch: BatchSpec, batch_id: str, now: datetime, config: Config,
               served: bool = False, uploads: dict | None = None) -> BatchShare:
    """The :class:`BatchShare` of a batch, built on the driver."""
    uploads = dict(uploads or {})
    lake_paths = set() if served else _lake_paths(snap, batch)
    resolved: dict[int, QueryTable | str] = {}
    for q in batch.queries:
        if _driver_only(q, served, uploads, lake_paths):
            try:
                resolved[q.index] = check_query_table(snap, q, served, uploads, config)
            except BatchError as exc:
                resolved[q.index] = str(exc)
    return BatchShare(snap.warehouse.root, snap.snapshot_id, batch_id, now, batch.queries, config, served, resolved)


def opened(share: BatchShare) -> Snapshot:
    """The share's snapshot, opened once per process (the indexes it loads are cached by the same cache) in the
    task's session: the driver's warehouse and configuration."""
    return INDEXES.get(("batch-snapshot", share.warehouse, share.snapshot_id),
                       lambda: load_snapshot(Session.at(share.warehouse, share.config).warehouse, share.snapshot_id))


def answer_share(share: BatchShare, indexes: range) -> list[Outcome]:
    """Check and answer the queries ``indexes`` of ``share``."""
    snap = opened(share)
    out = []
    for i in indexes:
        q = share.queries[i]
        given = share.resolved.get(i)
        if isinstance(given, str):
            out.append(Outcome(i, error=given, checked=False))
            continue
        try:
            table = check_query_table(snap, q, share.served, {}, share.config, table=given)
        except BatchError as exc:
            out.append(Outcome(i, error=str(exc), checked=False))
            continue
        try:
            rows, entry = answer_query(snap, q, share.batch_id, share.now, share.config, share.served,
                                       table=table)
        except BatchError as exc:
            out.append(Outcome(i, error=str(exc), checked=True))
            continue
        out.append(Outcome(i, tuple(rows), entry))
    return out


def merge_outcomes(batch: BatchSpec, outcomes: list[Outcome]) -> tuple[list[dict], list[dict]]:
    """(result rows, summary entries) in batch order, or the :class:`BatchError` the in-process run would raise:
    that of the first query failing its checks (which run before any search there), else of the first failing
    search."""
    by_index = {o.index: o for o in outcomes}
    missing = [q.index for q in batch.queries if q.index not in by_index]
    if missing:
        raise RuntimeError(f"query batch: no answer came back for queries {missing[:10]}")
    ordered = [by_index[q.index] for q in batch.queries]
    for checked in (False, True):
        failed = next((o for o in ordered if o.error is not None and o.checked == checked), None)
        if failed is not None:
            raise BatchError(failed.error)
    rows = [r for o in ordered for r in o.rows]
    return rows, [o.entry for o in ordered if o.entry is not None]
