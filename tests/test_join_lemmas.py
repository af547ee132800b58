"""Every lemma of PEXESO never filters a true match and never matches a false one (and does fire)."""
import numpy as np
import pytest

from discovery.join import JoinIndex, map_to_pivots, select_pivots
from discovery.join.blocking import _filtered, _matched, block, expand_ranges
from discovery.join.grid import CellHierarchy
from join_data import clustered_lake, query_from


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
    qm, xm = q.mapped[:, None, :], index.mapped[None]
    lemma1 = (np.abs(xm - qm) > tau + index.slack).any(-1)
    lemma2 = ((xm + qm) <= tau - index.slack).any(-1)
    assert not (lemma1 & (dist <= tau)).any()
    assert not (lemma2 & (dist > tau)).any()
    assert lemma1.any()
    if tau_fraction >= 0.3:
        assert lemma2.any()


@pytest.mark.parametrize("seed,tau_fraction", [(0, 0.05), (1, 0.15), (2, 0.3), (3, 0.45)])
def test_cell_lemmas_3_to_6(seed, tau_fraction):
    index, q, tau, dist = _setup(seed, tau_fraction)
    th = index.hierarchy
    qh = CellHierarchy(q.cells, q.mapped, index.grid.n_pivots, index.grid.levels)
    fired = {3: 0, 4: 0, 5: 0, 6: 0}
    for level in range(1, th.levels + 1):
        nq_c, nt_c = qh.n_cells(level), th.n_cells(level)
        qc, tc = np.repeat(np.arange(nq_c), nt_c), np.tile(np.arange(nt_c), nq_c)
        f4 = _filtered(th.lo[level][tc], th.hi[level][tc], qh.lo[level][qc], qh.hi[level][qc], tau + index.slack)
        m6 = _matched(th.hi[level][tc], qh.hi[level][qc], tau - index.slack)
        for i in np.flatnonzero(f4 | m6):
            block_d = dist[qh.start[level][qc[i]]:qh.start[level][qc[i] + 1],
                           th.start[level][tc[i]]:th.start[level][tc[i] + 1]]
            if f4[i]:
                assert (block_d > tau).all()
            if m6[i]:
                assert (block_d <= tau).all()
        fired[4] += int(f4.sum())
        fired[6] += int(m6.sum())
    m = th.levels
    owner, qpos = expand_ranges(np.zeros(th.n_cells(m), np.int64), np.full(th.n_cells(m), q.n))
    leaf = owner
    f3 = _filtered(th.lo[m][leaf], th.hi[m][leaf], q.mapped[qpos], q.mapped[qpos], tau + index.slack)
    m5 = _matched(th.hi[m][leaf], q.mapped[qpos], tau - index.slack)
    for i in np.flatnonzero(f3 | m5):
        row = dist[qpos[i], th.start[m][leaf[i]]:th.start[m][leaf[i] + 1]]
        assert (row > tau).all() if f3[i] else (row <= tau).all()
    fired[3], fired[5] = int(f3.sum()), int(m5.sum())
    assert fired[3] and fired[4]
    if tau_fraction >= 0.3:
        assert fired[5] and fired[6]


@pytest.mark.parametrize("seed,tau_fraction", [(0, 0.05), (1, 0.15), (2, 0.3), (3, 0.45)])
def test_blocking_keeps_every_match(seed, tau_fraction):
    """Algorithm 1 as a whole: matching pairs hold only matches, and every match is matched or a candidate."""
    index, q, tau, dist = _setup(seed, tau_fraction)
    qh = CellHierarchy(q.cells, q.mapped, index.grid.n_pivots, index.grid.levels)
    res = block(qh, q.mapped, index.hierarchy, tau, index.slack)
    covered = np.zeros_like(dist, dtype=bool)
    for qi, lo, hi in zip(res.match_q, res.match_lo, res.match_hi):
        assert (dist[qi, lo:hi] <= tau).all()
        covered[qi, lo:hi] = True
    starts = index.leaf_start
    for qi, leaf in zip(res.cand_q, res.cand_leaf):
        covered[qi, starts[leaf]:starts[leaf + 1]] = True
    assert covered[dist <= tau].all()
    assert res.stats["lemma4_filtered"] + res.stats["lemma3_filtered"] > 0


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
