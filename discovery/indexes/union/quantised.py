"""Scalar int8 quantisation of column vectors with a proven bound on every similarity, and the bound pass over it.

Why scalar int8 per dimension, not product quantisation.  The bound pass must bound *every* (query column, lake
column) similarity from above, so what matters is the width of the bound and the speed of one pass over all codes.
Per-dimension int8 keeps every coordinate within half a step of its true value, which gives a worst-case bound of a
few hundredths of a similarity (the error terms below), and its inner product with a float32 query is a plain loop
that compiles to SIMD code: on 750k x 384 codes and 8 query columns it takes about 0.09 s, a third of the float32
BLAS product over the same columns.  Product quantisation would take 4x to 16x less memory, but its error is the
residual of a k-means codebook (one to two orders of magnitude wider in the worst case, so far fewer tables would be
ruled out) and its lookup-table distances are a gather per code, slower per byte than the int8 loop.  The int8 codes
are exactly a quarter of the float32 vectors, with nothing stored per vector.

The code.  Dimension j has the step s_j = max_i |x_ij| / 127 (over the lake's unit column vectors x_i), and a column
is stored as c_ij = round(x_ij / s_j) in [-127, 127]; x~_ij = s_j c_ij.  The rounding error of dimension j is measured
when the codes are written, exactly (in float64, where s_j c_ij is exact):

    e_j = max_i |x_ij - s_j c_ij|   (<= s_j / 2).

The bound.  For a query column q (unit float32) and any lake column x,

    <q, x> = <q, x~> + <q, x - x~>,   |<q, x - x~>| <= sum_j |q_j| |x_j - x~_j| <= sum_j |q_j| e_j =: E(q),

one number per query column (Hoelder with the per-dimension maxima; a per-vector residual norm ||q|| ||x - x~|| is
sometimes tighter but costs bytes per vector).  The pass computes <q, x~> as sum_j (q_j s_j) c_j in float32, in any
summation order (``fastmath`` reassociation and contraction let the compiler vectorise it): each product q_j s_j is
rounded once, the sum of d terms accumulates at most d * eps * sum_j |q_j s_j c_j| <= d * eps * ||q|| ||x~|| of
error whatever the order, and the similarity the exact scoring uses is the float64 product rounded to float32
(``matching``).  For unit vectors (||x~|| <= 1 + ||e||) all of these together are below
:func:`~discovery.indexes.union.matching.float32_product_error` (2 d eps + 1e-6), which is added.  So with

    ub(q, x) = <q, x~>_float32 + E(q) + float32_product_error(d),

ub(q, x) >= sim(q, x) for every pair, and a column with ub < tau holds no admissible pair with q.

From pairs to tables.  A Definition 5 matching uses each query column and each lake column at most once, only pairs
with sim >= tau, and at most t_hi = min(query columns with an admissible ub, lake columns with one) pairs.  So a
table's score is at most the sum of the t_hi largest per-column maxima of the admissible ub (Algorithm 3's column
relaxation) and at most the sum of the t_hi largest per-query-column maxima (its query relaxation); the bound pass
returns the smaller, plus :data:`~discovery.indexes.union.bounds.SUM_SLACK`, and 0 for a table without an admissible ub.

The pass itself is compiled (:mod:`.boundpass`, which says why) and imported on first use: importing numba costs
about 0.4 s of a cold query, which lakes small enough to be scored exhaustively never need (:mod:`.compact`).  It
releases the GIL, so a large lake's tables are cut into ranges of about equal columns, one per thread
(:mod:`discovery.ground.threads`); each range writes its own tables' bounds, so the result does not depend on the
threads.
"""
from __future__ import annotations

from typing import Protocol

import numpy as np

from ...ground.threads import query_threads, run_parts
from .bounds import SUM_SLACK
from .matching import float32_product_error

#: largest code magnitude; symmetric, so a dimension's step does not depend on the sign of its largest coordinate.
CODE_MAX = 127
#: columns per block when codes are written (bounds the float64 working copies: about five of 16,384 x d x 8
#: bytes, 25 MB each at d 384, are alive at once; 65,536 made them 0.6 to 0.8 GB of the refresh driver's peak).
_BLOCK = 16384


class Rows(Protocol):
    """Rows read and written a block at a time: an array, or a file of rows the refresh writes through short-lived
    maps (:class:`.arrays._FileRows`)."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    def __len__(self) -> int: ...

    def __getitem__(self, rows: slice) -> np.ndarray: ...

    def __setitem__(self, rows: slice, values: np.ndarray) -> None: ...


def fit_steps(vectors: Rows) -> np.ndarray:
    """Per-dimension step s_j = max_i |x_ij| / 127 (float32; 1 for a dimension that is 0 in every column)."""
    top = np.zeros(vectors.shape[1], dtype=np.float32)
    for a in range(0, len(vectors), _BLOCK):
        np.maximum(top, np.abs(vectors[a:a + _BLOCK]).max(axis=0, initial=0.0), out=top)
    steps = top / np.float32(CODE_MAX)
    return np.where(steps > 0, steps, np.float32(1.0)).astype(np.float32)


def encode(vectors: Rows, steps: np.ndarray, out: Rows) -> np.ndarray:
    """Write the int8 codes of ``vectors`` (n, d) into ``out`` (n, d) int8; returns the per-dimension rounding
    error e_j = max_i |x_ij - s_j c_ij| (float64, measured exactly)."""
    s64 = steps.astype(np.float64)
    error = np.zeros(vectors.shape[1])
    for a in range(0, len(vectors), _BLOCK):
        x = np.asarray(vectors[a:a + _BLOCK], dtype=np.float64)
        codes = np.clip(np.rint(x / s64), -CODE_MAX, CODE_MAX)
        out[a:a + len(x)] = codes.astype(np.int8)
        np.maximum(error, np.abs(x - codes * s64).max(axis=0, initial=0.0), out=error)
    return error


def query_slack(query: np.ndarray, error: np.ndarray) -> np.ndarray:
    """E(q) + float32_product_error(d) for every query column (rows of ``query``), rounded up to float32."""
    slack = np.abs(query.astype(np.float64)) @ error + float32_product_error(query.shape[1])
    return np.nextafter(slack.astype(np.float32), np.float32(np.inf))


def table_upper_bounds(query: np.ndarray, codes: np.ndarray, steps: np.ndarray, error: np.ndarray,
                       col_offsets: np.ndarray, tau: float) -> np.ndarray:
    """Upper bound of U(V_Q, V_t, tau) for every table t (columns ``col_offsets[t]:col_offsets[t + 1]`` of
    ``codes``), 0 where no column can reach tau; ``query`` (q, d) unit float32 rows, ``tau`` > 0."""
    scaled = np.ascontiguousarray(query * steps[None, :], dtype=np.float32)
    out = np.zeros(len(col_offsets) - 1)
    tau32 = np.float32(tau)
    if tau32 > tau:  # compare with a float32 threshold no larger than tau, whatever precision the caller compares in
        tau32 = np.nextafter(tau32, np.float32(-np.inf))
    from .boundpass import bound_tables

    offsets_type = np.int32 if col_offsets.dtype == np.int32 else np.int64  # int32 as stored (arrays.narrow_offsets)
    args = (scaled, query_slack(query, error), _read_only(codes, np.int8), _read_only(col_offsets, offsets_type),
            tau32, SUM_SLACK, out)
    cuts = table_ranges(col_offsets, query_threads())
    run_parts(lambda lo_hi: bound_tables(*args, *lo_hi), zip(cuts[:-1], cuts[1:]))  # each writes its range of ``out``
    return out


#: Fewest columns one thread of the bound pass takes: below it, a thread's start costs more than it saves.
MIN_COLUMNS_PER_THREAD = 100_000


def table_ranges(col_offsets: np.ndarray, threads: int) -> np.ndarray:
    """Table indices cutting the tables into at most ``threads`` ranges of about equal columns (at least
    :data:`MIN_COLUMNS_PER_THREAD` each): ``[0, c_1, ..., n_tables]``."""
    n_tables, columns = len(col_offsets) - 1, int(col_offsets[-1]) if len(col_offsets) else 0
    parts = max(1, min(threads, columns // MIN_COLUMNS_PER_THREAD, n_tables))
    targets = np.linspace(0, columns, parts + 1)[1:-1]
    inner = np.searchsorted(np.asarray(col_offsets[:-1]), targets)
    return np.unique(np.concatenate([[0], inner, [n_tables]])).astype(np.int64)


def _read_only(array: np.ndarray, dtype) -> np.ndarray:
    """A read-only C-contiguous view (a copy only if needed): numba compiles one kernel per array type, and mapped
    arrays are read-only, so in-memory ones are passed the same way and share the compiled (and warmed-up) kernel."""
    view = np.ascontiguousarray(array, dtype=dtype).view()
    view.flags.writeable = False
    return view
