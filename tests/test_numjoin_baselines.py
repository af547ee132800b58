"""Every baseline returns the brute-force answer."""
import numpy as np
import pytest

from discovery.indexes.numjoin import BASELINES, brute_force
from numjoin_data import clustered_lake, coordinate_lake, integer_lake


def _same(got, want, exact):
    if exact:
        assert got.scores() == want.scores()
        assert list(got.set_ids) == list(want.set_ids)
    else:
        assert sorted(got.set_ids) == sorted(want.set_ids)


@pytest.mark.parametrize("name", sorted(BASELINES))
def test_baselines_equal_brute_force(name):
    cases = [(integer_lake(0, 1), "absolute", (0.0, 1.0, 3.0)),
             (integer_lake(1, 2), "euclidean", (0.0, 5.0, 13.0)),
             (clustered_lake(2), "angular", (0.05, 0.15)),
             (coordinate_lake(3), "haversine", (0.0, 1500.0, 3e7))]
    for (sets, q), metric, taus in cases:
        method = BASELINES[name](sets, metric)
        for tau in taus:
            for sim in ("hit", "all"):
                for exact in (True, False):
                    want = brute_force(sets, q, tau, metric, T=0.4, similarity=sim)
                    _same(method.search(q, tau, T=0.4, similarity=sim, exact_scores=exact), want, exact)
                want = brute_force(sets, q, tau, metric, k=4, similarity=sim)
                _same(method.search(q, tau, k=4, similarity=sim), want, True)


def test_brute_force_witnesses_are_first_matches():
    sets, q = integer_lake(4, 2)
    r = brute_force(sets, q, 2.0, "euclidean", T=0.1)
    for s in r.sets:
        x = sets[s.set_id]
        for qi, xi, d in s.pairs:
            dist = np.sqrt(((q[int(qi)] - x) ** 2).sum(axis=1))
            assert int(xi) == np.flatnonzero(dist <= 2.0)[0] and d == dist[int(xi)]


def test_brute_force_counts_every_pair():
    sets, q = integer_lake(5, 2)
    r = brute_force(sets, q, 2.0, "euclidean", T=0.1)
    assert r.stats["distances"] == {"object": len(q) * sum(len(x) for x in sets)}
