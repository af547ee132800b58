"""Warehouse maintenance: snapshot retention, compaction and vacuum that never break a retained snapshot.

Order matters and is fixed by :func:`run_maintenance`:

1. **Snapshot retention.**  The last ``keep_snapshots`` snapshots are kept, plus every snapshot a standing query
   still compares with (:func:`discovery.surfaces.standing.pinned_snapshots`), as long as they are younger than
   ``snapshot_retention_days`` (the latest always); the rows of the others leave ``snapshots``.  The age bound is
   what lets the Delta log retention (``log_retention_days`` >= it) keep every retained snapshot loadable.
2. **Compaction.**  Tables whose rows are replaced per lake table (they carry ``table_id``) are rewritten with
   delta-rs' Z-order on ``table_id`` alone, which is a sort by ``table_id``: every output file then covers a narrow,
   disjoint ``table_id`` range, so the copy-on-write replacement of a refresh (which picks files by their min/max
   ``table_id``) keeps touching few files.  A plain bin-packing ``compact()`` would merge unrelated ranges into wide
   files that every later replacement has to rewrite.  Such a table's files are sized to hold about as many lake
   tables as a refresh writes per file (``[spark] tables_per_task``), never more than ``target_file_bytes``
   (:func:`compaction_target`): in files of the full target a refresh that changes 1% of the lake's tables touches
   nearly every file and rewrites nearly the whole table.  Such a table is compacted once ``min_small_files`` of its
   files are small (under half its target) or overlap another file's ``table_id`` range (the files an incremental
   refresh writes for its scattered changed tables do).  Other tables are bin-packed with
   ``DeltaTable.optimize.compact()`` once ``min_small_files`` files are under half ``target_file_bytes``; only those
   small files are merged (:func:`packing_target`), so a large file, such as an encoder's payload in ``models``, is
   never rewritten and never kept twice for the retained snapshots.
3. **Vacuum.**  For a table pinned by snapshots, the oldest retained snapshot pins version ``v_min``; every version
   from ``v_min`` to the current one is passed to delta-rs as ``keep_versions``, so only files removed at or before
   ``v_min`` (needed by no retained snapshot) are deleted, and time travel to any retained snapshot still works.
   Bookkeeping tables keep their current version.  Vacuum runs in its non-``full`` mode: it deletes only files the
   log tombstoned, never untracked files a running writer has not committed yet.  Tombstones leave the table state
   at the first checkpoint after their commit (:func:`discovery.data.store.warehouse.table_properties` says why that is
   safe), so compaction and vacuum write no checkpoint of their own and vacuum reads compaction's removes from the
   JSON log; a file whose tombstone a checkpoint dropped before any vacuum (one a refresh replaced) is deleted by
   the orphan cleanup instead, once no retained version references it.
4. **Orphans.**  Data files no retained version references, older than the grace period, are deleted
   (:mod:`discovery.data.store.orphans`).  Then every table gets a checkpoint at its new version: compaction's commit
   lists a remove for each file it merged (one per query batch since the last run), which an open would otherwise
   replay from the JSON log until the next interval checkpoint: after 1,000 batches, a cold read of
   ``query_results`` took 111 ms without that checkpoint and 71 ms with it (``benchmarks/commits.py``).  The
   checkpoint lists the live files only, none of the removes.
5. **Models, model files and query arrays.**  The ``models`` rows no retained snapshot uses and no next refresh
   builds on are deleted first, before compaction (:func:`prune_models`); the plain-file copies of encoder versions
   and the query-array folders of the union and the numerical join (:mod:`discovery.data.store.arrays`) that no retained
   snapshot uses are deleted last, locally and on object storage (:func:`prune_model_files`,
   :func:`~discovery.data.store.arrays.prune_folders`).

Maintenance and a refresh must not interleave (compaction removes files a refresh may be about to replace), so
maintenance takes the warehouse lease a refresh takes (:mod:`discovery.data.store.lease`) and skips while another run
holds it.
"""
from __future__ import annotations

import contextlib
import json
import os
import time
from dataclasses import dataclass
from collections.abc import Callable, Set

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from deltalake.transaction import CommitProperties, PostCommitHookProperties

from .. import storage
from ..config import MaintenanceConfig, SparkConfig
from ..data.store import (INDEX_TABLES, SCHEMAS, Lease, LeaseHeld, Warehouse, cleanup_warehouse, list_snapshots,
                          new_attempt_token)
from ..data.store.arrays import prune_folders
from ..data.store.rewrite import drop_keys
from ..orchestration.refresh.runs import query_array_folders, record_takeover
from ..transforms.encoders.stored import MODEL_FILES, SET_MODEL, payload
from .standing import pinned_snapshots


@dataclass(frozen=True)
class Retention:
    kept: list[int]
    removed: list[int]
    pinned: list[int]


def retain_snapshots(wh: Warehouse, keep_last: int, pinned: Set[int] = frozenset(),
                     max_age_seconds: float | None = None, now: float | None = None) -> Retention:
    """Drop the ``snapshots`` rows of every snapshot but the last ``keep_last`` and the ``pinned`` ones, and of those
    older than ``max_age_seconds``; the latest snapshot is always kept."""
    if keep_last < 1:
        raise ValueError("keep_snapshots must be at least 1 (the latest snapshot always answers queries)")
    snaps = sorted(list_snapshots(wh), key=lambda s: s.snapshot_id)
    ids = [s.snapshot_id for s in snaps]
    keep = set(ids[-keep_last:]) | (set(ids) & set(pinned))
    if max_age_seconds is not None:
        horizon = (time.time() if now is None else now) - max_age_seconds
        keep = {s.snapshot_id for s in snaps if s.snapshot_id in keep and s.created_at.timestamp() >= horizon}
    keep |= set(ids[-1:])
    removed = [i for i in ids if i not in keep]
    if removed:
        table = wh.read("snapshots")
        kept_rows = table.filter(pc.is_in(table["snapshot_id"], value_set=pa.array(sorted(keep), pa.int64())))
        current = wh.files("snapshots").column("path").to_pylist()
        refresh_id = max(kept_rows.column("refresh_id").to_pylist())
        wh.append_rows("snapshots", kept_rows, refresh_id=refresh_id, stage="maintenance",
                       attempt=new_attempt_token(), replace_paths=current, once=False)
    return Retention(sorted(keep), removed, sorted(set(ids) & set(pinned) & keep))


#: Compaction and vacuum write no interval checkpoint: tombstones leave the table state at the first checkpoint after
#: their commit (:func:`discovery.data.store.warehouse.table_properties`), and vacuum finds the files to delete by them,
#: so the checkpoint waits for the end of the run.
NO_CHECKPOINT = PostCommitHookProperties(create_checkpoint=False)

#: Smallest compaction target of a per-lake-table index table: below it, files are so cheap to rewrite that more of
#: them would only cost file opens.
MIN_TARGET_BYTES = 256 << 10


def compaction_target(files: pa.Table, name: str, cap: int, tables_per_file: int, lake_tables: int,
                      floor: int = MIN_TARGET_BYTES) -> int:
    """Target size of a compacted file of ``name``: the bytes of about ``tables_per_file`` lake tables where the table
    is replaced per lake table (its mean bytes per lake table times ``tables_per_file``), within [``floor``, ``cap``];
    ``cap`` for the others."""
    if "table_id" not in SCHEMAS[name].names or lake_tables <= 0 or files.num_rows == 0:
        return cap
    total = int(pc.sum(files["size_bytes"]).as_py() or 0)
    return int(min(cap, max(floor, total * tables_per_file / lake_tables)))


def fragmented_files(files: pa.Table, target_bytes: int) -> int:
    """Files under half ``target_bytes``, plus files whose ``table_id`` range overlaps another file's by more than a
    shared end (two neighbours of a sorted table may split one lake table's rows between them)."""
    if files.num_rows == 0:
        return 0
    small = np.asarray(files["size_bytes"]) < target_bytes // 2
    if "min.table_id" in files.column_names:
        lo = np.asarray(files["min.table_id"].fill_null(np.iinfo(np.int64).min), dtype=np.int64)
        hi = np.asarray(files["max.table_id"].fill_null(np.iinfo(np.int64).max), dtype=np.int64)
        order = np.lexsort((hi, lo))
        lo, hi, small = lo[order], hi[order], small[order]
        reach = np.maximum.accumulate(hi)              # the furthest an earlier file (or this one) reaches
        ahead = np.minimum.accumulate(lo[::-1])[::-1]  # the earliest start of this file or a later one
        overlap = np.zeros(len(lo), dtype=bool)
        overlap[1:] = lo[1:] < reach[:-1]
        overlap[:-1] |= hi[:-1] > ahead[1:]
        small |= overlap
    return int(small.sum())


def packing_target(files: pa.Table, target_bytes: int) -> int:
    """The ``target_size`` to hand delta-rs' bin-packing ``compact()`` so that it merges the small files (under half
    ``target_bytes``) and rewrites no other: one byte below the smallest file that is not small, at most
    ``target_bytes``.

    ``compact()`` rewrites every file under its ``target_size``, large ones too.  In ``models`` a refresh appends a
    few rows of a few KB (centroids, pivots, XASH), so ``min_small_files`` of them gather within days, and with the
    full target each compaction rewrote the join encoder's payload (93 MB in the soak, about 100 MB in a deployment)
    together with them.  The retained snapshots pin the version before the compaction, so both copies stayed until
    the last of them was dropped: 96 of the 97 MB that the soak's warehouse held above a fresh build's (1.48x),
    whenever ``models`` had gathered enough small files (``benchmarks/soak.py``).

    A payload under half the target is small by this measure and is still merged with the rows (the soak's 2.7 MB
    table encoder, kept twice at every maintenance: 1.3% of its warehouse).  ``compact()`` takes one size as both
    the cut-off of the files it rewrites and the size of the files it writes, so sparing such a payload too would
    take a merge of chosen files of Lakescout's own."""
    sizes = np.asarray(files["size_bytes"], dtype=np.int64)
    large = sizes[sizes >= target_bytes // 2]
    return int(min(target_bytes, large.min() - 1)) if len(large) else int(target_bytes)


def compact_table(wh: Warehouse, name: str, cap_bytes: int, min_small_files: int, tables_per_file: int = 16,
                  lake_tables: int = 0, floor_bytes: int = MIN_TARGET_BYTES) -> dict:
    """Compact ``name`` when it is fragmented; sorted by ``table_id`` where the table has one (see module doc)."""
    before = wh.files(name)
    target = compaction_target(before, name, cap_bytes, tables_per_file, lake_tables, floor_bytes)
    count = fragmented_files(before, target)
    out = {"table": name, "files_before": before.num_rows, "small_files": count, "target_bytes": target,
           "action": "none"}
    if count < min_small_files:
        out["files_after"] = before.num_rows
        return out
    dt = wh.table(name)
    props = CommitProperties(custom_metadata={"lakescout.stage": "maintenance"})
    if "table_id" in SCHEMAS[name].names:
        metrics = dt.optimize.z_order(["table_id"], target_size=target, max_concurrent_tasks=2,
                                      commit_properties=props, post_commithook_properties=NO_CHECKPOINT)
        out["action"] = "zorder(table_id)"
    else:
        metrics = dt.optimize.compact(target_size=packing_target(before, target), max_concurrent_tasks=2,
                                      commit_properties=props, post_commithook_properties=NO_CHECKPOINT)
        out["action"] = "compact"
    out["files_added"], out["files_removed"] = metrics.get("numFilesAdded"), metrics.get("numFilesRemoved")
    out["files_after"] = wh.files(name).num_rows
    return out


def keep_versions(wh: Warehouse, name: str, retained: list) -> list[int]:
    """Versions of ``name`` whose files vacuum must keep: from the oldest retained snapshot's version to now."""
    current = wh.version(name)
    pins = [s.versions[name] for s in retained if name in s.versions]
    oldest = min(pins) if pins else current
    return list(range(min(oldest, current), current + 1))


def vacuum_table(wh: Warehouse, name: str, versions: list[int]) -> list[str]:
    """Delete the tombstoned files of ``name`` that none of ``versions`` references."""
    return wh.table(name).vacuum(retention_hours=0, dry_run=False, enforce_retention_duration=False,
                                 keep_versions=versions, post_commithook_properties=NO_CHECKPOINT,
                                 commit_properties=CommitProperties(custom_metadata={"lakescout.stage": "maintenance"}))


def model_versions_in_use(retained: list) -> set[str]:
    """Encoder versions the retained snapshots encode with: the column, table and join encoders their
    ``embed.encoders`` model names."""
    used: set[str] = set()
    for snap in retained:
        version = snap.models.get(SET_MODEL)
        if version is None:
            continue
        _, params = payload(snap.warehouse, SET_MODEL, version, snap.version("models"))
        used |= encoder_versions(params)
    return used


def encoder_versions(params: dict) -> set[str]:
    """The column, table and join encoder versions an encoder set's params name."""
    return {v for v in (params.get("column"), params.get("table"), params.get("join")) if v}


def prune_models(wh: Warehouse, retained: list) -> list[str]:
    """Delete the ``models`` rows that no retained snapshot uses and no later refresh builds on; returns them as
    ``name/version``.

    A row is kept when a retained snapshot pins it (its ``models``), when it is an encoder a retained snapshot's
    encoder set names, or when it is the newest row of its name (what the next refresh reuses or compares with), with
    the encoders the newest encoder set names.  Every other row only ever grows the table: a refresh adds a few KB
    of centroids, pivots and XASH parameters, and a retrained join encoder about 100 MB, which the latest version
    would otherwise hold for ever (the 200-cycle soak's warehouse at 1.53x a fresh build's, ``benchmarks/soak.py``).

    The delete is one commit through the store's write path (a file that loses some rows is rewritten with the
    others, :func:`~discovery.data.store.rewrite.drop_keys`): the retained snapshots pin the versions before it, so
    vacuum keeps the files until the last of them is dropped, and time travel to them still reads every row.  A
    payload sits in a file of its own (:func:`packing_target`), so its delete only removes a file, unread.  (delta-rs'
    own ``delete`` rewrites a file's strings as ``string_view``, which a filtered read of ``models`` then fails
    on.)"""
    rows = wh.read("models", columns=["name", "version", "created_at", "params"]).to_pylist()
    latest: dict[str, dict] = {}
    for row in sorted(rows, key=lambda r: r["created_at"]):
        latest[row["name"]] = row
    keep = {(name, row["version"]) for name, row in latest.items()}
    keep |= {pair for snap in retained for pair in snap.models.items()}
    encoders = model_versions_in_use(retained)
    if SET_MODEL in latest:
        encoders |= encoder_versions(json.loads(latest[SET_MODEL]["params"] or "{}"))
    drop = sorted({(r["name"], r["version"]) for r in rows} - keep)
    drop = [(name, version) for name, version in drop if version not in encoders]
    if drop:
        attempt, refresh_id = new_attempt_token(), max((s.refresh_id for s in retained), default=0)
        adds, removes = [], []
        for path in wh.files("models").column("path").to_pylist():
            touched, replacement = drop_keys(wh.table_uri("models"), path, ["name", "version"], set(drop),
                                             refresh_id, "maintenance", attempt)
            if touched:
                removes.append(path)
                adds += [replacement] if replacement is not None else []
        wh.commit("models", adds, removes, refresh_id=refresh_id, stage="maintenance", attempt=attempt, once=False)
    return [f"{name}/{version}" for name, version in drop]


def prune_model_files(wh: Warehouse, retained: list) -> list[str]:
    """Delete the plain-file copies of encoder versions (``<warehouse>/model_files``) that no retained snapshot uses.

    The files are a cache of the ``models`` table (:func:`discovery.transforms.encoders.stored.mapped_payload`), about
    100 MB per join-encoder version, so a lake whose join encoder is retrained every week would otherwise grow by that
    much every week.  Deleting one is always safe: a process that maps it keeps its pages until it unmaps them, and
    a query on a snapshot no longer retained writes the file again from the table.  Temporary files (a writer's
    ``.<version>.*``, renamed into place when complete) are left alone.
    """
    root = storage.on_disk(wh.root)
    folder = os.path.join(root, MODEL_FILES) if root else ""
    if not root or not os.path.isdir(folder):
        return []
    keep = model_versions_in_use(retained)
    removed = []
    for name in sorted(os.listdir(folder)):
        if name.startswith(".") or not name.endswith(".bin") or name[:-len(".bin")] in keep:
            continue
        with contextlib.suppress(FileNotFoundError):  # another maintenance run took it first
            os.remove(os.path.join(folder, name))
            removed.append(name)
    return removed


def run_maintenance(wh: Warehouse, config: MaintenanceConfig | None = None,
                    tables_per_file: int = SparkConfig.tables_per_task, run: str = "cli",
                    clock: Callable[[], float] = time.time) -> dict:
    """Snapshot retention, then compaction, vacuum and orphan cleanup of every table, holding the warehouse lease;
    returns a report, or why it skipped (another run holds the lease).  ``tables_per_file``: lake tables per
    compacted file of a per-table index table (the refresh's ``[spark] tables_per_task``); ``run`` names this run
    to others (a DAG run id, or ``cli``)."""
    cfg = config or MaintenanceConfig()
    wh.require()
    started = clock()
    try:
        lease = Lease.acquire(wh.root, "maintenance", run, clock=clock)
    except LeaseHeld as exc:
        return {"status": "skipped", "reason": str(exc)}
    try:
        with lease.kept_alive():
            report = _maintain(wh, cfg, tables_per_file, clock())
            if lease.took_over:
                record_takeover(wh, (lease.previous.refresh_id if lease.previous else None) or 0,
                                "maintenance", lease.took_over, started)
                report["took_over"] = lease.took_over
    finally:
        lease.release()
    report["seconds"] = round(clock() - started, 3)
    return report


def _maintain(wh: Warehouse, cfg: MaintenanceConfig, tables_per_file: int, now: float) -> dict:
    wh.upgrade(cfg.log_retention_days)
    retention = retain_snapshots(wh, cfg.keep_snapshots, pinned_snapshots(wh), cfg.window_seconds, now)
    retained = list_snapshots(wh)
    models = prune_models(wh, retained)
    tables = []
    lake_tables = wh.count_rows("catalog")
    for name in SCHEMAS:
        entry = compact_table(wh, name, cfg.target_file_bytes, cfg.min_small_files, tables_per_file, lake_tables)
        versions = keep_versions(wh, name, retained if name in INDEX_TABLES else [])
        entry["vacuumed_files"] = len(vacuum_table(wh, name, versions))
        entry["kept_versions_from"] = versions[0]
        tables.append(entry)
    orphans = cleanup_warehouse(wh, window_seconds=cfg.window_seconds, grace_seconds=cfg.grace_seconds, now=now)
    for entry in tables:
        entry["orphans_removed"] = len(orphans[entry["table"]])
        wh.table(entry["table"]).create_checkpoint()
    model_files = prune_model_files(wh, retained)
    arrays = prune_folders(wh, {name for snap in retained for folder in query_array_folders()
                                if (name := folder.name(snap.versions))})
    return {"status": "ok", "snapshots_kept": retention.kept, "snapshots_removed": retention.removed,
            "snapshots_pinned": retention.pinned, "tables": tables, "model_rows_removed": models,
            "model_files_removed": model_files,
            "query_arrays_removed": arrays}
