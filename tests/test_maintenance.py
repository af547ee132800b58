"""Maintenance on a real Delta warehouse: retention, compaction sorted by table_id, vacuum, and time travel after it.

The warehouse is written through the store's own write path (worker data files, copy-on-write replacement of the rows
of changed lake tables, one commit per refresh) and published with ``publish_snapshot``, like a refresh does.
"""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pytest

from discovery.config import MaintenanceConfig
from discovery.data.store import (INDEX_TABLES, SCHEMAS, Warehouse, WarehouseError, candidate_files, drop_table_ids,
                                  list_snapshots, load_snapshot, write_data_file)
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.surfaces.maintenance import compact_table, fragmented_files, retain_snapshots, run_maintenance
from datetime import UTC
from sessions import session


def _column_rows(ids: np.ndarray, tag: str, rng: np.random.Generator, per_table: int = 30) -> pa.Table:
    ids = np.repeat(ids, per_table)
    n = len(ids)
    names = ["".join(rng.choice(list("abcdefghijklmnopqrstuvwxyz"), 24)) for _ in range(n)]
    return pa.table({
        "table_id": pa.array(ids, pa.int64()), "content_hash": [tag] * n,
        "ordinal": pa.array(np.arange(n) % 30, pa.int32()), "name": names, "type": ["string"] * n,
        "non_null": pa.array(rng.integers(0, 1000, n), pa.int64()),
        "distinct_count": pa.array(rng.integers(0, 1000, n), pa.int64()),
        "null_fraction": rng.random(n), "key_candidate": rng.random(n) < 0.5,
        "max_length": pa.array(rng.integers(1, 99, n), pa.int32())}, schema=SCHEMAS["columns"])


def _refresh(wh: Warehouse, rng: np.random.Generator, changed: np.ndarray, tag: str, publish: bool = True,
             per_table: int = 30) -> int:
    """One refresh of the ``columns`` table: replace the rows of ``changed`` lake tables, as a stage does."""
    refresh_id = begin_refresh(session(wh.root))
    uri = wh.table_uri("columns")
    adds, removes = [], []
    for path in candidate_files(wh.files("columns"), changed):
        touched, replacement = drop_table_ids(uri, path, changed, refresh_id, "profile", "t1")
        if touched:
            removes.append(path)
            if replacement is not None:
                adds.append(replacement)
    for chunk in np.array_split(np.sort(changed), 4):
        adds.append(write_data_file(uri, _column_rows(chunk, tag, rng, per_table), refresh_id, "profile", "t1"))
    wh.commit("columns", adds, removes, refresh_id=refresh_id, stage="profile", attempt="t1")
    if publish:
        return publish_snapshot(Warehouse(wh.root), refresh_id, "/lake")["snapshot_id"]
    return refresh_id


@pytest.fixture
def warehouse(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    rng = np.random.default_rng(11)
    _refresh(wh, rng, np.arange(120), "h0")
    for r in range(1, 6):
        _refresh(wh, rng, rng.choice(120, 25, replace=False), f"h{r}")
    return wh


def _rows(table: pa.Table) -> list[tuple]:
    """Rows in a canonical order (compaction reorders rows; their multiset must not change)."""
    return sorted(tuple(repr(v) for v in r.values()) for r in table.to_pylist())


def _state(wh: Warehouse) -> dict[int, dict[str, list[tuple]]]:
    return {s.snapshot_id: {n: _rows(s.read(n)) for n in INDEX_TABLES} for s in list_snapshots(wh)}


def _data_files(wh: Warehouse, name: str) -> set[str]:
    folder = wh.table_uri(name)
    return {f for f in os.listdir(folder) if f.endswith(".parquet")}


def test_maintenance_keeps_time_travel_to_retained_snapshots(warehouse):
    wh = warehouse
    before = _state(wh)
    ids = sorted(before)
    files_before = _data_files(wh, "columns")
    cfg = MaintenanceConfig(keep_snapshots=3, target_file_bytes=64 * 1024, min_small_files=4)
    report = run_maintenance(Warehouse(wh), cfg)
    assert report["status"] == "ok"
    assert report["snapshots_kept"] == ids[-3:] and report["snapshots_removed"] == ids[:-3]
    for sid in ids[-3:]:
        snap = load_snapshot(wh, sid)
        for name, rows in before[sid].items():
            assert _rows(snap.read(name)) == rows, (sid, name)
    for sid in ids[:-3]:
        with pytest.raises(WarehouseError):
            load_snapshot(wh, sid)
    # vacuum deleted files only older snapshots needed, and every file a retained snapshot reads is still there
    remaining = _data_files(wh, "columns")
    assert files_before - remaining
    for sid in ids[-3:]:
        assert all(os.path.exists(u) for u in load_snapshot(wh, sid).file_uris("columns"))
    entry = next(t for t in report["tables"] if t["table"] == "columns")
    assert entry["action"] == "zorder(table_id)" and entry["files_after"] < entry["files_before"]


def test_compaction_leaves_files_sorted_and_narrow_by_table_id(warehouse):
    wh = warehouse
    cfg = MaintenanceConfig(keep_snapshots=2, target_file_bytes=48 * 1024, min_small_files=4)
    run_maintenance(Warehouse(wh), cfg)
    files = wh.files("columns").sort_by("min.table_id").to_pylist()
    assert len(files) > 1
    for a, b in zip(files, files[1:]):
        assert a["max.table_id"] <= b["min.table_id"]          # disjoint table_id ranges
    # so replacing one lake table's rows touches one file (two when its rows straddle a boundary)
    for tid in (0, 57, 119):
        assert 1 <= len(candidate_files(wh.files("columns"), np.array([tid]))) <= 2
    # and a refresh after maintenance still replaces rows correctly
    rng = np.random.default_rng(5)
    sid = _refresh(wh, rng, np.array([3, 57, 90]), "after")
    cols = load_snapshot(wh, sid).read("columns")
    hashes = dict(zip(cols["table_id"].to_pylist(), cols["content_hash"].to_pylist()))
    assert cols.num_rows == 120 * 30 and all(hashes[t] == "after" for t in (3, 57, 90))


def test_compacted_files_hold_about_as_many_lake_tables_as_a_refresh_writes(tmp_path):
    """A per-table index table is compacted into files of about ``tables_per_file`` lake tables, not into files of the
    size cap: in those, a refresh changing a few scattered tables would rewrite nearly the whole table."""
    wh = Warehouse(str(tmp_path / "wh"))
    rng = np.random.default_rng(12)
    _refresh(wh, rng, np.arange(60), "h0", per_table=300)  # 300 rows a table: well above delta-rs' write batches
    for r in range(1, 3):
        _refresh(wh, rng, rng.choice(60, 6, replace=False), f"h{r}", per_table=300)
    before = _rows(wh.read("columns"))
    entry = compact_table(wh, "columns", 128 << 20, 4, tables_per_file=10, lake_tables=60, floor_bytes=1)
    assert entry["action"] == "zorder(table_id)"
    files = wh.files("columns").sort_by("min.table_id").to_pylist()
    assert _rows(wh.read("columns")) == before
    assert 4 <= len(files) <= 12, entry
    for a, b in zip(files, files[1:]):
        assert a["max.table_id"] <= b["min.table_id"]
    assert max(f["max.table_id"] - f["min.table_id"] + 1 for f in files) <= 20
    assert len(candidate_files(wh.files("columns"), np.array([7, 44]))) <= 4  # a few files, not the whole table
    assert fragmented_files(wh.files("columns"), 1) == 0  # sorted: neighbours share at most an end
    # the same table under the size cap alone: one file, which every replacement rewrites whole
    assert compact_table(wh, "columns", 128 << 20, 1, lake_tables=0)["files_after"] == 1


def test_fragmented_files_are_the_small_ones_and_those_overlapping_another_range():
    rng = np.random.default_rng(8)
    for _ in range(200):
        n = int(rng.integers(1, 12))
        lo = rng.integers(0, 50, n)
        hi = lo + rng.integers(0, 10, n)
        size = rng.integers(1, 100, n)
        files = pa.table({"size_bytes": size, "min.table_id": lo, "max.table_id": hi})
        brute = sum(size[i] < 50 // 2 or any(j != i and lo[i] < hi[j] and lo[j] < hi[i] for j in range(n))
                    for i in range(n))
        assert fragmented_files(files, 50) == brute


def test_snapshot_retention_keeps_pinned_snapshots(warehouse):
    ids = sorted(s.snapshot_id for s in list_snapshots(warehouse))
    kept = retain_snapshots(warehouse, 2, pinned={ids[1]})
    assert kept.kept == sorted({ids[1], *ids[-2:]}) and kept.pinned == [ids[1]]
    assert sorted(s.snapshot_id for s in list_snapshots(warehouse)) == kept.kept
    with pytest.raises(ValueError):
        retain_snapshots(warehouse, 0)


def test_maintenance_skips_while_a_refresh_is_committing(warehouse):
    rng = np.random.default_rng(3)
    running = _refresh(warehouse, rng, np.array([1, 2]), "running", publish=False)   # holds the warehouse lease
    report = run_maintenance(Warehouse(warehouse), MaintenanceConfig())
    assert report["status"] == "skipped" and f"another refresh is running on this warehouse: refresh {running}" \
        in report["reason"]
    publish_snapshot(Warehouse(warehouse.root), running, "/lake")
    assert run_maintenance(Warehouse(warehouse), MaintenanceConfig())["status"] == "ok"


def test_snapshots_older_than_the_retention_leave_but_the_latest_stays(warehouse):
    ids = sorted(s.snapshot_id for s in list_snapshots(warehouse))
    kept = retain_snapshots(warehouse, 10, pinned={ids[0]}, max_age_seconds=86400, now=time.time() + 2 * 86400)
    assert kept.kept == ids[-1:] and kept.removed == ids[:-1] and kept.pinned == []
    assert load_snapshot(warehouse).snapshot_id == ids[-1]


def test_maintenance_deletes_the_model_files_no_retained_snapshot_uses(warehouse):
    """``model_files/`` holds a plain copy of each encoder version queries loaded; versions that only dropped
    snapshots used go, the retained snapshots' stay, and a writer's temporary file is left alone."""
    from discovery.transforms.encoders.stored import MODEL_FILES, SET_MODEL
    from discovery.data.store import save_model

    spec = {"type_agreement": 0.8, "join_min_distinct": 2, "join_max_values": 100}
    for tag in ("a", "b"):
        refresh_id = begin_refresh(session(warehouse.root))
        save_model(warehouse, SET_MODEL, f"set-{tag}",
                   {"column": "col-1", "table": f"table-{tag}", "join": f"join-{tag}", "spec": spec}, b"",
                   refresh_id=refresh_id, attempt="t1")
        publish_snapshot(Warehouse(warehouse.root), refresh_id, "/lake")
    folder = os.path.join(warehouse.root, MODEL_FILES)
    os.makedirs(folder)
    names = ["col-1.bin", "table-a.bin", "join-a.bin", "table-b.bin", "join-b.bin", ".join-c.tmp123"]
    for name in names:
        with open(os.path.join(folder, name), "wb") as fh:
            fh.write(b"x")
    report = run_maintenance(Warehouse(warehouse), MaintenanceConfig(keep_snapshots=1))
    assert report["status"] == "ok"
    assert report["model_files_removed"] == ["join-a.bin", "table-a.bin"]
    assert sorted(os.listdir(folder)) == sorted(set(names) - {"join-a.bin", "table-a.bin"})
    # The retained snapshot still uses the rest: a second run deletes nothing.
    assert run_maintenance(Warehouse(warehouse), MaintenanceConfig(keep_snapshots=1))[
        "model_files_removed"] == []


def test_checkpoint_after_compaction_lists_no_tombstone_and_vacuum_deleted_the_merged_files(tmp_path):
    """Compaction's removes leave the table state at maintenance's closing checkpoint, so an open after thousands of
    query batches reads a checkpoint of the compacted files only; vacuum saw those removes first and deleted the
    merged files, also when compaction's commit lands on a checkpoint interval."""
    import pyarrow.parquet as pq
    from datetime import datetime

    from discovery.data.store import new_attempt_token
    from discovery.data.store.warehouse import CHECKPOINT_INTERVAL

    wh = Warehouse(str(tmp_path / "wh"))
    publish_snapshot(Warehouse(wh.root), begin_refresh(session(wh.root)), "/lake")
    now = datetime.now(UTC)
    version = wh.version("query_results")
    # end one commit short of a checkpoint interval, so compaction's own commit lands on it
    appends = (CHECKPOINT_INTERVAL - 1 - version) % CHECKPOINT_INTERVAL + CHECKPOINT_INTERVAL
    for i in range(appends):
        rows = pa.Table.from_pylist([{"batch_id": f"b{i}", "query_id": "q", "snapshot_id": 1, "kind": "nary",
                                      "rank": 1, "table_id": 1, "path": "t.csv", "column": None, "score": 1.0,
                                      "evidence": "{}", "created_at": now}], schema=SCHEMAS["query_results"])
        wh.append_rows("query_results", rows, refresh_id=1, stage="query_batch", attempt=new_attempt_token(),
                       once=False)
    assert (wh.version("query_results") + 1) % CHECKPOINT_INTERVAL == 0
    report = run_maintenance(Warehouse(wh), MaintenanceConfig(min_small_files=4))
    entry = next(t for t in report["tables"] if t["table"] == "query_results")
    assert entry["action"] != "none" and entry["vacuumed_files"] == entry["files_removed"] == appends
    assert _data_files(wh, "query_results") == set(wh.files("query_results").column("path").to_pylist())
    log = os.path.join(wh.table_uri("query_results"), "_delta_log")
    last = sorted(n for n in os.listdir(log) if n.endswith(".checkpoint.parquet"))[-1]
    assert int(last.split(".")[0]) == wh.version("query_results")
    checkpoint = pq.read_table(os.path.join(log, last))
    assert checkpoint.column("remove").drop_null().to_pylist() == []
    assert wh.count_rows("query_results") == appends


def test_compaction_merges_small_model_rows_and_leaves_an_encoder_payload_alone(warehouse):
    """``models`` gathers a few small rows per refresh beside an encoder's large payload.  Compaction merges the
    small files only: rewriting the payload with them left two copies of it on disk, the retained snapshots pinning
    the old one (the soak's warehouse at 1.48x a fresh build's)."""
    from discovery.transforms.encoders.stored import JOIN_MODEL, SET_MODEL
    import pyarrow.parquet as pq

    from discovery.data.store import latest_model, save_model

    spec = {"type_agreement": 0.8, "join_min_distinct": 2, "join_max_values": 100}
    payload = np.random.default_rng(4).bytes(400 << 10)  # incompressible: a file above half the 512 KB target
    for i in range(6):
        refresh_id = begin_refresh(session(warehouse.root))
        if i == 0:
            save_model(warehouse, JOIN_MODEL, "join-1", {}, payload, refresh_id=refresh_id, attempt="t1")
        for name in (SET_MODEL, "centroids", "pivots"):
            save_model(warehouse, name, f"{name}-{i}", {"column": "col-1", "table": "table-1", "join": "join-1",
                                                       "spec": spec}, b"x", refresh_id=refresh_id, attempt="t1")
        publish_snapshot(Warehouse(warehouse.root), refresh_id, "/lake")
    big = max(warehouse.files("models").to_pylist(), key=lambda f: f["size_bytes"])
    assert big["size_bytes"] > 256 << 10
    cfg = MaintenanceConfig(keep_snapshots=3, target_file_bytes=512 << 10, min_small_files=4)
    report = run_maintenance(Warehouse(warehouse), cfg)
    # the rows of the three dropped snapshots go first; the payload every snapshot uses stays
    assert len(report["model_rows_removed"]) == 9
    entry = next(t for t in report["tables"] if t["table"] == "models")
    assert entry["action"] == "compact" and entry["files_after"] == 2, entry
    assert big["path"] in warehouse.files("models").column("path").to_pylist()
    on_disk = sum(os.path.getsize(os.path.join(warehouse.table_uri("models"), f)) for f in _data_files(warehouse,
                                                                                                       "models"))
    assert on_disk < 1.2 * big["size_bytes"]
    # every retained snapshot still reads the model rows it had
    assert [s.read("models").num_rows for s in list_snapshots(warehouse)] == [13, 16, 19]
    assert warehouse.count_rows("models") == 10
    # one more refresh: the next run drops the oldest rows from the merged file, which is rewritten with the others
    merged = set(warehouse.files("models").column("path").to_pylist()) - {big["path"]}
    refresh_id = begin_refresh(session(warehouse.root))
    for name in (SET_MODEL, "centroids", "pivots"):
        save_model(warehouse, name, f"{name}-6", {"column": "col-1", "table": "table-1", "join": "join-1",
                                                 "spec": spec}, b"x", refresh_id=refresh_id, attempt="t1")
    publish_snapshot(Warehouse(warehouse.root), refresh_id, "/lake")
    report = run_maintenance(warehouse, MaintenanceConfig(keep_snapshots=3, min_small_files=100))  # no compaction
    assert sorted(report["model_rows_removed"]) == sorted([f"{SET_MODEL}/{SET_MODEL}-3", "centroids/centroids-3",
                                                           "pivots/pivots-3"])
    assert len(merged) == 1 and not merged & set(warehouse.files("models").column("path").to_pylist())
    assert sorted(warehouse.read("models", columns=["version"]).column("version").to_pylist()) == sorted(
        ["join-1"] + [f"{n}-{i}" for n in (SET_MODEL, "centroids", "pivots") for i in range(4, 7)])
    assert latest_model(warehouse, "centroids").version == "centroids-6"  # a read filtered by name
    for path in warehouse.files("models").column("path").to_pylist():  # the table's types, no string_view
        schema = pq.read_schema(os.path.join(warehouse.table_uri("models"), path))
        assert [f.type for f in schema] == [f.type for f in SCHEMAS["models"]], path
    assert [s.read("models").num_rows for s in list_snapshots(warehouse)] == [16, 19, 13]


def test_maintenance_deletes_the_model_rows_no_retained_snapshot_uses(warehouse):
    """A retrained join encoder's payload leaves ``models`` once no retained snapshot uses it, and its file leaves
    the disk once no retained snapshot pins a version that lists it; the newest row of each name stays for the next
    refresh, and the retained snapshots read their encoders throughout."""
    from discovery.transforms.encoders.stored import JOIN_MODEL, SET_MODEL, payload
    from discovery.data.store import save_model

    spec = {"type_agreement": 0.8, "join_min_distinct": 2, "join_max_values": 100}
    rng = np.random.default_rng(5)

    def refresh(tag: str, join: str, extra: tuple = ()) -> None:
        refresh_id = begin_refresh(session(warehouse.root))
        if join not in warehouse.read("models", columns=["version"]).column("version").to_pylist():
            save_model(warehouse, JOIN_MODEL, join, {}, rng.bytes(64 << 10), refresh_id=refresh_id, attempt="t1")
        save_model(warehouse, SET_MODEL, f"set-{tag}", {"column": "col-1", "table": None, "join": join,
                                                       "spec": spec}, b"", refresh_id=refresh_id, attempt="t1")
        for name in extra:
            save_model(warehouse, name, f"{name}-{tag}", {}, b"", refresh_id=refresh_id, attempt="t1")
        publish_snapshot(Warehouse(warehouse.root), refresh_id, "/lake")

    def payload_files() -> set[str]:
        files = warehouse.files("models").to_pylist()
        return {f["path"] for f in files if f["size_bytes"] > 32 << 10}

    refresh("a", "join-a", ("centroids",))
    first = payload_files()
    refresh("b", "join-b")  # retrained
    refresh("c", "join-b")
    cfg = MaintenanceConfig(keep_snapshots=2)
    report = run_maintenance(Warehouse(warehouse), cfg)
    # centroids-a is the newest centroids row: the next refresh compares with it, so it stays
    assert report["model_rows_removed"] == ["embed.encoders/set-a", "encoder.join/join-a"]
    assert sorted(warehouse.read("models", columns=["version"]).column("version").to_pylist()) == [
        "centroids-a", "join-b", "set-b", "set-c"]
    # the retained snapshots pin versions that still list join-a's file: it stays on disk for them
    assert first <= _data_files(warehouse, "models")
    for snap in list_snapshots(warehouse):
        assert len(payload(Warehouse(warehouse.root), JOIN_MODEL, "join-b", snap.version("models"))[0]) == 64 << 10
    assert [s.read("models").num_rows for s in list_snapshots(warehouse)] == [5, 6]
    refresh("d", "join-b")
    # an hour later: every snapshot but the latest is past the retention, every other version past the window, and
    # join-a's file past the orphan grace
    later = MaintenanceConfig(keep_snapshots=2, snapshot_retention_days=0.01, orphan_grace_hours=0.1)
    report = run_maintenance(Warehouse(warehouse), later, clock=lambda: time.time() + 3600)
    assert report["model_rows_removed"] == ["embed.encoders/set-b", "embed.encoders/set-c"]
    assert first and not first & _data_files(warehouse, "models")
    assert payload_files() <= _data_files(warehouse, "models")
    (snap,) = list_snapshots(warehouse)
    assert len(payload(Warehouse(warehouse.root), JOIN_MODEL, "join-b", snap.version("models"))[0]) == 64 << 10
    assert run_maintenance(Warehouse(warehouse), cfg)["model_rows_removed"] == []
