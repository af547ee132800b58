"""Blocking: Algorithm 1 of PEXESO over the query grid HG_Q and the lake grid HG_SV, level-synchronous.

Algorithm 1 descends both hierarchies together, pairing children of a query cell with children of a target cell.
Here the recursion is unrolled into one frontier of (query cell, target cell) pairs per level, so every level is a
handful of numpy operations over all pairs instead of a Python call per pair; the set of pairs visited and the lemma
applied to each is exactly the recursion's.

* Non-leaf pairs: Lemma 4 (cell-cell filtering) drops the pair, Lemma 6 (cell-cell matching) makes every query
  vector of the query cell a matching pair with every leaf below the target cell; other pairs descend.
* Leaf pairs: per query vector, Lemma 5 (vector-cell matching) gives a matching pair, Lemma 3 (vector-cell
  filtering) drops it, otherwise it is a candidate pair.  Lemmas 4 and 6 are tried on the leaf cell pair first: they
  imply Lemmas 3 and 5 for every vector of the query cell, so this only saves work.
* Quick browsing: a query vector paired with the leaf cell of its own grid position is flagged ``same_cell``;
  verification takes those candidates first, as quick browsing does, because they are the likeliest matches.

All bounds are widened by ``slack`` (the rounding error of the mapped values), so no lemma ever filters a true match
or matches a false one because of floating point.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .grid import CellHierarchy


def expand_ranges(starts: np.ndarray, ends: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """All positions of the ranges ``[starts[i], ends[i])``: (owner index i, position) per position."""
    starts = np.asarray(starts, dtype=np.int64)
    lengths = np.asarray(ends, dtype=np.int64) - starts
    total = int(lengths.sum())
    owner = np.repeat(np.arange(starts.size, dtype=np.int64), lengths)
    if total == 0:
        return owner, np.zeros(0, dtype=np.int64)
    offsets = np.cumsum(lengths) - lengths
    pos = np.arange(total, dtype=np.int64) - np.repeat(offsets - starts, lengths)
    return owner, pos


@dataclass
class BlockingResult:
    """Matching and candidate pairs in the form <query vector, target cells>.

    ``match_q`` / ``match_lo`` / ``match_hi``: query vector (position in the sorted query) and the range of sorted lake
    vectors of the matched target cell (any level).  ``cand_q`` / ``cand_leaf``: query vector and target leaf index.
    """

    match_q: np.ndarray
    match_lo: np.ndarray
    match_hi: np.ndarray
    cand_q: np.ndarray
    cand_leaf: np.ndarray
    cand_same: np.ndarray
    stats: dict = field(default_factory=dict)


def _filtered(t_lo, t_hi, q_lo, q_hi, tau_hi):
    """Lemmas 3/4: on some pivot axis the boxes are more than tau apart."""
    gap = np.maximum(t_lo - q_hi, q_lo - t_hi)
    return (gap > tau_hi).any(axis=1)


def _matched(t_hi, q_hi, tau_lo):
    """Lemmas 5/6: for some pivot p, every target x and query q have d(x, p) + d(q, p) <= tau."""
    return ((t_hi + q_hi) <= tau_lo).any(axis=1)


def block(query: CellHierarchy, q_mapped: np.ndarray, target: CellHierarchy, tau: float, slack: float,
          max_pairs: int = 4_000_000) -> BlockingResult:
    """Run Algorithm 1 from the two roots; ``q_mapped`` are the query's mapped vectors in sorted order."""
    m = query.levels
    tau_hi, tau_lo = tau + slack, tau - slack
    stats = {"cell_pairs": 0, "lemma4_filtered": 0, "lemma6_matched": 0, "lemma3_filtered": 0, "lemma5_matched": 0}
    mq, mlo, mhi = [], [], []
    qi = np.zeros(1, dtype=np.int64)
    ti = np.zeros(1, dtype=np.int64)
    leaf_q = leaf_t = np.zeros(0, dtype=np.int64)
    for level in range(1, m + 1):
        up = level - 1
        # children of the query cell x children of the target cell, for every frontier pair (lines 1-2)
        o1, qc = expand_ranges(query.child[up][qi], query.child[up][qi + 1])
        t_parent = ti[o1]
        o2, tc = expand_ranges(target.child[up][t_parent], target.child[up][t_parent + 1])
        qc = qc[o2]
        stats["cell_pairs"] += int(qc.size)
        if qc.size > max_pairs:
            raise MemoryError(f"blocking frontier of {qc.size} cell pairs at level {level} exceeds {max_pairs}; "
                              "use more levels or partition the index")
        t_lo, t_hi = target.lo[level][tc], target.hi[level][tc]
        q_lo, q_hi = query.lo[level][qc], query.hi[level][qc]
        drop = _filtered(t_lo, t_hi, q_lo, q_hi, tau_hi)
        stats["lemma4_filtered"] += int(drop.sum())
        keep = ~drop
        match = keep & _matched(t_hi, q_hi, tau_lo)
        stats["lemma6_matched"] += int(match.sum())
        if match.any():
            mqc, mtc = qc[match], tc[match]
            owner, qpos = expand_ranges(query.start[level][mqc], query.start[level][mqc + 1])
            mq.append(qpos)
            mlo.append(target.start[level][mtc][owner])
            mhi.append(target.start[level][mtc + 1][owner])
        rest = keep & ~match
        qi, ti = qc[rest], tc[rest]
        if level == m:
            leaf_q, leaf_t = qi, ti
    # leaf pairs: per query vector (lines 3-11)
    owner, qpos = expand_ranges(query.start[m][leaf_q], query.start[m][leaf_q + 1])
    tl = leaf_t[owner]
    qv = q_mapped[qpos]
    t_lo, t_hi = target.lo[m][tl], target.hi[m][tl]
    vmatch = _matched(t_hi, qv, tau_lo)
    stats["lemma5_matched"] = int(vmatch.sum())
    if vmatch.any():
        mq.append(qpos[vmatch])
        mlo.append(target.start[m][tl[vmatch]])
        mhi.append(target.start[m][tl[vmatch] + 1])
    vdrop = ~vmatch & _filtered(t_lo, t_hi, qv, qv, tau_hi)
    stats["lemma3_filtered"] = int(vdrop.sum())
    cand = ~vmatch & ~vdrop
    cand_q, cand_leaf = qpos[cand], tl[cand]
    cand_same = query.ids[m][leaf_q[owner[cand]]] == target.ids[m][cand_leaf]
    stats["candidate_pairs"] = int(cand_q.size)
    empty = np.zeros(0, dtype=np.int64)
    return BlockingResult(
        match_q=np.concatenate(mq) if mq else empty,
        match_lo=np.concatenate(mlo) if mlo else empty,
        match_hi=np.concatenate(mhi) if mhi else empty,
        cand_q=cand_q, cand_leaf=cand_leaf, cand_same=cand_same, stats=stats,
    )
