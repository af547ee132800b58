"""Theorem 3 on the MVP-tree: never drops a (query group, center) pair that could hold a match."""
import numpy as np

from discovery.indexes.numjoin.metric import chord_pairwise
from discovery.indexes.numjoin.mvptree import MVPTree, hf_pivots


def test_tree_structure_covers_every_center_once():
    rng = np.random.default_rng(0)
    c = rng.normal(size=(300, 5))
    t = MVPTree.build(c, n_pivots=4, fanout=3, leaf_size=6)
    assert np.array_equal(np.sort(t.order), np.arange(300))
    leaves = np.flatnonzero(t.child_end == t.child_start)
    assert sorted(np.concatenate([t.order[t.start[i]:t.end[i]] for i in leaves]).tolist()) == list(range(300))
    for i in range(t.n_nodes):
        piv = t.entry_piv[t.order[t.start[i]:t.end[i]]]
        assert np.all(piv >= t.box_lo[i]) and np.all(piv <= t.box_hi[i])
    assert np.allclose(t.entry_piv, chord_pairwise(c, t.pivots))


def test_candidates_are_exactly_the_pairs_theorem_3_keeps():
    rng = np.random.default_rng(1)
    c = rng.normal(size=(400, 8))
    t = MVPTree.build(c, n_pivots=5, fanout=2, leaf_size=4)
    reach_c = rng.uniform(0, 0.5, 400)
    reach_c[::7] = -np.inf                                   # centers no set uses
    qc = rng.integers(0, 400, 30)
    q_reach = rng.uniform(0.5, 2.0, 30)
    g, cc = t.candidates(t.entry_piv[qc], q_reach, reach_c)
    got = set(zip(g.tolist(), cc.tolist()))
    r = q_reach[:, None] + reach_c[None, :]
    want = np.isfinite(r) & np.all(np.abs(t.entry_piv[qc][:, None, :] - t.entry_piv[None, :, :]) <= r[..., None],
                                   axis=2)
    assert got == set(zip(*np.nonzero(want)))
    d = chord_pairwise(c[qc], c)
    assert want[d <= r].all()                                # the lemma's own condition implies candidacy


def test_hf_pivots_are_distinct_and_spread():
    rng = np.random.default_rng(2)
    x = rng.normal(size=(500, 10))
    p = hf_pivots(x, 7)
    assert np.unique(p).size == 7
    norms = np.linalg.norm(x - x.mean(axis=0), axis=1)
    assert np.median(norms[p]) > np.median(norms)            # outliers
    assert hf_pivots(x[:3], 7).size == 3
