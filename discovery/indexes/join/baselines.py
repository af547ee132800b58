"""The two baselines every PEXESO answer is compared with: PEXESO-H and blocked BLAS brute force.

Both count, per column, the query values with at least one matching vector, decide every pair with the same exact match
predicate as PEXESO, and return a :class:`~.verification.Verified`.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .blocking import BlockingResult
from .metric import squared_within
from .tally import ColumnTally, TopK
from .verification import Verified, group_by_query


@njit(cache=True)
def _verify_naive(nq, qval, n_cols, col, mq, mlo, mhi, cq, cleaf, leaf_start, vectors, q_vectors, tau_sq, need,
                  stop_on_accept):
    matched = np.zeros(n_cols, dtype=np.int64)
    stopped = np.zeros(n_cols, dtype=np.bool_)
    hit = np.full(n_cols, -1, dtype=np.int64)
    touched = np.zeros(n_cols, dtype=np.bool_)
    n_vectors = np.sum(mhi - mlo)
    for p in range(cleaf.shape[0]):
        n_vectors += leaf_start[cleaf[p] + 1] - leaf_start[cleaf[p]]
    n_keys = min(n_cols * nq, n_vectors)
    w_key = np.empty(n_keys, dtype=np.int64)
    n_w = 0
    distances = 0
    m_ptr, m_order = group_by_query(qval[mq], nq)  # by query value: its vectors (segments) share one key
    c_ptr, c_order = group_by_query(qval[cq], nq)
    for q in range(nq):
        for i in range(m_ptr[q], m_ptr[q + 1]):
            p = m_order[i]
            for x in range(mlo[p], mhi[p]):
                c = col[x]
                if hit[c] != q:
                    hit[c] = q
                    matched[c] += 1
                    w_key[n_w] = c * nq + q
                    n_w += 1
        for i in range(c_ptr[q], c_ptr[q + 1]):
            leaf = cleaf[c_order[i]]
            v = cq[c_order[i]]
            for x in range(leaf_start[leaf], leaf_start[leaf + 1]):
                c = col[x]
                if stopped[c] or hit[c] == q:
                    continue
                touched[c] = True
                distances += 1
                if squared_within(vectors, x, q_vectors, v, tau_sq) <= tau_sq:
                    hit[c] = q
                    matched[c] += 1
                    w_key[n_w] = c * nq + q
                    n_w += 1
                    if stop_on_accept and matched[c] >= need:
                        stopped[c] = True
    return matched, stopped, w_key[:n_w], distances, touched.sum()


def verify_pexeso_h(index, query, blocked: BlockingResult, need: int, top: TopK | None, stop_on_accept: bool,
                    pred) -> Verified:
    """PEXESO-H: the same blocking, then every vector of every candidate cell is compared with its query vector.

    No inverted index: no posting lists, no per-column document order, no Lemma 7; vectors of matching cells are
    read one by one for their columns.  Only the early accept of the paper's competitors applies: once a column
    reaches T it is skipped (threshold search without exact joinabilities).  Query vectors are processed in order
    and a column's later candidates for an already matched query vector are skipped.
    """
    stop = bool(stop_on_accept and top is None)
    matched, stopped, keys, distances, touched = _verify_naive(
        query.n, query.value, index.n_columns, index.col,
        blocked.match_q, blocked.match_lo, blocked.match_hi, blocked.cand_q,
        blocked.cand_leaf, index.leaf_start, index.vectors, query.vectors, pred.tau_sq, int(need), stop)
    stats = {"distance_computations": int(distances), "columns_verified": int(touched),
             "early_accepts": int((stopped & (matched < query.n)).sum()), "early_rejects": 0,
             "rejected_without_verification": 0}
    return Verified(matched, ~stopped, keys, stats)


def verify_exact(index, query, need: int, top: TopK | None, stop_on_accept: bool, pred,
                 block_rows: int = 32768) -> Verified:
    """Blocked BLAS brute force with the same early termination (accept at T, Lemma 7 reject, top-k threshold).

    Query vectors are taken in chunks sized by :meth:`ColumnTally.budget` (the least count that could decide a
    column); each chunk is multiplied against the vectors of the still-undecided columns in row blocks of bounded
    size with one float32 GEMM each.  Kept in numpy on purpose: a GEMM is what BLAS does best, so this is the
    strongest brute force, the fair baseline for speed ratios.
    """
    nq = query.n  # query values; a value's vectors (its segments) are taken together, and any of them matches
    by_value = np.argsort(query.value, kind="stable")
    value_ptr = np.searchsorted(query.value[by_value], np.arange(nq + 1))
    n_cols = index.n_columns
    tally = ColumnTally(np.zeros(n_cols), np.full(n_cols, nq), need, top, stop_on_accept)
    keys = []
    stats = {"distance_computations": 0}
    touched = np.zeros(n_cols, dtype=bool)
    done, round_no = 0, 0
    while done < nq:
        live = tally.live()
        if not live.any():
            break
        touched |= live
        width = int(tally.budget(round_no)[live].min())
        upto = min(nq, done + width)
        pos = by_value[value_ptr[done]:value_ptr[upto]]
        qv, qsq = query.vectors[pos], query.sq_norms[pos]
        rows = np.flatnonzero(live[index.col])
        hits = []
        for s in range(0, rows.size, block_rows):
            r = rows[s:s + block_rows]
            fast = index.sq_norms[r][:, None] + qsq[None, :] - 2.0 * (index.vectors[r] @ qv.T)
            cand = np.flatnonzero((fast <= pred.tau_sq + pred.band).ravel())
            if cand.size:
                ri, qi = np.divmod(cand, pos.size)
                match, _ = pred.decide(fast.ravel()[cand], r[ri], pos[qi], index.vectors, query.vectors)
                hits.append(index.col[r[ri[match]]] * nq + query.value[pos[qi[match]]])
        stats["distance_computations"] += int(rows.size) * pos.size
        chunk_cols = np.flatnonzero(live)
        uk = np.unique(np.concatenate(hits)) if hits else np.zeros(0, np.int64)
        keys.append(uk)
        matched_cols = uk // nq
        per_col = np.bincount(matched_cols, minlength=n_cols)
        misses = (upto - done) - per_col[chunk_cols]
        tally.add(matched_cols, np.repeat(chunk_cols, misses))
        done, round_no = upto, round_no + 1
    stats.update(columns_verified=int(touched.sum()), early_accepts=tally.early_accepts,
                 early_rejects=tally.early_rejects, rejected_without_verification=tally.rejected_unverified)
    found = np.concatenate(keys) if keys else np.zeros(0, np.int64)
    return Verified(tally.matched, ~(tally.rejected | tally.stopped), found, stats)
