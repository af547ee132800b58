"""MWMTO bounds (Algorithm 3, made sound) bracket the exact Definition 5 score of every table."""
import numpy as np
import pytest

from discovery.union import UnionIndex
from discovery.union.bounds import mwmto_bounds
from discovery.union.matching import similarity_matrix, unionability
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


@pytest.mark.parametrize("seed", range(60))
def test_bounds_bracket_exact_on_random_partitions(seed):
    rng = np.random.default_rng(seed)
    dim = 8
    base = rng.standard_normal((4, dim))
    sizes = rng.integers(1, 7, size=20)
    cols = base[rng.integers(4, size=sizes.sum())] + 0.4 * rng.standard_normal((sizes.sum(), dim))
    cols = (cols / np.linalg.norm(cols, axis=1, keepdims=True)).astype(np.float32)
    query = base[rng.integers(4, size=rng.integers(1, 7))] + 0.4 * rng.standard_normal((1, dim))
    query = (query / np.linalg.norm(query, axis=1, keepdims=True)).astype(np.float32)
    offsets = offsets_from_counts(sizes)
    # random contiguous partitions inside every table: cut points drawn per table
    starts, table_parts = [], [0]
    for i in range(len(sizes)):
        inner = rng.choice(np.arange(1, sizes[i]), size=rng.integers(0, sizes[i]), replace=False) if sizes[i] > 1 \
            else np.zeros(0, dtype=int)
        starts.extend(sorted([0, *inner.tolist()]))
        starts[-len(inner) - 1:] = [offsets[i] + s for s in starts[-len(inner) - 1:]]
        table_parts.append(table_parts[-1] + len(inner) + 1)
    tau = float(rng.choice([0.3, 0.6, 0.8]))
    sims = similarity_matrix(query, cols)
    lower, upper = mwmto_bounds(sims, tau, np.array(starts), np.array(table_parts))
    for i in range(len(sizes)):
        exact = unionability(query, cols[offsets[i]:offsets[i + 1]], tau).score
        assert lower[i] <= exact <= upper[i]
        assert (upper[i] == 0) == (exact == 0)
        if sizes[i] == np.diff(table_parts)[i]:  # singleton partitions: the lower bound is a real matching
            assert lower[i] >= 0
