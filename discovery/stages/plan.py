"""Deciding what a refresh has to do: vectorised diffs of the lake listing and of stage outputs against the catalog."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..data.lake import Listing
from ..data.store import SCHEMAS

#: Catalog fields an unchanged table keeps from its last scan (and a stale one keeps from its last good read).
KEPT_FIELDS = ("rows", "cols", "error", "warnings", "encoding", "delimiter", "refresh_id", "version", "bytes",
               "mtime_ns", "fingerprint")
#: The catalog row before this refresh, as far as a work item keeps it: a struct column, so planning a full
#: rebuild builds no Python object per table.
OLD_ROW = pa.struct([SCHEMAS["catalog"].field(k) for k in KEPT_FIELDS])

#: Columns of a scan work item (one per lake table the scan has to look at).
SCAN_WORK = pa.schema([
    ("table_id", pa.int64()), ("path", pa.string()), ("format", pa.string()), ("bytes", pa.int64()),
    ("mtime_ns", pa.int64()), ("old_hash", pa.string()), ("old_status", pa.string()), ("action", pa.string()),
    ("old_row", OLD_ROW),   # null for a table the catalog does not know
    ("fingerprint", pa.string()),
])


@dataclass
class ScanPlan:
    work: pa.Table          # SCAN_WORK rows: action = new | check | deleted
    unchanged: int


def _fingerprints(catalog: pa.Table) -> pa.Array:
    """Catalog fingerprints; a row written before fingerprints were kept has its file's size and mtime."""
    sized = pc.binary_join_element_wise(pc.cast(pc.fill_null(catalog["bytes"], 0), pa.string()),
                                        pc.cast(pc.fill_null(catalog["mtime_ns"], 0), pa.string()), ":")
    if "fingerprint" not in catalog.column_names:
        return sized.combine_chunks() if isinstance(sized, pa.ChunkedArray) else sized
    out = pc.coalesce(catalog["fingerprint"], sized)
    return out.combine_chunks() if isinstance(out, pa.ChunkedArray) else out


def _old_rows(catalog: pa.Table, fingerprints: pa.Array, rows: np.ndarray, kept: np.ndarray | None = None
              ) -> pa.StructArray:
    """The :data:`KEPT_FIELDS` of catalog ``rows``, null where ``kept`` is False."""
    at = pa.array(rows, pa.int64())
    fields = []
    for f in OLD_ROW:
        if not catalog.num_rows or (f.name not in catalog.column_names and f.name != "fingerprint"):
            col = pa.nulls(len(rows), f.type)
        else:
            col = (fingerprints if f.name == "fingerprint" else catalog[f.name]).take(at).cast(f.type)
        fields.append(col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col)
    mask = None if kept is None else pa.array(~np.asarray(kept, dtype=bool))
    return pa.StructArray.from_arrays(fields, fields=list(OLD_ROW), mask=mask)


def _mask(values) -> np.ndarray:
    """A boolean Arrow result as a numpy mask, null as False."""
    return np.asarray(pc.fill_null(values, False).to_numpy(zero_copy_only=False), dtype=bool)


def plan_scan(listing: Listing | pa.Table, catalog: pa.Table, full: bool) -> ScanPlan:
    """Compare the listing with the catalog by fingerprint (a file's size and mtime, a Delta table's log version, an
    Iceberg table's metadata file, a folder's data files).

    ``new``: a path the catalog does not know (or knows as deleted); ``check``: a known path whose fingerprint
    changed (the scan task reads its content version and parses only when that changed), a stale table (retried
    every refresh) and every path on a full rebuild (which also re-reads tables that failed before, so a fixed
    reader picks them up); ``deleted``: catalogued, no longer listed.  Rows come in listing order, then the deleted
    ones in catalog order.
    Table ids are stable per path: a new path gets the next free id (in listing order), a path seen before gets its
    old id back.

    Vectorised over Arrow columns: the listing's columns (:data:`discovery.data.lake.listing.LISTING_COLUMNS`) are
    matched with the catalog by path, and no Python object is built per table (the old catalog row a work item keeps
    is an Arrow struct).  Turning the catalog into Python lists cost the driver 94 MB at 100,000 tables on every
    incremental refresh, which changes a few of them (``benchmarks/refresh_scale.py``).
    """
    lst = listing.table if isinstance(listing, Listing) else listing
    n = lst.num_rows
    if catalog.num_rows == 0:
        catalog = SCHEMAS["catalog"].empty_table()
    fps = _fingerprints(catalog)
    next_id = (pc.max(catalog["table_id"]).as_py() or 0) + 1 if catalog.num_rows else 1
    at = pc.index_in(lst["path"], value_set=catalog["path"].combine_chunks())
    known = _mask(pc.is_valid(at))
    idx = pa.array(np.asarray(pc.fill_null(at, 0).to_numpy(zero_copy_only=False), dtype=np.int64)
                   if catalog.num_rows else np.zeros(n, np.int64))
    take = (lambda col: col.take(idx)) if catalog.num_rows else (lambda col: pa.nulls(n, col.type))
    status = take(catalog["status"])
    was_deleted = known & _mask(pc.equal(status, "deleted"))
    changed = (_mask(pc.fill_null(pc.not_equal(take(fps), lst["fingerprint"]), True))
               | _mask(pc.fill_null(pc.not_equal(take(catalog["format"]), lst["format"]), True)))
    check = known & ~was_deleted & (full | _mask(pc.equal(status, "stale")) | changed)
    unchanged = int(np.sum(known & ~was_deleted & ~check))
    ids = np.zeros(n, dtype=np.int64)
    ids[~known] = next_id + np.arange(int(np.sum(~known)))
    ids[known] = np.asarray(take(catalog["table_id"]).to_numpy(zero_copy_only=False))[known]
    work = np.flatnonzero(~known | was_deleted | check)
    w = pa.array(work, pa.int64())
    on_check = pa.array(check[work])
    old_rows = _old_rows(catalog, fps, idx.to_numpy()[work], check[work])
    null = pa.nulls(len(work), pa.string())
    listed = pa.table({
        "table_id": pa.array(ids[work]), "path": lst["path"].take(w), "format": lst["format"].take(w),
        "bytes": lst["size"].take(w), "mtime_ns": lst["mtime_ns"].take(w),
        "old_hash": pc.if_else(on_check, take(catalog["content_hash"]).take(w), null),
        "old_status": pc.if_else(pa.array(known[work]), status.take(w), null),
        "action": pc.if_else(on_check, "check", "new"), "old_row": old_rows,
        "fingerprint": lst["fingerprint"].take(w)}, schema=SCAN_WORK)
    gone = np.flatnonzero(~_mask(pc.is_in(catalog["path"], value_set=lst["path"].combine_chunks()))
                          & ~_mask(pc.equal(catalog["status"], "deleted")))
    g = pa.array(gone, pa.int64())
    deleted = pa.table({
        "table_id": catalog["table_id"].take(g), "path": catalog["path"].take(g),
        "format": catalog["format"].take(g), "bytes": pc.fill_null(catalog["bytes"].take(g), 0),
        "mtime_ns": pc.fill_null(catalog["mtime_ns"].take(g), 0), "old_hash": catalog["content_hash"].take(g),
        "old_status": catalog["status"].take(g), "action": pa.repeat(pa.scalar("deleted", pa.string()), len(gone)),
        "old_row": _old_rows(catalog, fps, gone), "fingerprint": fps.take(g)},
        schema=SCAN_WORK)
    return ScanPlan(pa.concat_tables([listed, deleted]).combine_chunks(), unchanged)


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
