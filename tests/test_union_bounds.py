"""MWMTO bounds (Algorithm 3, made sound) bracket the exact Definition 5 score of every table."""
import numpy as np
import pytest

from discovery.union import UnionIndex
from discovery.union.bounds import mwmto_bounds
from discovery.union.csr import offsets_from_counts
from discovery.union.synthetic import build_index_inputs, draw_tables, generate_lake, lake_model


@pytest.fixture(scope="module")
def small_index():
    model = lake_model(16, 40, 8, 8, max_columns=8, seed=3)
    lake = generate_lake(model, 300, seed=4)
    centroids, parts = build_index_inputs(lake, 12, rho_l=0.3, rho_h=0.7)
    index = UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids, parts)
    return model, index


@pytest.mark.parametrize("seed", range(8))
@pytest.mark.parametrize("tau", [0.5, 0.7, 0.85])
def test_partition_bounds_bracket_exact(small_index, seed, tau):
    model, index = small_index
    vectors, owner, _ = draw_tables(model, 1, seed=100 + seed)
    tix = np.arange(index.table_count)
    lower, upper = index._candidate_bounds(vectors, tau, tix)
    exact = np.array([index._score(vectors, t, tau)[0] for t in tix])
    assert np.all(lower <= exact + 1e-9)
    assert np.all(exact <= upper + 1e-9)
    if tau == 0.5:
        assert np.any(lower > 0)  # the bounds carry information, not only 0 .. |Q|


@pytest.mark.parametrize("seed", range(30))
def test_singleton_bounds_bracket_exact_on_random_vectors(seed):
    rng = np.random.default_rng(seed)
    dim = 8
    base = rng.standard_normal((4, dim))
    sizes = rng.integers(1, 6, size=20)
    cols = base[rng.integers(4, size=sizes.sum())] + 0.4 * rng.standard_normal((sizes.sum(), dim))
    cols = (cols / np.linalg.norm(cols, axis=1, keepdims=True)).astype(np.float32)
    query = base[rng.integers(4, size=rng.integers(1, 6))] + 0.4 * rng.standard_normal((1, dim))
    query = (query / np.linalg.norm(query, axis=1, keepdims=True)).astype(np.float32)
    offsets = offsets_from_counts(sizes)
    zero = np.zeros(len(cols))
    lower, upper = mwmto_bounds(query, 0.6, cols, zero, zero, np.arange(len(cols) + 1), np.ones(len(cols), int),
                                offsets, sizes)
    from discovery.union.matching import unionability
    for i in range(len(sizes)):
        exact = unionability(query, cols[offsets[i]:offsets[i + 1]], 0.6).score
        assert lower[i] <= exact + 1e-9 <= upper[i] + 2e-9
