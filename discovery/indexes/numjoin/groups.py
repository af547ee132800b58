"""The group structure of PEXESO 003 (Definition 4, §IV-A): global centers, and every set split into groups.

A group ``g = <C, L, R>`` holds the objects of one set nearest to one global center ``C``, the list ``L`` sorted by
distance to ``C``, and the radius ``R`` (the largest of those distances).  All sets share one collection of centers
(§IV-A: "a set of global centers for all sets", so groups of different sets at the same center can dominate each
other, Definitions 5-6).

Center selection (§IV-A leaves it open: a uniform sample of the space, or hyperplane cells).  We draw the centers as
a seeded uniform sample of the lake's distinct prepared vectors.  Uniform points of the bounding box cover a
clustered 20-d space badly: almost every center then lies far from every object, each set falls into a handful of
huge groups, and Lemmas 2-5 stop firing.  A sample follows the data's density, and once drawn the centers are a
fixed, versioned model like the other global models: new sets are assigned to them without refitting, as the paper
requires of space-based centers.  Default count: ``2 sqrt(N)`` capped at 1000, the paper's |C| (§V-B).

Assignment: an object joins its nearest center, found by BLAS (``|c|^2 - 2 x.c``).  Any assignment gives valid
groups - every lemma reads the group's stored distances and radius, which are canonical chords - so the BLAS
rounding can only make a group a little looser, never a result wrong.

Layout (arrays, so the structure is stored as columns; :mod:`.index`): groups sorted by (set, center); members
sorted by (group, distance to the center); a group is a contiguous run ``start[g]:start[g + 1]`` of members and a set
a contiguous run ``set_start[s]:set_start[s + 1]`` of groups.  Centers are sorted inside a set, so the group of set
``s`` at center ``c`` is found by binary search on ``center[set_start[s]:set_start[s + 1]]``: the "hash on group
centers" of the two-step index (§III-D), in a form that is one sorted column rather than a table of buckets.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metric import chord_rows

#: Rows assigned per BLAS block (bounds the (rows x centers) distance block to ~64 MB at 1000 centers).
ASSIGN_ROWS = 8192


def default_center_count(n_objects: int) -> int:
    return int(max(1, min(1000, round(2.0 * np.sqrt(max(n_objects, 1))))))


def select_centers(vectors: np.ndarray, n_centers: int, seed: int = 0) -> np.ndarray:
    """A seeded sample of ``n_centers`` distinct prepared vectors (fewer when there are fewer distinct ones)."""
    if vectors.shape[0] == 0:
        raise ValueError("centers need at least one vector")
    distinct = np.unique(vectors, axis=0)
    rng = np.random.default_rng(seed)
    pick = rng.choice(distinct.shape[0], size=min(n_centers, distinct.shape[0]), replace=False)
    return np.ascontiguousarray(distinct[np.sort(pick)])


def assign_nearest(vectors: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Index of the (BLAS-)nearest center of every row; ties to the lowest index."""
    out = np.empty(vectors.shape[0], dtype=np.int64)
    c_sq = np.einsum("ij,ij->i", centers, centers)
    for a in range(0, vectors.shape[0], ASSIGN_ROWS):
        block = vectors[a:a + ASSIGN_ROWS]
        out[a:a + ASSIGN_ROWS] = np.argmin(c_sq[None, :] - 2.0 * (block @ centers.T), axis=1)
    return out


@dataclass
class Groups:
    """Groups of a collection of sets (Definition 4), in flat arrays (see the module docstring).

    ``member_row``: each member's row in its own set (the caller's numbering); ``member_dist``: its canonical chord to
    its group's center, ascending within a group; ``vectors``: prepared vectors in member order.
    """

    set_start: np.ndarray     # (S + 1,) groups of set s: set_start[s]:set_start[s + 1]
    center: np.ndarray        # (G,) global center id, ascending within a set
    set_of: np.ndarray        # (G,) set id
    radius: np.ndarray        # (G,) R: largest member distance
    start: np.ndarray         # (G + 1,) members of group g: start[g]:start[g + 1]
    member_row: np.ndarray    # (N,)
    member_dist: np.ndarray   # (N,)
    vectors: np.ndarray       # (N, dim)

    @property
    def n_sets(self) -> int:
        return int(self.set_start.size - 1)

    @property
    def n_groups(self) -> int:
        return int(self.center.size)

    @property
    def size(self) -> np.ndarray:
        return np.diff(self.start)

    def group_of(self, s: int, c: int) -> int:
        """The group of set ``s`` at center ``c``, or -1 (the hash lookup of Theorem 1)."""
        lo, hi = self.set_start[s], self.set_start[s + 1]
        i = lo + int(np.searchsorted(self.center[lo:hi], c))
        return int(i) if i < hi and self.center[i] == c else -1

    def count_within(self, groups: np.ndarray, bound: float) -> np.ndarray:
        """Per group, how many members lie at most ``bound`` from its center (binary search on the sorted list L)."""
        groups = np.asarray(groups, dtype=np.int64)
        out = np.empty(groups.size, dtype=np.int64)
        for i, g in enumerate(groups):   # a few calls per query; each a binary search
            a, b = self.start[g], self.start[g + 1]
            out[i] = np.searchsorted(self.member_dist[a:b], bound, side="right")
        return out


def build_groups(vectors: np.ndarray, set_ids: np.ndarray, n_sets: int, centers: np.ndarray,
                 assignment: np.ndarray | None = None) -> Groups:
    """Split every set into its groups; ``vectors`` are prepared, ``set_ids`` number sets ``0..n_sets-1``."""
    set_ids = np.asarray(set_ids, dtype=np.int64)
    n = vectors.shape[0]
    rows = np.zeros(n, dtype=np.int64)
    if n:
        order_by_set = np.argsort(set_ids, kind="stable")
        counts = np.bincount(set_ids, minlength=n_sets)
        firsts = np.r_[0, np.cumsum(counts)[:-1]]
        rows[order_by_set] = np.arange(n) - np.repeat(firsts, counts)
    assignment = assign_nearest(vectors, centers) if assignment is None else np.asarray(assignment, np.int64)
    dist = chord_rows(vectors, centers[assignment]) if n else np.zeros(0)
    order = np.lexsort((dist, assignment, set_ids))
    s, c, dist = set_ids[order], assignment[order], dist[order]
    head = np.r_[True, (s[1:] != s[:-1]) | (c[1:] != c[:-1])] if n else np.zeros(0, dtype=bool)
    heads = np.flatnonzero(head)
    start = np.r_[heads, n].astype(np.int64)
    radius = np.maximum.reduceat(dist, heads) if n else np.zeros(0)
    set_of = s[heads]
    set_start = np.searchsorted(set_of, np.arange(n_sets + 1)).astype(np.int64)
    return Groups(set_start=set_start, center=c[heads].astype(np.int64), set_of=set_of.astype(np.int64),
                  radius=np.asarray(radius, dtype=np.float64), start=start, member_row=rows[order],
                  member_dist=np.ascontiguousarray(dist), vectors=np.ascontiguousarray(vectors[order]))
