"""Hierarchical grids over the pivot space (PEXESO §III-B).

Level ``i`` (1..m) splits every pivot axis into ``2**i`` equal intervals, i.e. the space into ``2**(|P| i)`` cells.
A leaf cell id packs, level by level from the root, the |P| halving bits of every axis (a Morton code), so the id of
a cell's ancestor at level ``l`` is the leaf id shifted right by ``|P| (m - l)`` bits, and sorting leaf ids sorts
cells in depth-first order: every cell at every level is a contiguous run of sorted leaves.  Only non-empty cells
exist.

Cell boxes.  The lemmas of blocking compare query regions with cells.  Each cell here carries the bounding box of the
mapped vectors it holds instead of its grid geometry: that box lies inside the cell, so every filtering and matching
conclusion drawn from it is sound, and it is tighter.  It also lets the grid extent be fitted to a sample: a later
vector outside the extent is clipped into an edge cell and the box of that cell simply grows to include it.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metric import max_distance

_ID_BITS = 63


@dataclass(frozen=True)
class GridSpec:
    """Extent and depth of a hierarchical grid over a |P|-dimensional pivot space (values in the metric's units)."""

    lower: np.ndarray
    upper: np.ndarray
    levels: int

    def __post_init__(self):
        lower = np.asarray(self.lower, dtype=np.float64).reshape(-1)
        upper = np.asarray(self.upper, dtype=np.float64).reshape(-1)
        if lower.shape != upper.shape:
            raise ValueError("lower and upper must have one value per pivot")
        if self.levels < 1:
            raise ValueError("a hierarchical grid needs at least one level")
        if lower.size * self.levels > _ID_BITS:
            raise ValueError(f"{lower.size} pivots x {self.levels} levels needs {lower.size * self.levels} bits; "
                             f"leaf cell ids are int64, so |P| * m must be <= {_ID_BITS}")
        upper = np.where(upper > lower, upper, lower + 1e-12)
        object.__setattr__(self, "lower", lower)
        object.__setattr__(self, "upper", upper)

    @property
    def n_pivots(self) -> int:
        return int(self.lower.size)

    @classmethod
    def fit(cls, mapped_sample: np.ndarray, levels: int) -> GridSpec:
        """Extent = the range of the mapped sample on every pivot axis."""
        m = np.asarray(mapped_sample, dtype=np.float64)
        return cls(m.min(axis=0), m.max(axis=0), levels)

    @classmethod
    def full_range(cls, n_pivots: int, levels: int, metric: str = "euclidean") -> GridSpec:
        """Extent = ``[0, max distance]`` on every axis: needs no sample, wastes resolution on concentrated data."""
        return cls(np.zeros(n_pivots), np.full(n_pivots, max_distance(metric)), levels)

    def coordinates(self, mapped: np.ndarray) -> np.ndarray:
        """Integer leaf coordinates, shape (n, p), in ``[0, 2**levels)``; outside values are clipped."""
        m = np.asarray(mapped, dtype=np.float64)
        if m.ndim != 2 or m.shape[1] != self.n_pivots:
            raise ValueError(f"mapped vectors must have shape (n, {self.n_pivots}), got {m.shape}")
        side = 1 << self.levels
        scaled = np.floor((m - self.lower) / (self.upper - self.lower) * side)
        return np.clip(scaled, 0, side - 1).astype(np.int64)

    def leaf_cells(self, mapped: np.ndarray) -> np.ndarray:
        """Leaf cell id (int64) of every mapped vector: deterministic and vectorised, for per-batch use."""
        coords = self.coordinates(mapped)
        p, m = self.n_pivots, self.levels
        ids = np.zeros(coords.shape[0], dtype=np.int64)
        for level in range(m):  # root's children first: most significant bits
            bit = m - 1 - level
            child = np.zeros(coords.shape[0], dtype=np.int64)
            for j in range(p):
                child |= ((coords[:, j] >> bit) & 1) << j
            ids = (ids << p) | child
        return ids


class CellHierarchy:
    """The non-empty cells of every level over a set of items sorted by leaf id.

    For level ``l`` in ``0..m`` (0 = root): ``ids[l]`` cell ids, ``start[l]`` (n_l + 1) item offsets of each cell,
    ``child[l]`` (n_l + 1) offsets of each cell's children in level ``l + 1``, ``lo[l]``/``hi[l]`` (n_l, p) the
    bounding boxes of the mapped items.  Items are whatever the caller sorted (lake vectors or query vectors).
    """

    def __init__(self, leaf_ids_sorted: np.ndarray, mapped_sorted: np.ndarray, n_pivots: int, levels: int):
        leaf_ids_sorted = np.asarray(leaf_ids_sorted, dtype=np.int64)
        n = leaf_ids_sorted.size
        self.levels = levels
        if n == 0:
            raise ValueError("cannot build a grid over zero vectors")
        first = np.flatnonzero(np.r_[True, leaf_ids_sorted[1:] != leaf_ids_sorted[:-1]])
        empty = np.zeros(0, dtype=np.int64)
        ids, start, child = [empty] * (levels + 1), [empty] * (levels + 1), [empty] * (levels + 1)
        lo: list[np.ndarray] = [np.zeros((0, 0))] * (levels + 1)
        hi: list[np.ndarray] = [np.zeros((0, 0))] * (levels + 1)
        ids[levels] = leaf_ids_sorted[first]
        start[levels] = np.r_[first, n].astype(np.int64)
        lo[levels] = np.minimum.reduceat(mapped_sorted, first, axis=0)
        hi[levels] = np.maximum.reduceat(mapped_sorted, first, axis=0)
        child[levels] = np.zeros(ids[levels].size + 1, dtype=np.int64)
        for level in range(levels - 1, -1, -1):
            below = ids[level + 1]
            parents = below >> n_pivots
            head = np.flatnonzero(np.r_[True, parents[1:] != parents[:-1]])
            ids[level] = parents[head]
            child[level] = np.r_[head, below.size].astype(np.int64)
            start[level] = start[level + 1][child[level]]
            lo[level] = np.minimum.reduceat(lo[level + 1], head, axis=0)
            hi[level] = np.maximum.reduceat(hi[level + 1], head, axis=0)
        self.ids, self.start, self.child, self.lo, self.hi = ids, start, child, lo, hi
        # The same cells numbered globally, level after level, for the compiled descent of blocking: cell g of
        # level l is ``offset[l] + i``; it holds items ``[item_lo[g], item_hi[g])`` and children
        # ``[child_lo[g], child_hi[g])`` (global numbers), its box is ``box_lo[g]``/``box_hi[g]``.
        sizes = np.array([a.size for a in ids], dtype=np.int64)
        self.offset = np.r_[0, np.cumsum(sizes)].astype(np.int64)
        self.item_lo = np.concatenate([s[:-1] for s in start])
        self.item_hi = np.concatenate([s[1:] for s in start])
        first_below = [self.offset[min(level + 1, levels)] for level in range(levels + 1)]
        self.child_lo = np.concatenate([c[:-1] + b for c, b in zip(child, first_below)])
        self.child_hi = np.concatenate([c[1:] + b for c, b in zip(child, first_below)])
        self.child_hi[self.offset[levels]:] = self.child_lo[self.offset[levels]:]  # leaves have no children
        self.box_lo = np.ascontiguousarray(np.concatenate(lo), dtype=np.float64)
        self.box_hi = np.ascontiguousarray(np.concatenate(hi), dtype=np.float64)
        #: Output room blocking reserves per query vector, raised when a query needs more (see ``blocking.block``).
        self.pairs_per_query = 64.0
        self.lo = [self.box_lo[a:b] for a, b in zip(self.offset[:-1], self.offset[1:])]
        self.hi = [self.box_hi[a:b] for a, b in zip(self.offset[:-1], self.offset[1:])]

    def n_cells(self, level: int) -> int:
        return int(self.ids[level].size)

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for arrs in (self.ids, self.start, self.child) for a in arrs)
                   + sum(a.nbytes for a in (self.offset, self.item_lo, self.item_hi, self.child_lo, self.child_hi,
                                           self.box_lo, self.box_hi)))
