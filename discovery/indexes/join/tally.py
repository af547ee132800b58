"""Per-column match and mismatch maps with the early termination rules, for the brute-force baseline.

The compiled PEXESO verification (:mod:`.verification`) applies the same three rules column by column.

``matched[c]`` counts query vectors known to match column c (the match map); ``upper[c]`` is how many could still
match, i.e. |Q| minus the query vectors known to match nothing in c (the mismatch map turned into a bound).

* Early accept: ``matched >= need`` means jn >= T (PEXESO Alg. 2 line 19).
* Early reject (Lemma 7): ``upper < need`` means the unmatched subset U has |Q| - |U| < T.
* Top-k (PEXESO 2 §II-B): a k-size buffer of the best columns seen so far sets the threshold; every count is a lower
  bound of its column's joinability, so the k-th largest ``matched`` is a lower bound of the final k-th score and
  can replace ``need`` in Lemma 7 while it rises.  Rejection is strict (``upper < threshold``), so ties with the k-th
  column are always resolved exactly and the final order can break them by column id.
* Top-k with a slack (:class:`TopK`): the answer also holds every column within ``slack`` matches of the k-th, at
  most ``pool`` columns in all.  The threshold is then the larger of (k-th lower bound - slack) and the pool-th lower
  bound: a column is rejected only when its upper bound is below one of them, so below the final k-th count minus
  the slack or below the final pool-th count, and no column of the widened answer is ever rejected.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class TopK:
    """What a top-k search keeps: the ``k`` most joinable columns and every column whose count lies within ``slack``
    of the k-th (the columns the context order lets compete for the last places, :mod:`.service`), at most ``pool``
    (default ``k``) columns in all, by (count descending, column id).  ``slack`` 0 and ``pool`` k: the plain top-k."""

    k: int
    slack: int = 0
    pool: int | None = None

    def __post_init__(self):
        if self.k < 1 or self.slack < 0:
            raise ValueError(f"top-k needs k >= 1 and slack >= 0, got k {self.k}, slack {self.slack}")
        if self.pool is None:
            object.__setattr__(self, "pool", self.k)
        if self.held < self.k:
            raise ValueError(f"the pool of a top-k search holds at least k columns, got {self.pool} < {self.k}")

    @property
    def held(self) -> int:
        """The pool's size (``k`` when none was given)."""
        return self.k if self.pool is None else self.pool

    def floor(self, ranked) -> int:
        """The least count a column can have and be kept, from counts ``ranked`` in descending order, each a lower
        bound of its column's final count (0 while too few are known)."""
        thr = 0
        if len(ranked) >= self.k:
            thr = int(ranked[self.k - 1]) - self.slack
        if len(ranked) >= self.held:
            thr = max(thr, int(ranked[self.held - 1]))
        return thr

    def cut(self, ranked) -> int:
        """How many of the exact counts ``ranked`` (descending, ties by column id) the answer keeps."""
        n = min(len(ranked), self.held)
        if n >= self.k:
            n = int(np.searchsorted(-np.asarray(ranked[:n]), -(int(ranked[self.k - 1]) - self.slack), side="right"))
        return n


def required_matches(T: float, n_query: int) -> int:
    """Smallest count c with c / |Q| >= T (at least 1: a column matching nothing is never joinable)."""
    if not 0.0 <= T <= 1.0:
        raise ValueError(f"T must be a fraction of the query column's distinct values in [0, 1], got {T}")
    return max(1, int(np.ceil(round(T * n_query, 9))))


class ColumnTally:
    def __init__(self, matched: np.ndarray, upper: np.ndarray, need: int, top: TopK | None,
                 stop_on_accept: bool, can_reject: bool = True):
        self.matched = np.asarray(matched, dtype=np.int64).copy()
        self.upper = np.asarray(upper, dtype=np.int64).copy()
        self.need = int(need)
        self.top = top
        self.stop_on_accept = stop_on_accept and top is None
        self.can_reject = can_reject
        self.rejected = np.zeros(self.matched.size, dtype=bool)
        self.accepted = np.zeros(self.matched.size, dtype=bool)
        self.early_accepts = 0
        self.early_rejects = 0
        self.rejected_unverified = 0
        self._update(first=True)

    def threshold(self) -> int:
        if self.top is None:
            return self.need
        best = np.sort(self.matched)[::-1][:self.top.pool]
        return max(self.need, self.top.floor(best))

    def _update(self, first: bool = False):
        if self.can_reject:
            newly = ~self.rejected & (self.upper < self.threshold())
            if first:
                self.rejected_unverified += int((newly & (self.upper > 0)).sum())
            else:
                self.early_rejects += int((newly & (self.matched < self.upper)).sum())
            self.rejected |= newly
        newly_acc = ~self.accepted & ~self.rejected & (self.matched >= self.need)
        self.early_accepts += int((newly_acc & (self.matched < self.upper)).sum())
        self.accepted |= newly_acc

    def add(self, columns_matched: np.ndarray, columns_unmatched: np.ndarray):
        """Record newly matched and newly mismatched query vectors (column index per event)."""
        n = self.matched.size
        if columns_matched.size:
            self.matched += np.bincount(columns_matched, minlength=n)
        if columns_unmatched.size:
            self.upper -= np.bincount(columns_unmatched, minlength=n)
        self._update()

    @property
    def stopped(self) -> np.ndarray:
        """Columns accepted and not to be counted further (threshold search without exact joinability)."""
        return self.accepted if self.stop_on_accept else np.zeros(self.matched.size, dtype=bool)

    def live(self) -> np.ndarray:
        return ~(self.rejected | self.stopped | (self.matched >= self.upper))

    def budget(self, round_no: int) -> np.ndarray:
        """Per column, how many more query vectors to resolve this round.

        The least number that could decide the column (reach ``need`` or trigger Lemma 7), but at least
        ``2**round_no``: decisions come as early as the counts allow, and the doubling floor bounds the number of
        rounds by log2 |Q| while overshooting the decision point by at most a factor of two.
        """
        thr = self.threshold()
        to_reject = self.upper - thr + 1
        to_accept = np.where(self.accepted | (self.top is not None), to_reject, self.need - self.matched)
        return np.maximum(np.minimum(to_accept, to_reject), 1 << min(round_no, 40))
