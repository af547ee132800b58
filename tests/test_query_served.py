"""A served query of a lake table reads it within the byte limit, whatever size the last scan recorded."""
from __future__ import annotations

from datetime import datetime, UTC

import pyarrow as pa
import pytest

from discovery.config import Limits
from discovery.data.store import SCHEMAS, Warehouse, load_snapshot
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.query.resolve import QueryError, resolve_query
from sessions import session


@pytest.fixture
def snapshot(tmp_path):
    """A published snapshot whose catalog lists ``t.csv`` at the 12 bytes it had when scanned."""
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "t.csv").write_text("a,b\n1,2\n3,4\n")
    wh = Warehouse(str(tmp_path / "wh"))
    refresh_id = begin_refresh(session(wh.root))
    row = {"table_id": 1, "path": "t.csv", "format": "csv", "bytes": 12, "mtime_ns": 1, "content_hash": "h",
           "rows": 2, "cols": 2, "status": "ok", "error": None, "warnings": "[]", "encoding": "utf-8",
           "delimiter": ",", "refresh_id": refresh_id, "indexed_at": datetime.now(UTC)}
    wh.append_rows("catalog", pa.Table.from_pylist([row], schema=SCHEMAS["catalog"]), refresh_id=refresh_id,
                   stage="scan", attempt="t1")
    publish_snapshot(Warehouse(wh.root), refresh_id, str(lake))
    return load_snapshot(wh), lake / "t.csv"


def test_a_lake_table_grown_since_the_scan_is_not_read_past_the_limit(snapshot):
    snap, path = snapshot
    limits = Limits(max_file_bytes=1000)
    assert resolve_query(snap, "t.csv", limits, allow_files=False).num_rows == 2
    path.write_text("a,b\n" + "1,2\n" * 1000)                         # 4004 bytes; the catalog still says 12
    for query in ("t.csv", 1):
        with pytest.raises(QueryError, match="cannot be read now: file is larger than the limit of 1000 bytes"):
            resolve_query(snap, query, limits, allow_files=False)


def test_a_lake_file_the_snapshot_indexed_is_parsed_once_per_snapshot(tmp_path, monkeypatch):
    """A lake file whose size and modification time are the catalog's is the file the snapshot indexed (the
    refresh's rule), so a process parses it once per snapshot and bounds: a second query takes the parse (even of
    bytes rewritten in place at the same size and time, which the rule cannot see, as a refresh would not), and a
    file whose time moved is read again and is no longer the indexed one."""
    import os

    from discovery.data.store.cache import INDEXES

    lake = tmp_path / "lake"
    lake.mkdir()
    path = lake / "t.csv"
    path.write_text("a,b\n1,2\n3,4\n")
    st = os.stat(path)
    wh = Warehouse(str(tmp_path / "wh"))
    refresh_id = begin_refresh(session(wh.root))
    row = {"table_id": 7, "path": "t.csv", "format": "csv", "bytes": st.st_size, "mtime_ns": st.st_mtime_ns,
           "content_hash": "h", "rows": 2, "cols": 2, "status": "ok", "error": None, "warnings": "[]",
           "encoding": "utf-8", "delimiter": ",", "refresh_id": refresh_id, "indexed_at": datetime.now(UTC)}
    wh.append_rows("catalog", pa.Table.from_pylist([row], schema=SCHEMAS["catalog"]), refresh_id=refresh_id,
                   stage="scan", attempt="t1")
    publish_snapshot(Warehouse(wh.root), refresh_id, str(lake))
    snap = load_snapshot(wh)
    first = resolve_query(snap, "t.csv", allow_files=False)
    assert first.indexed and first.columns[0].to_pylist() == ["1", "3"]
    assert ("query-table", snap.warehouse.root, snap.snapshot_id, 7, Limits()) in INDEXES
    path.write_text("a,b\n5,6\n7,8\n")                       # the same size ...
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))      # ... and time: the catalog's file, by its rule
    again = resolve_query(snap, 7, allow_files=False)
    assert again.indexed and again.columns[0].to_pylist() == ["1", "3"] and again.label == "7"
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns + 1_000_000_000))
    moved = resolve_query(snap, "t.csv", allow_files=False)
    assert not moved.indexed and moved.columns[0].to_pylist() == ["5", "7"]
    # a parse larger than its share of the cache's budget is not kept: a large table must not push out the indexes
    import discovery.query.resolve as query_module

    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    INDEXES.drop(lambda key: key[0] == "query-table")
    monkeypatch.setattr(query_module, "KEPT_QUERY_SHARE", INDEXES.budget_bytes)
    assert resolve_query(snap, "t.csv", allow_files=False).indexed
    assert ("query-table", snap.warehouse.root, snap.snapshot_id, 7, Limits()) not in INDEXES
