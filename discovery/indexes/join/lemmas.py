"""The filtering and matching lemmas of PEXESO as compiled scalar predicates, one place for all six.

Every lemma compares two axis-aligned boxes of the pivot space; a mapped vector is the degenerate box ``lo = hi``.

* Filtering (Lemma 1 vector-vector, Lemma 3 vector-cell, Lemma 4 cell-cell): if on some pivot axis the boxes are
  more than tau apart, the triangle inequality ``|d(x, p) - d(q, p)| <= d(x, q)`` puts every pair across them
  farther than tau.
* Matching (Lemma 2, 5, 6): if for some pivot ``max d(x, p) + max d(q, p) <= tau``, then ``d(x, q) <= d(x, p) +
  d(p, q) <= tau`` for every pair across them.

Callers pass ``tau + slack`` to filtering and ``tau - slack`` to matching, ``slack`` bounding the rounding of the
mapped values, so a lemma never filters a true match nor matches a false one because of floating point.

Why compiled.  Blocking descends two trees together and verification walks posting lists vector by vector with an
early exit per column; both are data-dependent loops whose next step depends on the previous test.  Vectorised
numpy has to materialise every frontier and every candidate before testing any, which costs more than the tests
save.  ``numba`` compiles these loops to machine code (``cache=True`` keeps the compiled code next to the module, so
only the first call on a machine pays the compilation).
"""
from __future__ import annotations

from numba import njit


@njit(cache=True)
def boxes_apart(a_lo, a_hi, i, b_lo, b_hi, k, tau_hi) -> bool:
    """Lemmas 1, 3, 4: boxes ``a[i]`` and ``b[k]`` are more than ``tau_hi`` apart on some pivot axis.

    Rows are addressed by index rather than passed as views: a view costs a reference-count update per call,
    which in the descent of blocking would cost more than the test itself.
    """
    for j in range(a_lo.shape[1]):
        if a_lo[i, j] - b_hi[k, j] > tau_hi or b_lo[k, j] - a_hi[i, j] > tau_hi:
            return True
    return False


@njit(cache=True, inline="always")
def points_apart(a, i, b, k, tau_hi) -> bool:
    """Lemma 1 for two mapped vectors (degenerate boxes): ``max_j |a[i, j] - b[k, j]| > tau_hi``.

    The same decision as :func:`boxes_apart` with ``lo = hi`` (``x - q`` and ``q - x`` round to exact negatives),
    taken without a branch per axis.  Verification tests every candidate vector with it and most tests filter, so
    the per-axis early exit of the box form mostly bought mispredicted branches: on AutoFJ's title queries (tau 4%,
    100M tests) the branch-free form verifies in 0.99 s against 1.67 s.
    """
    d = 0.0
    for j in range(a.shape[1]):
        d = max(d, abs(a[i, j] - b[k, j]))
    return d > tau_hi


@njit(cache=True)
def boxes_within(a_hi, i, b_hi, k, tau_lo) -> bool:
    """Lemmas 2, 5, 6: for some pivot the largest distances of boxes ``a[i]`` and ``b[k]`` sum to at most ``tau_lo``."""
    for j in range(a_hi.shape[1]):
        if a_hi[i, j] + b_hi[k, j] <= tau_lo:
            return True
    return False
