"""Bound-based pruning before exact scoring: BBP (PGTUS Algorithm 4, Starmie's strategy) and EBBP (Algorithm 5).

Both return the top-``keep`` candidates by exact score, identical to scoring every candidate exhaustively, while
computing the exact score (Definition 5, a Hungarian assignment) for as few candidates as they can.  Ranking is by
score descending, ties by table id ascending, in the result and in the min-heap H of the current best.  A candidate is
skipped only on proof that ``keep`` others score strictly higher, so ties can never be pruned away.

Both are pruners fed one candidate at a time (``offer``), so the search can stream candidates best first and stop
as soon as the next upper bound is below ``floor()``: no candidate below the floor can enter the top-``keep``.

EBBP keeps Algorithm 5's two double-ended priority queues: P_lb holds the ``keep`` largest lower bounds seen so far,
whatever became of their candidates, so its minimum is a floor every upper bound must reach (``keep`` candidates
score at least that much), raised further by the score at the top of a full H; P_ub holds the candidates waiting
for a decision.  An arrival below the floor is discarded without an exact matching (Algorithm 5's case 1, in the
sound form of the paper's observation "a candidate is out when ``keep`` others have a lower bound above its upper
bound"); every other arrival waits in P_ub, whose low end is dropped as the floor rises.  Waiting candidates are
settled from P_ub's high end, in descending upper bound (Algorithm 5, lines 16 and 26), once no candidate still to
come can have a larger upper bound (``advance``, and at the end ``finish``), until the highest waiting upper bound is
below the floor.

Unlike the printed Algorithm 5, P_ub is not capped at ``keep`` (the cases 2 and 3 that settle candidates early to
keep it small): settling before the stream ends scores candidates on a floor lower than the final one, and on
random streams the capped form computes more exact matchings than BBP, contradicting the paper's claim.  Uncapped,
the claim holds on every stream: let theta be the keep-th best score of all candidates.  EBBP settles a candidate c
only when ub(c) is at least the floor; if ub(c) < theta, every top-``keep`` candidate has a larger upper bound
(score >= theta), so it was settled before c and H's threshold is already theta > ub(c): c is not settled.  So EBBP
scores only candidates with ub >= theta, and BBP scores every one of them (its threshold never exceeds theta), plus
the first ``keep`` arrivals whatever their bounds.  The waiting candidates cost memory O(candidates),
which the caller holds in its bound arrays anyway.
"""
from __future__ import annotations

import heapq
import math
from dataclasses import dataclass
from typing import Generic, TypeVar
from collections.abc import Callable, Sequence

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


class BasePruner(Generic[P]):
    """Algorithm 4 as a pruner: every arrival is decided at once against H."""

    def __init__(self, keep: int, ties: np.ndarray, scorer: Callable[[int], tuple[float, P]]) -> None:
        self.top = _TopHeap(keep, ties, scorer)

    @property
    def exact(self) -> int:
        """Exact scorings so far."""
        return self.top.exact

    def floor(self) -> float:
        """Upper bounds below this cannot reach the top-``keep``."""
        return self.top.threshold()

    def offer(self, c: int, lower: float, upper: float) -> None:
        self.top.offer(c, lower, upper)

    def advance(self, rest: float) -> None:
        """No candidate still to come has an upper bound above ``rest`` (BBP has nothing waiting)."""

    def finish(self) -> list[Scored[P]]:
        return self.top.ranked()


class EnhancedPruner(Generic[P]):
    """Algorithm 5 as a pruner: arrivals wait in P_ub and are settled best first (see the module docstring)."""

    def __init__(self, keep: int, ties: np.ndarray, scorer: Callable[[int], tuple[float, P]]) -> None:
        self.top = _TopHeap(keep, ties, scorer)
        self.keep = keep
        self.p_lb, self.p_ub = DEPQ(), DEPQ()
        self.lower: dict[int, float] = {}

    @property
    def exact(self) -> int:
        """Exact scorings so far."""
        return self.top.exact

    def floor(self) -> float:
        """Upper bounds below this cannot reach the top-``keep``: ``keep`` other candidates beat them."""
        lb_floor = self.p_lb.peek_min()[1] if len(self.p_lb) >= self.keep else -math.inf
        return max(lb_floor, self.top.threshold())

    def _drop_below_floor(self) -> None:
        bar = self.floor()
        while len(self.p_ub) and self.p_ub.peek_min()[1] < bar:
            del self.lower[self.p_ub.pop_min()[0]]

    def offer(self, c: int, lower: float, upper: float) -> None:
        if len(self.p_lb) < self.keep:
            self.p_lb.push(c, lower)
        elif lower > self.p_lb.peek_min()[1]:
            self.p_lb.pop_min()
            self.p_lb.push(c, lower)
        if upper < self.floor():  # case 1: discarded without an exact matching
            return
        self.lower[c] = lower
        self.p_ub.push(c, upper)
        self._drop_below_floor()

    def advance(self, rest: float) -> None:
        """Settle, best first, the waiting candidates whose upper bound no candidate still to come can exceed."""
        self._drop_below_floor()
        while len(self.p_ub) and self.p_ub.peek_max()[1] >= rest:
            v, ub_v = self.p_ub.pop_max()
            self.top.offer(v, self.lower.pop(v), ub_v)
            self._drop_below_floor()

    def finish(self) -> list[Scored[P]]:
        self.advance(-math.inf)
        return self.top.ranked()


Pruner = BasePruner | EnhancedPruner


def _run(pruner: Pruner, order: Sequence[int], lower: np.ndarray, upper: np.ndarray) -> tuple[list[Scored], int]:
    for c in order:
        pruner.offer(int(c), float(lower[c]), float(upper[c]))
    return pruner.finish(), pruner.exact


def base_prune(order: Sequence[int], lower: np.ndarray, upper: np.ndarray, ties: np.ndarray,
               scorer: Callable[[int], tuple[float, P]], keep: int) -> tuple[list[Scored[P]], int]:
    """Algorithm 4 over candidates in ``order``: (top-``keep`` ranked, number of exact scorings)."""
    return _run(BasePruner(keep, ties, scorer), order, lower, upper)


def enhanced_prune(order: Sequence[int], lower: np.ndarray, upper: np.ndarray, ties: np.ndarray,
                   scorer: Callable[[int], tuple[float, P]], keep: int) -> tuple[list[Scored[P]], int]:
    """Algorithm 5 over candidates in ``order``: (top-``keep`` ranked, number of exact scorings)."""
    return _run(EnhancedPruner(keep, ties, scorer), order, lower, upper)


def stream_prune(pruner: Pruner, keys: np.ndarray,
                 materialise: Callable[[np.ndarray], Sequence[tuple[int, float, float]]], first_batch: int,
                 cost: np.ndarray | None = None, budget: float = math.inf) -> tuple[int, bool]:
    """Feed candidates 0..len(keys)-1, whose upper bounds are at most ``keys`` (any order), to ``pruner`` best key
    first (ties by candidate), in batches of doubling size; ``materialise(candidates)`` computes the (candidate,
    lower, upper) of the given candidates in the order to offer them.

    A candidate whose key is below the pruner's floor is provably out, and so is every later one: a batch never
    reaches past the floor, and the stream stops there.  Only the first batch is picked from all candidates; it sets
    the floor, and only the candidates reaching it are then sorted (on a lake where the cones narrow, a small share).
    The stream is abandoned (before the first batch, and once after it, on the floor its lower bounds set, before
    the pruner scores anything) when the candidates it would have to materialise ``cost`` more than ``budget`` in all
    (the caller then has to decide otherwise).  Returns how many candidates were materialised and whether the stream
    was settled.  The caller finishes the pruner.
    """
    keys = np.asarray(keys, dtype=np.float64)
    if len(keys) == 0:
        return 0, True
    size = max(1, first_batch)
    head = np.argpartition(-keys, size - 1)[:size] if size < len(keys) else np.arange(len(keys))
    head = head[np.lexsort((head, -keys[head]))]
    cost = np.ones(len(keys)) if cost is None else np.asarray(cost, dtype=np.float64)
    if cost[head].sum() > budget:
        return 0, False
    batch = materialise(head)
    rest = np.ones(len(keys), dtype=bool)
    rest[head] = False
    rest = np.flatnonzero(rest)
    # decided on the batch's keep-th lower bound, before the pruner computes any exact matching
    lowers = sorted((lower for _, lower, _ in batch), reverse=True)
    floor = lowers[pruner.top.keep - 1] if len(lowers) >= pruner.top.keep else -math.inf
    if cost[head].sum() + cost[rest[keys[rest] >= floor]].sum() > budget:
        return len(head), False
    for c, lower, upper in batch:
        pruner.offer(c, lower, upper)
    pruner.advance(float(keys[rest].max()) if len(rest) else -math.inf)
    rest = rest[keys[rest] >= pruner.floor()]
    rest = rest[np.argsort(-keys[rest], kind="stable")]
    ranked = -keys[rest]  # ascending
    start, size = 0, 2 * size
    while True:
        reach = int(np.searchsorted(ranked, -pruner.floor(), side="right"))  # candidates with key >= floor
        if start >= reach:
            return len(head) + start, True
        stop = min(reach, start + size)
        for c, lower, upper in materialise(rest[start:stop]):
            pruner.offer(c, lower, upper)
        start, size = stop, 2 * size
        pruner.advance(-float(ranked[start]) if start < len(ranked) else -math.inf)
