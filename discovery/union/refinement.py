"""PGTUS Algorithm 2 (Refinement), vectorised.

Algorithm 2 pops centroid-query pairs (c_b, v_q) from a max-heap in descending <c_b, v_q> and, for every table i with
columns under c_b, adds <c_b, v_q> to Phi_s[i] if v_q has not visited i yet (Phi_v) and i still has capacity under c_b
(Phi_u[i][c_b] < I_w[i][c_b]); v_q is marked as having visited i either way.  Each table's score therefore depends only
on the pairs touching its own centroids, processed in the global heap order, which allows a heap-free evaluation that
gives exactly the same scores:

1. expand every pair into one event per table holding columns under its centroid (the inverted index I_w, as CSR);
2. per (table, query vector) only the first event in heap order matters (Phi_v is set by it, success or not);
3. per (table, centroid), among those first events in heap order, the first I_w[i][c] succeed (Phi_u capacity).

Each step is a sort, so a query costs O(E log E) numpy work for E events instead of E Python iterations.  Heap order
is descending similarity, ties broken by (centroid id, query position), which is what a heap of
(-sim, centroid, query) tuples pops first.
"""
from __future__ import annotations

import numpy as np

from .csr import expand_ranges



def refine(pair_centroids: np.ndarray, pair_sims: np.ndarray, iw_offsets: np.ndarray, iw_tables: np.ndarray,
           iw_counts: np.ndarray, phi_ref: int, exclude_table: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Top-``phi_ref`` tables of Algorithm 2 and their accumulated scores Phi_s, best first.

    ``pair_centroids`` (q, phi_c) are the probed centroid ids per query vector and ``pair_sims`` their inner products
    with it.  The inverted index lists, for centroid c, the tables ``iw_tables[iw_offsets[c]:iw_offsets[c+1]]`` and
    their column counts ``iw_counts`` under c.  Tables are internal indices; ties in score go to the smaller index.
    """
    q_count, probes = pair_centroids.shape
    pc = pair_centroids.reshape(-1).astype(np.int64)
    pq = np.repeat(np.arange(q_count, dtype=np.int64), probes)
    ps = pair_sims.reshape(-1).astype(np.float64)
    heap_order = np.lexsort((pq, pc, -ps))
    pc, pq, ps = pc[heap_order], pq[heap_order], ps[heap_order]

    pos, pair = expand_ranges(iw_offsets, pc)  # events in heap order: pair index is the heap rank
    if len(pos) == 0:
        return np.zeros(0, dtype=np.int64), np.zeros(0)
    ev_table = iw_tables[pos]
    ev_query = pq[pair]

    # Phi_v: only the first event of every (table, query vector) in heap order can add to the score.
    by_tq = np.lexsort((pair, ev_query, ev_table))
    t_sorted, q_sorted = ev_table[by_tq], ev_query[by_tq]
    first = np.ones(len(by_tq), dtype=bool)
    first[1:] = (t_sorted[1:] != t_sorted[:-1]) | (q_sorted[1:] != q_sorted[:-1])
    kept = by_tq[first]

    # Phi_u: among those, per (table, centroid) in heap order, the first I_w[i][c] succeed.
    k_table, k_cent, k_pair = ev_table[kept], pc[pair[kept]], pair[kept]
    by_tc = np.lexsort((k_pair, k_cent, k_table))
    kt, kc = k_table[by_tc], k_cent[by_tc]
    new_group = np.ones(len(by_tc), dtype=bool)
    new_group[1:] = (kt[1:] != kt[:-1]) | (kc[1:] != kc[:-1])
    group_start = np.maximum.accumulate(np.where(new_group, np.arange(len(by_tc)), 0))
    rank_in_group = np.arange(len(by_tc)) - group_start
    success = rank_in_group < iw_counts[pos[kept[by_tc]]]

    # Phi_s: sum in heap order per table, so floating-point sums (and hence ties) match the sequential algorithm
    heap_seq = np.argsort(k_pair[by_tc], kind="stable")
    tables, inverse = np.unique(kt, return_inverse=True)
    gains = np.where(success, ps[k_pair[by_tc]], 0.0)
    scores = np.bincount(inverse[heap_seq], weights=gains[heap_seq], minlength=len(tables))
    if exclude_table >= 0:
        keep = tables != exclude_table
        tables, scores = tables[keep], scores[keep]
    order = np.lexsort((tables, -scores))[:phi_ref]
    return tables[order], scores[order]
