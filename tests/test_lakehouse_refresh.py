"""The refresh over lakehouse tables: one catalog row per dataset, latest versions only, partition keys as columns,
version-based change detection, stale tables that keep their rows, and include / exclude patterns."""
from __future__ import annotations

import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import discovery
from discovery.data.store import Warehouse, load_snapshot
from discovery.orchestration.demo_lake import layouts
from spark_jobs.refresh import refresh

pytestmark = [pytest.mark.spark, pytest.mark.slow]

CITIES = pa.table({"city": ["Oslo", "Bergen", "Paris", "Lyon", "Rome", "Milan", "Madrid", "Seville"] * 3,
                   "country": ["Norway", "Norway", "France", "France", "Italy", "Italy", "Spain", "Spain"] * 3,
                   "population": [str(100 + i) for i in range(24)]})


def _catalog(wh: str) -> dict:
    return {r["path"]: r for r in load_snapshot(Warehouse(wh)).read("catalog").to_pylist()}


def _scan(wh: str, refresh_id: int) -> dict:
    runs = Warehouse(wh).read("refresh_runs")
    rows = runs.filter(pc.and_(pc.equal(runs["refresh_id"], refresh_id), pc.equal(runs["stage"], "scan")))
    return [r for r in rows.to_pylist() if r["status"] == "ok"][0]


def test_lakehouse_lake_through_the_refresh(spark, tmp_path):
    from deltalake import DeltaTable, write_deltalake

    lake, wh = str(tmp_path / "lake"), str(tmp_path / "wh")
    layouts.write_delta(f"{lake}/geo/cities_delta", CITIES, older=CITIES.slice(0, 2).select(["city"]))
    layouts.write_hive(f"{lake}/geo/cities_hive", CITIES, ["country"])
    layouts.write_spark_parts(f"{lake}/geo/cities_parts", CITIES)
    layouts.write_compressed_csv(f"{lake}/exports/cities.csv.gz", CITIES)
    layouts.write_json_lines(f"{lake}/exports/cities.jsonl", CITIES)
    os.makedirs(f"{lake}/scratch")
    layouts.write_compressed_csv(f"{lake}/scratch/tmp.csv.gz", CITIES)
    out = refresh(spark, wh, lake, exclude=("/scratch/",))
    assert out["published"]
    cat = _catalog(wh)
    assert {p: r["format"] for p, r in cat.items()} == {
        "geo/cities_delta": "delta", "geo/cities_hive": "hive/parquet", "geo/cities_parts": "parts/parquet",
        "exports/cities.csv.gz": "csv.gz", "exports/cities.jsonl": "json"}
    assert all(r["status"] == "ok" and r["rows"] == 24 and r["cols"] == 3 for r in cat.values())
    assert cat["geo/cities_delta"]["version"] == "1"
    columns = load_snapshot(Warehouse(wh)).read("columns").to_pylist()
    ids = {r["table_id"]: p for p, r in cat.items()}
    hive_cols = {c["name"]: c for c in columns if ids[c["table_id"]] == "geo/cities_hive"}
    assert set(hive_cols) == {"city", "country", "population"} and hive_cols["country"]["distinct_count"] == 4
    # every layout holds the same table: each is unionable with the others, and the n-ary join finds them all
    answer = discovery.open(wh).nary("geo/cities_delta", key="city,country", k=10)
    assert {r["path"] for r in answer["results"]} == set(cat) - {"geo/cities_delta"}

    # A vacuum commits to the log but changes no data: nothing is re-read.  A new commit is a change.
    DeltaTable(f"{lake}/geo/cities_delta").vacuum(retention_hours=0, enforce_retention_duration=False,
                                                   dry_run=False)
    out = refresh(spark, wh, lake, exclude=("/scratch/",))
    scan = _scan(wh, out["refresh_id"])
    assert (scan["tables_added"], scan["tables_changed"], scan["tables_deleted"]) == (0, 0, 0)
    kept = _catalog(wh)["geo/cities_delta"]   # read again, not re-parsed: the last scan's fields are kept
    assert (kept["status"], kept["rows"], kept["cols"]) == ("ok", 24, 3)
    assert kept["warnings"] == cat["geo/cities_delta"]["warnings"]
    write_deltalake(f"{lake}/geo/cities_delta", CITIES.slice(0, 4), mode="append")
    out = refresh(spark, wh, lake, exclude=("/scratch/",))
    assert (_scan(wh, out["refresh_id"])["tables_changed"], _catalog(wh)["geo/cities_delta"]["rows"]) == (1, 28)

    # A table that stops reading (a commit whose log entry is not JSON) turns stale: it keeps its index rows and
    # answers, with the reason, and is read again by the next refresh.
    log = f"{lake}/geo/cities_delta/_delta_log"
    version = max(int(n.split(".")[0]) for n in os.listdir(log) if n.endswith(".json"))
    broken = f"{log}/{version + 1:020d}.json"
    open(broken, "w").write("not a delta log entry\n")
    out = refresh(spark, wh, lake, exclude=("/scratch/",))
    row = _catalog(wh)["geo/cities_delta"]
    assert row["status"] == "stale" and "Delta" in row["error"] and row["rows"] == 28
    answer = discovery.open(wh).nary("geo/cities_parts", key="city,country", k=10)
    assert "geo/cities_delta" in {r["path"] for r in answer["results"]}
    status = discovery.open(wh).status()
    assert status["tables"]["stale"] == 1 and status["errors"][0]["status"] == "stale"
    os.remove(broken)
    out = refresh(spark, wh, lake, exclude=("/scratch/",))
    assert _catalog(wh)["geo/cities_delta"]["status"] == "ok"
