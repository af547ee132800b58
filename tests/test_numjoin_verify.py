"""Per-set verification (Algorithms 1-2 with Theorems 1-2): early accept, strict top-k rejection, the band."""
import numpy as np

from discovery.indexes.numjoin import NumericIndex, brute_force


def test_ties_at_the_kth_score_are_read_and_broken_by_set_id():
    base = np.array([[0.0, 0.0], [10.0, 0.0], [20.0, 0.0], [30.0, 0.0]])
    sets = [base[:2], base[:3], base[:3], base[:3], base[:1], base]     # scores 2, 3, 3, 3, 1, 4
    ix = NumericIndex.build(sets, "euclidean", n_centers=3)
    for method in ("pexeso", "pnodom"):
        r = ix.search(base, 0.0, k=3, method=method)
        assert list(r.set_ids) == [5, 1, 2] and [s.score for s in r.sets] == [4, 3, 3]
        assert all(s.exact for s in r.sets)


def test_threshold_search_stops_at_T_unless_exact_scores_are_asked():
    rng = np.random.default_rng(0)
    q = rng.integers(0, 5, size=(40, 2)).astype(float)
    sets = [q.copy(), q[:30].copy(), q[:5].copy()]
    ix = NumericIndex.build(sets, "euclidean", n_centers=4)
    early = ix.search(q, 0.0, T=0.5)
    full = ix.search(q, 0.0, T=0.5, exact_scores=True)
    assert sorted(early.set_ids) == sorted(full.set_ids) == [0, 1]
    assert all(s.score >= 20 for s in early.sets)
    assert full.scores() == brute_force(sets, q, 0.0, "euclidean", T=0.5).scores()
    assert sum(early.stats["distances"].values()) <= sum(full.stats["distances"].values())


def test_chords_in_the_band_are_decided_canonically():
    # points exactly tau apart on the sphere: every chord lands in the band of the haversine metric
    lat = np.array([0.0, 0.0, 0.0])
    lake = [np.column_stack([lat, [0.0, 1.0, 2.0]]), np.column_stack([lat, [0.5, 1.5, 2.5]])]
    q = np.column_stack([lat[:2], [0.0, 1.0]])
    tau = float(NumericIndex.build(lake, "haversine").metric.distance([[0.0, 0.0]], [[0.0, 1.0]])[0])
    ix = NumericIndex.build(lake, "haversine", n_centers=2)
    for sim in ("hit", "all"):
        for method in ("pexeso", "pnodom"):
            got = ix.search(q, tau, T=0.5, similarity=sim, method=method, exact_scores=True)
            assert got.scores() == brute_force(lake, q, tau, "haversine", T=0.5, similarity=sim).scores()
