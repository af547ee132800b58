"""Pivot selection and mapping, grid cell ids, and partitioning."""
import numpy as np
import pytest

from discovery.indexes.join import (GridSpec, JoinIndex, map_to_pivots, partition_columns, partition_count,
                                    search_partitions, select_pivots)
from join_data import brute_force, clustered_lake, query_from, top_k_reference, unit


def test_select_pivots_deterministic_rows_of_sample():
    rng = np.random.default_rng(0)
    sample = unit(rng.normal(size=(500, 12)))
    a = select_pivots(sample, 5, seed=3)
    assert a.shape == (5, 12) and a.dtype == np.float32
    np.testing.assert_array_equal(a, select_pivots(sample, 5, seed=3))
    rows = {tuple(r) for r in sample}
    assert all(tuple(p) in rows for p in a)
    assert np.unique(a, axis=0).shape[0] == 5


def test_pca_pivots_filter_more_than_random_pivots():
    """Lemma 1 filters a larger share of random pairs with PCA pivots than with random sample rows as pivots."""
    rng = np.random.default_rng(1)
    sample = unit(rng.normal(size=(2000, 6)) * np.array([5, 3, 1, 0.5, 0.2, 0.1]))
    a, b = rng.integers(0, 2000, 20000), rng.integers(0, 2000, 20000)

    def filtered_share(pivots, tau=0.12):
        m = map_to_pivots(sample, pivots)
        return (np.abs(m[a] - m[b]) > tau).any(axis=1).mean()

    random_share = np.mean([filtered_share(sample[rng.choice(2000, 3, replace=False)]) for _ in range(10)])
    assert filtered_share(select_pivots(sample, 3)) > random_share


@pytest.mark.parametrize("metric", ["euclidean", "angular"])
def test_map_to_pivots_matches_definition(metric):
    rng = np.random.default_rng(2)
    x, p = unit(rng.normal(size=(50, 7))), unit(rng.normal(size=(3, 7)))
    got = map_to_pivots(x, p, metric)
    x64, p64 = x.astype(np.float64), p.astype(np.float64)
    if metric == "euclidean":
        want = np.linalg.norm(x64[:, None] - p64[None], axis=-1)
    else:
        want = np.arccos(np.clip(x64 @ p64.T / np.outer(np.linalg.norm(x64, axis=1), np.linalg.norm(p64, axis=1)),
                                 -1, 1))
    np.testing.assert_allclose(got, want, atol=1e-7)


def test_leaf_cells_are_hierarchical_morton_codes():
    rng = np.random.default_rng(4)
    grid = GridSpec(np.zeros(3), np.full(3, 2.0), levels=4)
    mapped = rng.uniform(0, 2, size=(1000, 3))
    ids = grid.leaf_cells(mapped)
    coords = grid.coordinates(mapped)
    for level in range(1, 5):
        parent = ids >> (3 * (4 - level))
        coarse = GridSpec(grid.lower, grid.upper, level).leaf_cells(mapped)
        np.testing.assert_array_equal(parent, coarse)
    assert coords.min() >= 0 and coords.max() < 16
    np.testing.assert_array_equal(grid.leaf_cells(mapped[:10]), ids[:10])
    outside = grid.leaf_cells(np.array([[-1.0, 3.0, 1.0]]))  # clipped into edge cells
    assert outside[0] == grid.leaf_cells(np.array([[0.0, 1.999999, 1.0]]))[0]
    with pytest.raises(ValueError):
        GridSpec(np.zeros(9), np.ones(9), levels=8)


def test_partition_columns_separates_distributions():
    rng = np.random.default_rng(6)
    dim = 10
    a, b = unit(rng.normal(size=(1, dim))), unit(rng.normal(size=(1, dim)))
    vecs, ids, truth = [], [], []
    for c in range(40):
        centre = a if c % 2 else b
        vecs.append(unit(centre + rng.normal(size=(30, dim)) * 0.1))
        ids.append(np.full(30, c))
        truth.append(c % 2)
    x, ids = np.vstack(vecs), np.concatenate(ids)
    mapped = map_to_pivots(x, select_pivots(x, 3))
    cols, part = partition_columns(mapped, ids, 2, seed=0)
    np.testing.assert_array_equal(cols, np.arange(40))
    truth = np.array(truth)
    assert len(set(part[truth == 0])) == 1 and len(set(part[truth == 1])) == 1 and part[0] != part[1]


def test_partitioned_search_equals_single_index():
    rng = np.random.default_rng(8)
    lake, ids, entities = clustered_lake(rng, n_cols=90)
    pivots = select_pivots(lake, 4)
    mapped = map_to_pivots(lake, pivots)
    cols, part = partition_columns(mapped, ids, 3, seed=1)
    grid = GridSpec.fit(mapped, 4)
    member = part[np.searchsorted(cols, ids)]
    loaders = [lambda k=k: JoinIndex.from_mapped(lake[member == k], ids[member == k], mapped[member == k], pivots,
                                                 grid) for k in range(3)]
    assert partition_count(lake.shape[0], lake.shape[1], 4, 4, 10_000) > 1
    for size in (10, 30):
        q = query_from(rng, entities, size)
        for tau, T in [(0.06, 0.3), (0.2, 0.5)]:
            full = brute_force(lake, ids, q, tau, T)
            assert search_partitions(loaders, q, tau, T).joinabilities() == full
            for k in (1, 4):
                got = search_partitions(loaders, q, tau, T, top_k=k)
                assert got.joinabilities() == top_k_reference(brute_force(lake, ids, q, tau, 0.0), k)
