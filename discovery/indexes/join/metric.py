"""Distances of the semantic join and the one match predicate every method shares.

Both metrics run on one internal scale: the Euclidean (chord) distance between stored float32 vectors.

* ``euclidean``: the distance itself; vectors are expected L2-normalised, so the maximum distance is 2 (PEXESO §V).
* ``angular``: the geodesic angle ``theta`` between vectors, maximum ``pi``.  On unit vectors the chord is
  ``2 sin(theta / 2)``, an exact increasing function of the angle and itself a metric, so ``theta <= tau`` iff
  ``chord <= 2 sin(tau / 2)``.  Running angular searches on chords lets one set of pivot bounds and one BLAS path
  serve both metrics; angles are converted back only for reporting.

Exactness.  A pair matches iff its *canonical* squared chord, computed in float64 with a fixed summation order,
is ``<= tau**2``.  The fast paths carry a rounding error with a proven bound and fall back to the canonical value
only when the decision lies within that bound: the float32 GEMM of brute force (``|fl(x.q) - x.q| <= gamma_d |x|
|q|`` for any summation order, :class:`MatchPredicate`) and the compiled, early-abandoned float64 sum of squared
differences of PEXESO and PEXESO-H (:func:`squared_within`).  Every method therefore takes the same decision on
every pair, which is what makes PEXESO, PEXESO-H and brute force return identical answers.
"""
from __future__ import annotations

import numpy as np
from numba import njit

METRICS = ("euclidean", "angular")
_U32 = float(np.finfo(np.float32).eps) / 2.0  # unit roundoff of float32
_U64 = float(np.finfo(np.float64).eps) / 2.0  # unit roundoff of float64


def check_metric(metric: str) -> str:
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {METRICS}")
    return metric


def max_distance(metric: str) -> float:
    """Largest possible distance between two unit vectors under ``metric``."""
    return 2.0 if check_metric(metric) == "euclidean" else float(np.pi)


def chord_threshold(tau_fraction: float, metric: str) -> float:
    """Internal (chord) threshold for ``tau`` given as a fraction of the metric's maximum distance."""
    if not 0.0 <= tau_fraction <= 1.0:
        raise ValueError(f"tau must be a fraction of the maximum distance in [0, 1], got {tau_fraction}")
    tau = tau_fraction * max_distance(metric)
    return float(tau) if metric == "euclidean" else float(2.0 * np.sin(tau / 2.0))


def to_chord(distances: np.ndarray, metric: str) -> np.ndarray:
    """Convert distances in the metric's units to chords (identity for euclidean)."""
    d = np.asarray(distances, dtype=np.float64)
    return d if check_metric(metric) == "euclidean" else 2.0 * np.sin(np.clip(d, 0.0, np.pi) / 2.0)


def from_chord(chords: np.ndarray, metric: str) -> np.ndarray:
    """Convert chords back to distances in the metric's units."""
    c = np.asarray(chords, dtype=np.float64)
    return c if check_metric(metric) == "euclidean" else 2.0 * np.arcsin(np.clip(c / 2.0, 0.0, 1.0))


def prepare_vectors(vectors: np.ndarray, metric: str) -> np.ndarray:
    """The stored float32 form: as given for euclidean, unit length for angular."""
    x = np.ascontiguousarray(vectors, dtype=np.float32)
    if x.ndim != 2:
        raise ValueError(f"vectors must be a 2-d array, got shape {x.shape}")
    if check_metric(metric) == "angular":
        norms = np.linalg.norm(x.astype(np.float64), axis=1, keepdims=True)
        x = np.ascontiguousarray(x / np.where(norms > 0, norms, 1.0), dtype=np.float32)
    return x


#: Rows widened to float64 at a time by :func:`squared_norms`: a whole partition at once held two float64 copies of
#: its vectors (149 MB for 194,000 vectors of 48 dimensions) on top of the index being built.
NORM_ROWS = 8192


def squared_norms(x: np.ndarray) -> np.ndarray:
    """Squared lengths in float64, widened a block of rows at a time (each row's sum is the same either way)."""
    out = np.empty(x.shape[0], dtype=np.float64)
    for a in range(0, x.shape[0], NORM_ROWS):
        block = x[a:a + NORM_ROWS].astype(np.float64)
        out[a:a + NORM_ROWS] = np.einsum("ij,ij->i", block, block)
    return out


def mapping_slack(storage_eps: float, magnitude: float, dim: int) -> float:
    """How far a lemma's pivot-distance test may be off, in chord units; lemmas widen tau by it (:mod:`.lemmas`).

    Three errors add up, for mapped values of at most ``magnitude`` (metric units) over ``dim``-dimensional vectors:

    * storage: the lake's pivot distances are stored as float32 (``pivot_mappings``) and the search reads those
      numbers back, so each is off by up to half a float32 ulp, ``eps32 / 2 * |v|``; ``storage_eps * magnitude``
      (the machine epsilon of the storage type) bounds it with a factor two to spare.  Chords derived from stored
      angles err no more than the angles (the chord is 1-Lipschitz in the angle).
    * computation: :func:`.pivots.map_to_pivots` computes in float64 from differences, a sum of ``dim`` squares and
      a root (angular: and an arcsine), within ``(dim + 4) u64 |v|`` on the lake and on the query side alike.
    * the decision the lemmas stand in for is the canonical float64 sum (module docstring), which accepts pairs up to
      ``(dim + 4) u64`` relatively beyond tau, and tau is at most 2 chord units.

    The float64 terms sum to at most ``(dim + 4) u64 (2 magnitude + 2)``; the lemma tests' own sum or difference adds
    ``u64`` of ``2 magnitude``; four times ``(dim + 8) u64 (2 magnitude + 2)`` covers them all with room to spare.
    """
    return float(storage_eps) * magnitude + 4.0 * (dim + 8) * _U64 * (2.0 * magnitude + 2.0)


def canonical_squared(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared distance of row pairs ``a[i], b[i]`` in float64, summed dimension by dimension.

    The fixed left-to-right order makes the value a function of the two rows only (not of batch size or memory
    alignment), so every method computing it gets the same bits.
    """
    rows = np.arange(a.shape[0])
    return canonical_squared_at(a, rows, b, rows)


@njit(cache=True, nogil=True)
def canonical_squared_at(a, ia, b, ib) -> np.ndarray:
    """:func:`canonical_squared` of the row pairs ``a[ia[n]], b[ib[n]]``, read in place: the witnesses of a join's
    results and the re-checks near tau take rows scattered over the index, and copying them out first cost as much
    as the sum (a numpy loop over dimensions was a fifth of a served join's witness time)."""
    out = np.empty(ia.shape[0], dtype=np.float64)
    for n in range(ia.shape[0]):
        out[n] = canonical_pair_squared(a, ia[n], b, ib[n])
    return out


class MatchPredicate:
    """``d(q, x) <= tau`` decided exactly from fast float32 dot products plus a canonical re-check band."""

    def __init__(self, tau_chord: float, dim: int, max_sq_norm: float):
        self.tau = float(tau_chord)
        self.tau_sq = self.tau * self.tau
        # gamma_d bound for the dot product (factor 2 in the squared distance), plus rounding of the norm sums.
        self.band = (2.5 * dim + 16.0) * _U32 * max(max_sq_norm, 1.0) + 1e-12

    def decide(self, fast_sq: np.ndarray, xs: np.ndarray, qs: np.ndarray, lake: np.ndarray, query: np.ndarray):
        """Match mask and squared distances for pairs ``(query[qs[i]], lake[xs[i]])`` given their fast values."""
        fast_sq = np.asarray(fast_sq, dtype=np.float64)
        match = fast_sq <= self.tau_sq
        unsure = np.flatnonzero(np.abs(fast_sq - self.tau_sq) <= self.band)
        if unsure.size:
            exact = canonical_squared_at(lake, xs[unsure], query, qs[unsure])
            match[unsure] = exact <= self.tau_sq
            fast_sq = fast_sq.copy()
            fast_sq[unsure] = exact
        return match, fast_sq


@njit(cache=True)
def canonical_pair_squared(a, i, b, k) -> float:
    """:func:`canonical_squared` of rows ``a[i]``, ``b[k]``: the same float64 operations in the same order, the
    same bits."""
    acc = 0.0
    for j in range(a.shape[1]):
        diff = np.float64(a[i, j]) - np.float64(b[k, j])
        acc += diff * diff
    return acc


@njit(cache=True, fastmath=True)
def _squared_span(a, i, b, k, lo, hi) -> float:
    """Sum of squared float64 differences of rows ``a[i]``, ``b[k]`` over dimensions ``[lo, hi)``, in any order.

    ``fastmath`` lets the sum vectorise; its relative error is at most ``(hi - lo + 2)`` float64 unit roundoffs
    whatever the order, which :func:`squared_within` accounts for.
    """
    acc = 0.0
    for j in range(lo, hi):
        diff = np.float64(a[i, j]) - np.float64(b[k, j])
        acc += diff * diff
    return acc


#: Dimensions summed between two early-abandon tests of :func:`squared_within` (one 64-byte line of float32).
SPAN = 16


@njit(cache=True)
def squared_within(a, i, b, k, tau_sq) -> float:
    """The match predicate for rows ``a[i]``, ``b[k]`` with early abandoning: their squared distance if it is
    ``<= tau_sq`` under the canonical decision, else ``inf``.

    Partial sums of squares only grow, so once a prefix of the dimensions exceeds ``tau_sq`` by more than its
    rounding error the canonical sum does too and the pair is rejected without reading the rest of the vector;
    most candidate pairs are rejected after one or two spans.  A full sum clearly inside is a match; within the
    rounding error of the threshold the canonical value decides.  The decision is therefore always the canonical
    one, the same as every other method's.
    """
    d = a.shape[1]
    rel = 2.0 * (d + 4) * _U64
    acc = 0.0
    for lo in range(0, d, SPAN):
        acc += _squared_span(a, i, b, k, lo, min(lo + SPAN, d))
        if acc * (1.0 - rel) > tau_sq:
            return np.inf
    if acc * (1.0 + rel) < tau_sq:
        return acc
    exact = canonical_pair_squared(a, i, b, k)
    return exact if exact <= tau_sq else np.inf
