"""Refresh bookkeeping: allocating a refresh id, recording stage runs, publishing a snapshot."""
from __future__ import annotations

import time
from datetime import datetime, UTC
from collections.abc import Callable

import pyarrow as pa
import pyarrow.compute as pc

from ...data.store import INDEX_TABLES, SCHEMAS, Session, Warehouse, new_attempt_token
from ...data.store.lease import Lease, release_refresh
from ...data.store.orphans import cleanup_warehouse
from ...data.store.warehouse import json_dumps
from ...stages.context import StageReport
from ...stages.progress import mark_published


def begin_refresh(session: Session, run: str = "cli", clock: Callable[[], float] = time.time,
                  scope: str = "process") -> int:
    """Take the warehouse lease of the ``session``'s warehouse, create missing index tables, delete orphaned files
    (under the session's ``[maintenance]`` windows), and allocate a refresh id.

    The lease (:mod:`discovery.data.store.lease`) makes this the only refresh or maintenance run writing to the
    warehouse: another one running raises :class:`~discovery.data.store.LeaseHeld` naming it.  ``run`` names this one to
    others (the DAG run id, or ``cli``).  The lease of a killed run is taken over, and the takeover recorded in
    ``refresh_runs``.  ``scope``: ``process`` when this process runs the whole refresh (its death frees the lease
    at once), ``run`` when later tasks join it (a DAG run).
    Holding the lease, the refresh deletes the data files no retained version references
    (:mod:`discovery.data.store.orphans`, after their grace period).  The refresh id goes into the lease, so the later
    steps of this refresh (the DAG's stage tasks) renew it and :func:`publish_snapshot` releases it.

    Refresh ids are increasing integers (milliseconds since the epoch, bumped past the last id) so that the
    application transaction of a stage, whose version is the refresh id, only ever grows.
    """
    wh, cfg = session.warehouse, session.config.maintenance
    started = clock()
    lease = Lease.acquire(wh.root, "refresh", run, clock=clock, scope=scope)
    try:
        wh.upgrade(cfg.log_retention_days)
        cleanup_warehouse(wh, window_seconds=cfg.window_seconds, grace_seconds=cfg.grace_seconds, now=clock())
        runs = wh.read("refresh_runs", columns=["refresh_id"])
        last = pc.max(runs["refresh_id"]).as_py() if runs.num_rows else 0
        snaps = wh.read("snapshots", columns=["refresh_id"])
        last = max(last or 0, (pc.max(snaps["refresh_id"]).as_py() if snaps.num_rows else 0) or 0)
        refresh_id = max(int(clock() * 1000), last + 1)
        lease.update(refresh_id=refresh_id)
        if lease.took_over:
            record_takeover(wh, refresh_id, "this refresh", lease.took_over, started)
    except BaseException:
        lease.release()
        raise
    return refresh_id


def record_takeover(wh: Warehouse, refresh_id: int, taker: str, took_over: str, started: float) -> None:
    """A ``lease`` row in ``refresh_runs``: ``taker`` took over the lease of a killed run (``took_over`` describes
    it and why it was vacant), filed under ``refresh_id`` (the taking refresh's, or for maintenance the killed
    one's)."""
    report = StageReport("lease", message=f"{taker} took over the lease of {took_over}")
    record_stage(wh, refresh_id, report, started, new_attempt_token(), took_over=took_over)


def record_stage(wh: Warehouse, refresh_id: int, report: StageReport, started: float, attempt: str,
                 took_over: str | None = None) -> None:
    """Append the run record of a stage (a failed attempt is recorded too, and a later success alongside it)."""
    finished = time.time()
    row = {
        "refresh_id": refresh_id, "stage": report.stage, "status": report.status,
        "started_at": datetime.fromtimestamp(started, UTC),
        "finished_at": datetime.fromtimestamp(finished, UTC), "seconds": finished - started,
        "tables_added": report.tables_added, "tables_changed": report.tables_changed,
        "tables_deleted": report.tables_deleted, "tables_failed": report.tables_failed,
        "tables_processed": report.tables_processed, "rows_written": report.rows_written,
        "message": report.message, "took_over": took_over,
    }
    wh.append_rows("refresh_runs", pa.Table.from_pylist([row], schema=SCHEMAS["refresh_runs"]),
                   refresh_id=refresh_id, stage="run_" + report.stage, attempt=attempt,
                   once=report.status == "ok" and took_over is None)


def stage_done(wh: Warehouse, refresh_id: int, stage: str) -> bool:
    """Whether ``stage`` of refresh ``refresh_id`` is recorded as done: by its own task's application, or by the scan
    task's when the plan was small (``spark_jobs.common.rest_in_this_application``)."""
    runs = wh.read("refresh_runs", columns=["refresh_id", "stage", "status"])
    done = pc.and_(pc.and_(pc.equal(runs["refresh_id"], refresh_id), pc.equal(runs["stage"], stage)),
                   pc.equal(runs["status"], "ok"))
    return bool(pc.any(done).as_py())


def query_array_folders() -> tuple:
    """Every index's query-array folder (:mod:`discovery.data.store.arrays`): publishing a snapshot writes them, and
    maintenance keeps those of the retained snapshots.  Imported when used, so a process that only reads refresh
    runs loads no index code (nor numba)."""
    from ...indexes.numjoin.arrays import NUMERIC_ARRAYS
    from ...indexes.union.arrays import UNION_ARRAYS

    return UNION_ARRAYS, NUMERIC_ARRAYS


def failed_tables(wh: Warehouse, refresh_id: int, limit: int = 20) -> dict:
    """The lake tables ``refresh_id`` read and could not index (catalog rows it wrote with status ``error`` or
    ``stale``): their count and the first ``limit`` paths."""
    catalog = wh.read("catalog", columns=["path", "status", "refresh_id"])
    bad = catalog.filter(pc.and_(pc.is_in(catalog["status"], pa.array(["error", "stale"])),
                                 pc.equal(catalog["refresh_id"], refresh_id)))
    return {"count": bad.num_rows, "paths": bad.sort_by("path").column("path").slice(0, limit).to_pylist()}


def publish_snapshot(wh: Warehouse, refresh_id: int, lake: str) -> dict:
    """Publish the current version of every index table as a snapshot (once per refresh), release the refresh's
    lease, and return the snapshot."""
    started = time.time()
    attempt = new_attempt_token()
    existing = wh.read("snapshots")
    mine = existing.filter(pc.equal(existing["refresh_id"], refresh_id))
    if mine.num_rows:
        row = mine.to_pylist()[0]
        release_refresh(wh.root, refresh_id)
        return {"snapshot_id": row["snapshot_id"], "refresh_id": refresh_id, "published": False}
    versions = {name: wh.version(name) for name in INDEX_TABLES}
    catalog = wh.read("catalog", versions["catalog"], columns=["status"])
    counts = {f"tables_{s}": int(pc.sum(pc.equal(catalog["status"], s)).as_py() or 0)
              for s in ("ok", "stale", "error", "deleted")}
    for name in INDEX_TABLES:
        if name != "catalog":
            counts[f"rows_{name}"] = wh.count_rows(name, versions[name])
    models = wh.read("models", versions["models"], columns=["name", "version", "created_at"])
    latest_models: dict[str, str] = {}
    for m in sorted(models.to_pylist(), key=lambda r: r["created_at"]):
        latest_models[m["name"]] = m["version"]
    for folder in query_array_folders():  # before the snapshot row, so a published snapshot finds its arrays
        if folder.applies(counts):
            folder.write(wh, versions)
    last_id = pc.max(existing["snapshot_id"]).as_py() if existing.num_rows else 0
    snapshot_id = (last_id or 0) + 1
    row = {"snapshot_id": snapshot_id, "created_at": datetime.now(UTC), "refresh_id": refresh_id,
           "lake": lake,
           "versions": json_dumps(versions), "models": json_dumps(latest_models), "counts": json_dumps(counts)}
    wh.append_rows("snapshots", pa.Table.from_pylist([row], schema=SCHEMAS["snapshots"]), refresh_id=refresh_id,
                   stage="publish", attempt=attempt)
    report = StageReport("publish", rows_written=1, message=f"snapshot {snapshot_id}")
    record_stage(wh, refresh_id, report, started, attempt)
    mark_published(wh.root, refresh_id, started)
    release_refresh(wh.root, refresh_id)
    return {"snapshot_id": snapshot_id, "refresh_id": refresh_id, "published": True, "versions": versions,
            "counts": counts, "models": latest_models}
