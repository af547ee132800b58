"""The MVP-tree over the global group centers and pivot group filtering (PEXESO 003 §III-D, Theorem 3, Alg. 2 l.5-9).

Entries are the global centers.  Pivots are chosen with the HF (hull of foci) heuristic the paper uses ([16]): two
mutually far objects (the foci), then repeatedly the object whose distances to the chosen pivots are closest to the
foci's mutual distance - outliers spread around the data.  As in the multi-vantage-point tree, every node of one level
splits by the same pivot (level ``l`` by pivot ``l``), into ``fanout`` children holding equal shares of its entries by
distance to that pivot (the ``m - 1`` cut values of §III-D are the quantiles); a node with at most ``leaf_size``
entries, or below the last pivot, is a leaf.  Each entry keeps its distances to all pivots (the MVP-tree's path
distances), so a query group needs ``|P|`` distance computations for the whole traversal.

Node boxes.  A node stores, per pivot, the least and largest distance of its entries to that pivot; Theorem 3
prunes the node when for some pivot the query group's interval ``[d(g_q.C, p) - r, d(g_q.C, p) + r]`` misses the box,
with ``r = tau + g_q.R + R``.  ``R`` is per center the largest radius of any group at it (the head of the posting
list's tail, :mod:`.dominating`), and per node the largest over its entries, so a pruned node prunes every group of
every set at those centers at once: the node-level form of Lemma 6 (Alg. 2 line 7).  A center with no group has
``R = -inf`` and is never a candidate.

Traversal is breadth-first over all query groups at once, as arrays of (query group, node) pairs: the tree is a few
levels deep and this touches each level once (vectorised), instead of a depth-first stack per query group.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .metric import chord_pairwise, chord_to_many


def hf_pivots(points: np.ndarray, n_pivots: int, seed: int = 0) -> np.ndarray:
    """Indices of ``n_pivots`` pivots by the HF heuristic (fewer when there are fewer points)."""
    n = points.shape[0]
    k = min(n_pivots, n)
    if k == 0:
        return np.zeros(0, dtype=np.int64)
    rng = np.random.default_rng(seed)
    f1 = int(np.argmax(chord_to_many(points[rng.integers(n)], points)))
    d1 = chord_to_many(points[f1], points)
    f2 = int(np.argmax(d1))
    chosen = [f1] if f2 == f1 else [f1, f2]
    edge = d1[f2]
    err = np.abs(d1 - edge) + (np.abs(chord_to_many(points[f2], points) - edge) if f2 != f1 else 0.0)
    while len(chosen) < k:
        err[chosen] = np.inf
        nxt = int(np.argmin(err))
        if not np.isfinite(err[nxt]):
            break
        chosen.append(nxt)
        err = err + np.abs(chord_to_many(points[nxt], points) - edge)
    return np.asarray(chosen[:k], dtype=np.int64)


@dataclass
class MVPTree:
    """Nodes in breadth-first order; node ``i`` covers entries ``order[start[i]:end[i]]``, its children are nodes
    ``child_start[i]:child_end[i]`` (none for a leaf)."""

    pivots: np.ndarray       # (P, dim) prepared pivot vectors
    entry_piv: np.ndarray    # (C, P) chord of every center (by center id) to every pivot
    order: np.ndarray        # (C,) center ids, each node's entries contiguous
    start: np.ndarray
    end: np.ndarray
    child_start: np.ndarray
    child_end: np.ndarray
    box_lo: np.ndarray       # (nodes, P)
    box_hi: np.ndarray

    @classmethod
    def build(cls, centers: np.ndarray, n_pivots: int = 5, fanout: int = 3, leaf_size: int = 8,
              seed: int = 0) -> MVPTree:
        if fanout < 2 or leaf_size < 1:
            raise ValueError("an MVP-tree needs fanout >= 2 and leaf_size >= 1")
        pivots = np.ascontiguousarray(centers[hf_pivots(centers, n_pivots, seed)])
        piv = chord_pairwise(centers, pivots)
        n_p = pivots.shape[0]
        order = np.arange(centers.shape[0], dtype=np.int64)
        nodes = [(0, centers.shape[0], 0)]      # (start, end, level), breadth-first
        children: list[tuple[int, int]] = []
        i = 0
        while i < len(nodes):
            a, b, level = nodes[i]
            if b - a <= leaf_size or level >= n_p:
                children.append((0, 0))
            else:
                seg = order[a:b]
                seg = seg[np.argsort(piv[seg, level], kind="stable")]
                order[a:b] = seg
                cuts = np.linspace(a, b, fanout + 1).round().astype(np.int64)
                first = len(nodes)
                for lo, hi in zip(cuts[:-1], cuts[1:]):
                    if hi > lo:
                        nodes.append((int(lo), int(hi), level + 1))
                children.append((first, len(nodes)))
            i += 1
        start = np.array([n[0] for n in nodes], dtype=np.int64)
        end = np.array([n[1] for n in nodes], dtype=np.int64)
        box_lo = np.array([piv[order[a:b]].min(axis=0) if b > a else np.full(n_p, np.inf) for a, b in zip(start, end)])
        box_hi = np.array([piv[order[a:b]].max(axis=0) if b > a else np.full(n_p, -np.inf)
                           for a, b in zip(start, end)])
        ch = np.array(children, dtype=np.int64).reshape(-1, 2)
        return cls(pivots, np.ascontiguousarray(piv), order, start, end, ch[:, 0].copy(), ch[:, 1].copy(),
                   box_lo.reshape(-1, n_p), box_hi.reshape(-1, n_p))

    @property
    def n_nodes(self) -> int:
        return int(self.start.size)

    def node_reach(self, center_reach: np.ndarray) -> np.ndarray:
        """Per node, the largest ``center_reach`` of its entries (R of Theorem 3 at node level)."""
        reach_in_order = center_reach[self.order]
        out = np.full(self.n_nodes, -np.inf)
        for i in np.flatnonzero(self.end > self.start):   # a few hundred nodes
            out[i] = reach_in_order[self.start[i]:self.end[i]].max()
        return out

    def lower_bounds(self, x_piv: np.ndarray) -> np.ndarray:
        """Lemma 1's bound ``max_p |d(x, p) - d(c, p)| <= d(x, c)`` for every row of ``x_piv`` and every center."""
        out = np.zeros((x_piv.shape[0], self.entry_piv.shape[0]))
        tmp = np.empty_like(out)
        for p in range(x_piv.shape[1]):       # one pass per pivot: no (rows, centers, P) temporary
            np.subtract(x_piv[:, p, None], self.entry_piv[None, :, p], out=tmp)
            np.abs(tmp, out=tmp)
            np.maximum(out, tmp, out=out)
        return out

    def candidates(self, q_piv: np.ndarray, q_reach: np.ndarray, center_reach: np.ndarray,
                   node_reach: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """(query group, center id) pairs Theorem 3 cannot prune.

        ``q_piv``: (G_Q, P) chords of the query group centers to the pivots; ``q_reach``: per query group ``tau +
        g_q.R`` (slack included); ``center_reach``: per center the largest radius of a group at it (-inf: none).
        """
        if node_reach is None:
            node_reach = self.node_reach(center_reach)
        g = np.arange(q_piv.shape[0], dtype=np.int64)
        node = np.zeros(g.size, dtype=np.int64)
        out_g, out_c = [], []
        while g.size:
            r = q_reach[g] + node_reach[node]
            keep = np.isfinite(r) & np.all((self.box_lo[node] <= q_piv[g] + r[:, None])
                                           & (self.box_hi[node] >= q_piv[g] - r[:, None]), axis=1)
            g, node = g[keep], node[keep]
            leaf = self.child_end[node] == self.child_start[node]
            if leaf.any():
                lg, ln = g[leaf], node[leaf]
                counts = self.end[ln] - self.start[ln]
                eg = np.repeat(lg, counts)
                pos = np.repeat(self.start[ln] - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
                ec = self.order[pos]
                r = q_reach[eg] + center_reach[ec]
                ok = np.isfinite(r) & np.all(np.abs(self.entry_piv[ec] - q_piv[eg]) <= r[:, None], axis=1)
                out_g.append(eg[ok])
                out_c.append(ec[ok])
            g, node = g[~leaf], node[~leaf]
            counts = self.child_end[node] - self.child_start[node]
            g = np.repeat(g, counts)
            first = self.child_start[node] - np.r_[0, np.cumsum(counts)[:-1]]
            node = np.repeat(first, counts) + np.arange(counts.sum())
        if not out_g:
            return np.zeros(0, dtype=np.int64), np.zeros(0, dtype=np.int64)
        cg, cc = np.concatenate(out_g), np.concatenate(out_c)
        order = np.lexsort((cc, cg))
        return cg[order], cc[order]
