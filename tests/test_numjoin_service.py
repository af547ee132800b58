"""The numerical join through the user paths: a lake refreshed by the ``numeric`` stage, searched with
``discovery.open(...).join`` and ``lakescout join``, every answer equal to a brute force over the lake files.

The lake is drawn so that exactness is tested where it breaks: integer values (distances exactly tau are common),
duplicated values and coordinates of one place under several tables, vectors on an integer grid.  The reference reads
the files with pandas, takes each column's distinct values and compares every pair; it knows nothing of the index.
"""
from __future__ import annotations

import importlib
import json
import math
import os
import subprocess
import sys

import numpy as np
import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq
import pytest

import discovery
from discovery.config import load_config
from discovery.data.store import Warehouse, load_snapshot, new_attempt_token
from discovery.indexes.numjoin import brute_force
from discovery.indexes.numjoin.service import allowed_sets, loaded_numeric, set_values
from discovery.indexes.numjoin.stage import family_name
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.query.params import ParameterError
from discovery.query.resolve import QueryError
from discovery.stages import StageContext
from discovery.transforms.quantities import cells_quantity, compatible
from sessions import session

pytestmark = [pytest.mark.spark]

STAGES = ("scan", "profile", "numeric")
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def refresh_numeric(spark, warehouse: str, lake: str) -> int:
    from spark_jobs.common import execute
    from spark_jobs.stages import STAGES as ALL

    refresh_id = begin_refresh(session(warehouse))
    for stage in STAGES:
        module = importlib.import_module(f"spark_jobs.{ALL[stage]}")
        ctx = StageContext(warehouse, lake, refresh_id, new_attempt_token(), False, load_config(None))
        assert execute(spark, module.STAGE, module.run, ctx) == 0, stage
    return publish_snapshot(Warehouse(warehouse), refresh_id, lake)["snapshot_id"]


def make_lake(lake: str, seed: int = 3) -> None:
    rng = np.random.default_rng(seed)
    os.makedirs(lake, exist_ok=True)
    places = np.column_stack([rng.uniform(51.3, 51.7, 40), rng.uniform(-0.4, 0.2, 40)])
    for t in range(6):
        n = int(rng.integers(15, 40))
        pick = rng.choice(40, n)
        jitter = rng.normal(0, 2e-4, (n, 2)) * (t % 3)           # table 0 and 3: the very same points
        pd.DataFrame({
            "name": [f"site {t}-{i}" for i in range(n)],
            "lat" if t % 2 else "Latitude": np.round(places[pick, 0] + jitter[:, 0], 6),
            "lng" if t % 2 else "Longitude": np.round(places[pick, 1] + jitter[:, 1], 6),
            "count": rng.integers(0, 30 + 10 * t, n),           # integers: exact boundary distances
            "reading": np.round(rng.normal(20, 3, n), 1),
        }).to_csv(os.path.join(lake, f"t{t}.csv"), index=False)
    for t in range(4):
        n = int(rng.integers(10, 25))
        vec = rng.integers(-2, 3, (n, 3)).astype(np.float32)     # an integer grid: distances 1, sqrt 2, ... exactly
        pq.write_table(pa.table({"id": np.arange(n), "emb": pa.array(vec.tolist(), pa.list_(pa.float32()))}),
                       os.path.join(lake, f"v{t}.parquet"))
    pd.DataFrame({"word": ["a", "b", "c"], "flag": ["true", "false", "true"]}).to_csv(
        os.path.join(lake, "flags.csv"), index=False)


# -- the reference -----------------------------------------------------------------------------------------------------
def lake_sets(lake: str) -> dict:
    """{(path, "col" or "lat,lng", metric): distinct values} read with pandas; each number column's quantity (the
    rule both sides apply, :func:`discovery.transforms.quantities.cells_quantity` over its cells as written) under
    ``("quantity", path, column)``."""
    out = {}
    for f in sorted(os.listdir(lake)):
        p = os.path.join(lake, f)
        if f.endswith(".csv"):
            df = pd.read_csv(p)
            for c in df.columns:
                if pd.api.types.is_numeric_dtype(df[c]) and not pd.api.types.is_bool_dtype(df[c]):
                    out[(f, c, "absolute")] = np.unique(df[c].dropna().to_numpy(float))[:, None]
                    out[("quantity", f, c)] = cells_quantity(c, pd.read_csv(p, dtype=str)[c].dropna().tolist())
            lat = next((c for c in df.columns if c.lower() in ("lat", "latitude")), None)
            lng = next((c for c in df.columns if c.lower() in ("lng", "longitude")), None)
            if lat and lng:
                out[(f, f"{lat},{lng}", "haversine")] = np.unique(df[[lat, lng]].to_numpy(float), axis=0)
        elif f.endswith(".parquet"):
            t = pq.read_table(p)
            out[(f, "id", "absolute")] = np.unique(t.column("id").to_numpy().astype(float))[:, None]
            out[("quantity", f, "id")] = cells_quantity("id", [str(v) for v in t.column("id").to_pylist()])
            emb = np.array(t.column("emb").to_pylist(), dtype=np.float64)
            out[(f, "emb", "euclidean")] = np.unique(emb, axis=0)
            out[(f, "emb", "angular")] = np.unique(emb[np.abs(emb).sum(axis=1) > 0], axis=0)
    return out


def reference(sets: dict, query_key: tuple, tau: float, similarity: str = "hit") -> dict:
    """{(path, column): score} of every set of the query's metric with at least one match, the query's table out."""
    metric = query_key[2]
    mine = sets.get(("quantity", *query_key[:2]), "")
    keys = [k for k in sets if k[2] == metric and k[0] != query_key[0]
            and compatible(mine, sets.get(("quantity", *k[:2]), ""))]
    found = brute_force([sets[k] for k in keys], sets[query_key], tau, metric, T=0.0, similarity=similarity)
    return {keys[s.set_id][:2]: s.score for s in found.sets}


def answer(out: dict) -> dict:
    return {(r["path"], r["column"]): r["matched"] for r in out["results"]}


@pytest.fixture(scope="module")
def env(spark, tmp_path_factory):
    root = tmp_path_factory.mktemp("numjoin")
    lake, wh = str(root / "lake"), str(root / "wh")
    make_lake(lake)
    refresh_numeric(spark, wh, lake)
    return {"lake": lake, "warehouse": wh, "sets": lake_sets(lake)}


CASES = [("t1.csv", "count", "absolute", [0.0, 1.0, 2.0, 5.0]),
         ("t2.csv", "reading", "absolute", [0.0, 0.1, 0.5]),
         ("t0.csv", "Latitude,Longitude", "haversine", [0.0, 5.0, 30.0, 200.0]),
         ("t3.csv", "lat,lng", "haversine", [0.0, 25.0]),
         ("v0.parquet", "emb", "euclidean", [0.0, 1.0, math.sqrt(2.0), 2.0]),
         ("v1.parquet", "emb", "angular", [0.0, 0.5, math.pi / 4])]


@pytest.mark.parametrize("path,column,metric,taus", CASES)
def test_threshold_answers_equal_brute_force(env, path, column, metric, taus):
    """T = 0: every lake column group with a match, each with its exact score; ties and boundary distances are
    common on this lake (integers, repeated points, an integer grid)."""
    ls = discovery.open(env["warehouse"])
    query = os.path.join(env["lake"], path)
    for tau in taus:
        for similarity in ("hit", "all"):
            out = ls.join(query, column, tau=tau, T=0.0, similarity=similarity,
                          metric=metric if metric in ("euclidean", "angular") else None)
            expected = reference(env["sets"], (path, column, metric), tau, similarity)
            assert answer(out) == expected, (tau, similarity)
            for r in out["results"]:
                assert all(d <= tau for _, _, d in r["matches"])
    assert any(reference(env["sets"], (path, column, metric), t) for t in taus)  # not vacuous


@pytest.mark.parametrize("method", ["pexeso", "pnodom", "exact"])
def test_top_k_equals_brute_force(env, method):
    ls = discovery.open(env["warehouse"])
    query = os.path.join(env["lake"], "t1.csv")
    expected = reference(env["sets"], ("t1.csv", "count", "absolute"), 1.0)
    ranked = sorted(expected.values(), reverse=True)
    for k in (1, 3, 100):
        out = ls.join(query, "count", tau=1.0, top_k=k, method=method)
        assert [r["matched"] for r in out["results"]] == ranked[:k]
        assert all(expected[key] == v for key, v in answer(out).items())
        assert [r["rank"] for r in out["results"]] == list(range(1, len(out["results"]) + 1))
    if method == "exact":   # brute force reports the pairs it compared: every query value with every lake value
        # of a compatible quantity (the coordinates' and the ids' columns are not counts)
        ix, sets = loaded_numeric(load_snapshot(Warehouse(env["warehouse"]))).families[family_name("absolute", 1)]
        allowed = allowed_sets(out["stats"]["query_quantity"], sets)
        assert out["stats"]["query_quantity"] == "count" and 0 < allowed.sum() < ix.n_sets
        compared = sum(set_values(ix, s).shape[0] for s in range(ix.n_sets) if allowed[s])
        assert out["stats"]["distance_computations"] == out["stats"]["query_values"] * compared
    else:
        assert 0 < out["stats"]["distance_computations"]


def test_tau_share_and_defaults(env):
    """tau_share is a fraction of the query column's spread; the default for coordinates is tau_metres."""
    ls = discovery.open(env["warehouse"])
    query = os.path.join(env["lake"], "t1.csv")
    values = env["sets"][("t1.csv", "count", "absolute")]
    spread = float(values.max() - values.min())
    out = ls.join(query, "count", tau_share=0.05, T=0.0)
    assert out["tau"] == pytest.approx(0.05 * spread)
    assert answer(out) == reference(env["sets"], ("t1.csv", "count", "absolute"), 0.05 * spread)
    coords = ls.join(os.path.join(env["lake"], "t0.csv"), "Latitude,Longitude")
    assert coords["tau"] == load_config().numjoin.tau_metres and coords["stats"]["units"] == "metres"
    # table 3 holds the very points of table 0: first, every query value matched at distance 0
    assert coords["results"][0]["path"] == "t3.csv" and coords["results"][0]["matches"][0][2] == 0.0


def test_matched_pairs_are_values_and_distances(env):
    ls = discovery.open(env["warehouse"])
    out = ls.join(os.path.join(env["lake"], "t1.csv"), "lng,lat", tau=100.0, T=0.0)  # either order
    assert out["column"] == "lat,lng" and out["kind"] == "coordinates"
    from discovery.indexes.numjoin import get_metric

    hv = get_metric("haversine")
    for r in out["results"]:
        for q, x, d in r["matches"]:
            assert len(q) == len(x) == 2
            assert d == pytest.approx(float(hv.distance(np.array([q]), np.array([x]))[0]), abs=1e-6) and d <= 100.0


def test_refusals_are_one_line(env):
    ls = discovery.open(env["warehouse"])
    flags = os.path.join(env["lake"], "flags.csv")
    with pytest.raises(QueryError, match=r"is bool, neither text nor numbers: columns that can be joined: word$"):
        ls.join(flags, "flag")
    with pytest.raises(ParameterError, match=r"tau must be a fraction in \(0, 1\) of the maximum distance for a text "
                                             r"column.*got 3\.0 \(column 'word' is text\)$"):
        ls.join(flags, "word", tau=3.0)
    with pytest.raises(ParameterError, match="semantic-join method"):
        ls.join(os.path.join(env["lake"], "t1.csv"), "count", method="pexeso-h")
    with pytest.raises(ParameterError, match=r"tau must be a fraction .* or a distance >= 0 .*, got -1\.0$"):
        ls.join(os.path.join(env["lake"], "t1.csv"), "count", tau=-1.0)
    with pytest.raises(ParameterError, match="has no column"):
        ls.join(os.path.join(env["lake"], "t1.csv"), "lat,nope")


def test_cli_numeric_join(env):
    lakescout = os.path.join(os.path.dirname(sys.executable), "lakescout")
    cmd = [lakescout, "join", "--warehouse", env["warehouse"], "--query", os.path.join(env["lake"], "t1.csv")]
    proc = subprocess.run(cmd + ["--column", "count", "--tau", "2", "--T", "0", "--json"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert answer(json.loads(proc.stdout)) == {tuple(json.loads(json.dumps(k))): v for k, v in reference(
        env["sets"], ("t1.csv", "count", "absolute"), 2.0).items()}
    proc = subprocess.run(cmd + ["--column", "lat,lng"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and "metres" in proc.stdout, proc.stderr
    proc = subprocess.run([lakescout, "join", "--warehouse", env["warehouse"], "--query",
                           os.path.join(env["lake"], "flags.csv"), "--column", "flag"], capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 2 and "columns that can be joined: word" in proc.stderr
    assert len(proc.stderr.strip().splitlines()) == 1


def test_incremental_refresh_replaces_and_drops_rows(spark, env, tmp_path):
    """A changed table's groups are rebuilt, a deleted table's rows dropped, the others untouched; answers follow."""
    import shutil

    lake, wh = str(tmp_path / "lake"), str(tmp_path / "wh")
    shutil.copytree(env["lake"], lake)
    shutil.copytree(env["warehouse"], wh)
    before = Warehouse(wh).read("numeric_sets", columns=["table_id", "content_hash"]).to_pylist()
    os.remove(os.path.join(lake, "t5.csv"))
    df = pd.read_csv(os.path.join(lake, "t4.csv"))
    df["count"] = df["count"] + 1000
    df.to_csv(os.path.join(lake, "t4.csv"), index=False)
    refresh_numeric(spark, wh, lake)
    after = Warehouse(wh).read("numeric_sets", columns=["table_id", "content_hash"]).to_pylist()
    changed = {r["table_id"] for r in after} ^ {r["table_id"] for r in before}
    assert len(changed) == 1  # t5 gone
    assert {(r["table_id"], r["content_hash"]) for r in after} - {(r["table_id"], r["content_hash"]) for r in before}
    sets = lake_sets(lake)
    ls = discovery.open(wh)
    out = ls.join(os.path.join(lake, "t1.csv"), "count", tau=2.0, T=0.0)
    assert answer(out) == reference(sets, ("t1.csv", "count", "absolute"), 2.0)
    assert not any(p == "t5.csv" for p, _ in answer(out))


def test_batch_and_standing_queries(env, tmp_path):
    """A query batch and a standing query carry numerical joins, with the parameters the API takes; results are
    recorded with their joinability as score."""
    import shutil

    from discovery.surfaces.batch import BatchError, batch_results, run_batch
    from discovery.surfaces.standing import run_standing, save_standing

    wh = str(tmp_path / "wh")
    shutil.copytree(env["warehouse"], wh)
    spec = {"name": "numeric", "queries": [
        {"id": "coords", "kind": "join", "query": "t0.csv", "params": {"column": "Latitude,Longitude", "tau": 30.0,
                                                                       "T": 0.0}},
        {"id": "counts", "kind": "join", "query": "t1.csv", "params": {"column": "count", "tau_share": 0.02}}]}
    summary = run_batch(session(wh), spec, served=True)
    rows = batch_results(Warehouse(wh), summary["batch_id"]).to_pylist()
    ls = discovery.open(wh)
    direct = ls.join(os.path.join(env["lake"], "t0.csv"), "Latitude,Longitude", tau=30.0, T=0.0)
    got = {(r["path"], r["column"]): r["score"] for r in rows if r["query_id"] == "coords"}
    assert got == {(r["path"], r["column"]): r["joinability"] for r in direct["results"]} and got
    assert answer(direct) == reference(env["sets"], ("t0.csv", "Latitude,Longitude", "haversine"), 30.0)
    with pytest.raises(BatchError, match="field 'column'.*neither text nor numbers"):
        run_batch(session(wh), {"queries": [{"kind": "join", "query": "flags.csv", "params": {"column": "flag"}}]},
                  served=True)
    with pytest.raises(BatchError, match="field 'tau'"):
        run_batch(session(wh), {"queries": [{"kind": "join", "query": "flags.csv", "params": {"column": "word",
                                                                                    "tau": 5}}]}, served=True)
    save_standing(session(wh), "places", {"queries": [spec["queries"][0]]})
    first = run_standing(session(wh), "places")
    assert first["changes"]["new"] == len(direct["results"])


def test_a_place_found_by_values_is_in_the_index_and_joins(spark, tmp_path):
    """Sensors whose positions sit in columns ``x`` / ``y`` (no latitude word): the stage indexes them as a place, a
    query by names finds them, and naming the pair explicitly from their side finds the stations; shares in range
    written with one decimal are no place."""
    rng = np.random.default_rng(1)
    lake, wh = str(tmp_path / "lake"), str(tmp_path / "wh")
    os.makedirs(lake)
    lat, lng = np.round(rng.uniform(51.4, 51.6, 30), 6), np.round(rng.uniform(-0.2, 0.1, 30), 6)
    pd.DataFrame({"station": [f"s{i}" for i in range(30)], "lat": lat, "lng": lng}).to_csv(f"{lake}/stations.csv",
                                                                                        index=False)
    pd.DataFrame({"sensor": [f"x{i}" for i in range(20)], "x": lng[:20] + 1e-6, "y": lat[:20]}).to_csv(
        f"{lake}/sensors.csv", index=False)
    pd.DataFrame({"region": [f"r{i}" for i in range(30)], "a": np.round(rng.uniform(40, 60, 30), 1),
                  "b": np.round(rng.uniform(0, 30, 30), 1)}).to_csv(f"{lake}/shares.csv", index=False)
    refresh_numeric(spark, wh, lake)
    rows = load_snapshot(Warehouse(wh)).read("numeric_sets", columns=["table_id", "kind", "names", "rule"]).to_pylist()
    assert sorted(tuple(r["names"]) for r in rows if r["kind"] == "coordinates") == [("lat", "lng"), ("y", "x")]
    ls = discovery.open(wh)
    found = ls.join(os.path.join(lake, "stations.csv"), "lat,lng")["results"]
    assert [(r["path"], r["column"], r["matched"]) for r in found] == [("sensors.csv", "y,x", 20)]
    back = ls.join(os.path.join(lake, "sensors.csv"), "y,x")["results"]
    assert [(r["path"], r["column"]) for r in back] == [("stations.csv", "lat,lng")]
