"""Live files come from table state: orphan cleanup after delta-rs checkpoints and expires the log.

Reproduction (issue 24): 99 appends to ``query_batches`` through ``append_rows``, their log and data files aged 40
days, then a 100th append, after which delta-rs has checkpointed and deleted the expired log entries (it ages a log
entry by its file's modification time, which ``os.utime`` sets).  Orphan cleanup used to look attempt tokens up in
that history, found 98 of them gone and deleted 98 live files.  Now every file a retained version references is
kept, and only files no retained version references, older than the grace period, are deleted.
"""
from __future__ import annotations

import glob
import os
import time
from datetime import datetime, UTC

import numpy as np
import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.transaction import AddAction

from discovery.surfaces import cli
from discovery.config import Config, MaintenanceConfig, load_config
from discovery.data.store import SCHEMAS, Warehouse, candidate_files, drop_table_ids, load_snapshot, write_data_file
from discovery.data.store.schema import BOOKKEEPING_TABLES
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.surfaces.maintenance import retain_snapshots
from sessions import session

DAY = 86400.0


def _batch(i: int) -> pa.Table:
    return pa.Table.from_pylist([{"batch_id": f"b{i}", "name": "n", "standing": False, "snapshot_id": 1,
                                  "queries": 1, "results": 0, "seconds": 0.1, "spec": "{}", "summary": "{}",
                                  "created_at": datetime.now(UTC)}], schema=SCHEMAS["query_batches"])


def _age(paths, days: float) -> None:
    then = time.time() - days * DAY
    for p in paths:
        os.utime(p, (then, then))


def test_cleanup_after_log_expiry_deletes_no_live_file(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("query_batches")
    for i in range(99):
        wh.append_rows("query_batches", _batch(i), refresh_id=i + 1, stage="query_batch", attempt=f"a{i}", once=False)
    crashed = write_data_file(uri, _batch(-1), 1, "query_batch", "crashed")       # never committed
    _age(glob.glob(f"{uri}/*.parquet") + glob.glob(f"{uri}/_delta_log/*"), 40)
    in_flight = write_data_file(uri, _batch(-2), 2, "query_batch", "inflight")    # a writer about to commit
    wh.append_rows("query_batches", _batch(99), refresh_id=100, stage="query_batch", attempt="a99", once=False)
    log = os.listdir(f"{uri}/_delta_log")
    assert "00000000000000000001.json" not in log and any(n.endswith(".checkpoint.parquet") for n in log)
    assert len(wh.table("query_batches").history()) < 100                        # the tokens' history is gone
    live = set(wh.files("query_batches").column("path").to_pylist())
    assert len(live) == 100

    begin_refresh(session(wh.root))                                                        # cleans every table

    left = {os.path.basename(p) for p in glob.glob(f"{uri}/*.parquet")}
    assert live <= left
    assert crashed.path not in left and in_flight.path in left
    assert sorted(wh.read("query_batches").column("batch_id").to_pylist()) == sorted(f"b{i}" for i in range(100))
    # A pinned version whose log is gone cannot be read: then no file of the table is called an orphan.
    from discovery.data.store import cleanup_orphans

    assert cleanup_orphans(wh, "query_batches", pinned=[3], window_seconds=0, grace_seconds=0) == []
    assert in_flight.path in os.listdir(uri)


def test_a_bookkeeping_tables_log_is_kept_an_hour_and_its_rows_and_files_all(tmp_path):
    """A served search's group commit is a version of ``query_batches``: its log entries expire after an hour (a
    local commit lists the whole log folder), the index tables' after the snapshots' days; no row or live file goes."""
    from discovery.data.store.warehouse import CHECKPOINT_INTERVAL

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("query_batches")
    for i in range(CHECKPOINT_INTERVAL - 1):
        wh.append_rows("query_batches", _batch(i), refresh_id=1, stage="query_batch", attempt=f"a{i}", once=False)
    _age(glob.glob(f"{uri}/_delta_log/*") + glob.glob(f"{wh.table_uri('catalog')}/_delta_log/*"), 2 / 24)
    for i in range(CHECKPOINT_INTERVAL - 1, CHECKPOINT_INTERVAL + 1):   # the checkpoint at 20 expires the log
        wh.append_rows("query_batches", _batch(i), refresh_id=1, stage="query_batch", attempt=f"a{i}", once=False)
    log = [int(n[:20]) for n in os.listdir(f"{uri}/_delta_log") if n.endswith(".json")]
    assert min(log) >= CHECKPOINT_INTERVAL - 1 and max(log) == CHECKPOINT_INTERVAL + 1   # delta-rs keeps one before
    assert "00000000000000000000.json" in os.listdir(f"{wh.table_uri('catalog')}/_delta_log")   # 30 days
    live = set(wh.files("query_batches").column("path").to_pylist())
    assert len(live) == CHECKPOINT_INTERVAL + 1

    begin_refresh(session(wh.root))                                                        # cleans every table

    assert {os.path.basename(p) for p in glob.glob(f"{uri}/*.parquet")} == live
    assert sorted(wh.read("query_batches").column("batch_id").to_pylist()) == sorted(
        f"b{i}" for i in range(CHECKPOINT_INTERVAL + 1))


def _columns(ids, tag: str) -> pa.Table:
    n = len(ids)
    return pa.table({"table_id": pa.array(ids, pa.int64()), "content_hash": [tag] * n,
                     "ordinal": pa.array([0] * n, pa.int32()), "name": ["c"] * n, "type": ["string"] * n,
                     "non_null": pa.array([1] * n, pa.int64()), "distinct_count": pa.array([1] * n, pa.int64()),
                     "null_fraction": [0.0] * n, "key_candidate": [False] * n,
                     "max_length": pa.array([1] * n, pa.int32())}, schema=SCHEMAS["columns"])


def test_files_a_retained_snapshot_pins_are_kept_until_it_is_dropped(tmp_path):
    from discovery.data.store import cleanup_warehouse

    wh = Warehouse(str(tmp_path / "wh"))
    r1 = begin_refresh(session(wh.root))
    first = write_data_file(wh.table_uri("columns"), _columns([1, 2], "h1"), r1, "profile", "t1")
    wh.commit("columns", [first], [], refresh_id=r1, stage="profile", attempt="t1")
    s1 = publish_snapshot(Warehouse(wh.root), r1, "/lake")["snapshot_id"]
    r2 = begin_refresh(session(wh.root))
    adds, removes = [], []
    for path in candidate_files(wh.files("columns"), np.array([1])):
        touched, replacement = drop_table_ids(wh.table_uri("columns"), path, np.array([1]), r2, "profile", "t2")
        removes.append(path)
        adds += [replacement] if replacement is not None else []
    adds.append(write_data_file(wh.table_uri("columns"), _columns([1], "h2"), r2, "profile", "t2"))
    wh.commit("columns", adds, removes, refresh_id=r2, stage="profile", attempt="t2")
    publish_snapshot(Warehouse(wh.root), r2, "/lake")
    folder = wh.table_uri("columns")
    _age(glob.glob(f"{folder}/*.parquet") + glob.glob(f"{folder}/_delta_log/*"), 40)   # out of the window

    cfg = MaintenanceConfig()
    cleanup_warehouse(wh, window_seconds=cfg.window_seconds, grace_seconds=cfg.grace_seconds)
    assert os.path.exists(os.path.join(folder, first.path))                  # snapshot s1 pins the version
    assert load_snapshot(wh, s1).read("columns").num_rows == 2

    retain_snapshots(wh, keep_last=1)
    removed = cleanup_warehouse(wh, window_seconds=cfg.window_seconds, grace_seconds=cfg.grace_seconds)
    assert removed["columns"] == [first.path]                                 # referenced by no retained version
    assert sorted(load_snapshot(wh).read("columns").column("content_hash").to_pylist()) == ["h1", "h2"]


def test_tables_carry_the_log_retention_and_checkpoint_interval(tmp_path):
    from discovery.data.store.warehouse import CHECKPOINT_INTERVAL

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    config = DeltaTable(wh.table_uri("catalog")).metadata().configuration
    assert config["delta.checkpointInterval"] == str(CHECKPOINT_INTERVAL)
    assert config["delta.logRetentionDuration"] == "interval 720 hours"
    assert config["delta.deletedFileRetentionDuration"] == "interval 0 hours"    # tombstones: see table_properties
    wh.upgrade(log_retention_days=60)
    assert DeltaTable(wh.table_uri("catalog")).metadata().configuration["delta.logRetentionDuration"] == \
        "interval 1440 hours"
    for name in BOOKKEEPING_TABLES:   # read at their latest version only: their log is kept an hour, whatever the days
        config = DeltaTable(wh.table_uri(name)).metadata().configuration
        assert config["delta.logRetentionDuration"] == "interval 1 hours"
        assert config["delta.checkpointInterval"] == str(CHECKPOINT_INTERVAL)


def test_an_old_refresh_runs_table_without_the_takeover_column_reads_and_is_extended(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    old = SCHEMAS["refresh_runs"].remove(SCHEMAS["refresh_runs"].get_field_index("took_over"))
    DeltaTable.create(wh.table_uri("refresh_runs"), schema=old, name="refresh_runs")
    row = {"refresh_id": 1, "stage": "scan", "status": "ok", "started_at": datetime.now(UTC),
           "finished_at": datetime.now(UTC), "seconds": 1.0, "tables_added": 1, "tables_changed": 0,
           "tables_deleted": 0, "tables_failed": 0, "tables_processed": 1, "rows_written": 1, "message": ""}
    data = write_data_file(wh.table_uri("refresh_runs"), pa.Table.from_pylist([row], schema=old), 1, "run_scan", "x")
    DeltaTable(wh.table_uri("refresh_runs")).create_write_transaction(
        [AddAction(data.path, data.size, {}, data.mtime_ms, True, data.stats)], "append", old)
    assert wh.read("refresh_runs").column("took_over").to_pylist() == [None]
    begin_refresh(session(wh.root))                                                    # adds the column
    assert "took_over" in DeltaTable(wh.table_uri("refresh_runs")).schema().to_arrow().names


# -- configuration: log retention >= snapshot retention --------------------------------------------------------------
def test_a_log_retention_shorter_than_the_snapshot_retention_is_refused(tmp_path, capsys):
    with pytest.raises(ValueError, match=r"log_retention_days = 3 is shorter than snapshot_retention_days = 7.*"
                                         r"could no longer be read"):
        Config.from_dict({"maintenance": {"log_retention_days": 3, "snapshot_retention_days": 7}})
    assert Config.from_dict({"maintenance": {"log_retention_days": 7, "snapshot_retention_days": 7}})
    bad = tmp_path / "bad.toml"
    bad.write_text("[maintenance]\nsnapshot_retention_days = 40\n")          # past the default 30-day log
    with pytest.raises(ValueError, match="bad.toml.*log_retention_days = 30 is shorter"):
        load_config(bad)
    lake = tmp_path / "lake"
    lake.mkdir()
    code = cli.main(["refresh", "--lake", str(lake), "--warehouse", str(tmp_path / "wh"), "--config", str(bad)])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "snapshot_retention_days" in err
