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
   AutoFJ at tau 4%), so it is taken branch-free (:func:`.lemmas.points_apart`).  A key ends at its first match;
   the column ends when it reaches T (early accept, when exact joinabilities are not asked for), when Lemma 7
   rejects it, or when it is complete.

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

Threads (:mod:`discovery.ground.threads`).  The three steps are compiled loops that release the GIL, each cut into
parts: steps 1 and 2 by ranges of query values of about equal blocked pairs (a key belongs to one value, so the parts'
counts add up, and each range writes its postings into its own slots of every column, after those of the lower values:
the documents are laid out exactly as one thread lays them out), step 3 by runs of consecutive columns in verification
order, which the threads take as they come free.  A column's verification reads only its own document and writes
only its own counts and matched keys, so every verified column ends with the same count and the same keys
whatever the threads.  What a thread does not see is the other threads' completed columns:
its top-k buffer holds the exact counts of the columns completed before step 3 and of those it completed itself,
distinct columns of the lake, so its floor is at most the one-thread search's final floor (every column's final
count), Lemma 7 in a thread rejects no column of the answer, and the answer is the one-thread answer; a thread only
verifies some columns further than one thread alone would (on the 1M-vector lake of ``benchmarks/join_latency.py``,
2 threads verified 0.5% more keys).  On an idle machine a query verifies about as many times faster as it has cores;
on a machine whose cores are all busy with other work it gains nothing (the process gets no more CPU time), and the
runs taken as threads come free keep a thread that gets less of it from holding the others up.
"""
from __future__ import annotations

import threading
from dataclasses import dataclass, field

import numpy as np
from numba import njit

from ...ground.threads import query_threads, run_parts
from .blocking import BlockingResult
from .lemmas import boxes_within, points_apart
from .metric import squared_within
from .tally import TopK


@dataclass
class Verified:
    """Outcome of one method: per-column counts, which counts are exact, and the matched keys.  Which lake vector
    proved a key is not kept: the result's witness is the nearest one (:meth:`.search.JoinIndex._nearest`), the
    same whatever proved the match."""

    matched: np.ndarray
    exact: np.ndarray
    matched_keys: np.ndarray   # column index * |Q| + query value, one per matched key
    stats: dict = field(default_factory=dict)


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


@njit(cache=True, nogil=True)
def _tally(lo, hi, nq, m_ptr, m_order, m_rlo, m_rhi, c_ptr, c_order, cleaf, run_col, leaf_run_start, n_cols):
    """Step 1 for the query values ``lo:hi``: their part of each column's match count, upper bound and posting count,
    and the keys the lemmas prove (in value order).  A key belongs to one value, so the parts of
    disjoint value ranges add up to the whole."""
    # Buffers are sized exactly up front and never rebound inside a loop (see ``blocking._descend``).
    room = 0
    for i in range(m_ptr[lo], m_ptr[hi]):
        p = m_order[i]
        room += m_rhi[p] - m_rlo[p]
    m_key = np.empty(min(n_cols * (hi - lo), room), dtype=np.int64)  # at most one per matching run
    n_m = 0
    matched = np.zeros(n_cols, dtype=np.int64)
    upper = np.zeros(n_cols, dtype=np.int64)
    n_runs = np.zeros(n_cols, dtype=np.int64)    # candidate runs of a column's unproved keys
    seen = np.full(n_cols, -1, dtype=np.int64)
    proved = np.full(n_cols, -1, dtype=np.int64)
    for q in range(lo, hi):
        for i in range(m_ptr[q], m_ptr[q + 1]):
            p = m_order[i]
            for r in range(m_rlo[p], m_rhi[p]):
                c = run_col[r]
                if proved[c] != q:
                    proved[c] = q
                    seen[c] = q
                    matched[c] += 1
                    upper[c] += 1
                    m_key[n_m] = c * nq + q
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
    return matched, upper, n_runs, m_key[:n_m].copy()


@njit(cache=True, nogil=True)
def _post(lo, hi, nq, c_ptr, c_order, cq, cleaf, csame, run_col, leaf_run_start, live, m_key, fill, post_key, post_q,
          post_run, post_same):
    """Step 2 for the query values ``lo:hi``: the live columns' postings of these values, written from ``fill`` (each
    column's first slot for them, after the slots of the lower values), so every column's document reads in value
    order whatever the parts.  ``m_key``: the lemma-proved keys of these values, in value order (:func:`_tally`)."""
    proved = np.full(live.shape[0], -1, dtype=np.int64)
    j = 0
    for q in range(lo, hi):
        while j < m_key.shape[0] and m_key[j] % nq == q:
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


@njit(cache=True, nogil=True)
def _check(columns, matched, upper, rejected, col_ptr, post_key, post_q, post_run, post_same, run_start, mapped,
           vectors, q_mapped, q_vectors, tau_hi, tau_lo, tau_sq, need, buffer, state, top_k, slack, pool,
           stop_on_accept, w_ptr, w_n, w_key, nq):
    """Step 3 for ``columns`` (in this order): verifies each, updating its ``matched``, ``upper`` and ``rejected`` and
    writing its matched keys from ``w_ptr[c]`` (``w_n[c]`` of them); returns the step's counters.  ``buffer`` and
    ``state`` (its fill and the threshold) are the top-k buffer of the calling thread, carried from one call to the
    next."""
    stats = np.zeros(8, dtype=np.int64)  # dist, L1, L2, columns verified, accepts, rejects, unverified, keys
    filled, thr = state[0], state[1]
    longest = 0
    for c in columns:
        longest = max(longest, col_ptr[c + 1] - col_ptr[c])
    key_a = np.empty(longest, dtype=np.int64)
    key_b = np.empty(longest, dtype=np.int64)
    key_rank = np.empty(longest, dtype=np.int64)
    for c in columns:
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
        n_w = w_ptr[c]
        for k in np.argsort(key_rank[:n_k], kind="mergesort"):
            a, b = key_a[k], key_b[k]
            q = post_key[a]
            stats[7] += 1
            found = False
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
                            found = True
                            break
                        stats[0] += 1
                        if squared_within(vectors, x, q_vectors, v, tau_sq) <= tau_sq:
                            found = True
                            break
                    if found:
                        break
                if found:
                    break
            if found:
                matched[c] += 1
                w_key[n_w] = c * nq + q
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
        w_n[c] = n_w - w_ptr[c]
        if top_k > 0 and not rejected[c] and matched[c] >= upper[c]:
            filled = _offer(buffer, filled, matched[c])
            thr = max(thr, _floor(buffer, filled, top_k, slack, pool))
    state[0], state[1] = filled, thr
    return stats


#: Fewest blocked pairs one thread of verification takes: below it, handing a part to the pool (about 0.1 ms) costs
#: more than it saves (a pair costs about 10 us of verification on the 1M-vector lake of ``benchmarks/join_latency.py``,
#: so 5,000 pairs are about 50 ms).
MIN_PAIRS_PER_THREAD = 5_000
#: Runs of consecutive columns step 3 cuts its columns into per thread, which the threads take as they come free: on
#: a machine busy with other work one thread may get a core for less time than another, and a static share would then
#: wait for the slower thread.
CHUNKS_PER_PART = 8


def verify_pexeso(index, query, blocked: BlockingResult, need: int, top: TopK | None, stop_on_accept: bool,
                  pred) -> Verified:
    """Algorithm 2 with Lemma 7 for the blocked pairs; threshold search or top-k (``top`` not None), on
    :func:`~discovery.ground.threads.query_threads` threads: steps 1 and 2 by ranges of query values, step 3 by
    columns."""
    if max(query.n_vectors, index.run_col.size) >= 2 ** 31:  # postings hold both as int32, half the bytes of int64
        raise ValueError("a join index partition or a query column of 2**31 or more runs or vectors; lower "
                         "[join] memory_budget_mb so that the index is split into smaller partitions")
    nq, n_cols, run_start = query.n, index.n_columns, index.run_start
    stop = bool(stop_on_accept and top is None)
    # --- 1. match map, upper bounds and posting counts, by ranges of query values -------------------------------
    m_rlo, m_rhi = np.searchsorted(run_start, blocked.match_lo), np.searchsorted(run_start, blocked.match_hi)
    m_ptr, m_order = group_by_query(query.value[blocked.match_q], nq)
    c_ptr, c_order = group_by_query(query.value[blocked.cand_q], nq)
    cuts = _value_ranges(m_ptr + c_ptr, query_threads())
    ranges = list(zip(cuts[:-1], cuts[1:]))
    tallies = run_parts(lambda r: _tally(r[0], r[1], nq, m_ptr, m_order, m_rlo, m_rhi, c_ptr, c_order,
                                         blocked.cand_leaf, index.run_col, index.leaf_run_start, n_cols), ranges)
    matched = np.sum([t[0] for t in tallies], axis=0)
    upper = np.sum([t[1] for t in tallies], axis=0)
    # --- Lemma 7 before any distance: the threshold and the columns left to verify ------------------------------
    thr = need
    if top is not None:
        thr = max(thr, top.floor(np.sort(matched)[::-1][:top.pool]))
    rejected = upper < thr
    counters = np.zeros(8, dtype=np.int64)
    counters[6] = np.count_nonzero(rejected & (upper > 0))
    live = ~rejected & (matched < upper) & ~(stop & (matched >= need))
    # --- 2. the live columns' postings in column order, each range of values from its own slots ----------------
    runs = np.where(live, [t[2] for t in tallies], 0)                       # (parts, columns)
    col_ptr = np.concatenate(([0], np.cumsum(runs.sum(axis=0))))
    starts = col_ptr[:-1] + np.cumsum(runs, axis=0) - runs
    size = int(col_ptr[-1])
    post = (np.empty(size, np.int32), np.empty(size, np.int32), np.empty(size, np.int32), np.empty(size, np.bool_))
    run_parts(lambda i: _post(*ranges[i], nq, c_ptr, c_order, blocked.cand_q, blocked.cand_leaf, blocked.cand_same,
                              index.run_col, index.leaf_run_start, live, tallies[i][3], starts[i], *post),
              range(len(ranges)))
    # --- 3. document-at-a-time verification, columns dealt out to the parts in verification order ---------------
    order = np.flatnonzero(live)
    seed = np.zeros(0, dtype=np.int64)
    if top is not None:
        order = order[np.argsort(-upper[order], kind="mergesort")]
        seed = np.sort(matched[~rejected & ~live & (upper > 0)])[::-1][:top.pool].copy()
        thr = max(thr, top.floor(seed))
    room = np.where(live, upper - matched, 0)                                # keys verification may prove
    w_ptr = np.concatenate(([0], np.cumsum(room)))
    w_n = np.zeros(n_cols, dtype=np.int64)
    proved_keys = np.empty(w_ptr[-1], np.int64)
    held = {}                                                                # thread -> its top-k buffer, state

    def check(columns):
        if threading.get_ident() not in held:
            buffer = np.zeros(max(top.pool if top else 1, 1), dtype=np.int64)
            buffer[:seed.size] = seed
            held[threading.get_ident()] = buffer, np.array([seed.size, thr], dtype=np.int64)
        return _check(columns, matched, upper, rejected, col_ptr, *post, run_start, index.mapped, index.vectors,
                      query.mapped, query.vectors, pred.tau + query.slack, pred.tau - query.slack, pred.tau_sq,
                      int(need), *held[threading.get_ident()], top.k if top else 0, top.slack if top else 0,
                      top.pool if top else 1, stop, w_ptr, w_n, proved_keys, nq)
    chunks = np.array_split(order, 1 if len(ranges) == 1 else min(order.size, CHUNKS_PER_PART * len(ranges)) or 1)
    counters += np.sum(run_parts(check, chunks), axis=0)
    exact = ~rejected & (matched >= upper)
    proved = np.arange(w_ptr[-1]) - np.repeat(w_ptr[:-1], room) < np.repeat(w_n, room)   # the slots written
    keys = np.concatenate([t[3] for t in tallies] + [proved_keys[proved]])
    s = counters
    stats = {"distance_computations": int(s[0]), "lemma1_filtered": int(s[1]), "lemma2_matched": int(s[2]),
             "columns_verified": int(s[3]), "early_accepts": int(s[4]), "early_rejects": int(s[5]),
             "rejected_without_verification": int(s[6]), "keys_verified": int(s[7])}
    return Verified(matched, exact, keys, stats)


def _value_ranges(pairs_before: np.ndarray, threads: int) -> np.ndarray:
    """Query values cutting them into at most ``threads`` ranges of about equal blocked pairs (at least
    :data:`MIN_PAIRS_PER_THREAD` each): ``[0, v_1, ..., |Q|]``; ``pairs_before[v]``: the pairs of the values below v."""
    nq, total = pairs_before.size - 1, int(pairs_before[-1])
    parts = max(1, min(threads, total // MIN_PAIRS_PER_THREAD, nq))
    inner = np.searchsorted(pairs_before, np.linspace(0, total, parts + 1)[1:-1])
    return np.unique(np.concatenate([[0], inner, [nq]])).astype(np.int64)
