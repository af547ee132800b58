"""Deciding what a refresh has to do: vectorised diffs of the lake listing and of stage outputs against the catalog."""
from __future__ import annotations

from dataclasses import dataclass

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..lake import LakeFile

#: Columns of a scan work item (one per lake table the scan has to look at).
SCAN_WORK = pa.schema([
    ("table_id", pa.int64()), ("path", pa.string()), ("format", pa.string()), ("bytes", pa.int64()),
    ("mtime_ns", pa.int64()), ("old_hash", pa.string()), ("old_status", pa.string()), ("action", pa.string()),
    ("old_row", pa.string()),   # JSON of the catalog row before this refresh (kept when the content is unchanged)
])


@dataclass
class ScanPlan:
    work: pa.Table          # SCAN_WORK rows: action = new | check | deleted
    unchanged: int


def plan_scan(listing: list[LakeFile], catalog: pa.Table, full: bool) -> ScanPlan:
    """Compare the listing with the catalog by size and mtime.

    ``new``: a path the catalog does not know (or knows as deleted); ``check``: a known path whose size or mtime
    changed (the scan task hashes it and parses only when the content changed) and every path on a full rebuild
    (which also re-reads files that failed before, so a fixed reader picks them up); ``deleted``: catalogued, no longer listed.
    Table ids are stable per path: a new path gets the next free id, a path seen before gets its old id back.
    """
    known = {p: i for i, p in enumerate(catalog.column("path").to_pylist())} if catalog.num_rows else {}
    cat = catalog.to_pydict() if catalog.num_rows else {k: [] for k in catalog.column_names}
    next_id = (max(cat["table_id"]) + 1) if cat["table_id"] else 1
    rows = {k: [] for k in SCAN_WORK.names}
    unchanged = 0
    listed = set()

    def add(table_id, f: LakeFile, old_hash, old_status, action, i=None):
        old = None
        if i is not None:
            old = json.dumps({k: cat[k][i] for k in ("rows", "cols", "error", "warnings", "encoding", "delimiter",
                                                     "refresh_id")})
        for k, v in zip(SCAN_WORK.names, (table_id, f.path, f.format, f.size, f.mtime_ns, old_hash, old_status,
                                          action, old)):
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
        elif full or cat["bytes"][i] != f.size or cat["mtime_ns"][i] != f.mtime_ns:
            add(tid, f, cat["content_hash"][i], status, "check", i)
        else:
            unchanged += 1
    for i, path in enumerate(cat["path"]):
        if path not in listed and cat["status"][i] != "deleted":
            gone = LakeFile(path, cat["bytes"][i] or 0, cat["mtime_ns"][i] or 0, cat["format"][i])
            add(cat["table_id"][i], gone, cat["content_hash"][i], cat["status"][i], "deleted", i)
    return ScanPlan(pa.table(rows, schema=SCAN_WORK), unchanged)


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
    a full rebuild); output rows are removed for rebuilt tables and for tables no longer ok.
    """
    ok = catalog.filter(pc.equal(catalog["status"], "ok"))
    ok_ids = ok.column("table_id").to_numpy()
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
    gone = np.setdiff1d(done_ids, ok_ids)
    remove = np.union1d(np.intersect1d(work_ids, done_ids), gone).astype(np.int64)
    return DerivedPlan(work, remove, added, changed, int(len(gone)))
