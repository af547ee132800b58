"""PGTUS Algorithm 3: lower and upper bounds of Definition 5 from a table's partitions (MWMTO), for many tables at once.

Algorithm 3 scores a query vector v_q against a partition (G_k, S_k) by max_{c in G_k} <v_q, c> and matches query
vectors to partitions many-to-one, partition k taking at most |S_k| of them.  Centroid similarities alone do not
bound the similarities of the member columns, so pruning with them could drop a true top-k table.  To keep PGTUS
exact the partition similarity is widened by the angular spread of the members, which makes both bounds provable:

* every member v of S_k is assigned to the centroid c(v) of G_k with the smallest angle phi(v) = angle(v, c(v));
  per group entry (partition k, centroid c) the index stores the range [phi_min, phi_max] of phi(v) over the members
  assigned to c, and entries without members are left out;
* for unit vectors the spherical triangle inequality gives |theta - phi(v)| <= angle(v_q, v) <= theta + phi(v) with
  theta = angle(v_q, c), hence
  sim_hi(v_q, k) = max_c cos(distance of theta to [phi_min, phi_max]) >= <v_q, v> for every v in S_k and
  sim_lo(v_q, k) = min_c cos(min(pi, theta + phi_max)) <= <v_q, v> for every v in S_k,
  both widened by a float32 rounding margin.  (A Euclidean radius |v - c| gives bounds too, but in high dimension
  <v_q, c> - |v - c| is almost never above tau; the angular ones are the tightest a cone around c allows.)

With a zero spread (singleton partitions of exact column vectors, the Starmie baseline) sim_hi = sim_lo = <v_q, v>,
Algorithm 3's similarity.

Upper bound.  Any matching of Definition 5 uses each query vector once, with a pair of similarity >= tau, at most t*
pairs (t* = maximum number of pairs).  So U <= the sum of the t_hi largest per-query maxima of sim_hi (those >= tau),
where t_hi >= t* is min(#query vectors with an admissible partition, sum of |S_k| over partitions admissible to some
query vector).  This is Algorithm 3's "top min(|V_Q|, |V_i|) of H" with each query vector counted once, which is
tighter and still sound.

Lower bound.  Algorithm 3 assigns each query vector, in query order, to its best partition with capacity left; with
sim_lo >= tau every such assignment can be realised by distinct member columns with true similarity >= sim_lo >= tau,
so it is a valid t-matching of t_lo pairs and weight w_lo.  Definition 5 maximises weight only among maximum-
cardinality matchings, so w_lo is a lower bound only when the greedy matching is itself maximum (t* = t_lo), which is
certified when t_lo == t_hi.  Otherwise either t* = t_lo and U >= w_lo, or t* > t_lo and every maximum matching has
at least t_lo + 1 pairs of similarity >= tau, so U >= min(w_lo, tau * (t_lo + 1)).

Bounds are computed for a batch of candidate tables with padded (query, table, partition) arrays in chunks, so memory
stays bounded however many partitions a table has.
"""
from __future__ import annotations

import numpy as np

#: cells of the padded (query, table, partition) array per chunk.
_CHUNK_CELLS = 1 << 22


def rounding_margin(dim: int) -> float:
    """Bound on the float32 rounding of one inner product of unit vectors, doubled (bound side and exact side), plus
    the deviation from unit length that float32 normalisation leaves."""
    return 2.0 * dim * float(np.finfo(np.float32).eps) + 1e-6


def _chunk_bounds(query, tau, margin, entry_directions, angle_min, angle_max, entry_starts, part_capacity,
                  part_starts, table_sizes):
    q = len(query)
    n = len(table_sizes)
    theta = np.arccos(np.clip((query @ entry_directions.T).astype(np.float64), -1.0, 1.0))
    gap = np.maximum(np.maximum(angle_min[None, :] - theta, theta - angle_max[None, :]), 0.0)
    hi = np.maximum.reduceat(np.cos(gap), entry_starts, axis=1) + margin
    lo = np.minimum.reduceat(np.cos(np.minimum(theta + angle_max[None, :], np.pi)), entry_starts, axis=1) - margin

    parts_per_table = np.diff(np.append(part_starts, len(part_capacity)))
    width = max(1, int(parts_per_table.max()))
    owner = np.repeat(np.arange(n), parts_per_table)
    slot = np.arange(len(part_capacity)) - part_starts[owner]
    hi_pad = np.full((q, n, width), -np.inf)
    lo_pad = np.full((q, n, width), -np.inf)
    hi_pad[:, owner, slot] = np.where(hi >= tau, hi, -np.inf)
    lo_pad[:, owner, slot] = np.where(lo >= tau, lo, -np.inf)
    capacity = np.zeros((n, width), dtype=np.int64)
    capacity[owner, slot] = part_capacity

    # upper bound
    admissible_part = np.isfinite(hi_pad).any(axis=0)  # (n, width)
    cap_hi = np.where(admissible_part, capacity, 0).sum(axis=1)
    best_hi = hi_pad.max(axis=2)  # (q, n)
    has_q = np.isfinite(best_hi)
    t_hi = np.minimum(np.minimum(has_q.sum(axis=0), cap_hi), table_sizes)
    ranked = -np.sort(-np.where(has_q, best_hi, 0.0), axis=0)
    csum = np.vstack([np.zeros((1, n)), np.cumsum(ranked, axis=0)])
    upper = csum[t_hi, np.arange(n)]

    # lower bound: greedy many-to-one matching in query order
    rows = np.arange(n)
    w_lo = np.zeros(n)
    t_lo = np.zeros(n, dtype=np.int64)
    for qi in range(q):
        cand = np.where(capacity > 0, lo_pad[qi], -np.inf)
        best = np.argmax(cand, axis=1)
        val = cand[rows, best]
        ok = np.isfinite(val)
        w_lo += np.where(ok, val, 0.0)
        t_lo += ok
        capacity[rows[ok], best[ok]] -= 1
    lower = np.where(t_lo == t_hi, w_lo, np.minimum(w_lo, tau * (t_lo + 1)))
    return lower, upper


def mwmto_bounds(query_vectors: np.ndarray, tau: float, entry_directions: np.ndarray, angle_min: np.ndarray,
                 angle_max: np.ndarray, entry_offsets: np.ndarray, part_capacity: np.ndarray,
                 part_offsets: np.ndarray, table_sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(lower, upper) bounds of U(V_Q, V_i, tau) for every candidate table i.

    Table i owns partitions ``part_offsets[i]:part_offsets[i+1]``; partition p owns group entries
    ``entry_offsets[p]:entry_offsets[p+1]`` (unit centroid directions ``entry_directions`` with the member angle
    range ``angle_min``..``angle_max`` in radians; each partition has at least one) and capacity
    ``part_capacity[p]`` = |S_k|; ``table_sizes[i]`` = |V_i|.  Vectors are unit-normalised.
    """
    query = np.asarray(query_vectors, dtype=np.float32)
    n = len(table_sizes)
    lower = np.zeros(n)
    upper = np.zeros(n)
    if n == 0 or len(query) == 0:
        return lower, upper
    margin = rounding_margin(query.shape[1])
    parts_per_table = np.diff(part_offsets)
    start = 0
    while start < n:
        width = 1
        stop = start
        while stop < n:
            width = max(width, int(parts_per_table[stop]))
            if stop > start and len(query) * (stop - start + 1) * width > _CHUNK_CELLS:
                break
            stop += 1
        p0, p1 = int(part_offsets[start]), int(part_offsets[stop])
        e0, e1 = int(entry_offsets[p0]), int(entry_offsets[p1])
        lo, hi = _chunk_bounds(
            query, tau, margin,
            np.asarray(entry_directions[e0:e1], dtype=np.float32),
            np.asarray(angle_min[e0:e1], dtype=np.float64), np.asarray(angle_max[e0:e1], dtype=np.float64),
            (entry_offsets[p0:p1] - e0).astype(np.int64),
            np.asarray(part_capacity[p0:p1], dtype=np.int64),
            (part_offsets[start:stop] - p0).astype(np.int64),
            np.asarray(table_sizes[start:stop], dtype=np.int64),
        )
        lower[start:stop] = lo
        upper[start:stop] = hi
        start = stop
    return lower, upper
