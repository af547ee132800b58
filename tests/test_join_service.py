"""Semantic join through ``discovery.open(...).join`` on random lakes built by the real refresh, served from 1, 2 and
5 JSD partitions (a small ``[join] memory_budget_mb``): every method, threshold and top-k, equals an independent
float64 brute force over the snapshot's value vectors and the one-partition build of the same lake."""
from __future__ import annotations

import csv
import os

import numpy as np
import pyarrow.compute as pc
import pytest

import discovery
from conftest import FAST_CONFIG
from discovery.config import load_config
from discovery.data.store import snapshot_model
from discovery.indexes.join import METHODS
from discovery.indexes.join.partitioning import partition_count, vector_bytes
from discovery.indexes.join.stage import COLUMN_KEY_BASE, MODEL, PivotModel
from discovery.orchestration.demo_lake import entities as E
from discovery.orchestration.demo_lake.variants import vary
from discovery.query.resolve import resolve_query
from spark_jobs.pivot_mappings import REBALANCES
from discovery.query.vectors import query_value_vectors
from join_data import brute_force, check_context_order, check_context_top_k, context_slack

pytestmark = pytest.mark.spark

KINDS = {"company": E.company, "person": E.person, "airport": E.airport, "product": E.product}
PARTITIONS = (1, 2, 5)
THRESHOLD = [(0.03, 0.2), (0.1, 0.5), (0.25, 0.1)]
TOP_K = [(0.03, 1), (0.1, 3), (0.25, 5)]


def _write_csv(path: str, header: list[str], columns: list[list[str]]) -> None:
    with open(path, "w", newline="", encoding="utf-8") as fh:
        writer = csv.writer(fh)
        writer.writerow(header)
        writer.writerows(zip(*columns))


def _write_lake(root: str, query_path: str, seed: int = 3, n_tables: int = 12) -> None:
    """Tables of two or three entity columns of different kinds (so JSD puts a table's columns in different
    partitions), values drawn from one pool per kind, half of them written differently; and a query file outside the
    lake with one column per kind."""
    rng = np.random.default_rng(seed)
    pools = {k: E.unique(rng, 80, make) for k, make in KINDS.items()}

    def column(kind: str, n: int) -> list[str]:
        out = []
        for v in rng.choice(pools[kind], n, replace=False):
            varied = vary(str(v), kind, rng) if rng.random() < 0.5 else None
            out.append(varied[0] if varied else str(v))
        return out

    os.makedirs(root)
    for t in range(n_tables):
        n = int(rng.integers(14, 40))
        kinds = rng.choice(list(KINDS), int(rng.integers(2, 4)), replace=False)
        _write_csv(os.path.join(root, f"t{t:02d}.csv"), [f"{k}_{i}" for i, k in enumerate(kinds)] + ["amount"],
                   [column(k, n) for k in kinds] + [[str(x) for x in rng.integers(1, 999, n)]])
    _write_csv(query_path, list(KINDS), [column(k, 25) for k in KINDS])


@pytest.fixture(scope="module")
def lakes(spark, tmp_path_factory) -> dict:
    """The random lake refreshed into one warehouse per partition count: {partitions: warehouse, "query": file}."""
    from spark_jobs.refresh import refresh

    root = tmp_path_factory.mktemp("join_service")
    lake, query = str(root / "lake"), str(root / "query.csv")
    _write_lake(lake, query)
    out = {"query": query, "lake": lake}
    for parts in PARTITIONS:
        config = root / f"p{parts}.toml"
        budget = ""
        if parts > 1:  # a budget the one-partition build's value vectors need exactly `parts` partitions for
            out[("budget", parts)] = _budget_for(parts, out[1])
            budget = f"\n[join]\nmemory_budget_mb = {out[('budget', parts)] / (1 << 20)!r}\n"
        config.write_text(FAST_CONFIG + budget)
        wh = str(root / f"wh{parts}")
        assert refresh(spark, wh, lake, config_path=str(config)).get("published")
        out[parts] = wh
    return out


def _budget_for(parts: int, warehouse: str) -> float:
    """The smallest budget (bytes) under which the pivots stage's first fit splits the warehouse's lake into
    ``parts`` partitions (the same sample gives the same |P|, m and value size)."""
    snap = discovery.open(warehouse).snapshot
    model = PivotModel.from_stored(snapshot_model(snap, MODEL))
    n = snap.read("value_vectors", columns=["table_id"]).num_rows
    shape = (model.pivots.shape[1], len(model.pivots), model.grid.levels)

    def count(budget: float) -> int:
        return partition_count(n, *shape, budget, model.choice["value_bytes"])

    lo, hi = 1.0, float(n * vector_bytes(shape[0], shape[1], model.choice["value_bytes"]) * 8)
    while hi - lo > 1:
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if count(mid) > parts else (lo, mid)
    assert count(hi) == parts
    return hi


def _queries(ls, lakes) -> list[tuple[str, str]]:
    """Every column of the query file, and the first column of two lake tables queried by their lake path."""
    out = [(lakes["query"], k) for k in KINDS]
    for path in ("t00.csv", "t05.csv"):
        out.append((path, resolve_query(ls.snapshot, path).names[0]))
    return out


def _answer(ls, result: dict) -> list[tuple[int, int]]:
    """(column key, matched) of every result, in rank order."""
    cols = ls.snapshot.read("columns", columns=["table_id", "ordinal", "name"]).to_pylist()
    key = {(c["table_id"], c["name"]): c["table_id"] * COLUMN_KEY_BASE + c["ordinal"] for c in cols}
    return [(key[(r["table_id"], r["column"])], r["matched"]) for r in result["results"]]


def _reference(ls, query: str, column: str):
    """Brute force of one query column over the snapshot's value vectors (the query's own table left out):
    a function (tau, T) -> {column key: matched}, and the number of query values."""
    snap = ls.snapshot
    q = resolve_query(snap, query)
    qv = query_value_vectors(snap, q, q.ordinal(column))
    vv = snap.read("value_vectors", columns=["table_id", "ordinal", "vector"])
    lake = np.asarray(vv.column("vector").to_pylist(), dtype=np.float32)
    keys = vv.column("table_id").to_numpy() * COLUMN_KEY_BASE + vv.column("ordinal").to_numpy()
    own = keys // COLUMN_KEY_BASE != (q.table_id if q.table_id is not None else -1)
    return (lambda tau, T: brute_force(lake[own], keys[own], qv.vectors, tau, T, value_of=qv.value_of)), len(qv.values)


def test_the_random_lake_is_split_as_asked(lakes):
    """The partitioned builds have the partitions asked for, hold the same vectors as the one-partition build,
    and put columns of one table in different partitions (the case a per-table read of the vectors got wrong)."""
    base = discovery.open(lakes[1]).snapshot.read("value_vectors", columns=["table_id", "ordinal", "value", "vector"])
    order = [(k, "ascending") for k in ("table_id", "ordinal", "value")]
    for parts in PARTITIONS:
        snap = discovery.open(lakes[parts]).snapshot
        # a refit of the pivots stage adds a partition when one came out over the budget
        assert parts <= PivotModel.from_stored(snapshot_model(snap, MODEL)).n_partitions <= parts + REBALANCES
        vv = snap.read("value_vectors", columns=["table_id", "ordinal", "value", "vector"])
        assert vv.sort_by(order).equals(base.sort_by(order))
        pm = snap.read("pivot_mappings", columns=["table_id", "ordinal", "partition"])
        used = set(pm.column("partition").to_pylist())
        assert len(used) >= min(parts, 3)
        if parts > 1:
            per_table = pm.group_by("table_id").aggregate([("partition", "count_distinct")])
            assert pc.max(per_table.column("partition_count_distinct")).as_py() > 1


@pytest.mark.parametrize("parts", PARTITIONS)
def test_every_method_equals_brute_force_and_the_one_partition_build(lakes, parts):
    ls, single = discovery.open(lakes[parts]), discovery.open(lakes[1])
    nonempty = 0
    for query, column in _queries(ls, lakes):
        expected, _ = _reference(ls, query, column)
        for tau, T in THRESHOLD:
            want = expected(tau, T)
            nonempty += bool(want)
            for method in METHODS:
                got = ls.join(query, column, tau=tau, T=T, method=method)
                assert dict(_answer(ls, got)) == want, (query, column, tau, T, method)
                check_context_order([m for _, m in _answer(ls, got)], context_slack(got))
                if parts > 1:
                    # the same columns, counts, order and evidence: a matched value links through its column's
                    # nearest lake value (ties by the lower row), whichever partition holds the column
                    alone = single.join(query, column, tau=tau, T=T, method=method)
                    assert _answer(ls, got) == _answer(single, alone)
                    assert [r["matches"] for r in got["results"]] == [r["matches"] for r in alone["results"]]
                    assert got["stats"]["partitions"] >= min(parts, 3)
                    assert 0 < got["stats"]["held_bytes_max"] <= lakes[("budget", parts)]
                assert all(d <= tau * 2.0 + 1e-6 for r in got["results"] for _, _, d in r["matches"])
        for tau, k in TOP_K:
            want = expected(tau, 0.0)
            for method in METHODS:
                got = ls.join(query, column, tau=tau, top_k=k, method=method)
                check_context_top_k(_answer(ls, got), want, k, context_slack(got))
                if parts > 1:
                    alone = single.join(query, column, tau=tau, top_k=k, method=method)
                    check_context_top_k(_answer(single, alone), want, k, context_slack(alone))
    assert nonempty >= 10


def test_a_configured_margin_keeps_the_exact_top_k_but_within_its_slack(lakes, tmp_path, monkeypatch):
    """``[join] context_margin = 0.05`` (the default orders exact ties only): through the API every method returns
    the exact top-k but within the margin of the k-th count, ordered within it by context."""
    config = tmp_path / "margin.toml"
    config.write_text("[join]\ncontext_margin = 0.05\n")
    monkeypatch.setenv("LAKESCOUT_CONFIG", str(config))
    ls = discovery.open(lakes[5])
    search, _ = _reference(ls, lakes["query"], "company")
    slacks = []
    for tau, k in TOP_K:
        want = search(tau, 0.0)
        for method in METHODS:
            got = ls.join(lakes["query"], "company", tau=tau, top_k=k, method=method)
            check_context_top_k(_answer(ls, got), want, k, context_slack(got))
            slacks.append(context_slack(got))
    assert min(slacks) >= 1  # the margin is in force: these queries have columns that can be evidence


def test_exact_ties_rank_the_column_with_fewer_distinct_values_first(lakes, tmp_path):
    """Columns of equal joinability rank by the lake column's distinct values, fewer first, then column id, at the
    k-th place too: a top-k answer is the first k of brute force in that order, a threshold answer all of it, through
    the API and every method on a two-partition build (one-column queries, so no context orders anything)."""
    ls = discovery.open(lakes[2])
    cols = ls.snapshot.read("columns", columns=["table_id", "ordinal", "distinct_count"]).to_pylist()
    size = {c["table_id"] * COLUMN_KEY_BASE + c["ordinal"]: c["distinct_count"] for c in cols}
    with open(lakes["query"], newline="", encoding="utf-8") as fh:
        rows = list(csv.reader(fh))
    decided = 0  # adjacent ties whose order the rule reverses from column id's
    for j, kind in enumerate(rows[0]):
        query = str(tmp_path / f"{kind}.csv")
        _write_csv(query, [kind], [[r[j] for r in rows[1:]]])
        search, n_query = _reference(ls, query, kind)
        for tau, k in [*TOP_K, (0.1, 2), (0.25, 3)]:
            ranked = sorted(search(tau, 0.0).items(), key=lambda kv: (-kv[1], size[kv[0]], kv[0]))
            decided += sum(a[1] == b[1] and size[a[0]] < size[b[0]] and a[0] > b[0]
                           for a, b in zip(ranked, ranked[1:]))
            for method in METHODS:
                assert _answer(ls, ls.join(query, kind, tau=tau, top_k=k, method=method)) == ranked[:k]
            got = ls.join(query, kind, tau=tau, T=0.1)
            assert _answer(ls, got) == [(key, m) for key, m in ranked if m >= np.ceil(0.1 * n_query)]
    assert decided >= 3


def test_top_k_returns_the_k_most_joinable_columns(lakes):
    """A user asking for 5 gets 5 when 5 columns share a match, whatever their joinability; the exact top-k but
    within the context margin of the k-th count."""
    ls = discovery.open(lakes[5])
    search, n_query = _reference(ls, lakes["query"], "company")
    expected = search(load_config().join.tau, 0.0)  # the calls below take the default tau
    assert len(expected) >= 5
    assert sorted(expected.values())[-5] < 0.6 * n_query  # below the joinability a threshold search would ask for
    for method in METHODS:
        out = ls.join(lakes["query"], "company", top_k=5, method=method)
        assert out["T"] is None and out["top_k"] == 5
        check_context_top_k(_answer(ls, out), expected, 5, context_slack(out))
    default = ls.join(lakes["query"], "company")
    assert default["top_k"] == 10
    check_context_top_k(_answer(ls, default), expected, 10, context_slack(default))


def test_a_lake_column_as_the_query_answers_from_its_indexed_vectors_as_when_encoded(indexed_lake):
    """A query column of a lake file as the snapshot indexed it takes its vectors from the kept index instead of
    being encoded again: they are the encoder's bits (every sampled column), and the answers, top-k and threshold,
    equal the encoded query's.  Rows that are not the column's (another count) are not taken."""
    import dataclasses

    from discovery.indexes.join.service import join_search, loaded_index

    _, wh = indexed_lake
    snap = discovery.open(wh).snapshot
    stored = snap.read("value_vectors", columns=["table_id", "ordinal"])
    keys = sorted(set(zip(stored.column("table_id").to_pylist(), stored.column("ordinal").to_pylist())))
    from discovery.data.store.cache import INDEXES

    INDEXES.drop(lambda key: key[:3] == ("join", snap.warehouse.root, snap.snapshot_id))  # other tests' searches
    loaded = loaded_index(snap)
    first = resolve_query(snap, keys[0][0])
    assert join_search(snap, first, first.names[keys[0][1]], tau=0.04, top_k=1)["stats"]["query_vectors_indexed"] == 0
    assert loaded.kept  # the first search built the index; until then a query is encoded
    taken = 0
    for table_id, ordinal in keys[::max(1, len(keys) // 40)]:
        q = resolve_query(snap, table_id)
        if not q.indexed:
            continue
        column = q.names[ordinal]
        encoded = dataclasses.replace(q, indexed=False)
        for tau, top_k, T in ((0.04, 10, None), (0.1, None, 0.3)):
            got = join_search(snap, q, column, tau=tau, top_k=top_k, T=T, context_margin=0.05)
            again = join_search(snap, encoded, column, tau=tau, top_k=top_k, T=T, context_margin=0.05)
            assert got["results"] == again["results"], (table_id, column)
            assert got["stats"]["query_vectors_indexed"] == 1 and again["stats"]["query_vectors_indexed"] == 0
        rows = query_value_vectors(snap, encoded, ordinal)
        own = loaded.own_vectors(table_id * COLUMN_KEY_BASE + ordinal, rows)
        assert own is not None and np.array_equal(own, rows.vectors), (table_id, column)
        taken += 1
        fewer = dataclasses.replace(rows, value_of=rows.value_of[:-1], segment=rows.segment[:-1])
        assert loaded.own_vectors(table_id * COLUMN_KEY_BASE + ordinal, fewer) is None
    assert taken >= 30
