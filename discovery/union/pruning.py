"""Bound-based pruning before exact scoring: BBP (PGTUS Algorithm 4, Starmie's strategy) and EBBP (Algorithm 5).

Both return the top-``keep`` candidates by exact score, identical to scoring every candidate exhaustively, while
computing the exact score (Definition 5, a Hungarian assignment) for as few candidates as they can.  Ranking is by
score descending, ties by table id ascending, in the result and in the min-heap H of the current best.  A candidate is
skipped only on proof that ``keep`` others score strictly higher, so ties can never be pruned away.

EBBP follows Algorithm 5 with two double-ended priority queues: P_lb holds lower bounds, P_ub the upper bounds of the
candidates waiting for a decision (at most ``keep``).  The printed conditions would discard candidates without proof
(an upper bound below the smallest *upper* bound in P_ub, or V_mub evicted unscored), so each rule is used in the
sound form of the paper's own observation, "a candidate is out when ``keep`` others have a lower bound above its
upper bound": P_lb keeps the ``keep`` largest lower bounds seen so far, whatever became of their candidates, so its
minimum V_mlb.lb is a floor that every upper bound must reach (a candidate whose own lower bound is in P_lb never
falls below it, as lb <= ub).  The floor is raised further by the score at the top of a full H.  Per arrival c:

1. c is discarded if its upper bound is below the floor;
2. if P_ub is full and lb(c) exceeds its smallest upper bound, V_mub leaves P_ub for c: V_mub is discarded when below
   the floor, otherwise scored exactly as BBP would;
3. otherwise, with P_ub full, waiting candidates are scored in descending upper bound while c still overlaps the
   queue (lb(c) <= the smallest waiting upper bound), until c falls below the floor; then c waits.

Waiting candidates that fall below the floor leave P_ub from its low end, and at the end the rest are scored in
descending upper bound, stopping at the first one below the floor.  The floor from lower bounds prunes candidates
before any exact matching is computed, whatever order they arrive in, and scoring the most promising candidates
first raises H's threshold early; that is where EBBP saves exact matchings over BBP.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Callable, Generic, Sequence, TypeVar

import numpy as np

from .depq import DEPQ

P = TypeVar("P")


@dataclass(frozen=True)
class Scored(Generic[P]):
    """A candidate with its exact score and what the scorer returned with it (e.g. the alignment)."""

    candidate: int
    score: float
    payload: P


class _TopHeap(Generic[P]):
    """Min-heap H of the best ``keep`` exactly scored candidates (worst on top), counting exact scorings."""

    def __init__(self, keep: int, ties: np.ndarray, scorer: Callable[[int], tuple[float, P]]) -> None:
        self.keep = keep
        self.ties = ties
        self.scorer = scorer
        self.heap: list[tuple[float, int, int, P]] = []
        self.exact = 0

    def threshold(self) -> float:
        """Score at the top of a full H; -inf while H is not full."""
        return self.heap[0][0] if len(self.heap) >= self.keep else -math.inf

    def _score(self, c: int) -> tuple[float, int, int, P]:
        self.exact += 1
        score, payload = self.scorer(c)
        return (float(score), -int(self.ties[c]), c, payload)

    def offer(self, c: int, lower: float, upper: float) -> None:
        """Process one candidate as BasePrune (Algorithm 4, lines 3-14) does."""
        heap = self.heap
        if len(heap) < self.keep:
            heapq.heappush(heap, self._score(c))
        elif lower > heap[0][0]:
            heapq.heapreplace(heap, self._score(c))
        elif upper >= heap[0][0]:
            entry = self._score(c)
            if entry[:2] > heap[0][:2]:
                heapq.heapreplace(heap, entry)

    def ranked(self) -> list[Scored[P]]:
        best = sorted(self.heap, key=lambda e: (-e[0], -e[1]))
        return [Scored(c, score, payload) for score, _, c, payload in best]


def base_prune(order: Sequence[int], lower: np.ndarray, upper: np.ndarray, ties: np.ndarray,
               scorer: Callable[[int], tuple[float, P]], keep: int) -> tuple[list[Scored[P]], int]:
    """Algorithm 4 over candidates in ``order``: (top-``keep`` ranked, number of exact scorings)."""
    top = _TopHeap(keep, ties, scorer)
    for c in order:
        top.offer(int(c), float(lower[c]), float(upper[c]))
    return top.ranked(), top.exact


def enhanced_prune(order: Sequence[int], lower: np.ndarray, upper: np.ndarray, ties: np.ndarray,
                   scorer: Callable[[int], tuple[float, P]], keep: int) -> tuple[list[Scored[P]], int]:
    """Algorithm 5 over candidates in ``order``: (top-``keep`` ranked, number of exact scorings)."""
    top = _TopHeap(keep, ties, scorer)
    p_lb, p_ub = DEPQ(), DEPQ()

    def floor() -> float:
        """Upper bounds below this cannot reach the top-``keep``: ``keep`` other candidates beat them."""
        lb_floor = p_lb.peek_min()[1] if len(p_lb) >= keep else -math.inf
        return max(lb_floor, top.threshold())

    def settle(v: int, ub_v: float) -> None:
        top.offer(v, float(lower[v]), ub_v)

    for c in order:
        c = int(c)
        lb_c, ub_c = float(lower[c]), float(upper[c])
        if len(p_lb) < keep:
            p_lb.push(c, lb_c)
        elif lb_c > p_lb.peek_min()[1]:
            p_lb.pop_min()
            p_lb.push(c, lb_c)
        bar = floor()
        if ub_c < bar:  # case 1: discarded without an exact matching
            continue
        while len(p_ub) and p_ub.peek_min()[1] < bar:  # waiting candidates the floor now rules out
            p_ub.pop_min()
        if len(p_ub) < keep:
            p_ub.push(c, ub_c)
            continue
        mub, ub_mub = p_ub.peek_min()
        if lb_c > ub_mub:  # case 2: c takes the place of the weakest upper bound
            p_ub.pop_min()
            p_ub.push(c, ub_c)
            if ub_mub >= bar:  # not provably out: settle it as BasePrune would
                settle(mub, ub_mub)
            continue
        while len(p_ub) and lb_c <= p_ub.peek_min()[1]:  # case 3: settle the most promising waiting candidates
            v, ub_v = p_ub.pop_max()
            settle(v, ub_v)
            if ub_c < floor():
                break
        if ub_c >= floor():
            p_ub.push(c, ub_c)
    while len(p_ub):  # the rest in descending upper bound, until no upper bound can reach the top any more
        v, ub_v = p_ub.pop_max()
        if ub_v < floor():
            break
        settle(v, ub_v)
    return top.ranked(), top.exact
