"""Which measures and thresholds join one pair of columns, chosen without labels for a precision target.

Auto-FuzzyJoin (Li et al., SIGMOD 2021) reads the precision of a fuzzy join off the reference side alone: the lake
column's distinct values name distinct entities, so when a measure at threshold ``theta`` puts two *lake* values
within ``2 theta`` of each other, it cannot tell entities apart at that scale, and a query value it joins to one of
them is right with probability about one over the values in that ball.  A query value ``r`` joined to its nearest
lake value ``l`` under configuration ``(measure, theta)`` counts

    p(r) = 1 / (1 + max(|{l' != l : d(l, l') <= 2 theta}|, |{l' != l : d(r, l') <= theta}|))

as true positives.  The first set is AutoFJ's; the second is ours: for a measure that is no metric (``contain``
puts ``Smith`` at 0 from both ``John Smith`` and ``Jane Smith`` while those two are far apart) the triangle
inequality that makes the first set hold the second fails, so a query value with several lake values within
``theta`` counts them directly.  Both sets are read from the blocked neighbours (:mod:`.blocking`), so a count is at
most the neighbours kept.

AutoFJ's greedy union then chooses configurations: starting from nothing, it adds the configuration with the
largest estimated TP / FP, resolving a query value joined by several to the join of highest ``p`` (the others
count as false positives), and keeps the last union whose estimated precision is above the target; it stops once
the estimate falls ``patience`` below it.  Candidate thresholds are ``THRESHOLDS`` points spread evenly over each
measure's range of nearest distances, as AutoFJ scales its grid.  Equal values are joined before this step, with
``p`` 1, and count in the estimate, as they do in AutoFJ's, where every configuration joins them.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

THRESHOLDS = 50
PATIENCE = 0.05


@dataclass(frozen=True)
class Selection:
    """Per query value: the chosen lake value (position, -1 none), its ``p`` and the configuration that joined it
    (index into ``configs``, -1 none); ``configs`` (measure index, threshold) of the union chosen, and the estimated
    precision of every join it makes with the equal values (None: nothing joined)."""

    lake: np.ndarray
    score: np.ndarray
    config: np.ndarray
    configs: list[tuple[int, float]]
    precision: float | None


def _counts(sorted_d: np.ndarray, limit: float) -> np.ndarray:
    """How many entries of each row of ``sorted_d`` are at most ``limit``."""
    return (sorted_d <= limit).sum(axis=1)


def _p(f: int, theta: float, joined: np.ndarray, lid_rows, lr_sorted, ll_sorted) -> np.ndarray:
    """``p`` of the query values ``joined`` under configuration ``(f, theta)`` (module docstring)."""
    ll = _counts(ll_sorted[f][lid_rows[joined, f]], 2.0 * theta)
    lr = np.maximum(_counts(lr_sorted[f][joined], theta) - 1, 0)
    return 1.0 / (1.0 + np.maximum(ll, lr))


def _configs(dist, lid_rows, lr_sorted, ll_sorted, thresholds: int) -> list[tuple[int, float, np.ndarray, np.ndarray]]:
    """Every candidate configuration: (measure, threshold, query values it joins, their p)."""
    out = []
    for f in range(dist.shape[1]):
        d = dist[:, f]
        finite = d[np.isfinite(d)]
        if not finite.size:
            continue
        for theta in np.unique(np.linspace(finite.min(), finite.max(), thresholds)):
            joined = np.flatnonzero(d <= theta)
            if not joined.size:
                continue
            out.append((f, float(theta), joined, _p(f, float(theta), joined, lid_rows, lr_sorted, ll_sorted)))
    return out


def apply(configs: list[tuple[int, float]], dist: np.ndarray, lid: np.ndarray, lid_rows: np.ndarray,
          lr_sorted: list[np.ndarray], ll_sorted: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """``(lake, p, config)`` per query value under the chosen ``configs``, taken in their order, each value joined
    by the one that gives it the highest ``p`` (the first of equals), exactly as :func:`select` resolves them.

    A value's answer depends on its own statistics and the configurations alone, so the configurations can be
    chosen on a sample of the values and then applied to all of them, block by block (:mod:`.matcher`)."""
    n = dist.shape[0]
    best_p, lake, config = np.zeros(n), np.full(n, -1), np.full(n, -1)
    for c, (f, theta) in enumerate(configs):
        joined = np.flatnonzero(dist[:, f] <= theta)
        p = _p(f, theta, joined, lid_rows, lr_sorted, ll_sorted)
        better = p > best_p[joined]
        rows = joined[better]
        best_p[rows], lake[rows], config[rows] = p[better], lid[rows, f], c
    return lake, best_p, config


def select(dist: np.ndarray, lid: np.ndarray, lid_rows: np.ndarray, lr_sorted: list[np.ndarray],
           ll_sorted: list[np.ndarray], target: float, equal: float, thresholds: int = THRESHOLDS,
           patience: float = PATIENCE) -> Selection:
    """The greedy union of configurations (module docstring).

    ``dist`` / ``lid``: per query value (rows) and measure (columns), the nearest consistent lake value's distance
    (inf: none) and position; ``lid_rows`` the row of that lake value in ``ll_sorted``; ``lr_sorted[f]`` each query
    value's candidate distances under measure f, ascending (inf padded); ``ll_sorted[f]`` each such lake value's
    distances to its neighbours; ``equal`` the query values joined by equality beforehand (scaled to the share of
    the values ``dist`` holds when it holds a sample of them)."""
    n, nf = dist.shape
    configs = _configs(dist, lid_rows, lr_sorted, ll_sorted, thresholds)
    best_p, chosen, chosen_f = np.zeros(n), np.full(n, -1), np.zeros(n, dtype=np.int64)
    joined_by = np.zeros((n, nf), dtype=bool)
    tp, joins = float(equal), equal
    kept = Selection(np.full(n, -1), np.zeros(n), np.full(n, -1), [], 1.0 if equal else None)
    remaining, taken = set(range(len(configs))), []
    while remaining:
        # a lake value already joined to r by another measure's configuration is no new join
        seen = [(joined_by & (lid == lid[:, [f]])).any(axis=1) for f in range(nf)]
        best = None
        for c in sorted(remaining):
            f, _, rows, p = configs[c]
            new = int((~seen[f][rows]).sum())
            if not new:
                continue
            gain = float((np.maximum(best_p[rows], p) - best_p[rows]).sum())
            t, j = tp + gain, joins + new
            profit = t / (j - t + 1e-9)
            if best is None or profit > best[0]:
                best = (profit, c, t, j)
        if best is None:
            break
        _, c, tp, joins = best
        f, _, rows, p = configs[c]
        better = p > best_p[rows]
        best_p[rows[better]], chosen[rows[better]], chosen_f[rows[better]] = p[better], c, f
        joined_by[rows, f] = True
        remaining.discard(c)
        taken.append(c)
        precision = tp / joins
        if precision > target:
            has = chosen >= 0
            position = np.full(len(configs), -1)
            position[taken] = np.arange(len(taken))
            kept = Selection(np.where(has, lid[np.arange(n), chosen_f], -1), best_p.copy(),
                             np.where(has, position[np.maximum(chosen, 0)], -1),
                             [(configs[c][0], configs[c][1]) for c in taken], precision)
        if precision < target - patience:
            break
    return kept
