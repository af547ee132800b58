"""Every lemma of PEXESO never filters a true match and never matches a false one (and does fire)."""
import numpy as np
import pytest

from discovery.indexes.join import JoinIndex, select_pivots
from discovery.indexes.join import blocking
from discovery.indexes.join.blocking import block
from discovery.indexes.join.grid import CellHierarchy
from discovery.indexes.join.lemmas import boxes_apart, boxes_within, points_apart
from discovery.indexes.join.metric import canonical_squared, canonical_squared_at, squared_within
from join_data import clustered_lake, query_from


def _apart(a_lo, a_hi, b_lo, b_hi, tau):
    """boxes_apart for every (row of a, row of b), shape (len(a), len(b))."""
    return np.array([[boxes_apart(a_lo, a_hi, i, b_lo, b_hi, k, tau) for k in range(b_lo.shape[0])]
                     for i in range(a_lo.shape[0])], dtype=bool).reshape(a_lo.shape[0], b_lo.shape[0])


def _within(a_hi, b_hi, tau):
    return np.array([[boxes_within(a_hi, i, b_hi, k, tau) for k in range(b_hi.shape[0])]
                     for i in range(a_hi.shape[0])], dtype=bool).reshape(a_hi.shape[0], b_hi.shape[0])


def _setup(seed, tau_fraction):
    rng = np.random.default_rng(seed)
    lake, ids, entities = clustered_lake(rng, n_cols=40, intrinsic=3, noise=0.03)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 3, seed=seed), levels=3)
    q = index._query(query_from(rng, entities, 30, 0.03))
    tau = tau_fraction * 2.0
    dist = np.sqrt(((q.vectors[:, None, :].astype(np.float64) - index.vectors[None].astype(np.float64)) ** 2).sum(-1))
    return index, q, tau, dist


@pytest.mark.parametrize("seed,tau_fraction", [(0, 0.05), (1, 0.15), (2, 0.3), (3, 0.45)])
def test_vector_lemmas_1_and_2(seed, tau_fraction):
    index, q, tau, dist = _setup(seed, tau_fraction)
    lemma1 = _apart(q.mapped, q.mapped, index.mapped, index.mapped, tau + q.slack)
    lemma2 = _within(q.mapped, index.mapped, tau - q.slack)
    qm, xm = q.mapped[:, None, :], index.mapped[None]
    np.testing.assert_array_equal(lemma1, (np.abs(xm - qm) > tau + q.slack).any(-1))
    np.testing.assert_array_equal(lemma2, ((xm + qm) <= tau - q.slack).any(-1))
    assert not (lemma1 & (dist <= tau)).any()
    assert not (lemma2 & (dist > tau)).any()
    assert lemma1.any()
    if tau_fraction >= 0.3:
        assert lemma2.any()


@pytest.mark.parametrize("seed", range(4))
def test_branch_free_lemma1_decides_as_the_box_form(seed):
    """Verification's branch-free Lemma 1 on two mapped vectors takes the box form's decision for every pair,
    including gaps exactly at the threshold (taken from the data itself) and either sign of the difference."""
    rng = np.random.default_rng(seed)
    a = rng.random((60, 5))
    b = np.concatenate([rng.random((30, 5)), a[:30] + rng.choice([-1, 1], (30, 5)) * 0.1])
    gaps = np.abs(a[:, None, :] - b[None]).ravel()
    outcomes = set()
    for tau in (0.05, 0.1, float(np.median(gaps)), float(gaps[rng.integers(gaps.size)]), 0.5):
        box = _apart(a, a, b, b, tau)
        point = np.array([[points_apart(a, i, b, k, tau) for k in range(len(b))] for i in range(len(a))])
        np.testing.assert_array_equal(point, box)
        outcomes |= set(box.ravel().tolist())
    assert outcomes == {True, False}


@pytest.mark.parametrize("seed,tau_fraction", [(0, 0.05), (1, 0.15), (2, 0.3), (3, 0.45)])
def test_cell_lemmas_3_to_6(seed, tau_fraction):
    index, q, tau, dist = _setup(seed, tau_fraction)
    th = index.hierarchy
    qh = CellHierarchy(q.cells, q.mapped, index.grid.n_pivots, index.grid.levels)
    fired = {3: 0, 4: 0, 5: 0, 6: 0}
    for level in range(1, th.levels + 1):
        f4 = _apart(qh.lo[level], qh.hi[level], th.lo[level], th.hi[level], tau + q.slack)
        m6 = _within(qh.hi[level], th.hi[level], tau - q.slack)
        for i, k in zip(*np.nonzero(f4 | m6)):
            block_d = dist[qh.start[level][i]:qh.start[level][i + 1], th.start[level][k]:th.start[level][k + 1]]
            if f4[i, k]:
                assert (block_d > tau).all()
            if m6[i, k]:
                assert (block_d <= tau).all()
        fired[4] += int(f4.sum())
        fired[6] += int(m6.sum())
    m = th.levels
    f3 = _apart(q.mapped, q.mapped, th.lo[m], th.hi[m], tau + q.slack)
    m5 = _within(q.mapped, th.hi[m], tau - q.slack)
    for i, k in zip(*np.nonzero(f3 | m5)):
        row = dist[i, th.start[m][k]:th.start[m][k + 1]]
        assert (row > tau).all() if f3[i, k] else (row <= tau).all()
    fired[3], fired[5] = int(f3.sum()), int(m5.sum())
    assert fired[3] and fired[4]
    if tau_fraction >= 0.3:
        assert fired[5] and fired[6]


@pytest.mark.parametrize("seed,tau_fraction", [(0, 0.05), (1, 0.15), (2, 0.3), (3, 0.45)])
def test_blocking_keeps_every_match(seed, tau_fraction):
    """Algorithm 1 as a whole: matching pairs hold only matches, and every match is matched or a candidate."""
    index, q, tau, dist = _setup(seed, tau_fraction)
    qh = CellHierarchy(q.cells, q.mapped, index.grid.n_pivots, index.grid.levels)
    res = block(qh, q.mapped, index.hierarchy, tau, q.slack)
    covered = np.zeros_like(dist, dtype=bool)
    for qi, lo, hi in zip(res.match_q, res.match_lo, res.match_hi):
        assert (dist[qi, lo:hi] <= tau).all()
        covered[qi, lo:hi] = True
    starts = index.leaf_start
    for qi, leaf in zip(res.cand_q, res.cand_leaf):
        covered[qi, starts[leaf]:starts[leaf + 1]] = True
    assert covered[dist <= tau].all()
    assert res.stats["lemma4_filtered"] + res.stats["lemma3_filtered"] > 0


def test_blocking_output_room_grows_to_the_exact_need(monkeypatch):
    """Blocking buffers sized far too small are resized and the pairs are the same as with ample room."""
    index, q, tau, dist = _setup(4, 0.2)
    qh = CellHierarchy(q.cells, q.mapped, index.grid.n_pivots, index.grid.levels)
    ample = block(qh, q.mapped, index.hierarchy, tau, q.slack)
    monkeypatch.setattr(blocking, "MIN_ROOM", 1)
    index.hierarchy.pairs_per_query = 1e-6
    small = block(qh, q.mapped, index.hierarchy, tau, q.slack)
    assert index.hierarchy.pairs_per_query > 1e-6
    assert small.stats == ample.stats and ample.stats["candidate_pairs"] > 1
    for name in ("match_q", "match_lo", "match_hi", "cand_q", "cand_leaf", "cand_same"):
        np.testing.assert_array_equal(getattr(small, name), getattr(ample, name))


@pytest.mark.parametrize("dim", [3, 16, 48, 130])
def test_early_abandoned_distance_decides_like_the_canonical_value(dim):
    """squared_within agrees with the canonical float64 decision, also for pairs within rounding of tau."""
    rng = np.random.default_rng(dim)
    a = rng.normal(size=(400, dim)).astype(np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b = (a + rng.normal(size=a.shape).astype(np.float32) * rng.uniform(0.001, 0.5, (400, 1))).astype(np.float32)
    exact = canonical_squared(a, b)
    for tau_sq in list(np.quantile(exact, [0.1, 0.5, 0.9])) + list(exact[:40]) + list(np.nextafter(exact[:40], 0)):
        got = np.array([squared_within(a, i, b, i, tau_sq) for i in range(a.shape[0])])
        inside = exact <= tau_sq
        np.testing.assert_array_equal(got <= tau_sq, inside)
        assert np.all(np.isinf(got[~inside]))
        np.testing.assert_allclose(got[inside], exact[inside], rtol=1e-12)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_canonical_distance_is_the_left_to_right_float64_sum(dtype):
    """The canonical value, read in place at scattered rows, has the bits of the float64 sum over dimensions in
    order, whatever the rows' positions: the value every method's exact decision and reported distance come from."""
    rng = np.random.default_rng(7)
    lake, query = rng.normal(size=(300, 37)).astype(dtype), rng.normal(size=(20, 37)).astype(dtype)
    ia, ib = rng.integers(0, 300, 1000), rng.integers(0, 20, 1000)
    expected = np.zeros(ia.size)
    for j in range(lake.shape[1]):
        diff = lake[ia, j].astype(np.float64) - query[ib, j].astype(np.float64)
        expected += diff * diff
    np.testing.assert_array_equal(canonical_squared_at(lake, ia, query, ib).view(np.int64), expected.view(np.int64))
    np.testing.assert_array_equal(canonical_squared(lake[ia], query[ib]).view(np.int64), expected.view(np.int64))


def test_lemma7_rejects_only_unjoinable_columns():
    """A column is rejected early only if the answer says it is not joinable."""
    rng = np.random.default_rng(9)
    lake, ids, entities = clustered_lake(rng, n_cols=60)
    index = JoinIndex.build(lake, ids, select_pivots(lake, 4), levels=4)
    q = query_from(rng, entities, 40)
    for T in (0.1, 0.3, 0.6):
        res = index.search(q, 0.1, T)
        assert res.stats["early_rejects"] + res.stats["rejected_without_verification"] > 0
        exact = index.search(q, 0.1, T, method="exact")
        assert res.joinabilities() == exact.joinabilities()
