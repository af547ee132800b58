"""Distances of the semantic join and the one match predicate every method shares.

Both metrics run on one internal scale: the Euclidean (chord) distance between stored float32 vectors.

* ``euclidean``: the distance itself; vectors are expected L2-normalised, so the maximum distance is 2 (PEXESO §V).
* ``angular``: the geodesic angle ``theta`` between vectors, maximum ``pi``.  On unit vectors the chord is
  ``2 sin(theta / 2)``, an exact increasing function of the angle and itself a metric, so ``theta <= tau`` iff
  ``chord <= 2 sin(tau / 2)``.  Running angular searches on chords lets one set of pivot bounds and one BLAS path
  serve both metrics; angles are converted back only for reporting.

Exactness.  A pair matches iff its *canonical* squared chord, computed in float64 with a fixed summation order,
is ``<= tau**2``.  The fast paths (float32 GEMM or row-wise dot products) carry a rounding error with a proven
bound (``|fl(x.q) - x.q| <= gamma_d |x| |q|`` for any summation order); pairs whose fast value lies within that band
of the threshold are recomputed canonically.  Every method therefore takes the same decision on every pair, which is
what makes PEXESO, PEXESO-H and brute force return identical answers.
"""
from __future__ import annotations

import numpy as np

METRICS = ("euclidean", "angular")
_U32 = float(np.finfo(np.float32).eps) / 2.0  # unit roundoff of float32


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


def squared_norms(x: np.ndarray) -> np.ndarray:
    return np.einsum("ij,ij->i", x.astype(np.float64), x.astype(np.float64))


def canonical_squared(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Squared distance of row pairs ``a[i], b[i]`` in float64, summed dimension by dimension.

    The fixed left-to-right order makes the value a function of the two rows only (not of batch size or memory
    alignment), so every method computing it gets the same bits.
    """
    acc = np.zeros(a.shape[0], dtype=np.float64)
    for j in range(a.shape[1]):
        diff = a[:, j].astype(np.float64) - b[:, j].astype(np.float64)
        acc += diff * diff
    return acc


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
            exact = canonical_squared(lake[xs[unsure]], query[qs[unsure]])
            match[unsure] = exact <= self.tau_sq
            fast_sq = fast_sq.copy()
            fast_sq[unsure] = exact
        return match, fast_sq

    def pair_squared(self, lake, lake_sq, xs, query, query_sq, qs, chunk: int = 65536) -> np.ndarray:
        """Fast squared distances of gathered row pairs, in bounded-memory chunks."""
        out = np.empty(xs.size, dtype=np.float64)
        for s in range(0, xs.size, chunk):
            xi, qi = xs[s:s + chunk], qs[s:s + chunk]
            dots = np.einsum("ij,ij->i", lake[xi], query[qi])
            out[s:s + chunk] = lake_sq[xi] + query_sq[qi] - 2.0 * dots
        return out
