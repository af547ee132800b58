"""The scan plan, vectorised over the listing and the catalog: every action, stable ids, the kept fields of a
changed or deleted table, and its row order (listing order, then the deleted tables in catalog order)."""
from __future__ import annotations

from dataclasses import asdict

import pyarrow as pa

from discovery.data.lake import LakeTable
from discovery.data.lake.listing import LISTING_COLUMNS
from discovery.data.store import SCHEMAS
from discovery.stages.plan import plan_scan


def _catalog(rows: list[dict]) -> pa.Table:
    base = {"rows": 3, "cols": 2, "error": None, "warnings": "[]", "encoding": "utf-8", "delimiter": ",",
            "refresh_id": 7, "indexed_at": None, "version": None, "content_hash": "h"}
    return pa.Table.from_pylist([{**base, **r} for r in rows], schema=SCHEMAS["catalog"])


CATALOG = _catalog([
    {"table_id": 4, "path": "same.csv", "format": "csv", "bytes": 10, "mtime_ns": 5, "status": "ok",
     "fingerprint": "10:5"},
    {"table_id": 9, "path": "edited.csv", "format": "csv", "bytes": 10, "mtime_ns": 5, "status": "ok",
     "fingerprint": "10:5", "content_hash": "h9"},
    {"table_id": 2, "path": "legacy.csv", "format": "csv", "bytes": 20, "mtime_ns": 6, "status": "ok",
     "fingerprint": None},  # written before fingerprints: its size and mtime stand in
    {"table_id": 5, "path": "broken.csv", "format": "csv", "bytes": 1, "mtime_ns": 1, "status": "stale",
     "fingerprint": "1:1"},
    {"table_id": 7, "path": "back.csv", "format": "csv", "bytes": 1, "mtime_ns": 1, "status": "deleted",
     "fingerprint": "1:1"},
    {"table_id": 3, "path": "gone.parquet", "format": "parquet", "bytes": None, "mtime_ns": 8, "status": "error",
     "fingerprint": "0:8"},
    {"table_id": 1, "path": "long_gone.csv", "format": "csv", "bytes": 1, "mtime_ns": 1, "status": "deleted",
     "fingerprint": "1:1"},
    {"table_id": 6, "path": "now_delta", "format": "parquet", "bytes": 4, "mtime_ns": 4, "status": "ok",
     "fingerprint": "v1"},
])

LISTING = pa.Table.from_pylist([asdict(t) for t in [
    LakeTable("new_b.csv", 3, 3, "csv", "3:3"),
    LakeTable("same.csv", 10, 5, "csv", "10:5"),
    LakeTable("edited.csv", 11, 6, "csv", "11:6"),
    LakeTable("legacy.csv", 20, 6, "csv", "20:6"),
    LakeTable("broken.csv", 1, 1, "csv", "1:1"),
    LakeTable("back.csv", 1, 2, "csv", "1:2"),
    LakeTable("new_a.csv", 3, 3, "csv", "3:3"),
    LakeTable("now_delta", 4, 4, "delta", "v1"),
]], schema=LISTING_COLUMNS)


def test_every_action_with_stable_ids_in_listing_then_catalog_order():
    plan = plan_scan(LISTING, CATALOG, full=False)
    rows = plan.work.to_pylist()
    assert [(r["path"], r["action"], r["table_id"], r["old_status"], r["old_hash"]) for r in rows] == [
        ("new_b.csv", "new", 10, None, None),         # next free ids, in listing order
        ("edited.csv", "check", 9, "ok", "h9"),       # fingerprint changed
        ("broken.csv", "check", 5, "stale", "h"),     # stale: retried every refresh
        ("back.csv", "new", 7, "deleted", None),      # seen before: its old id back
        ("new_a.csv", "new", 11, None, None),
        ("now_delta", "check", 6, "ok", "h"),         # same fingerprint, another format
        ("gone.parquet", "deleted", 3, "error", "h"),  # catalogued, not listed; long_gone is deleted already
    ]
    assert plan.unchanged == 2  # same.csv, and legacy.csv by its size and mtime
    edited = rows[1]["old_row"]
    assert list(edited) == ["rows", "cols", "error", "warnings", "encoding", "delimiter", "refresh_id", "version",
                            "bytes", "mtime_ns", "fingerprint"]
    assert edited["fingerprint"] == "10:5" and edited["rows"] == 3
    gone = rows[-1]
    assert (gone["bytes"], gone["mtime_ns"], gone["fingerprint"]) == (0, 8, "0:8")
    assert gone["old_row"]["bytes"] is None
    assert rows[0]["old_row"] is None and rows[3]["old_row"] is None


def test_a_full_rebuild_checks_every_known_path_and_a_first_build_numbers_from_one():
    full = plan_scan(LISTING, CATALOG, full=True)
    assert full.unchanged == 0
    assert [r["action"] for r in full.work.to_pylist()] == ["new", "check", "check", "check", "check", "new", "new",
                                                            "check", "deleted"]
    legacy = next(r for r in full.work.to_pylist() if r["path"] == "legacy.csv")
    assert legacy["old_row"]["fingerprint"] == "20:6"
    first = plan_scan(LISTING, SCHEMAS["catalog"].empty_table(), full=False)
    assert [(r["table_id"], r["action"]) for r in first.work.to_pylist()] == [(i, "new") for i in range(1, 9)]
    assert (plan_scan(LISTING_COLUMNS.empty_table(), CATALOG, full=False).work.column("action").to_pylist()
            == ["deleted"] * 6)
