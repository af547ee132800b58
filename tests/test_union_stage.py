"""The centroids stage (k-means on a sample + Algorithm 1 per table) and union search served from a snapshot."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import numpy as np
import pytest

import discovery
from discovery.config import load_config
from discovery.data.lake import list_lake
from discovery.data.store import Warehouse, load_snapshot, snapshot_model
from discovery.indexes.union import assign_to_centroids, unionability
from discovery.indexes.union.centroids import kmeans
from discovery.indexes.union.search import DEFAULT_TAU
from discovery.indexes.union.stage import MODEL, CentroidModel
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.stages import StageContext
from discovery.transforms.quantities import codes
from spark_jobs.centroid_partitions import fit_sample
from spark_jobs.refresh import refresh

pytestmark = pytest.mark.spark


def _vectors(snap, with_quantities: bool = False):
    cv = snap.read("column_vectors", columns=["table_id", "ordinal", "vector", "quantity"])
    mat = np.asarray(cv.column("vector").to_pylist(), dtype=np.float32)
    out = cv.column("table_id").to_numpy(), cv.column("ordinal").to_numpy(), mat
    return (*out, codes(cv.column("quantity").to_pylist())) if with_quantities else out


def test_partitions_cover_every_column_once_with_true_counts(indexed_lake):
    _, wh = indexed_lake
    snap = load_snapshot(Warehouse(wh))
    model = CentroidModel.from_stored(snapshot_model(snap, MODEL))
    tids, ords, mat = _vectors(snap)
    nearest = dict(zip(zip(tids.tolist(), ords.tolist()), assign_to_centroids(mat, model.centroids).tolist()))
    members: dict[int, list[int]] = {}
    for row in snap.read("centroid_partitions").to_pylist():
        assert row["model_version"] == model.version
        members.setdefault(row["table_id"], []).extend(row["member_ordinals"])
        ids = [nearest[(row["table_id"], o)] for o in row["member_ordinals"]]
        keys, counts = np.unique(ids, return_counts=True)
        assert row["iw_centroid_ids"] == keys.tolist() and row["iw_counts"] == counts.tolist()
    expected: dict[int, list[int]] = {}
    for t, o in zip(tids.tolist(), ords.tolist()):
        expected.setdefault(t, []).append(o)
    assert {t: sorted(m) for t, m in members.items()} == {t: sorted(o) for t, o in expected.items()}
    assert len(model.centroids) == max(2, round(np.sqrt(len(mat))))


def test_exact_union_equals_brute_force_and_pgtus_finds_it(indexed_lake):
    lake, wh = indexed_lake
    ls = discovery.open(wh)
    snap = ls.snapshot
    tids, ords, mat, qty = _vectors(snap, with_quantities=True)
    gt = load_ground_truth(lake)
    queries = sorted({r["query_table"] for r in gt["union"]})[:4]
    catalog = snap.read("catalog", columns=["table_id", "path"])
    ids = dict(zip(catalog.column("path").to_pylist(), catalog.column("table_id").to_pylist()))
    for q in queries:
        exact = ls.union(q, k=5, method="exact", lexical=0)   # Definition 5 alone, as Starmie ranks
        qid = ids[q]
        qvec = mat[tids == qid][np.argsort(ords[tids == qid])]
        qq = qty[tids == qid][np.argsort(ords[tids == qid])]
        brute = []
        for t in np.unique(tids):
            if t == qid:
                continue
            score = unionability(qvec, mat[tids == t], DEFAULT_TAU, qq, qty[tids == t]).score
            if score > 0:
                brute.append((-round(score, 5), int(t)))
        brute.sort()
        assert [(r["table_id"], round(r["score"], 5)) for r in exact["results"]] == \
            [(t, -s) for s, t in brute[:5]]
        assert all(r["table_id"] != qid for r in exact["results"])
        got = ls.union(q, k=5, method="starmie")
        assert [r["table_id"] for r in got["results"]] == [r["table_id"] for r in exact["results"]]
        assert len(ls.union(q, k=5, method="tactus")["results"]) > 0


def test_default_union_through_the_pipeline_equals_exact(indexed_lake):
    # the user's path: a warehouse built by the refresh, queried through discovery.open(...).union with defaults
    lake, wh = indexed_lake
    ls = discovery.open(wh)
    queries = sorted({r["query_table"] for r in load_ground_truth(lake)["union"]})
    assert len(queries) >= 8
    fewer_than_k = 0
    for q in queries[:8]:
        for tau in (0.5, 0.7, 0.9):
            for k in (1, 5, 40):
                # Definition 5 alone, which the approximate method answers too (see test_union_lexical for the term)
                exact = ls.union(q, k=k, method="exact", tau=tau, lexical=0)
                want = [(r["table_id"], r["score"], r["alignment"]) for r in exact["results"]]
                for method in ("pgtus++", "pgtus"):
                    got = ls.union(q, k=k, method=method, tau=tau, lexical=0)
                    assert [(r["table_id"], r["score"], r["alignment"]) for r in got["results"]] == want, \
                        (q, tau, k, method)
                approx = ls.union(q, k=k, method="pgtus++-approx", tau=tau)
                assert len(approx["results"]) == len(want)
                fewer_than_k += len(want) < k
        default = ls.union(q, k=10)
        assert default["method"] == "pgtus++"
        assert default["results"] == ls.union(q, k=10, method="exact")["results"]
    assert fewer_than_k > 0  # some settings have fewer than k unionable tables: all of them are returned


def test_incremental_assigns_new_tables_to_the_current_model_and_drift_retrains(spark, small_lake, demo_lake,
                                                                                 fast_config, tmp_path):
    wh = str(tmp_path / "wh")
    refresh(spark, wh, small_lake, config_path=fast_config)
    w = Warehouse(wh)
    first = load_snapshot(w)
    before = {(r["table_id"], r["partition_id"]): r for r in first.read("centroid_partitions").to_pylist()}
    present = {f.path for f in list_lake(small_lake)}
    broken = {r["path"] for r in load_ground_truth(demo_lake)["broken"]}
    extra = [f.path for f in list_lake(demo_lake) if f.path not in present | broken and f.format == "csv"][:3]
    for rel in extra[:2]:
        os.makedirs(os.path.dirname(os.path.join(small_lake, rel)), exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), os.path.join(small_lake, rel))
    added = 2
    refresh(spark, wh, small_lake, config_path=fast_config)
    second = load_snapshot(w)
    assert second.models[MODEL] == first.models[MODEL]  # no retrain: new columns assigned to the stored centroids
    after = {(r["table_id"], r["partition_id"]): r for r in second.read("centroid_partitions").to_pylist()}
    assert {k: v for k, v in after.items() if k in before} == before
    assert len({t for t, _ in after} - {t for t, _ in before}) == added
    runs = w.read("refresh_runs").to_pylist()
    stage = [r for r in runs if r["refresh_id"] == second.refresh_id and r["stage"] == "centroids"][0]
    assert stage["tables_processed"] == added
    # A drift threshold below zero makes any new column "drift": the model is retrained and all tables rebuilt.
    cfg = tmp_path / "drift.toml"
    cfg.write_text(open(fast_config).read() + "\n[union]\ndrift_threshold = -1.0\n")
    os.makedirs(os.path.dirname(os.path.join(small_lake, extra[2])), exist_ok=True)
    shutil.copy2(os.path.join(demo_lake, extra[2]), os.path.join(small_lake, extra[2]))
    refresh(spark, wh, small_lake, config_path=str(cfg))
    third = load_snapshot(w)
    assert third.models[MODEL] != second.models[MODEL]
    rows = third.read("centroid_partitions")
    assert set(rows.column("model_version").to_pylist()) == {third.models[MODEL]}


def test_kmeans_is_fitted_on_a_bounded_seeded_sample_with_k_from_the_whole_lake(spark, small_lake, fast_config,
                                                                                 tmp_path):
    cfg = tmp_path / "sample.toml"
    cfg.write_text(open(fast_config).read() + "\n[union]\nfit_columns = 40\n")
    wh = str(tmp_path / "wh")
    assert refresh(spark, wh, small_lake, config_path=str(cfg))["published"]
    snap = load_snapshot(Warehouse(wh))
    tids, ords, mat = _vectors(snap)
    assert len(mat) > 80  # so the sample is a real part of the columns
    ctx = StageContext(wh, small_lake, snap.refresh_id, "test", config=load_config(str(cfg)))
    drawn, n = fit_sample(spark, ctx)
    sample = [tuple(v) for v in drawn]
    assert n == len(mat) and 10 <= len(sample) <= 80
    # Seeded and independent of how the files are split into tasks.
    assert sample == [tuple(v) for v in fit_sample(spark.newSession(), ctx)[0]]
    spark.conf.set("spark.sql.files.maxPartitionBytes", "1k")
    try:
        assert sample == [tuple(v) for v in fit_sample(spark, ctx)[0]]
    finally:
        spark.conf.unset("spark.sql.files.maxPartitionBytes")
    assert set(sample) <= {tuple(v) for v in mat}
    model = CentroidModel.from_stored(snapshot_model(snap, MODEL))
    assert model.n_columns == len(mat) and len(model.centroids) == round(np.sqrt(len(mat)))
    cfg_union = load_config(str(cfg)).union
    np.testing.assert_array_equal(model.centroids, kmeans(drawn, len(model.centroids), seed=cfg_union.seed,
                                                          iterations=cfg_union.max_iter))
    covered = {(r["table_id"], o) for r in snap.read("centroid_partitions").to_pylist() for o in r["member_ordinals"]}
    assert covered == set(zip(tids.tolist(), ords.tolist()))


def test_union_cli(indexed_lake):
    lake, wh = indexed_lake
    q = load_ground_truth(lake)["union"][0]["query_table"]
    bin_dir = os.path.dirname(sys.executable)
    proc = subprocess.run([os.path.join(bin_dir, "lakescout"), "union", "--warehouse", wh, "--query", q, "-k", "3",
                           "--json"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert set(out) == {"snapshot_id", "query", "method", "results", "stats"}
    assert out["method"] == "pgtus++" and len(out["results"]) == 3
    r = out["results"][0]
    assert set(r) == {"rank", "table_id", "path", "score", "alignment"} and r["rank"] == 1
    assert all(len(a) == 3 for a in r["alignment"])
    text = subprocess.run([os.path.join(bin_dir, "lakescout"), "union", "--warehouse", wh, "--query", q],
                          capture_output=True, text=True, timeout=300).stdout
    assert "exact matchings" in text and q not in text.split("\n", 1)[1]
    bad = subprocess.run([os.path.join(bin_dir, "lakescout"), "union", "--warehouse", wh, "--query", "nope.csv"],
                         capture_output=True, text=True, timeout=300)
    assert bad.returncode == 2 and "neither a file nor a table of the lake" in bad.stderr
