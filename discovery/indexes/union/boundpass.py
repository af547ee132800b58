"""The compiled bound pass of the compact union index: one pass over the int8 codes, one upper bound per table.

What it computes and why it is sound is in :mod:`.quantised`, which calls it.

Why compiled.  numpy has no int8 product: converting blocks of codes to float32 and calling BLAS took 0.22 s on
750k x 384 codes and 8 query columns, more than twice this loop (0.09 s), and the per-table reductions would need the
(q, n) bound matrix as an intermediate; the loop reduces each table as it goes and writes one number per table.
``fastmath`` is limited to reassociation and contraction (what vectorising the sum needs); the error bound of
:mod:`.quantised` holds for any summation order.  Converting each code row to float32 once for all query columns
(a row buffer), four columns a block, or int16 query weights with int32 sums were each measured no faster or slower
on the 100k-table lake of ``benchmarks/union_scale.py`` (CPU 0.92 s, 0.79 s and 1.69 s against 0.78 s for 8
queries): the compiled loop already keeps the conversion in SIMD registers.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _top_sum(values: np.ndarray, count: int, take: int) -> float:
    """Sum of the ``take`` largest of ``values[:count]``."""
    if take >= count:
        return float(np.sum(values[:count].astype(np.float64)))
    ranked = np.sort(values[:count])
    return float(np.sum(ranked[count - take:].astype(np.float64)))


@njit(cache=True, nogil=True, fastmath={"reassoc", "contract"})
def bound_tables(scaled, slack, codes, col_offsets, tau, sum_slack, out, lo, hi):
    """The bound pass (see the module docstring) over tables ``lo:hi``: one pass over their codes, one bound per
    table into ``out``.  It runs without the GIL, so threads can each take a range of tables (:mod:`.quantised`)."""
    q, d = scaled.shape
    best_q = np.empty(q, dtype=np.float32)
    widest = 0  # the most columns of a table, found without a (T,) temporary
    for t in range(lo, hi):
        widest = max(widest, col_offsets[t + 1] - col_offsets[t])
    col_best = np.empty(widest, dtype=np.float32)
    for t in range(lo, hi):
        best_q[:] = -np.inf
        cols = 0
        for i in range(col_offsets[t], col_offsets[t + 1]):
            row = codes[i]
            top = -np.inf
            for a in range(q):
                acc = np.float32(0.0)
                for j in range(d):
                    acc += scaled[a, j] * np.float32(row[j])
                ub = acc + slack[a]
                if ub >= tau:
                    top = max(top, ub)
                    best_q[a] = max(best_q[a], ub)
            if top >= tau:
                col_best[cols] = top
                cols += 1
        if cols == 0:
            continue
        rows = 0
        for a in range(q):
            if best_q[a] >= tau:
                best_q[rows] = best_q[a]
                rows += 1
        t_hi = min(rows, cols)
        out[t] = min(_top_sum(col_best, cols, t_hi), _top_sum(best_q, rows, t_hi)) + sum_slack
