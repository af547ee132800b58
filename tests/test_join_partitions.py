"""The join memory bound through the real pipeline: partitions balanced by size on a skewed lake, a partition count
that follows the lake as an incremental refresh grows it, a query that holds at most the budget (counted by the
service, read through ``discovery.open(...).join``), and |P| / m chosen by the cost model, recorded and used."""
from __future__ import annotations

import csv
import os
from dataclasses import replace

import numpy as np
import pyarrow.compute as pc
import pytest

import discovery
from conftest import FAST_CONFIG
from discovery.data.store import Warehouse, snapshot_model
from discovery.indexes.join import METHODS
from discovery.indexes.join.cost import CANDIDATES, choose_parameters
from discovery.indexes.join.partitioning import BALANCE, balance_prices, partition_capacity, settle, vector_bytes
from discovery.indexes.join.service import loaded_index
from discovery.indexes.join.stage import COLUMN_KEY_BASE, MODEL, Histograms, PivotModel, column_keys
from discovery.orchestration.demo_lake import entities as E
from discovery.query.resolve import resolve_query
from discovery.query.vectors import query_value_vectors
from join_data import brute_force, check_context_top_k, clustered_lake, context_slack

#: A budget of about this many value vectors: the first lake needs several partitions, the grown one more.
BUDGET_VECTORS = 250


def _write_tables(root: str, first: int, count: int, seed: int) -> None:
    """Skewed tables: a large company column in every table, and a small column of another kind.  JSD
    k-means alone gives the companies' partition most of the bytes."""
    rng = np.random.default_rng(seed)
    pools = {"company": E.unique(np.random.default_rng(0), 600, E.company),
             "person": E.unique(np.random.default_rng(1), 200, E.person),
             "airport": E.unique(np.random.default_rng(2), 120, E.airport)}
    os.makedirs(root, exist_ok=True)
    for t in range(first, first + count):
        n = int(rng.integers(60, 110))
        other = ["person", "airport"][t % 2]
        small = list(rng.choice(pools[other], 12, replace=False)) + [""] * (n - 12)
        with open(os.path.join(root, f"t{t:02d}.csv"), "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["company", other, "n"])
            w.writerows(zip(rng.choice(pools["company"], n, replace=False), small, range(n)))


def _stored(warehouse: str):
    snap = discovery.open(warehouse).snapshot
    model = PivotModel.from_stored(snapshot_model(snap, MODEL))
    pm = snap.read("pivot_mappings", columns=["table_id", "ordinal", "value", "distances", "cell", "partition"])
    return snap, model, pm


def _capacity(model: PivotModel, budget: float) -> int:
    return partition_capacity(budget, model.pivots.shape[1], len(model.pivots), model.grid.levels,
                              model.choice["value_bytes"])


def _loads(model: PivotModel, pm, prices=None) -> np.ndarray:
    """Value vectors per partition: as stored, or as ``prices`` (e.g. none: plain JSD k-means) would assign them."""
    if prices is None:
        return np.bincount(pm.column("partition").to_numpy(), minlength=model.n_partitions)
    keys = column_keys(pm.column("table_id").to_numpy(), pm.column("ordinal").to_numpy())
    columns, part = replace(model, prices=prices).assign_partitions(pm.column("cell").to_numpy(), keys)
    return np.bincount(part[np.searchsorted(columns, keys)], minlength=model.n_partitions)


@pytest.fixture(scope="module")
def grown(spark, tmp_path_factory) -> dict:
    """A skewed lake refreshed under a small budget, then grown to twice its tables and refreshed incrementally."""
    from spark_jobs.refresh import refresh

    root = tmp_path_factory.mktemp("join_partitions")
    lake, wh = str(root / "lake"), str(root / "wh")
    _write_tables(lake, 0, 10, seed=5)
    # |P| <= 9 and the join encoder's width bound the bytes per vector; the test reads the real figure back.
    budget = BUDGET_VECTORS * vector_bytes(64, 9, 24)
    config = root / "small.toml"
    # the encoders are kept as the lake grows, so the pivots are refitted for the partition count alone
    config.write_text(FAST_CONFIG.replace("[embed]\n", "[embed]\nretrain_growth = 100.0\n")
                      + f"\n[join]\nmemory_budget_mb = {budget / (1 << 20)!r}\n")
    with pytest.MonkeyPatch.context() as patch:  # a lake this small gets the small-lake |P| and m without the model
        patch.setattr("spark_jobs.pivot_mappings.MIN_VECTORS", 0)
        assert refresh(spark, wh, lake, config_path=str(config)).get("published")
        first = _stored(wh)
        _write_tables(lake, 10, 10, seed=6)
        out = refresh(spark, wh, lake, config_path=str(config))
    assert out.get("published")
    return {"lake": lake, "wh": wh, "budget": budget, "first": first, "second": _stored(wh),
            "message": _pivots_message(wh, out["refresh_id"])}


def _pivots_message(wh: str, refresh_id: int) -> str:
    runs = Warehouse(wh).read("refresh_runs", columns=["refresh_id", "stage", "message"]).to_pylist()
    return next(r["message"] for r in runs if r["stage"] == "pivots" and r["refresh_id"] == refresh_id)


def test_partitions_are_balanced_by_size_on_a_skewed_lake(grown):
    """Stated factor: no partition above BALANCE x the mean, give or take one column (columns are not split)."""
    for _snap, model, pm in (grown["first"], grown["second"]):
        loads = _loads(model, pm)
        keys = column_keys(pm.column("table_id").to_numpy(), pm.column("ordinal").to_numpy())
        bound = BALANCE * loads.mean() + np.unique(keys, return_counts=True)[1].max()
        assert model.n_partitions >= 3 and loads.min() > 0
        assert loads.max() <= bound
        # the skew is real: JSD k-means alone (no prices) puts more than that in one partition
        assert _loads(model, pm, np.zeros(model.n_partitions)).max() > bound


def test_the_partition_count_follows_the_lake_and_keeps_the_bound(grown):
    (_, first, pm1), (_, second, pm2) = grown["first"], grown["second"]
    assert pm2.num_rows > 1.6 * pm1.num_rows
    assert second.n_partitions > first.n_partitions
    assert "the lake grew" in grown["message"] and f"{second.n_partitions} partition(s)" in grown["message"]
    assert pm2.num_rows > 2 * _capacity(second, grown["budget"])  # the bound is not met by a lake that fits anyway


def test_stored_partitions_are_settled_on_full_column_sizes(grown):
    """Every stored partition within the capacity (the largest column here is far below it), and settled: the
    pass on the stored full sizes has nothing left to move."""
    from spark_jobs.pivot_mappings import stored_columns

    for _, model, pm in (grown["first"], grown["second"]):
        assert _loads(model, pm).max() <= _capacity(model, grown["budget"])
    model = grown["second"][1]
    cap = _capacity(model, grown["budget"])
    _, sizes, partition, cost = stored_columns(Warehouse(grown["wh"]), model)  # the warehouse's latest rows
    assert sizes.max() < cap and np.array_equal(settle(cost, sizes, partition, cap), partition)
    assert "largest partition" in grown["message"]


def test_the_stored_columns_read_by_batch_equal_the_whole_rows(grown, monkeypatch):
    """The stage reads the stored cells a batch at a time and merges the batches' histograms: the sizes, placements
    and costs equal those computed from every row at once, bit for bit, and so do the divergences when the rows
    come in random splits and the JSD terms in small chunks."""
    from discovery.indexes.join import partitioning
    from spark_jobs.pivot_mappings import stored_columns

    snap, model, pm = grown["second"]
    keys = column_keys(pm.column("table_id").to_numpy(), pm.column("ordinal").to_numpy())
    cells = pm.column("cell").to_numpy()
    columns, sizes, dist = model.divergences(cells, keys)
    partition = np.zeros(len(columns), np.int64)
    partition[np.searchsorted(columns, keys)] = pm.column("partition").to_numpy()
    got = stored_columns(Warehouse(grown["wh"]), model)
    for a, b in zip(got, (columns, sizes, partition, dist + model.prices)):
        assert np.array_equal(a, b)
    rng = np.random.default_rng(11)
    order = rng.permutation(len(keys))
    cuts = np.sort(rng.choice(np.arange(1, len(keys)), 5, replace=False))
    parts = [model.histograms(cells[i], keys[i]) for i in np.split(order, cuts)]
    monkeypatch.setattr(partitioning, "_ENTRY_CHUNK", 7)
    merged = model.divergences_of(Histograms.merge(parts))
    assert np.array_equal(merged[0], columns) and np.array_equal(merged[1], sizes)
    assert np.array_equal(merged[2], dist)


def test_a_partition_read_file_by_file_equals_the_threaded_read(grown):
    snap, model, _ = grown["second"]
    flt = pc.field("partition") == 1
    cols = ["table_id", "ordinal", "value", "distances", "cell"]
    lean, whole = snap.scan("pivot_mappings", cols, flt), snap.read("pivot_mappings", columns=cols, filter=flt)
    order = [(c, "ascending") for c in ("table_id", "ordinal", "value")]
    assert lean.num_rows > 0 and lean.sort_by(order).equals(whole.sort_by(order))


def test_a_query_holds_at_most_the_budget_and_answers_exactly(grown):
    ls = discovery.open(grown["wh"])
    snap, model = ls.snapshot, grown["second"][1]
    q = resolve_query(snap, "t03.csv")
    qv = query_value_vectors(snap, q, q.ordinal("company"))
    vv = snap.read("value_vectors", columns=["table_id", "ordinal", "value", "vector"])
    lake = np.asarray(vv.column("vector").to_pylist(), dtype=np.float32)
    keys = column_keys(vv.column("table_id").to_numpy(), vv.column("ordinal").to_numpy())
    values = vv.column("value").to_pylist()
    own = keys // COLUMN_KEY_BASE != q.table_id
    for tau, top_k in ((0.03, 5), (0.2, 10)):
        want = brute_force(lake[own], keys[own], qv.vectors, tau, 0.0, value_of=qv.value_of)
        for method in METHODS:
            got = ls.join("t03.csv", "company", tau=tau, top_k=top_k, method=method)
            stats = got["stats"]
            assert stats["partitions"] == model.n_partitions
            assert 0 < stats["held_bytes_max"] <= grown["budget"] < stats["loaded_bytes"]
            answer = [(r["table_id"] * COLUMN_KEY_BASE + resolve_query(snap, r["path"]).ordinal(r["column"]),
                       r["matched"]) for r in got["results"]]
            check_context_top_k(answer, want, top_k, context_slack(got))
            for (key, _), r in zip(answer, got["results"]):  # evidence strings are the matched rows' own values
                assert r["matches"]
                for _, lake_value, d in r["matches"]:
                    rows = [i for i in np.flatnonzero(keys == key) if values[i] == lake_value]  # value and segments
                    assert min(np.linalg.norm(qv.vectors - lake[i], axis=1).min() for i in rows) <= tau * 2 + 1e-6
                    assert d <= tau * 2 + 1e-6
    assert not loaded_index(snap).kept and loaded_index(snap).nbytes < grown["budget"]


def test_the_chosen_pivots_and_levels_are_recorded_and_used(grown):
    snap, model, pm = grown["second"]
    choice = model.choice
    assert choice["by"] == "cost model" and set(choice["cost"]) == {f"{p}x{m}" for p, m in CANDIDATES}
    best = min(choice["cost"], key=lambda c: (choice["cost"][c], *map(int, c.split("x"))))
    assert best == f"{len(model.pivots)}x{model.grid.levels}"
    assert f"|P| = {len(model.pivots)}, m = {model.grid.levels} (cost model)" in grown["message"]
    assert {len(d) for d in pm.column("distances").to_pylist()} == {len(model.pivots)}
    index = loaded_index(snap).partition(0, {}, [])
    assert index.grid.levels == model.grid.levels and len(index.pivots) == len(model.pivots)


def test_balance_prices_meet_the_cap_and_move_only_what_they_must():
    rng = np.random.default_rng(0)
    dist = rng.uniform(0, 0.7, (400, 5))
    dist[:300, 0] = 0.0                      # three quarters of the columns are nearest to centre 0
    weight = rng.integers(1, 30, 400).astype(float)
    cap = BALANCE * weight.sum() / 5
    prices = balance_prices(dist, weight, cap)
    assign = np.argmin(dist + prices, axis=1)
    assert np.bincount(assign, weights=weight, minlength=5).max() <= cap
    balanced = np.full(5, weight.sum())      # a cap nothing exceeds: no price, every column at its nearest centre
    assert not balance_prices(dist, weight, balanced.max()).any()


def test_the_cost_model_is_deterministic_and_picks_the_least_estimated_cost():
    """(Exactness for any |P| and m is test_join_exactness's random-parameter property.)"""
    lake, ids, _ = clustered_lake(np.random.default_rng(3), n_cols=40, dim=16)
    first = choose_parameters(lake, ids, 10 * len(lake), 0.06, "euclidean", 0, CANDIDATES[:6])
    assert first == choose_parameters(lake, ids, 10 * len(lake), 0.06, "euclidean", 0, CANDIDATES[:6])
    p, m, choice = first
    assert (p, m) in CANDIDATES[:6] and choice["cost"][f"{p}x{m}"] == min(choice["cost"].values())
