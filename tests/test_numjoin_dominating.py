"""Posting lists (Lemmas 6-7), per-set bounds (Theorems 2, 4-5) and the greedy dominating cover (Algorithm 3)."""
import numpy as np

from discovery.indexes.numjoin import NumericIndex, brute_force
from discovery.indexes.numjoin.dominating import InvertedIndex, greedy_order, posting_splits, set_bounds
from discovery.indexes.numjoin.groups import build_groups
from discovery.indexes.numjoin.lemmas import filter_key, match_key
from discovery.indexes.numjoin.metric import chord_rows
from numjoin_data import clustered_lake, integer_lake


def test_posting_lists_are_sorted_by_radius_and_splits_match_the_lemmas():
    sets, _ = clustered_lake(0, n_sets=40)
    ix = NumericIndex.build(sets, "euclidean", n_centers=30)
    inv = ix.inverted
    rng = np.random.default_rng(0)
    for c in range(30):
        r = inv.radius[inv.start[c]:inv.start[c + 1]]
        assert np.all(np.diff(r) >= 0)
        assert np.array_equal(ix.groups.center[inv.group[inv.start[c]:inv.start[c + 1]]], np.full(r.size, c))
    cand_c = rng.integers(0, 30, 200)
    d, rq, tau = rng.uniform(0, 3, 200), rng.uniform(0, 1, 200), 0.4
    nf, nm = posting_splits(inv, cand_c, filter_key(d, rq, tau), match_key(d, rq, tau))
    for k in range(200):
        r = inv.radius[inv.start[cand_c[k]]:inv.start[cand_c[k] + 1]]
        assert nf[k] == (r < filter_key(d[k], rq[k], tau)).sum()          # Lemma 6: the filtered prefix
        assert nm[k] == (r <= match_key(d[k], rq[k], tau)).sum()          # Lemma 7: the matched prefix


def _bounds(ix, q, tau, hit):
    qv = ix.metric.prepare(q)
    qg = build_groups(qv, np.zeros(len(qv), dtype=np.int64), 1, ix.centers)
    g = np.repeat(np.arange(qg.n_groups), ix.centers.shape[0])
    c = np.tile(np.arange(ix.centers.shape[0]), qg.n_groups)
    dgc = chord_rows(ix.centers[qg.center[g]], ix.centers[c])
    nf, nm = posting_splits(ix.inverted, c, filter_key(dgc, qg.radius[g], tau + 1e-9),
                            match_key(dgc, qg.radius[g], tau - 1e-9))
    half = (tau - 1e-9) / 2
    q_half = np.array([np.searchsorted(qg.member_dist[a:b], half, side="right")
                       for a, b in zip(qg.start[:-1], qg.start[1:])])
    return set_bounds(ix.inverted, ix.groups, ix.n_sets, g, c, nf, nm, qg.size, qg.center, q_half, half, hit)


def test_set_bounds_bracket_the_true_scores():
    for seed in range(4):
        sets, q = integer_lake(seed, 2, n_sets=30)
        ix = NumericIndex.build(sets, "euclidean", n_centers=8, seed=seed)
        for tau in (1.0, 3.0, 8.0):
            for sim in ("hit", "all"):
                upper, lower = _bounds(ix, q, tau, sim == "hit")
                truth = brute_force(sets, q, tau, "euclidean", T=0.0, similarity=sim).scores()
                for s in range(len(sets)):
                    assert lower[s] <= truth.get(s, 0) <= upper[s], (seed, tau, sim, s)


def test_greedy_order_is_the_dominating_cover_greedy():
    sets, q = clustered_lake(3, n_sets=50)
    ix = NumericIndex.build(sets, "euclidean", n_centers=20)
    inv = ix.inverted
    alive = np.ones(50, dtype=bool)
    alive[::5] = False
    centers = np.arange(20)
    got = greedy_order(inv, centers, alive, share=0.2)
    # naive re-implementation of Algorithm 3
    lists = [[s for s in inv.set_of[inv.start[c]:inv.start[c + 1]] if alive[s]] for c in centers]
    ks = [max(1, int(np.ceil(0.2 * len(li)))) for li in lists]
    done, want = set(), []
    todo = {s for li in lists for s in li}
    while len(want) < len(todo):
        counts = np.zeros(50, dtype=int)
        for li, k in zip(lists, ks):
            for s in [s for s in li if s not in done][:k]:
                counts[s] += 1
        cand = sorted(todo - done)
        best = max(cand, key=lambda s: (counts[s], -s))
        want.append(best)
        done.add(best)
    assert got.tolist() == want
    assert not set(got.tolist()) & set(np.flatnonzero(~alive).tolist())


def test_inverted_index_reach_is_the_largest_radius():
    sets, _ = integer_lake(1, 2)
    ix = NumericIndex.build(sets, "euclidean", n_centers=9)
    inv = InvertedIndex.build(ix.groups, 9)
    for c in range(9):
        r = ix.groups.radius[ix.groups.center == c]
        assert inv.center_reach()[c] == (r.max() if r.size else -np.inf)
