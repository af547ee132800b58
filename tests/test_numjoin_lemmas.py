"""Soundness of Lemmas 1-5 as the search uses them, on random groups and query objects."""
import numpy as np

from discovery.indexes.numjoin.lemmas import bisect_left, bisect_right, filter_key, lookup, match_key, window
from discovery.indexes.numjoin.metric import chord_pairwise, chord_to_many, slack


def test_group_lemmas_never_contradict_the_pairs():
    rng = np.random.default_rng(0)
    s = slack(3, 20.0)
    for _ in range(300):
        cx, cq = rng.normal(size=3) * 3, rng.normal(size=3) * 3
        x = cx + rng.normal(size=(int(rng.integers(1, 20)), 3)) * rng.uniform(0.1, 2)
        q = cq + rng.normal(size=(int(rng.integers(1, 20)), 3)) * rng.uniform(0.1, 2)
        rx, rq = chord_to_many(cx, x).max(), chord_to_many(cq, q).max()
        d = chord_to_many(cx, cq[None])[0]
        tau = rng.uniform(0, 6)
        pairs = chord_pairwise(q, x)
        if rx < filter_key(d, rq, tau + s):                       # Lemma 3
            assert not (pairs <= tau).any()
        if rx <= match_key(d, rq, tau - s):                       # Lemma 5
            assert (pairs <= tau).all()
        for i in range(q.shape[0]):
            dqc = chord_to_many(q[i], cx[None])[0]
            if rx < filter_key(dqc, 0.0, tau + s):                # Lemma 2
                assert not (pairs[i] <= tau).any()
            if rx <= match_key(dqc, 0.0, tau - s):                # Lemma 4
                assert (pairs[i] <= tau).all()


def test_window_keeps_every_match_and_its_sure_part_matches():
    rng = np.random.default_rng(1)
    s = slack(2, 50.0)
    for _ in range(300):
        c = rng.normal(size=2)
        x = c + rng.normal(size=(40, 2)) * 3
        dist = chord_to_many(c, x)
        order = np.argsort(dist)
        x, dist = x[order], dist[order]
        q = c + rng.normal(size=2) * 3
        dqc = chord_to_many(q, c[None])[0]
        tau = rng.uniform(0, 4)
        a, m, b = window(dist, 0, 40, dqc, tau + s, tau - s)
        match = chord_to_many(q, x) <= tau
        assert not match[:a].any() and not match[b:].any()
        assert match[a:m].all() and a <= m <= b


def test_bisection_and_lookup():
    a = np.array([1.0, 2.0, 2.0, 3.0])
    assert bisect_left(a, 0, 4, 2.0) == 1 and bisect_right(a, 0, 4, 2.0) == 3
    c = np.array([2, 5, 9, 1, 4], dtype=np.int64)
    assert lookup(c, 0, 3, 5) == 1 and lookup(c, 0, 3, 4) == -1 and lookup(c, 3, 5, 4) == 4
