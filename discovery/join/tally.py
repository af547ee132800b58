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
"""
from __future__ import annotations

import numpy as np


def required_matches(T: float, n_query: int) -> int:
    """Smallest count c with c / |Q| >= T (at least 1: a column matching nothing is never joinable)."""
    if not 0.0 <= T <= 1.0:
        raise ValueError(f"T must be a fraction of the query column's distinct values in [0, 1], got {T}")
    return max(1, int(np.ceil(round(T * n_query, 9))))


class ColumnTally:
    def __init__(self, matched: np.ndarray, upper: np.ndarray, need: int, top_k: int | None,
                 stop_on_accept: bool, can_reject: bool = True):
        self.matched = np.asarray(matched, dtype=np.int64).copy()
        self.upper = np.asarray(upper, dtype=np.int64).copy()
        self.need = int(need)
        self.top_k = top_k
        self.stop_on_accept = stop_on_accept and top_k is None
        self.can_reject = can_reject
        self.rejected = np.zeros(self.matched.size, dtype=bool)
        self.accepted = np.zeros(self.matched.size, dtype=bool)
        self.early_accepts = 0
        self.early_rejects = 0
        self.rejected_unverified = 0
        self._update(first=True)

    def threshold(self) -> int:
        if self.top_k is None or self.matched.size < self.top_k:
            return self.need
        kth = int(np.partition(self.matched, self.matched.size - self.top_k)[self.matched.size - self.top_k])
        return max(self.need, kth)

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
        to_accept = np.where(self.accepted | (self.top_k is not None), to_reject, self.need - self.matched)
        return np.maximum(np.minimum(to_accept, to_reject), 1 << min(round_no, 40))
