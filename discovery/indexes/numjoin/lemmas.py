"""The group-level filtering and matching lemmas of PEXESO 003 (§III-B), and the binary searches on sorted lists.

All distances are chords (:mod:`.metric`).  Callers pass ``tau_f = c_hi + slack`` to the filters and ``tau_m = c_lo -
slack`` to the matching lemmas, so no rounding makes a lemma drop a true match or accept a false one.

* Lemma 2 (object-group filtering) and Lemma 3 (group-group filtering) are one test: with ``r_q = 0`` for an object,
  ``d(g_q.C, g_x.C) > g_x.R + g_q.R + tau``.  It is written as ``g_x.R < key`` with ``key = d - r_q - tau``
  (:func:`filter_key`), so the groups it filters in a posting list sorted by radius are a prefix found by one
  binary search: Lemma 6 (group dominating filtering) is that prefix.
* Lemma 4 (object-group matching) and Lemma 5 (group-group matching), the same way: ``g_x.R <= tau - r_q - d``
  (:func:`match_key`); Lemma 7 (group dominating matching) is the prefix of the posting list it selects.  Lemma 5 is
  stated with ``<`` in the paper; its proof (and Lemma 4) gives ``<=``, which we use, as Definition 1 does.
* Lemma 1 with a group's center as the pivot: a query object at chord ``dqc`` from the center can only match members
  whose stored distance lies in ``[dqc - tau, dqc + tau]`` (:func:`window`, two binary searches on ``g.L``); members
  at most ``tau - dqc`` from the center match it without a distance computation (Lemma 4 applied to the object).

Why compiled: the verification loop (:mod:`.verify`) calls these per (query object, group) with a data-dependent
exit; they are scalar helpers inlined into it.  The same functions run vectorised in numpy for the posting-list
splits (:mod:`.dominating`), with the same operation order, hence the same decisions.
"""
from __future__ import annotations

from numba import njit


@njit(cache=True, inline="always")
def filter_key(d_centers, r_q, tau_f):
    """Groups with radius ``< filter_key`` are filtered (Lemmas 2, 3)."""
    return d_centers - r_q - tau_f


@njit(cache=True, inline="always")
def match_key(d_centers, r_q, tau_m):
    """Groups with radius ``<= match_key`` match every object (Lemmas 4, 5)."""
    return tau_m - r_q - d_centers


@njit(cache=True, inline="always")
def bisect_left(a, lo, hi, key):
    """First position in ``a[lo:hi]`` (ascending) whose value is ``>= key``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] < key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def bisect_right(a, lo, hi, key):
    """First position in ``a[lo:hi]`` (ascending) whose value is ``> key``."""
    while lo < hi:
        mid = (lo + hi) >> 1
        if a[mid] <= key:
            lo = mid + 1
        else:
            hi = mid
    return lo


@njit(cache=True, inline="always")
def window(dist, lo, hi, dqc, tau_f, tau_m):
    """Lemma 1 on a group's sorted list ``dist[lo:hi]`` for an object at ``dqc`` from the center.

    Returns ``(a, s, b)``: members ``a:b`` may match; of them ``a:s`` match for certain (Lemma 4 per member).
    """
    a = bisect_left(dist, lo, hi, dqc - tau_f)
    b = bisect_right(dist, a, hi, dqc + tau_f)
    s = bisect_right(dist, a, b, tau_m - dqc)
    return a, s, b


@njit(cache=True)
def lookup(center, lo, hi, c):
    """Position of center ``c`` in ``center[lo:hi]`` (ascending), or -1: the hash on group centers (§III-D)."""
    i = bisect_left(center, lo, hi, c)
    if i < hi and center[i] == c:
        return i
    return -1
