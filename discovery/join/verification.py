"""Verification of blocked pairs: Algorithm 2 of PEXESO over the inverted index, document at a time, compiled.

The inverted index maps a leaf cell to the columns having vectors in it; lake vectors are stored sorted by (leaf
cell, column), so a posting is a *run* of contiguous vectors of one column.  A (column, query vector) pair is a
*key*.  Verification runs in three steps:

1. Match map and Lemma 7 without distances.  The blocked pairs are walked per query vector; every run they cover
   names a column.  A matching pair (Lemmas 5/6) proves its key; a candidate pair makes its key possible.  The
   number of possible keys of a column is its upper bound from the start: query vectors sharing no pair with it
   cannot match it, so a column whose bound is below the threshold is rejected (Lemma 7) before any vector is read.
2. Posting lists of the surviving columns: the candidate runs of their unproved keys, grouped by column in query
   order (a counting sort, no hashing).  Step 1 counts each column's postings, so a second walk of the blocked
   pairs writes the postings (query vector, run, same cell) by value straight into their column's slot: step 3
   reads a column's document sequentially, and columns Lemma 7 rejected get no postings at all.
3. Document-at-a-time verification, column by column (Algorithm 2 lines 4-20).  Per candidate vector Lemma 1
   (pivot filtering), Lemma 2 (pivot matching), and only then a distance, abandoned as soon as a prefix of the
   dimensions exceeds tau (:func:`.metric.squared_within`).  Lemma 1 is the hot test (about 40 per distance on
   AutoFJ at tau 4%), so it is taken branch-free (:func:`.lemmas.points_apart`).  A key ends at its first match; the column ends when
   it reaches T (early accept, when exact joinabilities are not asked for), when Lemma 7 rejects it, or when it is
   complete.

   Key order (the paper leaves it open): keys by increasing number of candidate vectors.  Most columns that reach
   verification are rejected by Lemma 7, which needs ``upper - T + 1`` misses; a miss costs one test per candidate
   vector, so proving the cheapest misses first rejects a column at the least cost (on a generated 300K-vector
   lake, 1.6x fewer distances than query order).  Only when a column may end by early accept (exact joinabilities
   not asked for) do keys with a candidate in the query vector's own cell go first (quick browsing: likely matches,
   so joinable columns are accepted early); with exact counts a joinable column is verified whole in any order, and
   putting those keys first only delays the misses that reject the others: on AutoFJ's title queries at tau 4%
   (T = 0.6) it took 63M Lemma 1 tests and 1.57 s against 29M and 0.95 s.  Within a key the runs of the same cell
   go first.

Top-k (PEXESO 2 §II-B): columns are verified in decreasing order of their upper bound; the k-size buffer holds
exact counts of completed columns, and the threshold - the larger of T, the k-th best count at the start (every
count is a lower bound) and the k-th best completed count - only rises.  Rejection is strict, so a column that could
tie with the k-th is verified, and ties are broken by column id afterwards.  With a slack (:class:`.tally.TopK`, the
columns within the context margin of the k-th) the buffer holds the pool's size and the threshold is the larger of
(k-th best - slack) and the pool-th best (:func:`_floor`): both are lower bounds of what a kept column reaches, so
Lemma 7 still rejects only columns outside the answer, and one search returns the widened set exactly.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .blocking import BlockingResult
from .lemmas import boxes_within, points_apart
from .metric import squared_within
from .tally import TopK


@dataclass
class Verified:
    """Outcome of one method: per-column counts, which counts are exact, and one witness per matched key."""

    matched: np.ndarray
    exact: np.ndarray
    witness_key: np.ndarray    # column index * |Q| + query value (the sorted position when values are vectors)
    witness_x: np.ndarray      # sorted lake vector position
    witness_sq: np.ndarray     # squared chord, NaN when proved by a lemma without computing it
    stats: dict = field(default_factory=dict)
    witness_q: np.ndarray | None = None   # sorted query vector position of each witness (a value may have several)


@njit(cache=True)
def group_by_query(q, nq):
    """Counting sort of pair positions by query vector: (pointer of length nq + 1, stable order)."""
    ptr = np.zeros(nq + 1, dtype=np.int64)
    for i in range(q.shape[0]):
        ptr[q[i] + 1] += 1
    for i in range(nq):
        ptr[i + 1] += ptr[i]
    fill = ptr[:-1].copy()
    order = np.empty(q.shape[0], dtype=np.int64)
    for i in range(q.shape[0]):
        order[fill[q[i]]] = i
        fill[q[i]] += 1
    return ptr, order


@njit(cache=True)
def _floor(ranked, filled, top_k, slack, pool):
    """:meth:`.tally.TopK.floor` compiled: the least count a kept column can have, from the ``filled`` first counts of
    ``ranked`` (descending lower bounds)."""
    thr = 0
    if filled >= top_k:
        thr = ranked[top_k - 1] - slack
    if filled >= pool:
        thr = max(thr, ranked[pool - 1])
    return thr


@njit(cache=True)
def _offer(buffer, filled, value):
    """Insert ``value`` into the descending k-size ``buffer`` holding ``filled`` values; returns the new fill."""
    k = buffer.shape[0]
    if filled == k and value <= buffer[k - 1]:
        return filled
    i = min(filled, k - 1)
    while i > 0 and buffer[i - 1] < value:
        buffer[i] = buffer[i - 1]
        i -= 1
    buffer[i] = value
    return min(filled + 1, k)


@njit(cache=True)
def _verify(nq, qval, n_cols, mq, mlo, mhi, cq, cleaf, csame, run_start, run_col, leaf_run_start, mapped, vectors,
            q_mapped, q_vectors, tau_hi, tau_lo, tau_sq, need, top_k, slack, pool, stop_on_accept):
    # Buffers are sized exactly up front and never rebound inside a loop (see ``blocking._descend``).
    # ``nq`` counts query values, the keys' unit; ``qval`` names the value of each query vector (its segments share
    # it), so pairs are grouped by value and a key is proved by any of its value's vectors.
    m_rlo = np.searchsorted(run_start, mlo)
    m_rhi = np.searchsorted(run_start, mhi)
    m_ptr, m_order = group_by_query(qval[mq], nq)
    c_ptr, c_order = group_by_query(qval[cq], nq)
    # witnesses of the keys the lemmas prove (at most one per matching run), then of the keys verification proves
    m_key = np.empty(min(n_cols * nq, np.sum(m_rhi - m_rlo)), dtype=np.int64)
    m_x = np.empty(m_key.shape[0], dtype=np.int64)
    m_q = np.empty(m_key.shape[0], dtype=np.int64)
    n_m = 0
    # --- 1. match map, upper bounds and posting counts from the blocked pairs, per query vector -----------------
    matched = np.zeros(n_cols, dtype=np.int64)
    upper = np.zeros(n_cols, dtype=np.int64)
    n_runs = np.zeros(n_cols, dtype=np.int64)    # candidate runs of a column's unproved keys
    seen = np.full(n_cols, -1, dtype=np.int64)
    proved = np.full(n_cols, -1, dtype=np.int64)
    for q in range(nq):
        for i in range(m_ptr[q], m_ptr[q + 1]):
            p = m_order[i]
            for r in range(m_rlo[p], m_rhi[p]):
                c = run_col[r]
                if proved[c] != q:
                    proved[c] = q
                    seen[c] = q
                    matched[c] += 1
                    upper[c] += 1
                    m_key[n_m], m_x[n_m], m_q[n_m] = c * nq + q, run_start[r], mq[p]
                    n_m += 1
        for i in range(c_ptr[q], c_ptr[q + 1]):
            leaf = cleaf[c_order[i]]
            for r in range(leaf_run_start[leaf], leaf_run_start[leaf + 1]):
                c = run_col[r]
                if proved[c] == q:
                    continue
                if seen[c] != q:
                    seen[c] = q
                    upper[c] += 1
                n_runs[c] += 1
    # --- Lemma 7 before any distance: the threshold and the columns left to verify ------------------------------
    thr = need
    if top_k > 0:
        best = np.sort(matched)[::-1][:pool]
        thr = max(thr, _floor(best, best.shape[0], top_k, slack, pool))
    rejected = np.zeros(n_cols, dtype=np.bool_)
    live = np.zeros(n_cols, dtype=np.bool_)
    stats = np.zeros(8, dtype=np.int64)  # dist, L1, L2, columns verified, accepts, rejects, unverified, keys
    for c in range(n_cols):
        if upper[c] < thr:
            rejected[c] = True
            if upper[c] > 0:
                stats[6] += 1
        elif matched[c] < upper[c] and not (stop_on_accept and matched[c] >= need):
            live[c] = True
    # --- 2. the candidate walk again: the live columns' postings written in column order -------------------------
    # A posting is (query value, query vector, run, same cell), stored by value so that a column's document is read
    # sequentially; columns that are not live get no postings at all.  A key verification proves is one of the
    # ``upper - matched`` keys of its column left unproved, which bounds its witnesses.
    col_ptr = np.zeros(n_cols + 1, dtype=np.int64)
    for c in range(n_cols):
        col_ptr[c + 1] = col_ptr[c] + (n_runs[c] if live[c] else 0)
    fill = col_ptr[:-1].copy()
    post_key = np.empty(col_ptr[n_cols], dtype=np.int32)
    post_q = np.empty(col_ptr[n_cols], dtype=np.int32)
    post_run = np.empty(col_ptr[n_cols], dtype=np.int32)
    post_same = np.empty(col_ptr[n_cols], dtype=np.bool_)
    n_keys = np.sum(upper - matched)
    w_key = np.empty(n_keys, dtype=np.int64)
    w_x = np.empty(n_keys, dtype=np.int64)
    w_sq = np.empty(n_keys, dtype=np.float64)
    w_q = np.empty(n_keys, dtype=np.int64)
    n_w = 0
    j = 0
    proved[:] = -1
    for q in range(nq):
        while j < n_m and m_key[j] % nq == q:  # the lemma-proved keys of q, written by step 1 in query order
            proved[m_key[j] // nq] = q
            j += 1
        for i in range(c_ptr[q], c_ptr[q + 1]):
            p = c_order[i]
            leaf = cleaf[p]
            for r in range(leaf_run_start[leaf], leaf_run_start[leaf + 1]):
                c = run_col[r]
                if live[c] and proved[c] != q:
                    f = fill[c]
                    post_key[f], post_q[f], post_run[f], post_same[f] = q, cq[p], r, csame[p]
                    fill[c] = f + 1
    # --- 3. document-at-a-time verification -----------------------------------------------------------------
    order = np.flatnonzero(live)
    buffer = np.zeros(max(pool, 1), dtype=np.int64)
    filled = 0
    if top_k > 0:
        order = order[np.argsort(-upper[order], kind="mergesort")]
        for c in range(n_cols):
            if not rejected[c] and not live[c] and upper[c] > 0:
                filled = _offer(buffer, filled, matched[c])
        thr = max(thr, _floor(buffer, filled, top_k, slack, pool))
    longest = 0
    for c in order:
        longest = max(longest, col_ptr[c + 1] - col_ptr[c])
    key_a = np.empty(longest, dtype=np.int64)
    key_b = np.empty(longest, dtype=np.int64)
    key_rank = np.empty(longest, dtype=np.int64)
    for c in order:
        if upper[c] < thr:
            rejected[c] = True
            stats[6] += 1
            continue
        stats[3] += 1
        # the column's document: its keys (query values), each a group of postings, in verification order
        n_k = 0
        a = col_ptr[c]
        while a < col_ptr[c + 1]:
            q = post_key[a]
            b = a
            vecs = 0
            same = False
            while b < col_ptr[c + 1] and post_key[b] == q:
                run = post_run[b]
                vecs += run_start[run + 1] - run_start[run]
                same |= post_same[b]
                b += 1
            key_a[n_k], key_b[n_k] = a, b
            key_rank[n_k] = vecs if same or not stop_on_accept else vecs + len(vectors)
            n_k += 1
            a = b
        for k in np.argsort(key_rank[:n_k], kind="mergesort"):
            a, b = key_a[k], key_b[k]
            q = post_key[a]
            stats[7] += 1
            found_x, found_q, found_sq = -1, -1, np.nan
            for same_first in (True, False):
                for i in range(a, b):
                    if post_same[i] != same_first:
                        continue
                    run = post_run[i]
                    v = post_q[i]
                    for x in range(run_start[run], run_start[run + 1]):
                        if points_apart(mapped, x, q_mapped, v, tau_hi):
                            stats[1] += 1
                            continue
                        if boxes_within(mapped, x, q_mapped, v, tau_lo):
                            stats[2] += 1
                            found_x, found_q = x, v
                            break
                        stats[0] += 1
                        sq = squared_within(vectors, x, q_vectors, v, tau_sq)
                        if sq <= tau_sq:
                            found_x, found_q, found_sq = x, v, sq
                            break
                    if found_x >= 0:
                        break
                if found_x >= 0:
                    break
            if found_x >= 0:
                matched[c] += 1
                w_key[n_w], w_x[n_w], w_sq[n_w], w_q[n_w] = c * nq + q, found_x, found_sq, found_q
                n_w += 1
                if matched[c] == need and matched[c] < upper[c]:
                    stats[4] += 1
            else:
                upper[c] -= 1
            if upper[c] < thr:
                rejected[c] = True
                stats[5] += 1
                break
            if matched[c] >= upper[c] or (stop_on_accept and matched[c] >= need):
                break
        if top_k > 0 and not rejected[c] and matched[c] >= upper[c]:
            filled = _offer(buffer, filled, matched[c])
            thr = max(thr, _floor(buffer, filled, top_k, slack, pool))
    exact = ~rejected & (matched >= upper)
    keys = np.concatenate((m_key[:n_m], w_key[:n_w]))
    xs = np.concatenate((m_x[:n_m], w_x[:n_w]))
    sqs = np.concatenate((np.full(n_m, np.nan), w_sq[:n_w]))
    qs = np.concatenate((m_q[:n_m], w_q[:n_w]))
    return matched, exact, keys, xs, sqs, qs, stats


def verify_pexeso(index, query, blocked: BlockingResult, need: int, top: TopK | None, stop_on_accept: bool,
                  pred) -> Verified:
    """Algorithm 2 with Lemma 7 for the blocked pairs; threshold search or top-k (``top`` not None)."""
    if max(query.n_vectors, index.run_col.size) >= 2 ** 31:  # postings hold both as int32, half the bytes of int64
        raise ValueError("a join index partition or a query column of 2**31 or more runs or vectors; lower "
                         "[join] memory_budget_mb so that the index is split into smaller partitions")
    matched, exact, wk, wx, wsq, wq, s = _verify(
        query.n, query.value, index.n_columns, blocked.match_q, blocked.match_lo, blocked.match_hi, blocked.cand_q,
        blocked.cand_leaf, blocked.cand_same, index.run_start, index.run_col, index.leaf_run_start, index.mapped,
        index.vectors, query.mapped, query.vectors, pred.tau + query.slack, pred.tau - query.slack, pred.tau_sq,
        int(need), top.k if top else 0, top.slack if top else 0, top.pool if top else 1,
        bool(stop_on_accept and top is None))
    stats = {"distance_computations": int(s[0]), "lemma1_filtered": int(s[1]), "lemma2_matched": int(s[2]),
             "columns_verified": int(s[3]), "early_accepts": int(s[4]), "early_rejects": int(s[5]),
             "rejected_without_verification": int(s[6]), "keys_verified": int(s[7])}
    return Verified(matched, exact, wk, wx, wsq, stats, wq)
