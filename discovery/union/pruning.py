"""Bound-based pruning before exact scoring: BBP (PGTUS Algorithm 4, Starmie's strategy) and EBBP (Algorithm 5).

Both return the top-``keep`` candidates by exact score, identical to scoring every candidate exhaustively, while
computing the exact score (Definition 5, a Hungarian assignment) for as few candidates as they can.  Ranking is by
score descending, ties by table id ascending, in the result and in the min-heap H of the current best.  A candidate is
skipped only on proof that ``keep`` others score strictly higher, so ties can never be pruned away.

EBBP follows Algorithm 5: candidates wait in two double-ended priority queues, P_lb keyed by lower bound and P_ub by
upper bound (at most ``keep`` of them), and a three-way decision settles each arrival.  Where the printed conditions
would discard a candidate without proof, the sound form of the same rule is used (the paper's own observation: a
candidate is out when ``keep`` others have a lower bound above its upper bound):

1. the arrival is discarded if its upper bound is below the smallest lower bound in a full P_lb (``keep`` waiting
   candidates all beat it), or below the score at the top of a full H;
2. if its lower bound exceeds the smallest upper bound in P_ub, the weakest-upper-bound candidate V_mub leaves the
   queues: discarded when the arrival and the ``keep - 1`` remaining candidates all have lower bounds above its upper
   bound, otherwise scored exactly as BBP would; the arrival takes its place;
3. otherwise waiting candidates are scored in descending upper bound, as BBP would, while the arrival still overlaps
   the queues' extremes, then the arrival is queued.

Waiting candidates whose upper bound falls below the top of a full H are dropped from the low end of P_ub, and at the
end the rest are scored in descending upper bound, stopping at the first one that cannot reach H.  Scoring the most
promising candidates first raises H's threshold early, which is where EBBP saves exact matchings over BBP.
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

    def offer(v: int) -> None:
        top.offer(v, float(lower[v]), float(upper[v]))

    def enqueue(v: int) -> None:
        p_lb.push(v, lower[v])
        p_ub.push(v, upper[v])

    for c in order:
        c = int(c)
        lb_c, ub_c = float(lower[c]), float(upper[c])
        theta = top.threshold()
        while len(p_ub) and p_ub.peek_min()[1] < theta:  # waiting candidates H already rules out
            v, _ = p_ub.pop_min()
            p_lb.remove(v)
        if ub_c < theta:
            continue
        if len(p_lb) < keep:
            enqueue(c)
            continue
        if ub_c < p_lb.peek_min()[1]:  # case 1: keep waiting candidates all beat c
            continue
        mub, ub_mub = p_ub.peek_min()
        if lb_c > ub_mub:  # case 2: c replaces the weakest upper bound
            p_ub.pop_min()
            p_lb.remove(mub)
            if len(p_lb) and p_lb.peek_min()[1] <= ub_mub:
                offer(mub)
            enqueue(c)
            continue
        discarded = False  # case 3: resolve by scoring the most promising waiting candidates
        while len(p_ub) and ub_c >= p_lb.peek_min()[1] and lb_c <= p_ub.peek_min()[1]:
            v, _ = p_ub.pop_max()
            p_lb.remove(v)
            offer(v)
            if ub_c < top.threshold():
                discarded = True
                break
        if not discarded:
            enqueue(c)
    while len(p_ub):
        v, ub_v = p_ub.pop_max()
        if ub_v < top.threshold():
            break
        offer(v)
    return top.ranked(), top.exact
