"""PEXESO, PEXESO-H and brute force return exactly the brute-force answer: threshold, top-k (also with a slack, across
partitions), both metrics."""
import numpy as np
import pytest

from discovery.indexes.join import JoinIndex, map_to_pivots, select_pivots
from discovery.indexes.join.grid import GridSpec
from discovery.indexes.join.partitioning import search_partitions
from join_data import brute_force, clustered_lake, query_from, top_k_reference, uniform_lake, unit

METHODS = ("pexeso", "pexeso-h", "exact")
SETTINGS = [(0.02, 0.2), (0.06, 0.6), (0.1, 0.4), (0.2, 0.8), (0.3, 0.3), (0.45, 0.6), (0.1, 0.0)]


def _cases(seed):
    rng = np.random.default_rng(seed)
    if seed % 2:
        lake, ids = uniform_lake(rng)
        queries = [lake[rng.choice(lake.shape[0], 20, replace=False)] + 0.0, uniform_lake(rng, 1, 8, 2)[0]]
        queries = [q for q in queries if q.shape[0]]
    else:
        lake, ids, entities = clustered_lake(rng)
        queries = [query_from(rng, entities, s) for s in (5, 25, 60)]
    return rng, lake, ids, queries


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("metric", ["euclidean", "angular"])
def test_threshold_search_equals_brute_force(seed, metric):
    rng, lake, ids, queries = _cases(seed)
    pivots = select_pivots(lake, n_pivots=int(rng.integers(1, 6)), seed=seed, metric=metric)
    index = JoinIndex.build(lake, ids, pivots, levels=int(rng.integers(1, 6)), metric=metric)
    for q in queries:
        for tau, T in SETTINGS:
            expected = brute_force(lake, ids, q, tau, T, metric)
            for method in METHODS:
                got = index.search(q, tau, T, method=method)
                assert got.joinabilities() == expected, (method, tau, T)
                ranks = [(-c.matches, c.column_id) for c in got.columns]
                assert ranks == sorted(ranks)


@pytest.mark.parametrize("seed", range(6))
def test_top_k_equals_brute_force(seed):
    """Top-k is the k most joinable columns with any match: a T given along is not applied."""
    rng, lake, ids, queries = _cases(seed)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 3, seed=seed), levels=3)
    for q in queries:
        for tau, T in [(0.06, 0.0), (0.15, 0.1), (0.3, 0.0), (0.5, 0.5)]:
            full = brute_force(lake, ids, q, tau, 0.0)
            for k in (1, 3, 10):
                for method in METHODS:
                    got = index.search(q, tau, T, method=method, top_k=k)
                    assert got.joinabilities() == top_k_reference(full, k), (method, tau, T, k)


def _shared_entity_lake(rng, n_entities=120, n_cols=70, dim=16):
    """Columns of exact copies of entity vectors at least 0.45 apart: with tau 0.2 (a fraction 0.1 of the maximum
    distance 2) a query value matches a column iff they hold the same entity, and no distance lies near tau, so the
    reference counts are set intersections."""
    entities = unit(rng.normal(size=(n_entities, dim)))
    gap = np.linalg.norm(entities[:, None, :].astype(np.float64) - entities[None, :, :], axis=-1)
    assert gap[np.triu_indices(n_entities, 1)].min() > 0.45
    picks = [rng.choice(n_entities, int(rng.integers(5, 60)), replace=False) for _ in range(n_cols)]
    ids = np.concatenate([np.full(p.size, 5 * c + 3) for c, p in enumerate(picks)])
    query = rng.choice(n_entities, 50, replace=False)
    counts = {5 * c + 3: int(np.intersect1d(p, query).size) for c, p in enumerate(picks)}
    return entities[np.concatenate(picks)], ids, entities[query], {c: m for c, m in counts.items() if m}


def _widened(counts: dict, k: int, slack: int, pool: int) -> list:
    """The top-k with a slack by definition: ranked by (count descending, column id), the first k and every column
    within ``slack`` of the k-th count, at most ``pool``."""
    ranked = sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))
    if len(ranked) >= k:
        ranked = [(c, m) for c, m in ranked if m >= ranked[k - 1][1] - slack]
    return ranked[:pool]


@pytest.mark.parametrize("seed", range(8))
def test_top_k_with_slack_returns_the_widened_set_exactly(seed):
    """One top-k search with a slack (the context margin's) returns exactly the top-k and every column within the
    slack of the k-th count, at most the pool: every method, and partition by partition with the floor carried."""
    rng = np.random.default_rng(seed)
    lake, ids, query, counts = _shared_entity_lake(rng)
    pivots = select_pivots(lake, 3, seed=seed)
    index = JoinIndex.build(lake, ids, pivots, levels=3)
    grid = GridSpec.fit(map_to_pivots(lake, pivots), 3)
    parts = [np.flatnonzero(ids % 3 == p) for p in range(3)]
    for k, slack, pool in [(1, 0, 1), (3, 0, 3), (3, 2, 53), (5, 4, 8), (10, 3, 60), (10, 50, 12), (1, 6, 70)]:
        want = _widened(counts, k, slack, pool)
        for method in METHODS:
            got = index.search(query, 0.1, 0.0, method=method, top_k=k, slack=slack, pool=pool)
            assert list(got.joinabilities().items()) == want, (method, k, slack, pool)
            merged = search_partitions((lambda s=s: JoinIndex.build(lake[s], ids[s], pivots, grid=grid) for s in parts),
                                       query, 0.1, 0.0, method, k, slack=slack, pool=pool)
            assert list(merged.joinabilities().items()) == want, (method, k, slack, pool)


@pytest.mark.parametrize("seed", range(4))
def test_decision_mode_returns_same_columns(seed):
    rng, lake, ids, queries = _cases(seed)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 4, seed=seed), levels=4)
    for q in queries:
        for tau, T in SETTINGS:
            expected = brute_force(lake, ids, q, tau, T)
            for method in METHODS:
                got = index.search(q, tau, T, method=method, exact_joinability=False)
                assert set(got.joinabilities()) == set(expected)
                for c in got.columns:
                    assert c.joinability >= T and c.matches <= expected[c.column_id]


def test_evidence_pairs_are_real_matches():
    rng = np.random.default_rng(11)
    lake, ids, entities = clustered_lake(rng, noise=0.1)
    q = query_from(rng, entities, 30)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 5), levels=4)
    tau = 0.08
    for method in METHODS:
        result = index.search(q, tau, 0.3, method=method)
        assert result.columns
        for col in result.columns:
            assert col.pairs.shape == (col.matches, 3)
            qi, xi = col.pairs[:, 0].astype(int), col.pairs[:, 1].astype(int)
            assert np.unique(qi).size == col.matches
            assert np.all(ids[xi] == col.column_id)
            true = np.linalg.norm(q[qi].astype(np.float64) - lake[xi].astype(np.float64), axis=1)
            np.testing.assert_allclose(col.pairs[:, 2], true, atol=1e-4)  # float32 fast path
            assert np.all(true <= tau * 2 + 1e-9)


def test_from_float32_mappings_is_exact():
    """Mappings stored as float32 (as in Delta) and precomputed cells give the same answer."""
    rng = np.random.default_rng(5)
    lake, ids, entities = clustered_lake(rng)
    pivots = select_pivots(lake, 5, seed=1)
    mapped = map_to_pivots(lake, pivots).astype(np.float32)
    grid = GridSpec.fit(mapped, 4)
    index = JoinIndex.from_mapped(lake, ids, mapped, pivots, grid, cells=grid.leaf_cells(mapped))
    for size in (10, 40):
        q = query_from(rng, entities, size)
        for tau, T in SETTINGS:
            assert index.search(q, tau, T).joinabilities() == brute_force(lake, ids, q, tau, T)


def test_boundary_pairs_decided_identically():
    """Pairs at exactly the threshold distance: every method takes the same decision."""
    rng = np.random.default_rng(3)
    base = np.zeros((1, 8), np.float32)
    base[0, 0] = 1.0
    angles = np.linspace(0.05, 0.2, 40)
    lake = np.zeros((40, 8), np.float32)
    lake[:, 0], lake[:, 1] = np.cos(angles), np.sin(angles)
    ids = np.arange(40)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 2), levels=3)
    tau = float(np.linalg.norm(lake[17].astype(np.float64) - base[0])) / 2.0
    answers = [index.search(base, tau, 1.0, method=m).joinabilities() for m in METHODS]
    assert answers[0] == answers[1] == answers[2]
    assert 16 in answers[0] and 18 not in answers[0]
    del rng


def test_bad_arguments():
    rng = np.random.default_rng(0)
    lake, ids = uniform_lake(rng)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 3), levels=2)
    with pytest.raises(ValueError):
        index.search(lake[:3], 1.5, 0.5)
    with pytest.raises(ValueError):
        index.search(lake[:3], 0.1, 1.5)
    with pytest.raises(ValueError):
        index.search(lake[:3], 0.1, 0.5, method="nope")
    with pytest.raises(ValueError):
        index.search(np.zeros((0, lake.shape[1]), np.float32), 0.1, 0.5)
    with pytest.raises(ValueError):
        index.search(lake[:3, :4], 0.1, 0.5)


@pytest.mark.parametrize("seed", range(3))
def test_an_index_of_presorted_rows_equals_the_index_that_sorts_them(seed):
    """The served index gathers rows straight into (leaf cell, column) order and hands over their numbering; it must
    be the index that sorts them itself, array for array and answer for answer (pairs numbered the caller's way)."""
    rng, lake, ids, queries = _cases(seed)
    pivots = select_pivots(lake, n_pivots=3, seed=seed)
    mapped = map_to_pivots(lake, pivots).astype(np.float32)
    grid = GridSpec.fit(mapped, 3)
    plain = JoinIndex.from_mapped(lake, ids, mapped, pivots, grid)
    cells = grid.leaf_cells(mapped)
    order = np.lexsort((ids, cells))
    given = JoinIndex.from_mapped(lake[order], ids[order], mapped[order], pivots, grid, cells=cells[order],
                                  order=order)
    for name in ("order", "vectors", "sq_norms", "mapped", "col", "run_start", "run_col", "leaf_run_start"):
        assert np.array_equal(getattr(plain, name), getattr(given, name)), name
    for q in queries:
        a, b = plain.search(q, 0.1, 0.0, top_k=5), given.search(q, 0.1, 0.0, top_k=5)
        assert a.joinabilities() == b.joinabilities()
        assert all(np.array_equal(x.pairs, y.pairs) for x, y in zip(a.columns, b.columns))
    with pytest.raises(ValueError, match="sorted"):
        JoinIndex.from_mapped(lake, ids, mapped, pivots, grid, cells=cells, order=np.arange(len(lake)))
