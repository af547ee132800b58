"""The pivots stage (PEXESO index rows) and semantic-join search served from a snapshot: exact, with evidence."""
from __future__ import annotations

import json
import os
import shlex
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pa_csv
import pytest

import discovery
from discovery.data.store import Warehouse, load_snapshot, snapshot_model
from discovery.indexes.join.cost import MIN_VECTORS, SMALL_LAKE
from discovery.indexes.join.pivots import map_to_pivots
from discovery.indexes.join.stage import COLUMN_KEY_BASE, MODEL, PivotModel
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.query.resolve import resolve_query
from discovery.query.vectors import query_value_vectors
from join_data import check_context_top_k, context_slack

pytestmark = pytest.mark.spark


def _brute_force(snap, qvec: np.ndarray, tau: float, T: float, exclude: int | None,
                 value_of: np.ndarray | None = None) -> dict[tuple[int, int], int]:
    """Matched query values per lake column, over every stored vector (whole values and segments): a query value
    matches when any of its vectors (``value_of`` names the value of each) lies within tau of a vector of the column."""
    value_of = np.arange(len(qvec)) if value_of is None else np.asarray(value_of)
    n_values = np.unique(value_of).size
    vv = snap.read("value_vectors", columns=["table_id", "ordinal", "vector"])
    mat = np.asarray(vv.column("vector").to_pylist(), dtype=np.float64)
    keys = vv.column("table_id").to_numpy() * COLUMN_KEY_BASE + vv.column("ordinal").to_numpy()
    q = qvec.astype(np.float64)
    radius = tau * 2.0
    # Gram-matrix distances find the candidates; pairs near the threshold are decided on explicit differences.
    approx = (q * q).sum(1)[:, None] + (mat * mat).sum(1)[None, :] - 2.0 * q @ mat.T
    hit = approx <= radius * radius - 1e-9
    for i, j in zip(*np.nonzero(np.abs(approx - radius * radius) <= 1e-9)):
        hit[i, j] = np.sqrt(((q[i] - mat[j]) ** 2).sum()) <= radius
    out = {}
    need = int(np.ceil(T * n_values - 1e-9))
    for key in np.unique(keys):
        t, o = divmod(int(key), COLUMN_KEY_BASE)
        if t == exclude:
            continue
        n = int(np.unique(value_of[hit[:, keys == key].any(axis=1)]).size)
        if n >= max(need, 1):
            out[(t, o)] = n
    return out


def test_mappings_are_the_pivot_distances_of_every_value_vector(indexed_lake):
    _, wh = indexed_lake
    snap = load_snapshot(Warehouse(wh))
    model = PivotModel.from_stored(snapshot_model(snap, MODEL))
    keys = ["table_id", "ordinal", "value", "segment"]
    vv = snap.read("value_vectors", columns=keys + ["vector"]).sort_by([(k, "ascending") for k in keys])
    pm = snap.read("pivot_mappings").sort_by([(k, "ascending") for k in keys])
    assert vv.num_rows == pm.num_rows > 0
    assert vv.select(keys).equals(pm.select(keys))
    mapped = map_to_pivots(np.asarray(vv.column("vector").to_pylist(), np.float32), model.pivots, model.metric)
    stored = np.asarray(pm.column("distances").to_pylist())
    assert np.allclose(stored, mapped, atol=1e-6)
    assert np.array_equal(pm.column("cell").to_numpy(), model.grid.leaf_cells(stored.astype(np.float32)))
    assert set(pm.column("model_version").to_pylist()) == {model.version}
    # a lake this small (under MIN_VECTORS value vectors) takes SMALL_LAKE without running the cost model
    assert vv.num_rows < MIN_VECTORS and (len(model.pivots), model.grid.levels) == SMALL_LAKE
    assert model.choice["by"].startswith("small lake") and "cost" not in model.choice


@pytest.mark.parametrize("tau,T", [(0.06, 0.6), (0.15, 0.3), (0.25, 0.8)])
def test_join_search_equals_brute_force(indexed_lake, tau, T):
    lake, wh = indexed_lake
    ls = discovery.open(wh)
    ordinal = _ordinals(ls)
    for q in load_ground_truth(lake)["join"][:3]:
        query = resolve_query(ls.snapshot, q["query_table"])
        qv = query_value_vectors(ls.snapshot, query, q["query_column"])
        qvec = qv.vectors
        expected = _brute_force(ls.snapshot, qvec, tau, T, query.table_id, qv.value_of)
        for method in ("pexeso", "pexeso-h", "exact"):
            out = ls.join(q["query_table"], q["query_column"], tau=tau, T=T, method=method)
            got = {(r["table_id"], ordinal[r["table_id"], r["column"]]): r["matched"] for r in out["results"]}
            assert got == expected, (method, q["query_table"])
            assert all(d <= tau * 2.0 + 1e-9 for r in out["results"] for _, _, d in r["matches"])
        best = _brute_force(ls.snapshot, qvec, tau, 0.0, query.table_id, qv.value_of)
        for method in ("pexeso", "pexeso-h", "exact"):
            top = ls.join(q["query_table"], q["query_column"], tau=tau, top_k=3, method=method)
            ranked = [((r["table_id"], ordinal[r["table_id"], r["column"]]), r["matched"]) for r in top["results"]]
            check_context_top_k(ranked, best, 3, context_slack(top))


@pytest.mark.parametrize("seed", [0, 1])
def test_join_of_randomly_segmented_cells_equals_brute_force_over_segments(indexed_lake, tmp_path, seed):
    """Query cells glued at random from lake values, noise words and the delimiters of
    :mod:`discovery.transforms.segments`, searched through the served path: every method equals brute force over the
    same whole and segment vectors, and joinability counts the query's values."""
    lake, wh = indexed_lake
    ls = discovery.open(wh)
    ordinal = _ordinals(ls)
    rng = np.random.default_rng(seed)
    stored = ls.snapshot.read("value_vectors", columns=["table_id", "ordinal", "value", "segment"])
    stored = stored.filter(pc.equal(stored.column("segment"), 0))
    keys = stored.column("table_id").to_numpy() * COLUMN_KEY_BASE + stored.column("ordinal").to_numpy()
    biggest = np.bincount(np.unique(keys, return_inverse=True)[1]).argmax()
    values = np.asarray(stored.column("value").to_pylist(), dtype=object)
    pool = sorted(set(values[keys == np.unique(keys)[biggest]]))  # one column's values, so that it joins
    others = sorted(set(values.tolist()) - set(pool))
    words = ["alpha", "north field", "(aged 67)", "44°21′n 68°13′w", "jul 1 1801", "smith, john", "new jersey"]
    cells = set()
    while len(cells) < min(60, len(pool)):
        parts = [pool[int(rng.integers(len(pool)))]]
        parts += [others[int(i)] for i in rng.choice(len(others), size=int(rng.integers(0, 2)))]
        parts += [words[int(i)] for i in rng.choice(len(words), size=int(rng.integers(0, 2)))]
        rng.shuffle(parts)
        glue = [str(rng.choice(["; ", " | ", " / ", " - ", " (", ", "])) for _ in parts[1:]]
        cells.add("".join(p + g for p, g in zip(parts, glue + [""])))
    path = tmp_path / "glued.csv"
    pa_csv.write_csv(pa.table({"cell": sorted(cells)}), str(path))
    qv = query_value_vectors(ls.snapshot, resolve_query(ls.snapshot, str(path)), "cell")
    assert len(qv.value_of) > len(qv.values) == len(cells), "the cells were cut into segments"
    for tau, T in ((0.06, 0.0), (0.15, 0.1)):
        expected = _brute_force(ls.snapshot, qv.vectors, tau, T, None, qv.value_of)
        assert expected, "some glued cell matches"
        best = _brute_force(ls.snapshot, qv.vectors, tau, 0.0, None, qv.value_of)
        for method in ("pexeso", "pexeso-h", "exact"):
            out = ls.join(str(path), "cell", tau=tau, T=T, method=method)
            got = {(r["table_id"], ordinal[r["table_id"], r["column"]]): r["matched"] for r in out["results"]}
            assert got == expected, (method, tau)
            assert out["stats"]["query_values"] == len(cells)
            assert all(r["joinability"] == r["matched"] / len(cells) for r in out["results"])
            assert all(a in qv.values for r in out["results"] for a, _, _ in r["matches"])
            top = ls.join(str(path), "cell", tau=tau, top_k=5, method=method)
            ranked = [((r["table_id"], ordinal[r["table_id"], r["column"]]), r["matched"]) for r in top["results"]]
            check_context_top_k(ranked, best, 5, context_slack(top))


def _ordinals(ls) -> dict[tuple[int, str], int]:
    """(table_id, column name) -> ordinal, for reading result columns back as column keys."""
    cols = ls.snapshot.read("columns", columns=["table_id", "ordinal", "name"]).to_pylist()
    return {(c["table_id"], c["name"]): c["ordinal"] for c in cols}


def test_join_cli_shape_and_errors(indexed_lake):
    lake, wh = indexed_lake
    q = load_ground_truth(lake)["join"][0]
    lakescout = os.path.join(os.path.dirname(sys.executable), "lakescout")
    run = lambda *a: subprocess.run([lakescout, "join", "--warehouse", wh, *a],  # noqa: E731
                                    capture_output=True, text=True, timeout=300)
    proc = run("--query", q["query_table"], "--column", q["query_column"], "--tau", "0.2", "--T", "0.2", "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert {"snapshot_id", "query", "method", "results", "stats"} <= set(out)
    for r in out["results"]:
        assert {"rank", "table_id", "path", "column", "joinability", "matches"} <= set(r)
        assert all(len(m) == 3 for m in r["matches"])
    bad_col = run("--query", q["query_table"], "--column", "no such column")
    assert bad_col.returncode == 2 and "has no column 'no such column'" in bad_col.stderr
    both = run("--query", q["query_table"], "--column", q["query_column"], "--T", "0.2", "--top-k", "3")
    assert both.returncode == 2 and "not allowed with argument" in both.stderr
    numeric = next(t for t in load_ground_truth(lake)["tables"] if t["role"] == "nary")
    cols = discovery.open(wh).snapshot.read("columns").to_pylist()
    num_col = next((c for c in cols if c["type"] in ("int", "float")), None)
    path = dict((r["table_id"], r["path"]) for r in discovery.open(wh).snapshot.read("catalog").to_pylist())
    proc = run("--query", path[num_col["table_id"]], "--column", num_col["name"], "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["join"] == "numeric", proc.stderr  # the numerical join
    assert numeric  # the lake has n-ary tables to draw from


def test_demo_join_query_finds_the_planted_join_first_with_defaults(indexed_lake):
    """``make demo``'s join query, as the Makefile runs it (no T, no k): the k most joinable columns, the planted
    join first (it plants partners for 58 % of the query's values, below the usual threshold of 0.6)."""
    lake, wh = indexed_lake
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Makefile")) as fh:
        line = next(ln for ln in fh if "lakescout join" in ln)
    args = [wh if a == "$(LAKESCOUT_WAREHOUSE)" else a for a in shlex.split(line)[2:]]
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lakescout"), "join", *args, "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    planted = {(j["query_table"], j["query_column"]): (j["lake_table"], j["lake_column"])
               for j in load_ground_truth(lake)["join"]}
    assert out["T"] is None and out["top_k"] == 10
    assert (out["results"][0]["path"], out["results"][0]["column"]) == planted[out["query"], out["column"]]


def test_demo_numeric_join_finds_the_planted_joins_first_with_defaults(indexed_lake):
    """``make demo``'s coordinate join, as the Makefile runs it, and the planted measurement join through the API,
    both with defaults: the planted lake columns first, with the ground truth's count of matched query values."""
    lake, wh = indexed_lake
    with open(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "Makefile")) as fh:
        line = next(ln for ln in fh if "lakescout join" in ln and "lat,lng" in ln)
    args = [wh if a == "$(LAKESCOUT_WAREHOUSE)" else a for a in shlex.split(line)[2:]]
    proc = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lakescout"), "join", *args, "--json"],
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    answers = {"coordinates": json.loads(proc.stdout)}
    truth = load_ground_truth(lake)["numeric"]
    m = next(r for r in truth if r["kind"] == "measurement")
    answers["measurement"] = discovery.open(wh).join(m["query_table"], ",".join(m["query_columns"]))
    for kind, out in answers.items():
        rows = [r for r in truth if r["kind"] == kind and r["query_table"] == out["query"]]
        planted = next(r for r in rows if r["planted"])
        first = out["results"][0]
        assert (first["path"], first["column"]) == (planted["lake_table"], ",".join(planted["lake_columns"]))
        assert first["matched"] == planted["matched_values"] and out["tau"] == pytest.approx(planted["tau"])
        for r in rows:  # every ground-truth pair is found with its exact count
            hit = next(x for x in out["results"] if (x["path"], x["column"]) == (r["lake_table"],
                                                                                ",".join(r["lake_columns"])))
            assert hit["matched"] == r["matched_values"]
