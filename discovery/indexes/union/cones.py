"""Cones around anchors: an upper bound of every table's score from anchor directions only, a few passes over the
lake's columns per query.

A lake column v whose direction lies within angle alpha of an anchor direction a (<v, a> >= cos alpha) satisfies,
for any query column q, by the triangle inequality for angles on the unit sphere,

    <q, v> <= cos(max(0, angle(q, a) - alpha))
           =  1                                                   if <q, a> >= cos alpha,
           =  <q, a> cos alpha + sqrt(1 - <q, a>^2) sin alpha      otherwise,

the exact maximum of <q, v> over the cap; it grows with <q, a>.  It is tighter than the Euclidean form
<q, c> + ||v - c||, and the closer the anchor, the tighter.

Anchors.  The base centroids are too coarse at tau = 0.4: on the generated 100k-table lake (2,000 domains, 866
centroids) the bound below, anchored at them, reached the k-th score for about half of the tables.  So every column
is first assigned to the closest (in angle) of its partition's I_w centroids, and the columns of each base centroid
are split by k-means into at most :data:`ANCHORS_PER_CENTROID` anchors (a few hundred small k-means when the index is
built; deterministic); each column keeps its anchor and its own angle to it.  With 8 anchors per centroid about 2%
of the tables reach the k-th score there (``benchmarks/union.py`` prints it as the lake's geometry); on UGEN-V1 about
96% do, whatever the anchors: its columns spread over far more directions (effective dimension 246 of 384) than
tau = 0.4 lets a cone exclude.  Algorithm 1's groups G_k (base and cascade centroids) are not used, and so not stored
(``partitioning``): a cone per group is no narrower than its members' cones.

The bound.  For a query, cmax_a = max_q <q, a> (one product of the query with the anchors) bounds every column v
anchored at a: <q, v> <= b(v) = cone bound at cmax_a for every query column q, and v holds no admissible pair
(sim >= tau) when b(v) < tau.  A Definition 5 matching uses each lake column at most once, with pairs of similarity
>= tau, and has at most |V_Q| pairs, so

    U(V_Q, V_t, tau) <= min(sum of b(v) over t's admissible columns,
                            min(|V_Q|, admissible columns of t) * max b(v)),

and 0 when t has no admissible column.  This is Algorithm 3's column-side relaxation with cone similarities, capped
at t_hi pairs: one entry per lake column whatever the number of query columns, so it costs a few vectorised passes
over the columns, about a fifth of the lake-wide product of ``exact`` (d = 64).  Per (query column, column) bounds
(Algorithm 3's query-side sum) would be tighter but cost as many entries as the product has cells.

Cones are measured when the index is built, from the partitions and column vectors it is built from, so they always
describe the columns actually indexed (the incremental refresh assigns new columns to the stored centroids; nothing
stored can go stale) and a warehouse built before cones existed needs no rebuild.

Numerics: directions and cosines are computed in float64 (query and columns normalised in float64) and the per-query
pass runs in float32 (inputs rounded to float32, each bound off by less than 1e-6), with sums accumulated in
float64.  A column similarity is the float32 rounding of a product of float32 vectors whose norms are 1 within ~1e-7
(``matching``); :data:`CONE_SLACK` covers all of these with a wide margin, so a bound below tau proves that no pair
reaches tau and a table's bound is at least its score.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bounds import SUM_SLACK
from .centroids import assign_to_centroids, kmeans
from .csr import expand_ranges, offsets_from_owners
from .partitioning import PartitionArrays

#: added to every cone bound: float32 rounding of similarities, norms off 1 by float32 normalisation, float64 error.
CONE_SLACK = 1e-5
#: (column, centroid) pairs per chunk when the cones are measured.
_PAIR_CHUNK = 1 << 16
#: anchors per base centroid, and k-means iterations that place them (see the module docstring).  In a trial on the
#: generated 100k-table lake, 4 anchors per centroid left about 7% of the tables reaching the k-th score, 8 about 4%;
#: the split costs a few seconds when that index is built (0.1 s on UGEN-V1's 9,918 columns).
ANCHORS_PER_CENTROID = 8
ANCHOR_ITERATIONS = 6


def directions(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` normalised in float64; zero rows stay zero (their cosine with anything is 0)."""
    x = np.asarray(x, dtype=np.float64)
    norms = np.sqrt(np.einsum("...i,...i->...", x, x))[..., None]
    return x / np.where(norms > 0, norms, 1.0)


def cone_bound(cos_q: np.ndarray, cos_radius: np.ndarray) -> np.ndarray:
    """Upper bound (with :data:`CONE_SLACK`) on <q, v> for every v within the cone of half-angle arccos(cos_radius)
    around an anchor whose cosine with q is ``cos_q`` (arrays broadcast)."""
    cq = np.clip(cos_q, -1.0, 1.0)
    cr = np.clip(cos_radius, -1.0, 1.0)
    return _cap_bound(cq, np.sqrt(1.0 - cq * cq), cr, np.sqrt(1.0 - cr * cr))


def _cap_bound(cq: np.ndarray, sq: np.ndarray, cr: np.ndarray, sr: np.ndarray) -> np.ndarray:
    """:func:`cone_bound` from the cosines and sines of both angles (sines precomputed where they are reused)."""
    bound = np.where(cq >= cr, 1.0, cq * cr + sq * sr)  # a Python float keeps float32 inputs float32
    bound += CONE_SLACK
    return bound


@dataclass(frozen=True)
class Cones:
    """Cones of one index: every column's anchor and its angle to it, columns in the index's storage order."""

    anchor_dirs: np.ndarray  # (A, d) float64 unit directions of the anchors
    table_offsets: np.ndarray  # (T + 1,) columns of table t: table_offsets[t]:table_offsets[t + 1] (at least one)
    col_anchor: np.ndarray  # (n,) anchor of every column
    col_cos: np.ndarray  # (n,) float32 cosine of the column with its anchor
    col_sin: np.ndarray  # (n,) float32 sine of that angle

    def table_bounds(self, query_dirs: np.ndarray, tau: float) -> np.ndarray:
        """Upper bound of U(V_Q, V_t, tau) for every table t (internal index), 0 for tables none of whose columns
        can reach tau with a query column (see the module docstring)."""
        cmax = np.clip((query_dirs @ self.anchor_dirs.T).max(axis=0), -1.0, 1.0)
        smax = np.sqrt(1.0 - cmax * cmax).astype(np.float32)
        cmax = cmax.astype(np.float32)
        bound = _cap_bound(cmax[self.col_anchor], smax[self.col_anchor], self.col_cos, self.col_sin)
        admissible = bound >= tau
        bound *= admissible
        starts = self.table_offsets[:-1]
        total = np.add.reduceat(bound, starts, dtype=np.float64)
        columns = np.add.reduceat(admissible, starts, dtype=np.int64)
        capped = np.minimum(columns, len(query_dirs)) * np.maximum.reduceat(bound, starts).astype(np.float64)
        return np.where(total > 0, np.minimum(total, capped) + SUM_SLACK, 0.0)


def build_cones(vectors: np.ndarray, col_table: np.ndarray, part_starts: np.ndarray, centroids: np.ndarray,
                parts: PartitionArrays, order: np.ndarray) -> Cones:
    """Anchor every column and measure the cones of an index.

    ``vectors`` (n, d) are the index's columns stored partition by partition, partition p (in index order) owning rows
    ``part_starts[p]:part_starts[p + 1]`` (the last up to n), ``col_table`` their tables (internal indices, every
    table owning at least one column); ``order[p]`` is partition p's row in ``parts``: its members go to the closest
    of its I_w centroids, whose columns are then split into anchors (:func:`_split`).
    """
    n, n_parts = len(vectors), len(order)
    member_part = np.repeat(np.arange(n_parts), np.diff(np.append(part_starts, n)))
    w_pos, w_part = expand_ranges(parts.iw_offsets, order)
    part_iw = offsets_from_owners(w_part, n_parts)
    iw_ids = parts.iw_centroid_ids[w_pos]
    centroid_dirs = directions(centroids)

    # cosine of every column with every I_w centroid of its partition (pairs grouped by column)
    pair_entry, pair_col = expand_ranges(part_iw, member_part)
    norms = np.sqrt(np.einsum("ij,ij->i", vectors, vectors, dtype=np.float64))
    norms[norms == 0] = 1.0
    cos = np.empty(len(pair_entry))
    for a in range(0, len(pair_entry), _PAIR_CHUNK):
        cols, ids = pair_col[a:a + _PAIR_CHUNK], iw_ids[pair_entry[a:a + _PAIR_CHUNK]]
        cos[a:a + len(cols)] = np.einsum("ij,ij->i", vectors[cols], centroid_dirs[ids], dtype=np.float64) / norms[cols]
    col_starts = offsets_from_owners(pair_col, n)[:-1]
    best = np.maximum.reduceat(cos, col_starts)
    hit = np.where(cos == best[pair_col], np.arange(len(cos)), len(cos))
    base = iw_ids[pair_entry[np.minimum.reduceat(hit, col_starts)]]
    anchor, anchor_dirs = _split(vectors, base)
    cos = np.clip(np.einsum("ij,ij->i", vectors, anchor_dirs[anchor], dtype=np.float64) / norms, -1.0, 1.0)
    return Cones(anchor_dirs, offsets_from_owners(col_table, int(col_table.max()) + 1 if n else 0), anchor,
                 cos.astype(np.float32), np.sqrt(1.0 - cos * cos).astype(np.float32))


def _split(vectors: np.ndarray, base: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Anchors finer than the base centroids: the columns closest to each base centroid split by k-means into at
    most :data:`ANCHORS_PER_CENTROID` groups; returns every column's anchor and the anchors' unit directions."""
    order = np.argsort(base, kind="stable")
    _, firsts = np.unique(base[order], return_index=True)
    anchor = np.empty(len(vectors), dtype=np.int64)
    dirs, placed = [], 0
    for a, b in zip(firsts.tolist(), np.append(firsts[1:], len(order)).tolist()):
        rows = order[a:b]
        sub = kmeans(vectors[rows], ANCHORS_PER_CENTROID, seed=0, iterations=ANCHOR_ITERATIONS)
        anchor[rows] = placed + assign_to_centroids(vectors[rows], sub)
        dirs.append(sub)
        placed += len(sub)
    return anchor, directions(np.concatenate(dirs)) if dirs else np.zeros((0, vectors.shape[1]))
