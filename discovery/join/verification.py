"""Verification of blocked pairs (PEXESO Alg. 2), PEXESO-H's naive verification, and the brute-force baseline.

All three count, per column, the query vectors with at least one match, using the same :class:`ColumnTally` early
termination and the same exact match predicate, and return a :class:`Verified` tally plus evidence.

PEXESO (inverted index, document-at-a-time).  The inverted index maps a leaf cell to the columns having vectors in
it; lake vectors are stored sorted by (leaf cell, column), so a posting is a *run* of contiguous vectors.  Expanding
the blocked pairs over postings yields, per (column, query vector) "key", whether a matching pair proves the match
(Lemmas 5/6) and which runs are candidates.  A column's keys are its document; the keys' count is the column's upper
bound from the start (query vectors that share no pair with it cannot match it: Lemma 7 without any distance).
Columns are verified document by document, all documents advancing together in rounds: each round takes, per
undecided column, the fewest next keys that could decide it (:meth:`ColumnTally.budget`), applies Lemma 1 (pivot
filtering) and Lemma 2 (pivot matching) to every candidate vector and computes distances only for the rest.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .blocking import BlockingResult, expand_ranges
from .tally import ColumnTally


@dataclass
class Verified:
    """Outcome of one method: the tally, which columns' counts are exact, and one witness per matched key."""

    tally: ColumnTally
    exact: np.ndarray
    witness_key: np.ndarray    # column index * |Q| + sorted query position
    witness_x: np.ndarray      # sorted lake vector position
    witness_sq: np.ndarray     # squared chord, NaN when proved by a lemma without computing it
    stats: dict = field(default_factory=dict)


class _Witnesses:
    def __init__(self):
        self.keys, self.xs, self.sq = [], [], []

    def add(self, keys, xs, sq):
        if keys.size:
            self.keys.append(keys)
            self.xs.append(xs)
            self.sq.append(np.broadcast_to(np.asarray(sq, dtype=np.float64), keys.shape))

    def arrays(self):
        if not self.keys:
            return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        keys, xs, sq = np.concatenate(self.keys), np.concatenate(self.xs), np.concatenate(self.sq)
        keys, first = np.unique(keys, return_index=True)
        return keys, xs[first], sq[first]


def _first_per_key(keys: np.ndarray, *values):
    uk, first = np.unique(keys, return_index=True)
    return (uk,) + tuple(v[first] for v in values)


def _pivot_filter(index, query, xs, qs, tau_hi) -> np.ndarray:
    """Positions of the pairs (xs[i], qs[i]) that survive Lemma 1, checked pivot by pivot on the survivors only.

    Most pairs fail on the first pivots, so compacting after each pivot touches far fewer values than testing all
    |P| distances of every pair; per-pivot contiguous copies of the mappings keep the gathers cache-friendly.
    """
    alive = np.arange(xs.size)
    for j in range(index.mapped_by_pivot.shape[0]):
        xa, qa = xs[alive], qs[alive]
        alive = alive[np.abs(index.mapped_by_pivot[j][xa] - query.mapped_by_pivot[j][qa]) <= tau_hi]
    return alive


def _pair_keys(index, nq: int, q: np.ndarray, runs: np.ndarray) -> np.ndarray:
    return index.run_col[runs] * nq + q


def verify_pexeso(index, query, blocked: BlockingResult, need: int, top_k, stop_on_accept: bool, pred) -> Verified:
    nq = query.n
    # Expand the pairs over the postings of the inverted index: (query vector, run) incidences.
    m_rlo = np.searchsorted(index.run_start, blocked.match_lo)
    m_rhi = np.searchsorted(index.run_start, blocked.match_hi)
    mo, m_run = expand_ranges(m_rlo, m_rhi)
    m_q = blocked.match_q[mo]
    co, c_run = expand_ranges(index.leaf_run_start[blocked.cand_leaf], index.leaf_run_start[blocked.cand_leaf + 1])
    c_q, c_same = blocked.cand_q[co], blocked.cand_same[co]
    m_key = _pair_keys(index, nq, m_q, m_run)
    c_key = _pair_keys(index, nq, c_q, c_run)
    keys, inverse = np.unique(np.concatenate([m_key, c_key]), return_inverse=True)
    n_keys = keys.size
    key_col, key_q = keys // nq, keys % nq
    key_matched = np.zeros(n_keys, dtype=bool)
    key_matched[inverse[:m_key.size]] = True
    witnesses = _Witnesses()
    wk, wrun = _first_per_key(m_key, m_run)
    witnesses.add(wk, index.run_start[wrun], np.nan)
    # Candidate runs of the keys not already proved, grouped per key (CSR), same-cell runs first.
    c_inv = inverse[m_key.size:]
    open_c = ~key_matched[c_inv]
    c_inv, c_run, c_same = c_inv[open_c], c_run[open_c], c_same[open_c]
    order = np.lexsort((~c_same, c_inv))
    key_runs = c_run[order]
    key_run_ptr = np.r_[0, np.cumsum(np.bincount(c_inv, minlength=n_keys))].astype(np.int64)
    key_same = np.zeros(n_keys, dtype=bool)
    key_same[c_inv[c_same]] = True

    n_cols = index.n_columns
    tally = ColumnTally(np.bincount(key_col[key_matched], minlength=n_cols), np.bincount(key_col, minlength=n_cols),
                        need, top_k, stop_on_accept)
    # Document-at-a-time order: per column, quick-browsing keys first, then by query vector.
    pending = np.flatnonzero(~key_matched)
    pending = pending[np.lexsort((key_q[pending], ~key_same[pending], key_col[pending]))]
    stats = {"distance_computations": 0, "lemma1_filtered": 0, "lemma2_matched": 0, "rounds": 0}
    tau_hi, tau_lo = pred.tau + index.slack, pred.tau - index.slack
    touched = np.zeros(n_cols, dtype=bool)
    round_no = 0
    while pending.size:
        live = tally.live()
        pending = pending[live[key_col[pending]]]
        if not pending.size:
            break
        cols = key_col[pending]
        head = np.r_[True, cols[1:] != cols[:-1]]
        group_start = np.maximum.accumulate(np.where(head, np.arange(cols.size), 0))
        rank = np.arange(cols.size) - group_start
        take = rank < tally.budget(round_no)[cols]
        sel, pending = pending[take], pending[~take]
        touched[key_col[sel]] = True
        round_no += 1
        # candidate vectors of the selected keys
        o1, rpos = expand_ranges(key_run_ptr[sel], key_run_ptr[sel + 1])
        runs = key_runs[rpos]
        o2, xs = expand_ranges(index.run_start[runs], index.run_start[runs + 1])
        pk = sel[o1[o2]]
        alive = _pivot_filter(index, query, xs, key_q[pk], tau_hi)
        stats["lemma1_filtered"] += int(xs.size - alive.size)
        xs, pk = xs[alive], pk[alive]
        qs = key_q[pk]
        lemma2 = ((index.mapped[xs] + query.mapped[qs]) <= tau_lo).any(axis=1)
        stats["lemma2_matched"] += int(lemma2.sum())
        hit = np.zeros(n_keys, dtype=bool)
        hit[pk[lemma2]] = True
        wk, wx = _first_per_key(pk[lemma2], xs[lemma2])
        witnesses.add(keys[wk], wx, np.nan)
        todo = ~lemma2 & ~hit[pk]
        txs, tqs, tpk = xs[todo], qs[todo], pk[todo]
        stats["distance_computations"] += int(txs.size)
        if txs.size:
            fast = pred.pair_squared(index.vectors, index.sq_norms, txs, query.vectors, query.sq_norms, tqs)
            match, sq = pred.decide(fast, txs, tqs, index.vectors, query.vectors)
            hit[tpk[match]] = True
            wk, wx, wsq = _first_per_key(tpk[match], txs[match], sq[match])
            witnesses.add(keys[wk], wx, wsq)
        won = hit[sel]
        key_matched[sel[won]] = True
        tally.add(key_col[sel[won]], key_col[sel[~won]])
    stats["rounds"] = round_no
    stats["columns_verified"] = int(touched.sum())
    wk, wx, wsq = witnesses.arrays()
    return Verified(tally, tally.matched >= tally.upper, wk, wx, wsq, stats)


def _column_keys_of_cells(index, nq, q, lo, hi):
    """(column, query) keys of query vectors paired with whole lake vector ranges, via the runs they contain."""
    rlo = np.searchsorted(index.run_start, lo)
    rhi = np.searchsorted(index.run_start, hi)
    owner, runs = expand_ranges(rlo, rhi)
    return _pair_keys(index, nq, q[owner], runs), index.run_start[runs]


def verify_pexeso_h(index, query, blocked: BlockingResult, need: int, top_k, stop_on_accept: bool, pred) -> Verified:
    """PEXESO-H: same blocking, then every vector of every candidate cell is compared with the query vector.

    No inverted index, hence no per-column document order and no Lemma 7; only the early accept of the paper's
    competitors applies (a column reaching T is skipped afterwards).  Query vectors go in doubling batches so the
    accepts take effect as the counts grow.  Matching pairs need no distance; their columns are read from the runs.
    """
    nq = query.n
    n_cols = index.n_columns
    witnesses = _Witnesses()
    mk, mx = _column_keys_of_cells(index, nq, blocked.match_q, blocked.match_lo, blocked.match_hi)
    mk, mx = _first_per_key(mk, mx)
    witnesses.add(mk, mx, np.nan)
    known = np.zeros(0, dtype=np.int64)
    known = np.union1d(known, mk)
    tally = ColumnTally(np.bincount(mk // nq, minlength=n_cols), np.full(n_cols, nq), need, top_k, stop_on_accept,
                        can_reject=False)
    order = np.argsort(blocked.cand_q, kind="stable")
    cq, cleaf = blocked.cand_q[order], blocked.cand_leaf[order]
    bounds = np.searchsorted(cq, np.arange(nq + 1))
    stats = {"distance_computations": 0, "rounds": 0}
    touched = np.zeros(n_cols, dtype=bool)
    done, round_no = 0, 0
    while done < nq:
        upto = min(nq, done + (1 << round_no))
        a, b = bounds[done], bounds[upto]
        done, round_no = upto, round_no + 1
        if a == b:
            continue
        owner, xs = expand_ranges(index.leaf_start[cleaf[a:b]], index.leaf_start[cleaf[a:b] + 1])
        qs = cq[a:b][owner]
        keep = ~tally.stopped[index.col[xs]]
        xs, qs = xs[keep], qs[keep]
        touched[index.col[xs]] = True
        stats["distance_computations"] += int(xs.size)
        if not xs.size:
            continue
        fast = pred.pair_squared(index.vectors, index.sq_norms, xs, query.vectors, query.sq_norms, qs)
        match, sq = pred.decide(fast, xs, qs, index.vectors, query.vectors)
        pk = index.col[xs[match]] * nq + qs[match]
        uk, ux, usq = _first_per_key(pk, xs[match], sq[match])
        new = ~np.isin(uk, known)
        known = np.union1d(known, uk[new])
        witnesses.add(uk[new], ux[new], usq[new])
        tally.add(uk[new] // nq, np.zeros(0, dtype=np.int64))
    stats["rounds"] = round_no
    stats["columns_verified"] = int(touched.sum())
    wk, wx, wsq = witnesses.arrays()
    return Verified(tally, ~tally.stopped, wk, wx, wsq, stats)


def verify_exact(index, query, need: int, top_k, stop_on_accept: bool, pred, block_rows: int = 32768) -> Verified:
    """Blocked BLAS brute force with the same early termination (accept at T, Lemma 7 reject, top-k threshold).

    Query vectors are taken in chunks sized by :meth:`ColumnTally.budget` (the least count that could decide a
    column); each chunk is multiplied against the vectors of the still-undecided columns in row blocks of bounded
    size with one float32 GEMM each.
    """
    nq = query.n
    n_cols = index.n_columns
    tally = ColumnTally(np.zeros(n_cols), np.full(n_cols, nq), need, top_k, stop_on_accept)
    witnesses = _Witnesses()
    stats = {"distance_computations": 0, "rounds": 0}
    touched = np.zeros(n_cols, dtype=bool)
    done, round_no = 0, 0
    while done < nq:
        live = tally.live()
        if not live.any():
            break
        touched |= live
        width = int(tally.budget(round_no)[live].min())
        upto = min(nq, done + width)
        qv, qsq = query.vectors[done:upto], query.sq_norms[done:upto]
        rows = np.flatnonzero(live[index.col])
        hits_x, hits_q, hits_sq = [], [], []
        for s in range(0, rows.size, block_rows):
            r = rows[s:s + block_rows]
            fast = index.sq_norms[r][:, None] + qsq[None, :] - 2.0 * (index.vectors[r] @ qv.T)
            cand = np.flatnonzero((fast <= pred.tau_sq + pred.band).ravel())
            if cand.size:
                ri, qi = np.divmod(cand, upto - done)
                match, sq = pred.decide(fast.ravel()[cand], r[ri], qi + done, index.vectors, query.vectors)
                hits_x.append(r[ri[match]])
                hits_q.append(qi[match] + done)
                hits_sq.append(sq[match])
        stats["distance_computations"] += int(rows.size) * (upto - done)
        chunk_cols = np.flatnonzero(live)
        if hits_x:
            hx, hq, hsq = np.concatenate(hits_x), np.concatenate(hits_q), np.concatenate(hits_sq)
            uk, ux, usq = _first_per_key(index.col[hx] * nq + hq, hx, hsq)
        else:
            uk, ux, usq = np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
        witnesses.add(uk, ux, usq)
        matched_cols = uk // nq
        per_col = np.bincount(matched_cols, minlength=n_cols)
        misses = (upto - done) - per_col[chunk_cols]
        tally.add(matched_cols, np.repeat(chunk_cols, misses))
        done, round_no = upto, round_no + 1
    stats["rounds"] = round_no
    stats["columns_verified"] = int(touched.sum())
    wk, wx, wsq = witnesses.arrays()
    return Verified(tally, ~(tally.rejected | tally.stopped), wk, wx, wsq, stats)
