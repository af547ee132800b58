"""``exact``: U(V_Q, V_i, tau) of Definition 5 for every table of the lake, the answer every exact method returns.

One blocked BLAS product with the whole lake, then only the admissible pairs; tables without one score 0 and need
nothing more (see :mod:`.scoring`).  It is also the fallback of the methods whose candidate generation would cost
more than scoring the lake (``pgtus``, ``pgtus++``) or found too few answers (``pgtus++-approx``): they then answer
with :func:`exhaustive`, which keeps the work they already spent in the statistics.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .results import SearchStats, UnionResult, UnionSearch
from .scoring import exhaustive_scores


def exact_search(index, query: np.ndarray, k: int, tau: float, exclude: int,
                 q_codes: np.ndarray | None = None, scale: np.ndarray | None = None,
                 bonus: np.ndarray | None = None) -> UnionSearch:
    """The top-``k`` tables of :class:`~.search.UnionIndex` ``index`` by Definition 5 score (ties by table id),
    each weighted by its factor in ``scale`` (:mod:`.widths`) and plus its ``bonus`` (:mod:`.lexical`) when given,
    leaving out table position ``exclude`` (-1: none)."""
    found = exhaustive_scores(query, index.vectors, index.col_table, index.col_offsets, tau, q_codes,
                              None if q_codes is None else index.quantities)
    n = len(index.table_ids)
    sums = np.zeros(n)
    sums[found.tables] = found.scores
    if scale is not None:
        sums = sums * scale
    if bonus is not None:
        sums = sums + bonus
    at = np.full(n, -1, dtype=np.int64)
    at[found.tables] = found.tables
    keep = (sums > 0) & (np.arange(n) != exclude)
    tables = np.flatnonzero(keep)
    scores = sums[tables]
    top = np.lexsort((index.table_ids[tables], -scores))[:k]
    results = []
    for i in top:
        t = int(tables[i])
        pairs = found.match(t, index.col_offsets).pairs if at[t] >= 0 else ()
        results.append(UnionResult(int(index.table_ids[t]), float(scores[i]), index.alignment(t, pairs)))
    stats = SearchStats("exact", len(index.table_ids) - (exclude >= 0), int(keep.sum()), int(keep.sum()),
                        found.solved)
    return UnionSearch(results, stats, "unionability")


def exhaustive(index, query: np.ndarray, k: int, tau: float, exclude: int, spent: SearchStats,
               q_codes: np.ndarray | None = None) -> UnionSearch:
    """``exact``'s answer, reported under ``spent.method`` with the work already ``spent`` added."""
    found = exact_search(index, query, k, tau, exclude, q_codes)
    done = found.stats
    stats = replace(spent, exhaustive=True, candidates_after_refinement=done.candidates_after_refinement,
                    candidates_after_pruning=done.candidates_after_pruning,
                    exact_matchings=spent.exact_matchings + done.exact_matchings,
                    assignments_solved=spent.assignments_solved + done.assignments_solved)
    return UnionSearch(found.results, stats, found.score_kind)
