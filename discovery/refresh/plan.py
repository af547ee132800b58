"""Deciding what a refresh has to do: vectorised diffs of the lake listing and of stage outputs against the catalog."""
from __future__ import annotations

from dataclasses import dataclass

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..lake import LakeTable
from ..lake.listing import file_fingerprint

#: Columns of a scan work item (one per lake table the scan has to look at).
SCAN_WORK = pa.schema([
    ("table_id", pa.int64()), ("path", pa.string()), ("format", pa.string()), ("bytes", pa.int64()),
    ("mtime_ns", pa.int64()), ("old_hash", pa.string()), ("old_status", pa.string()), ("action", pa.string()),
    ("old_row", pa.string()),   # JSON of the catalog row before this refresh (kept when the content is unchanged)
    ("fingerprint", pa.string()),
])

#: Catalog fields an unchanged table keeps from its last scan (and a stale one keeps from its last good read).
KEPT_FIELDS = ("rows", "cols", "error", "warnings", "encoding", "delimiter", "refresh_id", "version", "bytes",
               "mtime_ns", "fingerprint")


@dataclass
class ScanPlan:
    work: pa.Table          # SCAN_WORK rows: action = new | check | deleted
    unchanged: int


def _fingerprints(cat: dict) -> list[str]:
    """Catalog fingerprints; a row written before fingerprints were kept has its file's size and mtime."""
    fps = cat.get("fingerprint") or [None] * len(cat["path"])
    return [fp if fp is not None else file_fingerprint(b or 0, m or 0)
            for fp, b, m in zip(fps, cat["bytes"], cat["mtime_ns"])]


def plan_scan(listing: list[LakeTable], catalog: pa.Table, full: bool) -> ScanPlan:
    """Compare the listing with the catalog by fingerprint (a file's size and mtime, a Delta table's log version, an
    Iceberg table's metadata file, a folder's data files).

    ``new``: a path the catalog does not know (or knows as deleted); ``check``: a known path whose fingerprint
    changed (the scan task reads its content version and parses only when that changed), a stale table (retried
    every refresh) and every path on a full rebuild (which also re-reads tables that failed before, so a fixed
    reader picks them up); ``deleted``: catalogued, no longer listed.
    Table ids are stable per path: a new path gets the next free id, a path seen before gets its old id back.
    """
    known = {p: i for i, p in enumerate(catalog.column("path").to_pylist())} if catalog.num_rows else {}
    cat = catalog.to_pydict() if catalog.num_rows else {k: [] for k in catalog.column_names}
    next_id = (max(cat["table_id"]) + 1) if cat["table_id"] else 1
    fingerprints = _fingerprints(cat) if cat["path"] else []
    rows = {k: [] for k in SCAN_WORK.names}
    unchanged = 0
    listed = set()

    def add(table_id, f: LakeTable, old_hash, old_status, action, i=None):
        old = None
        if i is not None:
            old = json.dumps({k: (fingerprints[i] if k == "fingerprint" else cat.get(k, [None] * (i + 1))[i])
                              for k in KEPT_FIELDS})
        for k, v in zip(SCAN_WORK.names, (table_id, f.path, f.format, f.size, f.mtime_ns, old_hash, old_status,
                                          action, old, f.fingerprint)):
            rows[k].append(v)

    for f in listing:
        listed.add(f.path)
        i = known.get(f.path)
        if i is None:
            add(next_id, f, None, None, "new")
            next_id += 1
            continue
        status, tid = cat["status"][i], cat["table_id"][i]
        if status == "deleted":
            add(tid, f, None, status, "new")
        elif full or status == "stale" or fingerprints[i] != f.fingerprint or cat["format"][i] != f.format:
            add(tid, f, cat["content_hash"][i], status, "check", i)
        else:
            unchanged += 1
    for i, path in enumerate(cat["path"]):
        if path not in listed and cat["status"][i] != "deleted":
            gone = LakeTable(path, cat["bytes"][i] or 0, cat["mtime_ns"][i] or 0, cat["format"][i], fingerprints[i])
            add(cat["table_id"][i], gone, cat["content_hash"][i], cat["status"][i], "deleted", i)
    return ScanPlan(pa.table(rows, schema=SCAN_WORK), unchanged)


#: Catalog statuses whose index rows stay: ok tables, and stale ones (indexed before, unreadable now).
INDEXED = ("ok", "stale")


def indexed_ids(catalog: pa.Table) -> np.ndarray:
    """Ids of the tables whose index rows stay (status ok or stale)."""
    return pc.filter(catalog["table_id"], pc.is_in(catalog["status"], pa.array(INDEXED))).to_numpy()


@dataclass
class DerivedPlan:
    work: pa.Table            # catalog rows (status ok) whose outputs must be (re)built
    remove_ids: np.ndarray    # table ids whose current output rows must go
    added: int
    changed: int
    deleted: int


def plan_derived(catalog: pa.Table, done: pa.Table, full: bool) -> DerivedPlan:
    """Work of a stage that derives rows per lake table.

    ``catalog``: the catalog (table_id, content_hash, status, ...); ``done``: distinct (table_id, content_hash) of
    the stage's output.  A table is (re)built when it is ok in the catalog and its hash is not in the output (or on
    a full rebuild); output rows are removed for rebuilt tables and for tables neither ok nor stale.  A stale table
    (indexed, unreadable now) keeps its rows and is never rebuilt: its content hash is the one they were built from.
    """
    ok = catalog.filter(pc.equal(catalog["status"], "ok"))
    ok_ids = ok.column("table_id").to_numpy()
    kept_ids = indexed_ids(catalog)
    done_ids = done.column("table_id").to_numpy() if done.num_rows else np.empty(0, np.int64)
    if full:
        work = ok
        added = int(np.sum(~np.isin(ok_ids, done_ids)))
        changed = len(ok_ids) - added
    else:
        ok_keys = pc.binary_join_element_wise(pc.cast(ok["table_id"], pa.string()), ok["content_hash"], ":")
        done_keys = (pc.binary_join_element_wise(pc.cast(done["table_id"], pa.string()), done["content_hash"], ":")
                     if done.num_rows else pa.array([], pa.string()))
        pending = pc.invert(pc.is_in(ok_keys, value_set=done_keys))
        work = ok.filter(pending)
        work_ids = work.column("table_id").to_numpy()
        added = int(np.sum(~np.isin(work_ids, done_ids)))
        changed = len(work_ids) - added
    work_ids = work.column("table_id").to_numpy()
    gone = np.setdiff1d(done_ids, kept_ids)
    remove = np.union1d(np.intersect1d(work_ids, done_ids), gone).astype(np.int64)
    return DerivedPlan(work, remove, added, changed, int(len(gone)))
