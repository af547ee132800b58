"""MWMTO bounds (Algorithm 3, made sound) bracket the exact Definition 5 score of every table."""
import numpy as np
import pytest

from discovery.indexes.union import UnionIndex, assign_to_centroids, flatten_partitions, partition_table
from discovery.indexes.union.bounds import SUM_SLACK, mwmto_bounds
from discovery.indexes.union.cones import CONE_SLACK, cone_bound, directions
from discovery.indexes.union.csr import offsets_from_counts
from discovery.indexes.union.matching import similarity_matrix, unionability, unit_rows
from discovery.indexes.union.partitioning import partition_lake
from synthetic_lake import build_index_inputs, draw_tables, generate_lake, lake_model


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
    lower, upper = index.candidate_bounds(vectors, tau, tix)
    exact = np.array([index.score(vectors, t, tau)[0] for t in tix])
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


def _basis_lake(seed):
    """Columns that are exactly basis directions (the centroids), query columns each within reach of exactly one of
    them: every admissible pair is isolated, every cone has radius 0, so Algorithm 3's bounds are exact."""
    rng = np.random.default_rng(seed)
    dim = 8
    basis = np.eye(dim, dtype=np.float32)
    sizes = rng.integers(1, dim + 1, size=30)
    cols = [rng.choice(dim, size=m, replace=False) for m in sizes]
    vectors = basis[np.concatenate(cols)]
    owner = np.repeat(np.arange(len(sizes)), sizes)
    ordinal = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
    ids = assign_to_centroids(vectors, basis)
    parts = [partition_table(vectors[owner == t], ids[owner == t], basis, col_ordinals=ordinal[owner == t])
             for t in range(len(sizes))]
    index = UnionIndex.build(vectors, owner, ordinal, basis, flatten_partitions(range(len(sizes)), parts))
    picked = rng.choice(dim, size=int(rng.integers(1, dim)), replace=False)
    query = basis[picked] + rng.uniform(0.05, 0.4, size=(len(picked), 1)) * basis[(picked + 1) % dim]
    return index, unit_rows(query)


@pytest.mark.parametrize("seed", range(20))
def test_bounds_are_tight_where_pairs_are_isolated(seed):
    index, query = _basis_lake(seed)
    tau = 0.8
    exact = np.array([index.score(query, t, tau)[0] for t in range(index.table_count)])
    assert (exact > 0).any()
    lower, upper = index.candidate_bounds(query, tau, np.arange(index.table_count))
    np.testing.assert_allclose(lower, exact, rtol=0, atol=2 * SUM_SLACK)
    np.testing.assert_allclose(upper, exact, rtol=0, atol=2 * SUM_SLACK)
    keys = index.cones.table_bounds(directions(query), tau)
    assert np.flatnonzero(keys).tolist() == np.flatnonzero(exact > 0).tolist()  # reachable: exactly the unionable
    assert np.all(keys >= exact)
    assert np.all(keys <= exact + len(query) * (CONE_SLACK + 1e-6))  # float32 pass: each bound off by < 1e-6


@pytest.mark.parametrize("seed", range(30))
def test_cone_bound_is_the_maximum_over_the_cap(seed):
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(2, 10))
    anchor, q = directions(rng.standard_normal((2, dim)))
    cos_r = float(rng.uniform(-0.5, 1.0))
    # members anywhere in the cap stay below the bound
    v = directions(rng.standard_normal((4000, dim)))
    inside = v[v @ anchor >= cos_r]
    bound = float(cone_bound(np.array(q @ anchor), np.array(cos_r)))
    assert np.all(inside @ q <= bound)
    # the cap's edge towards q attains it: rotate the anchor towards q by the cap's angle
    ortho = q - (q @ anchor) * anchor
    ortho /= np.linalg.norm(ortho)
    alpha = np.arccos(cos_r)
    theta = np.arccos(np.clip(q @ anchor, -1, 1))
    edge = np.cos(min(alpha, theta)) * anchor + np.sin(min(alpha, theta)) * ortho
    assert edge @ anchor >= cos_r - 1e-12
    assert bound - CONE_SLACK == pytest.approx(float(edge @ q), abs=1e-9)


def _random_or_clustered(kind: str, seed: int):
    """(index, lake vectors, owner, queries) of a lake of random directions or of clustered domains."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        dim = int(rng.integers(3, 9))
        sizes = rng.integers(1, 7, size=int(rng.integers(20, 120)))
        vectors = unit_rows(rng.standard_normal((sizes.sum(), dim)))
        owner = np.repeat(np.arange(len(sizes)), sizes)
        ordinal = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        queries = [unit_rows(rng.standard_normal((int(rng.integers(1, 7)), dim))) for _ in range(4)]
    else:
        model = lake_model(12, 30, 6, 8, max_columns=8, noise=(0.1, 0.8), stray=0.2, seed=seed)
        vectors, owner, ordinal = draw_tables(model, int(rng.integers(40, 160)), seed=seed + 1)
        queries = [draw_tables(model, 1, seed=seed + 2 + i)[0] for i in range(4)]
    centroids, parts = partition_lake(vectors, owner, ordinal, seed=seed)
    return UnionIndex.build(vectors, owner, ordinal, centroids, parts), vectors, owner, queries


@pytest.mark.parametrize("kind", ["random", "clustered"])
@pytest.mark.parametrize("seed", range(10))
def test_cone_table_bounds_are_at_least_the_exact_score(kind, seed):
    # the cone bound of every table (fine anchors, posting radii, column relaxation capped at |V_Q| pairs) is at least
    # U(V_Q, V_t, tau), and positive for every table with an admissible pair
    index, vectors, owner, queries = _random_or_clustered(kind, seed)
    for query in queries:
        for tau in (0.2, 0.4, 0.7, 0.9, 1.0):
            keys = index.cones.table_bounds(directions(unit_rows(query)), tau)
            exact = np.array([unionability(query, vectors[owner == t], tau).score for t in index.table_ids])
            assert np.all(keys >= exact)
            assert np.all(keys[exact > 0] > 0)


@pytest.mark.parametrize("kind", ["random", "clustered"])
@pytest.mark.parametrize("seed", range(10))
def test_bounds_below_the_floor_are_only_upper_bounds(kind, seed):
    # with a floor, a table gets exactly the full bounds, or (when its column relaxation is below the floor) 0 and an
    # upper bound below the floor that is still at least its full upper bound; every table that can reach the floor
    # gets the full bounds
    index, _, _, queries = _random_or_clustered(kind, seed)
    tix = np.arange(index.table_count)
    partial = 0
    for query in queries:
        for tau in (0.3, 0.6):
            exact = np.array([index.score(query, t, tau)[0] for t in tix])
            full_lower, full_upper = index.candidate_bounds(query, tau, tix)
            floor = float(np.quantile(exact, 0.8))
            cands = index.candidates(unit_rows(query), tau, tix)
            lower, upper = cands.bounds(floor)
            full = (lower == full_lower) & (upper == full_upper)
            assert np.all(full[full_upper >= floor])
            assert np.all(lower[~full] == 0) and np.all(upper[~full] >= full_upper[~full])
            assert np.all(upper[~full] < floor)
            partial += int((~full).sum())
    assert partial > 0  # the floor spared some tables their full bounds
