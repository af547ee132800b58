"""The join memory bound's two halves without a refresh: partitions settled on full column sizes (the sample's prices
mislead), and a partition's index built from rows in any order and chunking, with one gather of the numbers.

The pipeline half (stored partitions within the capacity, a query holding at most the budget through
``discovery.open(...).join``) is in ``test_join_partitions.py``."""
import numpy as np
import pyarrow as pa

from discovery.indexes.join.partitioning import BALANCE, FILL, balance_prices, settle
from discovery.indexes.join.pivots import select_pivots
from discovery.indexes.join.stage import COLUMN_KEY_BASE, index_from_rows
from join_data import clustered_lake, stored_rows


def _misled(seed: int):
    """JSD costs of 300 columns to 6 centres, prices fitted on a sample that sees every column about equally, and
    full sizes that differ 20-fold: what the pivots stage has after fitting on a sample."""
    rng = np.random.default_rng(seed)
    k = 6
    dist = rng.uniform(0.2, 0.7, (300, k))
    dist[np.arange(300), rng.integers(0, k, 300)] = rng.uniform(0.0, 0.2, 300)
    sample = rng.integers(30, 50, 300).astype(float)
    sizes = np.where(rng.random(300) < 0.15, rng.integers(800, 1000, 300), rng.integers(40, 60, 300)).astype(float)
    prices = balance_prices(dist, sample, BALANCE * sample.sum() / k)
    cost = dist + prices
    cap = sizes.sum() / k / FILL   # the capacity at the partition count the stage plans: the mean fills FILL of it
    return cost, sizes, np.argmin(cost, axis=1), cap


def test_settling_on_full_sizes_meets_the_capacity_when_the_sample_misleads():
    """Stated factor: every partition within the capacity, 1 / FILL = 1.25 x the mean load at the planned count."""
    misled = 0
    for seed in range(8):
        cost, sizes, assign, cap = _misled(seed)
        k = cost.shape[1]
        before = np.bincount(assign, weights=sizes, minlength=k)
        misled += before.max() > cap
        placed = settle(cost, sizes, assign, cap)
        after = np.bincount(placed, weights=sizes, minlength=k)
        assert after.max() <= cap <= after.mean() / FILL + 1e-9
        moved = placed != assign
        # only over-full partitions give columns away; the others keep every column they had
        assert set(assign[moved]) <= set(np.flatnonzero(before > cap))
    assert misled >= 6  # the sample's prices alone break the capacity on most lakes


def test_settling_moves_nothing_when_every_partition_fits():
    cost, sizes, assign, _ = _misled(0)
    loads = np.bincount(assign, weights=sizes)
    assert np.array_equal(settle(cost, sizes, assign, loads.max()), assign)


def test_a_column_larger_than_the_capacity_ends_alone_and_the_rest_fit():
    cost, sizes, assign, cap = _misled(1)
    sizes = sizes.copy()
    big = int(np.argmax(sizes))
    sizes[big] = 1.5 * cap
    placed = settle(cost, sizes, assign, cap)
    loads = np.bincount(placed, weights=sizes, minlength=cost.shape[1])
    assert np.count_nonzero(placed == placed[big]) == 1          # the bound is "the budget or the largest column"
    others = np.arange(cost.shape[1]) != placed[big]
    assert loads[others].max() <= cap


def test_an_index_from_rows_in_any_order_and_chunking_is_the_same_index():
    """The service reads a partition's rows file by file (many chunks, file order); the index gathers them once."""
    lake, ids, _ = clustered_lake(np.random.default_rng(4), n_cols=30, dim=16)
    keys = 7 * COLUMN_KEY_BASE + ids
    model, vv, rows = stored_rows(lake, keys, select_pivots(lake, 4, seed=0))
    ref = index_from_rows(rows, vv, model)
    rng = np.random.default_rng(5)

    def shuffled_chunks(t: pa.Table) -> pa.Table:
        t = t.take(pa.array(rng.permutation(t.num_rows)))
        cuts = np.sort(rng.choice(np.arange(1, t.num_rows), 6, replace=False))
        return pa.Table.from_batches([b for a, b in zip(np.r_[0, cuts], np.r_[cuts, t.num_rows])
                                      for b in t.slice(a, b - a).to_batches()])

    got = index_from_rows(shuffled_chunks(rows), shuffled_chunks(vv), model)
    for name in ("vectors", "mapped", "col", "order", "run_start", "leaf_start"):
        assert np.array_equal(getattr(got, name), getattr(ref, name)), name
    assert np.array_equal(got.column_values, ref.column_values)
    q = lake[rng.choice(len(lake), 20, replace=False)]
    for method in ("pexeso", "exact"):
        a, b = got.search(q, 0.1, 0.0, method, 5), ref.search(q, 0.1, 0.0, method, 5)
        assert a.joinabilities() == b.joinabilities() and a.joinabilities()
        assert [c.pairs.tolist() for c in a.columns] == [c.pairs.tolist() for c in b.columns]


def test_a_settled_placement_moves_exactly_its_columns():
    """The stage hands the tasks a settled placement as two arrays (column keys ascending, partitions): the named
    columns' rows go to their partitions, every other row stays where the model's prices send it."""
    from discovery.indexes.join.stage import column_keys, mapping_rows

    rng = np.random.default_rng(4)
    lake = rng.normal(size=(120, 6)).astype(np.float32)
    keys = (1 + np.arange(120) // 10) * COLUMN_KEY_BASE + np.arange(120) % 3
    model, vv, before = stored_rows(lake, keys, select_pivots(lake, 3, seed=0))
    columns = np.unique(keys)
    moved = columns[[1, 4, 7]]
    after = mapping_rows(vv, model, (moved, np.array([1, 0, 1])))
    row_keys = column_keys(vv.column("table_id").to_numpy(), vv.column("ordinal").to_numpy())
    want = before.column("partition").to_numpy().copy()
    for key, part in zip(moved, (1, 0, 1)):
        want[row_keys == key] = part
    assert not np.array_equal(want, before.column("partition").to_numpy())   # the placement changes rows
    assert np.array_equal(after.column("partition").to_numpy(), want)
    assert mapping_rows(vv, model, (np.zeros(0, np.int64), np.zeros(0, np.int64))).equals(before)
