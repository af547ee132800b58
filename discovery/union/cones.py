"""Cones around centroids: the tables that can hold an admissible pair, and upper bounds for them, from centroids only.

A lake column v whose direction lies within angle alpha of an anchor direction a (<v, a> >= cos alpha) satisfies,
for any query column q, by the triangle inequality for angles on the unit sphere,

    <q, v> <= cos(max(0, angle(q, a) - alpha))
           =  1                                                   if <q, a> >= cos alpha,
           =  <q, a> cos alpha + sqrt(1 - <q, a>^2) sin alpha      otherwise,

the exact maximum of <q, v> over the cap.  It is tighter than the Euclidean form <q, c> + ||v - c|| whenever the
centroid c is shorter than 1 (k-means centroids of unit vectors always are), and it needs only <q, c>: one product of
the query with the ~sqrt(#columns) base centroids, never with the columns.

Every column is anchored at the closest (in angle) of its partition's I_w centroids, all of which list its table in
the inverted index.  Per posting (centroid c, table t) the index keeps how many of t's columns are anchored at c and
the widest angle among them; per centroid, the widest angle over its postings.  For a query:

1. (q, c) pairs whose centroid-wide cone bound is below tau cannot hold an admissible partner (sim >= tau) of query
   column q, so probing every other centroid reaches every table with an admissible pair;
2. the postings of the probed centroids give per (q, table) the best posting-level cone bound; Algorithm 3's upper
   bound then follows with the postings as partitions: the smaller of the sum of the t_hi best per-query bounds
   (t_hi = min(query columns with a possibly admissible posting, columns in such postings)) and the MWMTO sum of each
   posting's ``count`` best possibly admissible bounds.

The work is sparse: one entry per probed (q, c) pair and posting of c, so tables that only a few query columns reach
cost only those entries.  Algorithm 1's groups G_k (base and cascade centroids) are not used, and so not stored
(``partitioning``): a cone bound per partition needs one entry per query column and partition of every reachable
table (dense; measured about 3x slower than ``exact`` on a generated 20k-table lake), and once a table's columns are
compared with the query (``bounds``) the member similarities are tighter than any cone.  Partitions S_k stay: they
are Algorithm 3's capacities there.

Cones are measured when the index is built, from the partitions and column vectors it is built from, so they always
describe the columns actually indexed (the incremental refresh assigns new columns to the stored centroids, which
moves the cones; nothing stored can go stale) and a warehouse built before cones existed needs no rebuild.

Numerics: directions and cosines are float64 (query and columns normalised in float64), so cosines are accurate to
~1e-15 and the square roots to ~1e-7 near 1.  A column similarity is the float32 rounding of a product of float32
vectors whose norms are 1 within ~1e-7 (``matching``); :data:`CONE_SLACK` covers both with a wide margin, so a bound
below tau proves that no pair reaches tau.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .bounds import SUM_SLACK
from .csr import expand_ranges, expand_spans, offsets_from_owners
from .partitioning import PartitionArrays

#: added to every cone bound: float32 rounding of similarities, norms off 1 by float32 normalisation, float64 error.
CONE_SLACK = 1e-5
#: (column, centroid) pairs per chunk when the cones are measured.
_PAIR_CHUNK = 1 << 16


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
    outside = cq * cr + np.sqrt(1.0 - cq * cq) * np.sqrt(1.0 - cr * cr)
    return np.where(cq >= cr, 1.0, outside) + CONE_SLACK


def _top_sums(values: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Per row of ``values`` (-inf where absent): the sum of its ``counts`` largest finite entries.  Only rows with
    more finite entries than ``counts`` are sorted; with ``counts`` 1 (most postings) the row maximum is taken."""
    finite = np.isfinite(values)
    out = np.where(finite, values, 0.0).sum(axis=1)
    counts = np.minimum(counts, finite.sum(axis=1))
    one = (counts == 1) & (finite.sum(axis=1) > 1)
    out[one] = values[one].max(axis=1)
    rest = np.flatnonzero((counts > 1) & (counts < finite.sum(axis=1)))
    if len(rest):
        ranked = -np.sort(-values[rest], axis=1)
        ranked[~np.isfinite(ranked)] = 0.0
        csum = np.cumsum(ranked, axis=1)
        out[rest] = csum[np.arange(len(rest)), counts[rest] - 1]
    out[counts == 0] = 0.0
    return out


def _ranks(ids: np.ndarray, size: int) -> tuple[np.ndarray, np.ndarray]:
    """The distinct values of ``ids`` (all in 0..size-1) ascending, and a map from value to its rank among them."""
    seen = np.zeros(size, dtype=bool)
    seen[ids] = True
    return np.flatnonzero(seen), np.cumsum(seen) - 1


@dataclass(frozen=True)
class Cones:
    """Cones of one index: per base centroid, and per posting (centroid, table) of the anchored columns."""

    centroid_dirs: np.ndarray  # (C, d) float64 unit directions of the base centroids
    centroid_cos: np.ndarray  # (C,) cosine of the widest column anchored at the centroid (1 if none)
    post_offsets: np.ndarray  # (C + 1,) postings of centroid c, widest cone first: post_offsets[c]:post_offsets[c + 1]
    post_keys: np.ndarray  # (E,) centroid * 4 + post_cos, ascending (cosines lie in [-1, 1])
    post_tables: np.ndarray  # (E,) table (internal index) of every posting
    post_counts: np.ndarray  # (E,) columns of the table anchored at the centroid
    post_cos: np.ndarray  # (E,) cosine of the widest of them
    n_tables: int

    def reachable(self, query_dirs: np.ndarray, tau: float, exclude: int = -1,
                  max_entries: int | None = None) -> tuple[np.ndarray, np.ndarray] | None:
        """Tables (internal indices, ascending) that can hold a pair with similarity >= tau with a query column, and
        Algorithm 3's upper bound of U(V_Q, V_t, tau) for each, from the cones alone; None when more than
        ``max_entries`` (query column, posting) pairs would have to be examined (the cones do not narrow the lake)."""
        nq = len(query_dirs)
        cos_c = query_dirs @ self.centroid_dirs.T
        qi, ci = np.nonzero(cone_bound(cos_c, self.centroid_cos[None, :]) >= tau)
        prefix = self._admissible_prefix(cos_c[qi, ci], ci, tau)
        if max_entries is not None and int(prefix.sum()) > max_entries:
            return None
        pos, pair = expand_spans(self.post_offsets[ci], prefix)
        bound = cone_bound(cos_c[qi, ci][pair], self.post_cos[pos])
        ok = (bound >= tau) & (self.post_tables[pos] != exclude)
        pos, q, bound = pos[ok], qi[pair[ok]], bound[ok]  # one entry per (posting, query column)
        tables, table_rank = _ranks(self.post_tables[pos], self.n_tables)
        posts, post_rank = _ranks(pos, len(self.post_tables))
        post_owner = table_rank[self.post_tables[posts]]

        # the best bound per (table, query column); the t_hi best per table summed
        best = np.full((len(tables), nq), -np.inf)
        np.maximum.at(best, (table_rank[self.post_tables[pos]], q), bound)
        cap = np.bincount(post_owner, weights=self.post_counts[posts], minlength=len(tables)).astype(np.int64)
        upper_q = _top_sums(best, np.minimum(np.isfinite(best).sum(axis=1), cap))

        # MWMTO over postings: each posting takes its ``count`` best query columns
        per_post = np.full((len(posts), nq), -np.inf)
        per_post[post_rank[pos], q] = bound
        upper_p = np.bincount(post_owner, weights=_top_sums(per_post, self.post_counts[posts]), minlength=len(tables))
        return tables, np.minimum(upper_q, upper_p) + SUM_SLACK

    def _admissible_prefix(self, cos_q: np.ndarray, centroid: np.ndarray, tau: float) -> np.ndarray:
        """How many of centroid c's postings (widest cone first) can reach tau for a query column of cosine
        ``cos_q`` with c: the bound does not grow as cones narrow, so those postings are a prefix.  The cut is taken
        a little wide (the caller filters on the bound itself): cones up to cos(max(0, angle(q, c) - arccos(tau -
        slack)))."""
        reach = np.arccos(np.clip(tau - CONE_SLACK, -1.0, 1.0))
        limit = np.cos(np.maximum(0.0, np.arccos(np.clip(cos_q, -1.0, 1.0)) - reach)) + 1e-9
        return np.searchsorted(self.post_keys, centroid * 4.0 + limit, side="right") - self.post_offsets[centroid]


def build_cones(vectors: np.ndarray, col_table: np.ndarray, part_starts: np.ndarray, centroids: np.ndarray,
                parts: PartitionArrays, order: np.ndarray) -> Cones:
    """Anchor every column and measure the cones of an index.

    ``vectors`` (n, d) are the index's columns stored partition by partition, partition p (in index order) owning rows
    ``part_starts[p]:part_starts[p + 1]`` (the last up to n), ``col_table`` their tables; ``order[p]`` is partition
    p's row in ``parts``, whose I_w centroids are the anchors its members may take.
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
    anchor = iw_ids[pair_entry[np.minimum.reduceat(hit, col_starts)]]

    n_tables = int(col_table.max()) + 1 if n else 0
    keys, inverse, counts = np.unique(anchor * n_tables + col_table, return_inverse=True, return_counts=True)
    post_cos = np.ones(len(keys))
    np.minimum.at(post_cos, inverse, best)
    post_centroid = keys // max(n_tables, 1)
    widest_first = np.lexsort((post_cos, post_centroid))
    post_centroid, post_cos = post_centroid[widest_first], post_cos[widest_first]
    centroid_cos = np.ones(len(centroids))
    np.minimum.at(centroid_cos, post_centroid, post_cos)
    return Cones(centroid_dirs, centroid_cos, offsets_from_owners(post_centroid, len(centroids)),
                 post_centroid * 4.0 + post_cos, (keys[widest_first] % max(n_tables, 1)).astype(np.int64),
                 counts[widest_first].astype(np.int64), post_cos, n_tables)
