"""Blocking: Algorithm 1 of PEXESO, the joint descent of the query grid HG_Q and the lake grid HG_SV.

Algorithm 1 pairs the children of a query cell with the children of a target cell, starting from the two roots.
The recursion runs compiled, depth first with an explicit stack (the pairs visited and the lemma applied to each
are exactly the recursion's; memory is bounded by the stack, never by a whole level's frontier).

* Non-leaf pairs: Lemma 4 (cell-cell filtering) drops the pair, Lemma 6 (cell-cell matching) makes every query
  vector of the query cell a matching pair with all lake vectors below the target cell; other pairs descend.
* Leaf pairs: Lemmas 4 and 6 are tried on the cell pair first (they imply Lemmas 3 and 5 for every vector of the
  query cell, so this only saves work); then per query vector, Lemma 5 (vector-cell matching) gives a matching
  pair, Lemma 3 (vector-cell filtering) drops it, otherwise it is a candidate pair.
* Quick browsing: a query vector paired with the leaf cell of its own grid position is flagged ``same_cell``;
  verification takes those candidates first, as quick browsing does, because they are the likeliest matches.

Cell boxes are the bounding boxes of the mapped vectors a cell holds (see :mod:`.grid`), and every bound is widened
by ``slack``, the rounding error of the mapped values.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
from numba import njit

from .grid import CellHierarchy
from .lemmas import boxes_apart, boxes_within


@dataclass
class BlockingResult:
    """Matching and candidate pairs in the form <query vector, target cells>.

    ``match_q`` / ``match_lo`` / ``match_hi``: query vector (position in the sorted query) and the range of sorted lake
    vectors of the matched target cell (any level).  ``cand_q`` / ``cand_leaf`` / ``cand_same``: query vector, target
    leaf index, and whether that leaf is the query vector's own grid cell.
    """

    match_q: np.ndarray
    match_lo: np.ndarray
    match_hi: np.ndarray
    cand_q: np.ndarray
    cand_leaf: np.ndarray
    cand_same: np.ndarray
    stats: dict = field(default_factory=dict)


@njit(cache=True)
def _descend(q_item_lo, q_item_hi, q_child_lo, q_child_hi, q_box_lo, q_box_hi, q_leaf_off, q_leaf_ids, q_mapped,
             t_item_lo, t_item_hi, t_child_lo, t_child_hi, t_box_lo, t_box_hi, t_leaf_off, t_leaf_ids,
             levels, tau_hi, tau_lo, stack, mq, mlo, mhi, cq, cleaf, csame):
    """The descent, writing into preallocated buffers; returns the entries it needed (more than the room when a
    buffer overflowed, in which case the caller runs it again with that room).

    No buffer is ever reassigned inside the loop: in compiled code an array variable rebound in a loop costs a
    reference-count update on every iteration, which would dominate the cheap box tests.
    """
    counts = np.zeros(7, dtype=np.int64)  # cell pairs, Lemma 4, Lemma 6, Lemma 3, Lemma 5, matches, candidates
    m_room, c_room = mq.shape[0], cq.shape[0]
    stack[0, 0], stack[0, 1], stack[0, 2] = 0, 0, 0
    depth = 1
    while depth:
        depth -= 1
        qp, tp, level = stack[depth, 0], stack[depth, 1], stack[depth, 2] + 1
        for qc in range(q_child_lo[qp], q_child_hi[qp]):
            for tc in range(t_child_lo[tp], t_child_hi[tp]):
                counts[0] += 1
                if boxes_apart(t_box_lo, t_box_hi, tc, q_box_lo, q_box_hi, qc, tau_hi):
                    counts[1] += 1
                    continue
                if boxes_within(t_box_hi, tc, q_box_hi, qc, tau_lo):
                    counts[2] += 1
                    for q in range(q_item_lo[qc], q_item_hi[qc]):
                        n = counts[5]
                        if n < m_room:
                            mq[n], mlo[n], mhi[n] = q, t_item_lo[tc], t_item_hi[tc]
                        counts[5] = n + 1
                    continue
                if level < levels:
                    stack[depth, 0], stack[depth, 1], stack[depth, 2] = qc, tc, level
                    depth += 1
                    continue
                same = q_leaf_ids[qc - q_leaf_off] == t_leaf_ids[tc - t_leaf_off]
                for q in range(q_item_lo[qc], q_item_hi[qc]):
                    if boxes_within(t_box_hi, tc, q_mapped, q, tau_lo):
                        counts[4] += 1
                        n = counts[5]
                        if n < m_room:
                            mq[n], mlo[n], mhi[n] = q, t_item_lo[tc], t_item_hi[tc]
                        counts[5] = n + 1
                    elif boxes_apart(t_box_lo, t_box_hi, tc, q_mapped, q_mapped, q, tau_hi):
                        counts[3] += 1
                    else:
                        n = counts[6]
                        if n < c_room:
                            cq[n], cleaf[n], csame[n] = q, tc - t_leaf_off, same
                        counts[6] = n + 1
    return counts


#: Smallest output room blocking reserves (entries), whatever the learnt rate.
MIN_ROOM = 1024


def _max_children(h: CellHierarchy) -> int:
    return int((h.child_hi - h.child_lo).max())


def block(query: CellHierarchy, q_mapped: np.ndarray, target: CellHierarchy, tau: float, slack: float
          ) -> BlockingResult:
    """Run Algorithm 1 from the two roots; ``q_mapped`` are the query's mapped vectors in sorted order.

    The depth-first stack never holds more than ``levels`` sibling products, which bounds its size exactly.  The
    output buffers start at a size learnt from earlier queries on the same lake grid (``target.pairs_per_query``)
    and are resized to the exact need on overflow.
    """
    if query.levels != target.levels:
        raise ValueError("HG_Q and HG_SV must have the same number of levels")
    m = query.levels
    nq = int(q_mapped.shape[0])
    stack = np.empty((m * _max_children(query) * _max_children(target) + 1, 3), dtype=np.int64)
    q_mapped = np.ascontiguousarray(q_mapped, dtype=np.float64)
    m_room = c_room = max(MIN_ROOM, int(nq * target.pairs_per_query))
    while True:
        mq, mlo, mhi = (np.empty(m_room, dtype=np.int64) for _ in range(3))
        cq, cleaf, csame = np.empty(c_room, dtype=np.int64), np.empty(c_room, dtype=np.int64), np.empty(c_room, bool)
        counts = _descend(
            query.item_lo, query.item_hi, query.child_lo, query.child_hi, query.box_lo, query.box_hi,
            query.offset[m], query.ids[m], q_mapped,
            target.item_lo, target.item_hi, target.child_lo, target.child_hi, target.box_lo, target.box_hi,
            target.offset[m], target.ids[m], m, tau + slack, tau - slack, stack, mq, mlo, mhi, cq, cleaf, csame)
        n_m, n_c = int(counts[5]), int(counts[6])
        if n_m <= m_room and n_c <= c_room:
            break
        target.pairs_per_query = max(target.pairs_per_query, 1.25 * max(n_m, n_c) / nq)
        m_room, c_room = max(m_room, n_m), max(c_room, n_c)
    stats = {"cell_pairs": int(counts[0]), "lemma4_filtered": int(counts[1]), "lemma6_matched": int(counts[2]),
             "lemma3_filtered": int(counts[3]), "lemma5_matched": int(counts[4]), "candidate_pairs": n_c}
    return BlockingResult(mq[:n_m], mlo[:n_m], mhi[:n_m], cq[:n_c], cleaf[:n_c], csame[:n_c], stats)
