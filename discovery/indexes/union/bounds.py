"""PGTUS Algorithm 3: lower and upper bounds of Definition 5 from a table's partitions (MWMTO), for many tables at once.

Algorithm 3 gives every (query vector v_q, partition (G_k, S_k)) pair one similarity, matches query vectors to
partitions many-to-one (partition k takes at most |S_k| of them) and reads a lower bound off a greedy matching and an
upper bound off the best similarities.  The paper takes the similarity max_{c in G_k} <v_q, c> of the group's
centroids, which bounds nothing about the member columns, so pruning with it could drop a true top-k table.  The
tightest partition-level similarities that are sound are the extremes over the members,

    sim_hi(v_q, k) = max_{v in S_k} <v_q, v>   and   sim_lo(v_q, k) = min_{v in S_k} <v_q, v>,

and they cost one BLAS product of the query with the candidates' columns, which the search computes anyway for exact
scoring (a cone around the centroids would need as many products, one per group entry, and gives wider bounds).

Upper bound.  A matching of Definition 5 uses each query vector at most once, with a pair of similarity >= tau, at
most t_hi pairs, where t_hi = min(#query vectors with an admissible pair, #columns with an admissible pair) bounds the
maximum cardinality t*.  Relaxing "each column once" gives U <= the sum of the t_hi largest per-query maxima of
sim_hi (Algorithm 3's "top min(|V_Q|, |V_i|) of H", each query vector counted once); relaxing "each query vector once"
instead gives the MWMTO bound U <= sum over partitions of the c_k largest admissible sim_hi(., k), c_k = admissible
members of S_k (the partition capacities), and, per column, U <= sum over columns of their best admissible
similarity.  All hold, so the smallest is taken.

Lower bound.  Algorithm 3 assigns each query vector, in query order, to its highest-scoring partition with capacity
left.  A partition's score for v_q is realised by a member, and the tightest sound choice is the best still free
admissible member: the greedy then picks, per query vector, the best free admissible column of the table (the
partition of that column has capacity left by construction).  Scoring partitions by sim_lo instead would also be
sound but loses every pair whose partition holds a non-admissible member.  The greedy is a valid t-matching with t_lo
pairs and weight w_lo.  Definition 5 maximises weight only among maximum-cardinality matchings, so w_lo is a lower
bound only when the greedy matching is itself maximum, certified by t_lo == t_hi.  Otherwise either t* = t_lo and
U >= w_lo, or t* > t_lo and every maximum matching has at least t_lo + 1 pairs of similarity >= tau, so
U >= min(w_lo, tau * (t_lo + 1)).

The bounds and the exact score read the same similarities (``matching`` explains why their sums are exact for any
practical tau); a slack of 1e-9 on both bounds keeps them sound for a tau so small that they are not.
"""
from __future__ import annotations

import math

import numpy as np

from .csr import expand_ranges, offsets_from_owners

#: widening of both bounds against float64 summation-order differences from the exact score (tiny tau only).
SUM_SLACK = 1e-9
#: similarity cells (query x column) per chunk of tables.
_CHUNK_CELLS = 1 << 21


def _top_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per column j of ``values`` (rows, m) (entries >= 0, -inf where absent): the sum of its ``counts[j]`` largest."""
    ranked = -np.sort(-values, axis=0)
    ranked[~np.isfinite(ranked)] = 0.0
    csum = np.vstack([np.zeros((1, values.shape[1])), np.cumsum(ranked, axis=0)])
    return csum[np.minimum(counts, values.shape[0]), np.arange(values.shape[1])]


def mwmto_bounds(sims: np.ndarray, tau: float, part_starts: np.ndarray, table_part_offsets: np.ndarray,
                 floor: float = -math.inf) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds of U(V_Q, V_i, tau) for every candidate table i, and 0, 0 for tables with no admissible
    pair.

    ``sims`` (q, C) are the similarities of the query vectors with the candidates' columns, laid out so that every
    partition's members are contiguous: partition p owns columns ``part_starts[p]:part_starts[p + 1]`` (the last up
    to C), and table i owns partitions ``table_part_offsets[i]:table_part_offsets[i + 1]`` (at least one, non-empty).

    The column relaxation (each column's best admissible similarity, summed) is one pass over ``sims``; only tables
    where it reaches ``floor`` get the full bounds, the others get it as their upper bound and 0 as their lower bound
    (a caller pruning at ``floor`` discards them whatever their lower bound).  Tables are processed in chunks so the
    working arrays stay bounded however many candidates there are.
    """
    offsets = np.asarray(table_part_offsets, dtype=np.int64)
    starts = np.asarray(part_starts, dtype=np.int64)
    n = len(offsets) - 1
    lower, upper = np.zeros(n), np.zeros(n)
    if n == 0 or sims.shape[1] == 0:
        return lower, upper
    table_cols = np.append(starts, sims.shape[1])[offsets]
    col_best = np.where(sims >= tau, sims, 0).max(axis=0).astype(np.float64)
    upper_c = np.add.reduceat(col_best, table_cols[:-1])
    upper[upper_c > 0] = upper_c[upper_c > 0] + SUM_SLACK
    full = np.flatnonzero((upper_c > 0) & (upper >= floor))
    if len(full) < n:  # lay out the tables that get full bounds contiguously
        cols, owner = expand_ranges(table_cols, full)
        new_cols = offsets_from_owners(owner, len(full))
        p_pos, p_owner = expand_ranges(offsets, full)
        sims, starts = sims[:, cols], starts[p_pos] - table_cols[full[p_owner]] + new_cols[p_owner]
        offsets = offsets_from_owners(p_owner, len(full))
    lower[full], upper[full] = _chunked(sims, tau, starts, offsets)
    return lower, upper


def _chunked(sims: np.ndarray, tau: float, part_starts: np.ndarray,
             offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """:func:`_bounds` over tables in chunks of at most about ``_CHUNK_CELLS`` similarity cells."""
    n = len(offsets) - 1
    lower, upper = np.zeros(n), np.zeros(n)
    if n == 0:
        return lower, upper
    starts = np.append(part_starts, sims.shape[1])
    cols_per_table = np.diff(starts[offsets])
    step = max(1, _CHUNK_CELLS // (len(sims) * max(1, int(cols_per_table.max()))))
    for a in range(0, n, step):
        b = min(n, a + step)
        p0, p1 = offsets[a], offsets[b]
        c0, c1 = starts[p0], starts[p1]
        lower[a:b], upper[a:b] = _bounds(sims[:, c0:c1], tau, starts[p0:p1] - c0, offsets[a:b + 1] - p0)
    return lower, upper


def _bounds(sims: np.ndarray, tau: float, starts: np.ndarray,
            table_part_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    n = len(table_part_offsets) - 1
    q, n_cols = sims.shape
    table_starts = starts[table_part_offsets[:-1]]
    admissible = sims >= tau
    masked = np.where(admissible, sims, -np.inf).astype(np.float64)
    col_ok = admissible.any(axis=0)

    # upper bound: the smallest of three relaxations, all capped at t_hi pairs
    best = np.maximum.reduceat(masked, table_starts, axis=1)  # (q, n): per-query best admissible sim per table
    t_hi = np.minimum(np.isfinite(best).sum(axis=0), np.add.reduceat(col_ok, table_starts))
    upper_q = _top_sums(best, t_hi)
    part_hi = np.maximum.reduceat(masked, starts, axis=1)  # (q, P): -inf where no admissible member
    part_cap = np.add.reduceat(col_ok, starts).astype(np.int64)
    upper_p = np.add.reduceat(_top_sums(part_hi, part_cap), table_part_offsets[:-1])
    col_best = np.where(col_ok, masked.max(axis=0), 0.0)
    upper_c = np.add.reduceat(col_best, table_starts)
    upper = np.minimum(np.minimum(upper_q, upper_p), upper_c)

    # lower bound: Algorithm 3's greedy in query order, each assignment realised by the best free member
    owner = np.repeat(np.arange(n), np.diff(np.append(table_starts, n_cols)))
    position = np.arange(n_cols)
    free = masked.copy()
    w_lo = np.zeros(n)
    t_lo = np.zeros(n, dtype=np.int64)
    for qi in range(q):
        row = free[qi]
        top = np.maximum.reduceat(row, table_starts)
        ok = np.isfinite(top)
        if not ok.any():
            continue
        hit = np.where((row == top[owner]) & np.isfinite(row), position, n_cols)
        pick = np.minimum.reduceat(hit, table_starts)[ok]
        w_lo[ok] += top[ok]
        t_lo[ok] += 1
        free[:, pick] = -np.inf
    lower = np.where(t_lo == t_hi, w_lo, np.minimum(w_lo, tau * (t_lo + 1)))
    none = t_hi == 0
    return np.where(none, 0.0, lower - SUM_SLACK), np.where(none, 0.0, upper + SUM_SLACK)
