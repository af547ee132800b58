"""PGTUS Algorithm 2 (Refinement): the max-heap loop over centroid-query pairs, vectorised over tables.

Algorithm 2 pops centroid-query pairs (c_b, v_q) from a max-heap in descending <c_b, v_q> and, for every table i with
columns under c_b, adds <c_b, v_q> to Phi_s[i] if v_q has not visited i yet (Phi_v) and i still has capacity under c_b
(Phi_u[i][c_b] < I_w[i][c_b]); v_q is marked as having visited i either way.

The heap holds every pair from the start and nothing is pushed later, so popping it is one sort of the pairs: heap
order is descending similarity, ties by (centroid id, query position), which is what a heap of (-sim, centroid, query)
tuples pops first.  The pairs are then processed one by one in that order, exactly as the algorithm does, but the
inner loop over the tables of I_w[c_b] is one vectorised step: a table occurs at most once in a centroid's posting
list, so the tables of one pair never interact.  The tables of the probed centroids' postings are renumbered once per
query; Phi_v is then a dense (query vector, table) flag array, Phi_u a counter per posting (centroid, table) and
Phi_s a dense score array over just those tables.  Scores are summed in heap order, so they equal the sequential
algorithm's bit for bit.

Phi_s sums centroid-query similarities, so it takes few distinct values and many tables tie at the phi_ref-th score;
every one of them goes on, so that which of equally scored tables get searched is not decided by table id.
"""
from __future__ import annotations

import numpy as np

from .csr import expand_ranges, offsets_from_owners


def refine(pair_centroids: np.ndarray, pair_sims: np.ndarray, iw_offsets: np.ndarray, iw_tables: np.ndarray,
           iw_counts: np.ndarray, phi_ref: int, exclude_table: int = -1) -> tuple[np.ndarray, np.ndarray]:
    """Top-``phi_ref`` tables of Algorithm 2, and every table tied with the phi_ref-th, with their accumulated scores
    Phi_s, best first.

    ``pair_centroids`` (q, phi_c) are the probed centroid ids per query vector and ``pair_sims`` their inner products
    with it.  The inverted index lists, for centroid c, the tables ``iw_tables[iw_offsets[c]:iw_offsets[c+1]]`` and
    their column counts ``iw_counts`` under c.  Tables are internal indices; ties in score go to the smaller index.
    """
    q_count, probes = pair_centroids.shape
    pc = pair_centroids.reshape(-1).astype(np.int64)
    pq = np.repeat(np.arange(q_count, dtype=np.int64), probes)
    ps = pair_sims.reshape(-1).astype(np.float64)
    heap_order = np.lexsort((pq, pc, -ps))

    # postings of the probed centroids, with tables renumbered 0..t-1 (Phi holds exactly these tables)
    centroids, slot = np.unique(pc, return_inverse=True)
    pos, owner = expand_ranges(iw_offsets, centroids)
    bounds = offsets_from_owners(owner, len(centroids)).tolist()
    tables, local = np.unique(iw_tables[pos], return_inverse=True)
    capacity = iw_counts[pos]
    visited = np.zeros((q_count, len(tables)), dtype=bool)  # Phi_v, one row per query vector
    used = np.zeros(len(pos), dtype=np.int64)  # Phi_u, per posting (centroid, table)
    score = np.zeros(len(tables))  # Phi_s
    for p in heap_order.tolist():
        j = int(slot[p])
        lo, hi = bounds[j], bounds[j + 1]
        members = local[lo:hi]
        seen = visited[pq[p]]
        fresh = ~seen[members]
        succeed = fresh & (used[lo:hi] < capacity[lo:hi])
        used[lo:hi] += succeed
        score[members[succeed]] += ps[p]
        seen[members[fresh]] = True
    if exclude_table >= 0:
        keep = tables != exclude_table
        tables, score = tables[keep], score[keep]
    if len(tables) > phi_ref:
        # the phi_ref-th best score; every table above it, plus ties at it, goes on to the final ordering
        cut = np.partition(-score, phi_ref - 1)[phi_ref - 1]
        keep = -score <= cut
        tables, score = tables[keep], score[keep]
    order = np.lexsort((tables, -score))
    return tables[order], score[order]
