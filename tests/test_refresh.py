"""Refresh stages on a real local SparkSession and real Delta tables: full, incremental, killed and retried."""
from __future__ import annotations

import os
import shutil
import time

import pyarrow.compute as pc
import pytest

from discovery.config import MaintenanceConfig
from discovery.data.lake import list_lake
from discovery.data.store import Warehouse, cleanup_warehouse, load_snapshot, new_attempt_token
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.stages import StageContext, profile_batch
from spark_jobs import profile_columns, scan_lake
from spark_jobs.common import execute
from spark_jobs.fanout import fan_out
from spark_jobs.refresh import refresh
from sessions import session

pytestmark = pytest.mark.spark


def _stage_row(wh: Warehouse, refresh_id: int, stage: str) -> dict:
    runs = wh.read("refresh_runs")
    rows = runs.filter(pc.and_(pc.equal(runs["refresh_id"], refresh_id), pc.equal(runs["stage"], stage)))
    return [r for r in rows.to_pylist() if r["status"] == "ok"][0]


def _by_path(wh: Warehouse):
    snap = load_snapshot(wh)
    cat = snap.read("catalog")
    paths = dict(zip(cat.column("table_id").to_pylist(), cat.column("path").to_pylist()))
    catalog = {r["path"]: {k: v for k, v in r.items() if k not in ("table_id", "refresh_id", "indexed_at", "mtime_ns")}
               for r in cat.to_pylist() if r["status"] != "deleted"}
    columns = {(paths[r["table_id"]], r["ordinal"]): {k: v for k, v in r.items() if k != "table_id"}
               for r in snap.read("columns").to_pylist()}
    return catalog, columns


def test_full_refresh_indexes_the_lake_and_reports_broken_files(spark, small_lake, demo_lake, tmp_path):
    root = str(tmp_path / "wh")
    # Links that lead out of the lake, one to a readable table and one dangling, are catalogued as errors, unread.
    (tmp_path / "outside.csv").write_text("user,secret\nroot,hunter2\nadmin,swordfish\n")
    os.makedirs(os.path.join(small_lake, "links"))
    os.symlink(tmp_path / "outside.csv", os.path.join(small_lake, "links", "escape.csv"))
    os.symlink(tmp_path / "missing.csv", os.path.join(small_lake, "links", "dangling.csv"))
    out = refresh(spark, root, small_lake)
    assert out["published"] and out["snapshot_id"] == 1
    wh = Warehouse(root)
    snap = load_snapshot(wh)
    cat = {r["path"]: r for r in snap.read("catalog").to_pylist()}
    assert set(cat) == {f.path for f in list_lake(small_lake)}
    assert cat["links/escape.csv"]["status"] == "error" and "out of the lake" in cat["links/escape.csv"]["error"]
    assert cat["links/dangling.csv"]["status"] == "error" and cat["links/dangling.csv"]["error"]
    assert "hunter2" not in cat["links/escape.csv"]["error"]
    expected = {r["path"]: r for r in load_ground_truth(demo_lake)["broken"]}
    for path, exp in expected.items():
        assert cat[path]["status"] == exp["status"], path
        if exp["status"] == "error":
            assert cat[path]["error"], path
    # Every ok table is profiled, one row per column.
    ok = {r["table_id"]: r["cols"] for r in cat.values() if r["status"] == "ok"}
    cols = snap.read("columns")
    per_table = cols.group_by("table_id").aggregate([("ordinal", "count")]).to_pylist()
    assert {r["table_id"]: r["ordinal_count"] for r in per_table} == ok
    stages = {r["stage"] for r in wh.read("refresh_runs").to_pylist()}
    assert {"scan", "profile", "publish"} <= stages


def _mutate(lake: str, demo_lake: str) -> dict:
    """Add two tables, change two, delete two, touch one (mtime only); returns what was done."""
    good = [f.path for f in list_lake(lake) if f.path.endswith(".csv") and "broken" not in f.path]
    present = set(f.path for f in list_lake(lake))
    gt = {r["path"] for r in load_ground_truth(demo_lake)["broken"]}
    good = [p for p in good if p not in gt]
    extra = [f.path for f in list_lake(demo_lake) if f.path not in present and f.path.endswith(".csv")][:2]
    for rel in extra:
        os.makedirs(os.path.dirname(os.path.join(lake, rel)), exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), os.path.join(lake, rel))
    changed, deleted, touched = good[0:2], good[2:4], good[4]
    for rel in changed:
        with open(os.path.join(lake, rel), "a", encoding="utf-8") as fh:
            fh.write(",".join(["zz"] * _ncols(os.path.join(lake, rel))) + "\n")
    for rel in deleted:
        os.remove(os.path.join(lake, rel))
    later = time.time() + 5
    os.utime(os.path.join(lake, touched), (later, later))
    return {"added": extra, "changed": changed, "deleted": deleted, "touched": touched}


def _ncols(path: str) -> int:
    with open(path, encoding="utf-8") as fh:
        return fh.readline().count(",") + 1


def test_incremental_refresh_processes_only_changes_and_equals_full_rebuild(spark, small_lake, demo_lake, tmp_path):
    root = str(tmp_path / "wh")
    refresh(spark, root, small_lake)
    done = _mutate(small_lake, demo_lake)
    out = refresh(spark, root, small_lake)
    wh = Warehouse(root)
    scan = _stage_row(wh, out["refresh_id"], "scan")
    assert (scan["tables_added"], scan["tables_changed"], scan["tables_deleted"]) == (2, 2, 2)
    assert scan["tables_processed"] == 4  # the touched file was hashed, not parsed
    prof = _stage_row(wh, out["refresh_id"], "profile")
    assert (prof["tables_processed"], prof["tables_added"], prof["tables_changed"], prof["tables_deleted"]) == \
        (4, 2, 2, 2)
    cat = {r["path"]: r for r in load_snapshot(wh).read("catalog").to_pylist()}
    assert all(cat[p]["status"] == "deleted" for p in done["deleted"])
    # A refresh with nothing changed parses nothing.
    quiet = refresh(spark, root, small_lake)
    assert _stage_row(wh, quiet["refresh_id"], "scan")["tables_processed"] == 0
    assert _stage_row(wh, quiet["refresh_id"], "profile")["tables_processed"] == 0
    # Every index table equals a full rebuild of the same lake.
    fresh = str(tmp_path / "fresh")
    refresh(spark, fresh, small_lake)
    assert _by_path(wh) == _by_path(Warehouse(fresh))
    # ... and so does a full rebuild in place.
    refresh(spark, root, small_lake, full=True)
    assert _by_path(wh) == _by_path(Warehouse(fresh))


def test_killed_refresh_keeps_last_snapshot_and_retry_does_not_duplicate(spark, small_lake, demo_lake, tmp_path):
    root = str(tmp_path / "wh")
    first = refresh(spark, root, small_lake)
    wh = Warehouse(root)
    before = load_snapshot(wh).read("columns").num_rows
    _mutate(small_lake, demo_lake)

    # Refresh 2: scan commits, then profile dies after its tasks wrote files but before the commit.
    rid = begin_refresh(session(root))
    assert execute(spark, "scan", scan_lake.run, StageContext(root, small_lake, rid, new_attempt_token())) == 0

    def dies_before_commit(spark_, ctx):
        catalog = wh.read("catalog")
        fan_out(spark_, catalog.filter(pc.equal(catalog["status"], "ok")), profile_batch, "columns", ctx, "profile")
        raise RuntimeError("executor lost")

    assert execute(spark, "profile", dies_before_commit, StageContext(root, small_lake, rid, new_attempt_token())) == 1
    orphans = [n for n in os.listdir(wh.table_uri("columns")) if n.startswith(f"part-r{rid}-profile")]
    assert orphans
    # The previous snapshot still answers, with its rows.
    assert load_snapshot(wh).snapshot_id == first["snapshot_id"]
    assert load_snapshot(wh).read("columns").num_rows == before

    # The task retry of the same refresh commits once; a second retry after the commit adds nothing.
    ctx = StageContext(root, small_lake, rid, new_attempt_token())
    assert execute(spark, "profile", profile_columns.run, ctx) == 0
    after_commit = wh.read("columns").num_rows
    assert all(n in os.listdir(wh.table_uri("columns")) for n in orphans)  # within the grace period: kept
    assert execute(spark, "profile", profile_columns.run, StageContext(root, small_lake, rid,
                                                                        new_attempt_token())) == 0
    assert wh.read("columns").num_rows == after_commit
    publish_snapshot(Warehouse(root), rid, small_lake)
    assert load_snapshot(wh).read("columns").num_rows == after_commit
    runs = wh.read("refresh_runs").to_pylist()
    assert any(r["refresh_id"] == rid and r["stage"] == "profile" and r["status"] == "failed"
               and "executor lost" in r["message"] for r in runs)
    # No duplicates: one profile row per (table, ordinal).
    cols = load_snapshot(wh).read("columns")
    keys = set(zip(cols.column("table_id").to_pylist(), cols.column("ordinal").to_pylist()))
    assert len(keys) == cols.num_rows
    # Past the grace period the failed attempt's files, referenced by no version, go; every snapshot still reads.
    cfg = MaintenanceConfig()
    cleanup_warehouse(wh, window_seconds=cfg.window_seconds, grace_seconds=cfg.grace_seconds,
                      now=time.time() + cfg.grace_seconds + 1)
    assert not any(n in os.listdir(wh.table_uri("columns")) for n in orphans)
    assert load_snapshot(wh).read("columns").num_rows == after_commit
    assert load_snapshot(wh, first["snapshot_id"]).read("columns").num_rows == before


def test_lake_and_warehouse_as_uris(spark, small_lake, tmp_path):
    """Lake and warehouse given as URIs go through fsspec / pyarrow.fs / deltalake instead of local paths."""
    root = "file://" + str(tmp_path / "wh")
    out = refresh(spark, root, "file://" + small_lake)
    assert out["published"]
    snap = load_snapshot(Warehouse(root))
    assert snap.counts["tables_ok"] == sum(1 for r in snap.read("catalog").to_pylist() if r["status"] == "ok") > 0
    assert {r["path"] for r in snap.read("catalog").to_pylist()} == {f.path for f in list_lake(small_lake)}
