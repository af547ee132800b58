"""Exactness of PEXESO and PNODOM (Algorithm 4): equal to brute force on seeded random lakes, ties and boundary
distances included, for every metric, both set similarities, threshold search and top-k."""
import numpy as np
import pytest

from discovery.indexes.numjoin import NumericIndex, brute_force, get_metric
from numjoin_data import clustered_lake, coordinate_lake, integer_lake


def check(ix, sets, q, tau, metric, T=None, k=None, similarity="hit", method="pexeso", exact=True):
    want = brute_force(sets, q, tau, metric, T=T, k=k, similarity=similarity)
    got = ix.search(q, tau, T=T, k=k, similarity=similarity, method=method, exact_scores=exact)
    if exact or k is not None:
        assert list(got.set_ids) == list(want.set_ids), (tau, T, k, similarity, method)
    else:   # scores are lower bounds, so only the set of ids is the answer
        assert sorted(got.set_ids) == sorted(want.set_ids), (tau, T, similarity, method)
    m = get_metric(metric)
    for r in got.sets:
        if exact or k is not None:
            assert r.exact and r.score == want.scores()[r.set_id]
        else:
            assert r.score >= got.stats["need"] and r.score <= want.scores()[r.set_id]
        qrows = r.pairs[:, 0].astype(int)
        assert np.unique(qrows).size == qrows.size
        if similarity == "hit" and r.exact:
            assert qrows.size == r.score
        d = m.distance(r.query_values, r.lake_values)
        np.testing.assert_array_equal(d, r.pairs[:, 2])
        assert np.all(d <= tau)
    return got


@pytest.mark.parametrize("seed", range(6))
@pytest.mark.parametrize("dim", [1, 2, 3])
def test_integer_lakes_hit_exact_taus(seed, dim):
    metric = "absolute" if dim == 1 else "euclidean"
    sets, q = integer_lake(seed, dim)
    ix = NumericIndex.build(sets, metric, n_centers=6 + seed, seed=seed)
    nq = len(q)
    for tau in (0.0, 1.0, 2.0, 5.0, 13.0):
        for T in (1 / nq, 0.5, 3 / nq if nq >= 3 else 1.0, 1.0):
            for method in ("pexeso", "pnodom"):
                check(ix, sets, q, tau, metric, T=T, method=method)
            check(ix, sets, q, tau, metric, T=T, exact=False)


@pytest.mark.parametrize("seed", range(4))
def test_integer_lakes_all_and_topk(seed):
    sets, q = integer_lake(seed, 2)
    ix = NumericIndex.build(sets, "euclidean", n_centers=10, seed=seed)
    for tau in (1.0, 5.0):
        for similarity in ("hit", "all"):
            for method in ("pexeso", "pnodom"):
                check(ix, sets, q, tau, "euclidean", T=0.4, similarity=similarity, method=method)
                check(ix, sets, q, tau, "euclidean", T=0.4, similarity=similarity, method=method, exact=False)
                for k in (1, 3, 10, 40):
                    check(ix, sets, q, tau, "euclidean", k=k, similarity=similarity, method=method)
                check(ix, sets, q, tau, "euclidean", k=3, T=0.5, similarity=similarity, method=method)


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("metric", ["euclidean", "angular"])
def test_clustered_embeddings(seed, metric):
    sets, q = clustered_lake(seed)
    ix = NumericIndex.build(sets, metric, seed=seed)
    scale = 0.5 if metric == "euclidean" else 0.15
    for frac in (0.2, 0.5, 1.0):
        for similarity in ("hit", "all"):
            check(ix, sets, q, scale * frac, metric, T=0.3, similarity=similarity)
            check(ix, sets, q, scale * frac, metric, k=5, similarity=similarity, method="pexeso")
            check(ix, sets, q, scale * frac, metric, k=5, similarity=similarity, method="pnodom")


@pytest.mark.parametrize("seed", range(3))
def test_coordinates_haversine(seed):
    sets, q = coordinate_lake(seed)
    ix = NumericIndex.build(sets, "haversine", n_centers=12, seed=seed)
    m = get_metric("haversine")
    # taus exactly at distances that occur in the data (the band decides them canonically)
    pairs = m.distance(np.repeat(q, len(sets[0]), axis=0), np.tile(sets[0], (len(q), 1)))
    for tau in (0.0, float(np.sort(pairs)[3]), 1500.0, 5000.0):
        for similarity in ("hit", "all"):
            check(ix, sets, q, tau, "haversine", T=0.25, similarity=similarity)
            check(ix, sets, q, tau, "haversine", k=4, similarity=similarity)


def test_tau_beyond_the_largest_distance_matches_everything():
    sets, q = coordinate_lake(0)
    ix = NumericIndex.build(sets, "haversine", n_centers=5)
    check(ix, sets, q, 3e7, "haversine", T=1.0)
    check(ix, sets, q, 3e7, "haversine", T=1.0, similarity="all")


def test_empty_query_and_refusals():
    sets, q = integer_lake(0, 2)
    ix = NumericIndex.build(sets, "euclidean", n_centers=4)
    assert ix.search(np.zeros((0, 2)), 1.0, T=0.5).sets == []
    with pytest.raises(ValueError, match="threshold T"):
        ix.search(q, 1.0)
    with pytest.raises(ValueError, match="dimension"):
        ix.search(np.zeros((3, 5)), 1.0, T=0.5)
    with pytest.raises(ValueError, match="similarity"):
        ix.search(q, 1.0, T=0.5, similarity="any")
    with pytest.raises(ValueError, match="tau"):
        ix.search(q, -1.0, T=0.5)


def test_pexeso_reads_fewer_sets_and_distances_than_pnodom():
    sets, q = clustered_lake(7, n_sets=60)
    ix = NumericIndex.build(sets, "euclidean")
    a = ix.search(q, 0.3, T=0.6)
    b = ix.search(q, 0.3, T=0.6, method="pnodom")
    assert list(a.set_ids) == list(b.set_ids)
    total = lambda r: sum(r.stats["distances"].values())  # noqa: E731
    assert total(a) <= total(b)
