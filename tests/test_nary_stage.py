"""The XASH refresh stage: incremental postings equal a rebuild, model refits rebuild everything, statistics and the
row bound; plus the statistics sketch and the in-memory resize of an index."""
from __future__ import annotations

import importlib
import os
import random
import shutil
from dataclasses import replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from discovery.config import Config, XashConfig
from discovery.data.store import Warehouse, latest_model, load_snapshot, new_attempt_token
from discovery.ground.xash import char_counts, XashModel
from discovery.indexes.nary import sketch
from discovery.indexes.nary.loader import load_nary_index
from discovery.indexes.nary.stage import MODEL_NAME, corpus_statistics, model_from_stored, truncated_tables, xash_batch
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.stages import StageContext
from spark_jobs.common import execute
from sessions import session

STAGE_MODULES = ("scan_lake", "profile_columns", "xash_postings")
POSTING_COLUMNS = ["table_id", "column", "row", "value", "superkey", "content_hash", "model_version"]


def run_refresh(spark, warehouse: str, lake: str, config: Config, full: bool = False) -> dict:
    """Scan, profile and the XASH stage, then publish (the stages the n-ary index depends on)."""
    refresh_id = begin_refresh(session(warehouse))
    for name in STAGE_MODULES:
        module = importlib.import_module(f"spark_jobs.{name}")
        ctx = StageContext(warehouse, lake, refresh_id, new_attempt_token(), full, config)
        assert execute(spark, module.STAGE, module.run, ctx) == 0
    return publish_snapshot(Warehouse(warehouse), refresh_id, lake)


def xash_run(warehouse: str) -> dict:
    runs = Warehouse(warehouse).read("refresh_runs")
    runs = runs.filter(pc.equal(runs["stage"], "xash")).sort_by([("refresh_id", "descending")])
    return runs.slice(0, 1).to_pylist()[0]


def postings(warehouse: str) -> pa.Table:
    return Warehouse(warehouse).read("xash_postings").select(POSTING_COLUMNS).sort_by(
        [(c, "ascending") for c in ("table_id", "column", "row")])


def expected_postings(warehouse: str, lake: str, config: Config) -> pa.Table:
    """Postings of every ok table of the catalog built directly (no Spark) with the warehouse's current model."""
    wh = Warehouse(warehouse)
    stored = latest_model(wh, MODEL_NAME)
    catalog = wh.read("catalog")
    ok = catalog.filter(pc.equal(catalog["status"], "ok"))
    ctx = StageContext(warehouse, lake, 0, "x", False, config)
    out, _, counts = xash_batch(ok, ctx, model_from_stored(stored), stored.version)
    assert counts["tables_failed"] == 0
    return out.select(POSTING_COLUMNS).sort_by([(c, "ascending") for c in ("table_id", "column", "row")])


def plain_csv_tables_of(demo_lake: str) -> list[str]:
    """Good UTF-8 CSV tables of the sample lake, which a test can change by appending bytes."""
    from discovery.orchestration.demo_lake import load_ground_truth

    return sorted(t["path"] for t in load_ground_truth(demo_lake)["tables"]
                  if t["encoding"] == "utf-8" and t["path"].endswith(".csv") and t["role"] != "broken")


def plain_csv_tables(warehouse: str, demo_lake: str) -> list[str]:
    """Indexed UTF-8 CSV tables of a warehouse's lake."""
    catalog = Warehouse(warehouse).read("catalog")
    ok = set(catalog.filter(pc.equal(catalog["status"], "ok")).column("path").to_pylist())
    return [p for p in plain_csv_tables_of(demo_lake) if p in ok]


def append_copy_of_last_line(path: str) -> None:
    with open(path, "rb") as fh:
        data = fh.read().rstrip(b"\r\n")
    with open(path, "ab") as fh:
        fh.write(b"\n" + data.rsplit(b"\n", 1)[-1] + b"\n")


def by_path(warehouse: str, rows: pa.Table) -> pa.Table:
    """Postings keyed by lake path instead of table id (ids are per warehouse), without the model version."""
    catalog = Warehouse(warehouse).read("catalog", columns=["table_id", "path"])
    paths = dict(zip(catalog.column("table_id").to_pylist(), catalog.column("path").to_pylist()))
    path = pa.array([paths[t] for t in rows.column("table_id").to_pylist()], pa.string())
    out = rows.drop_columns(["table_id", "model_version"]).append_column("path", path)
    return out.sort_by([("path", "ascending"), ("column", "ascending"), ("row", "ascending")])


def content_version(version: str) -> str:
    return version.rsplit("-r", 1)[0]


def test_incremental_postings_equal_rebuild_and_refit_rebuilds_everything(spark, small_lake, demo_lake, tmp_path):
    wh = str(tmp_path / "wh")
    keep = replace(Config(), xash=XashConfig(drift_threshold=1.0))
    run_refresh(spark, wh, small_lake, keep)
    first = latest_model(Warehouse(wh), MODEL_NAME)
    assert "first build" in xash_run(wh)["message"]
    assert postings(wh).equals(expected_postings(wh, small_lake, keep))

    # delete one table, change one, add one: only those are processed, with the model kept
    files = plain_csv_tables(wh, demo_lake)
    os.remove(os.path.join(small_lake, files[0]))
    append_copy_of_last_line(os.path.join(small_lake, files[1]))
    present = set(Warehouse(wh).read("catalog").column("path").to_pylist())
    extra = next(p for p in plain_csv_tables_of(demo_lake) if p not in present)
    os.makedirs(os.path.dirname(os.path.join(small_lake, extra)), exist_ok=True)
    shutil.copy2(os.path.join(demo_lake, extra), os.path.join(small_lake, extra))
    run_refresh(spark, wh, small_lake, keep)
    run = xash_run(wh)
    assert (run["tables_added"], run["tables_changed"], run["tables_deleted"]) == (1, 1, 1)
    assert run["tables_processed"] == 2 and "refitted" not in run["message"]
    assert latest_model(Warehouse(wh), MODEL_NAME).version == first.version
    incremental = postings(wh)
    assert incremental.equals(expected_postings(wh, small_lake, keep))
    stats = Warehouse(wh).read("xash_stats")
    ok = Warehouse(wh).read("catalog").filter(pc.equal(Warehouse(wh).read("catalog")["status"], "ok"))
    assert sorted(stats.column("table_id").to_pylist()) == sorted(ok.column("table_id").to_pylist())
    assert set(stats.column("model_version").to_pylist()) == {first.version}

    # with a zero drift threshold any change refits the model and every posting is rebuilt with it
    refit = replace(Config(), xash=XashConfig(drift_threshold=0.0))
    append_copy_of_last_line(os.path.join(small_lake, files[2]))
    run_refresh(spark, wh, small_lake, refit)
    run = xash_run(wh)
    assert "refitted (drift" in run["message"]
    model = latest_model(Warehouse(wh), MODEL_NAME)
    assert model.version != first.version
    rebuilt = postings(wh)
    assert set(rebuilt.column("model_version").to_pylist()) == {model.version}
    assert set(Warehouse(wh).read("xash_stats").column("model_version").to_pylist()) == {model.version}

    # the refitted index equals a first build of the same lake in a new warehouse
    fresh = str(tmp_path / "fresh")
    run_refresh(spark, fresh, small_lake, refit)
    other = latest_model(Warehouse(fresh), MODEL_NAME)
    assert content_version(other.version) == content_version(model.version)
    assert by_path(wh, rebuilt).equals(by_path(fresh, postings(fresh)))
    snap = load_snapshot(Warehouse(wh))
    assert snap.models[MODEL_NAME] == model.version
    assert load_nary_index(snap).n_postings == rebuilt.num_rows


def test_row_bound_is_applied_and_reported(demo_lake, tmp_path):
    from discovery.orchestration.demo_lake import load_ground_truth
    from discovery.data.lake.formats import file_format

    truth = load_ground_truth(demo_lake)
    big = sorted((t for t in truth["tables"] if t["role"] == "nary"), key=lambda t: -t["rows"])[:3]
    work = pa.table({"table_id": pa.array([1, 2, 3], pa.int64()), "path": [t["path"] for t in big],
                     "format": [file_format(t["path"]) for t in big],
                     "bytes": [os.path.getsize(os.path.join(demo_lake, t["path"])) for t in big],
                     "content_hash": ["h1", "h2", "h3"]})
    config = replace(Config(), xash=XashConfig(max_rows_per_table=5))
    ctx = StageContext(str(tmp_path), demo_lake, 0, "x", False, config)
    model = XashModel.from_counts({"a": 1}, 10)
    out, stats, counts = xash_batch(work, ctx, model, "v1")
    assert counts["tables_truncated"] == 3 and counts["tables_processed"] == 3
    assert pc.max(out["row"]).as_py() == 4
    assert truncated_tables(stats) == [1, 2, 3]
    assert stats.column("rows_indexed").to_pylist() == [5, 5, 5]
    assert set(out.column("model_version").to_pylist()) == {"v1"}


def test_corpus_statistics_merge_per_table_parts():
    rng = random.Random(3)
    words = [f"w{rng.randrange(10**6)}é" for _ in range(5000)]
    tables = [words[i:i + 1500] for i in range(0, 5000, 700)]
    rows = {"char_codes": [], "char_counts": [], "hll": []}
    for values in tables:
        counts = char_counts(values)
        rows["char_codes"].append([ord(c) for c in sorted(counts)])
        rows["char_counts"].append([counts[c] for c in sorted(counts)])
        rows["hll"].append(sketch.to_bytes(sketch.registers(pa.array(values))))
    chars, n_unique = corpus_statistics(pa.table(rows))
    expected = char_counts([v for values in tables for v in values])
    assert chars == expected
    distinct = len(set(words))
    assert abs(n_unique - distinct) <= 0.05 * distinct


@pytest.mark.parametrize("n", [0, 1, 10, 300, 20000])
def test_sketch_estimates_distinct_counts(n):
    values = pa.array([f"value-{i % max(n, 1)}" for i in range(2 * n)], pa.string())
    regs = sketch.registers(values)
    assert np.array_equal(sketch.from_bytes(sketch.to_bytes(regs)), regs)
    assert abs(sketch.estimate(regs) - n) <= max(1, 0.05 * n)


def test_resized_index_has_no_false_negatives_and_same_answers():
    from test_nary import brute_force, build_index, generated_lake

    rng = random.Random(11)
    for m in (2, 3, 2, 3):
        tables, query = generated_lake(rng, m=m)
        key = [f"q{i}" for i in range(m)]
        index = build_index(tables, bits=128)
        for bits in (256, 512):
            resized = index.resized(bits)
            assert resized.model.bits == bits and resized.row_superkey.shape == (index.n_rows, bits // 64)
            direct = build_index(tables, bits=bits)
            for method in ("mate", "bloom"):
                got = [(m.table_id, m.joinability, m.mapping) for m in resized.search(query, key, k=5,
                                                                                    method=method).results]
                assert got == brute_force(tables, query, key, 5)
            assert direct.search(query, key, k=5).results == resized.search(query, key, k=5).results
