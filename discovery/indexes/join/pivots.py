"""Pivot selection (PCA-based, PEXESO §III-D after Mao et al.) and pivot mapping (PEXESO §III-A).

Good pivots are outliers, but not every outlier is a good pivot.  The PCA-based method therefore works in two steps:
farthest-first traversal of a sample yields a small set of outlier candidates; every sample vector is mapped to its
distances to all candidates (each candidate becomes one dimension of a "candidate pivot space"); PCA of that space
finds the directions of largest variance of the distances, and for each leading principal component the candidate
whose dimension loads most on it is kept.  The selected pivots thus spread the mapped vectors along nearly
uncorrelated axes, which is what pivot filtering needs.  The cost is linear in the sample size.
"""
from __future__ import annotations

import numpy as np

from .metric import check_metric, prepare_vectors

#: Upper bound on the sample the selection works on; larger inputs are subsampled (seeded).
MAX_SAMPLE = 20000


def _chords(x: np.ndarray, centers: np.ndarray) -> np.ndarray:
    """Float64 Euclidean distances between all rows of ``x`` and ``centers``."""
    x64 = np.asarray(x, dtype=np.float64)
    c64 = np.asarray(centers, dtype=np.float64)
    sq = (x64 * x64).sum(1)[:, None] + (c64 * c64).sum(1)[None, :] - 2.0 * (x64 @ c64.T)
    return np.sqrt(np.maximum(sq, 0.0))


def select_pivots(sample: np.ndarray, n_pivots: int = 5, seed: int = 0, metric: str = "euclidean",
                  n_candidates: int | None = None) -> np.ndarray:
    """Choose ``n_pivots`` pivots (rows of the sample) with the PCA-based method; returns a (p, d) float32 array.

    ``n_candidates`` outliers are drawn by farthest-first traversal (default ``max(4 p, 16)``, bounded by the sample
    size); the choice of four candidates per pivot follows the candidate-then-select scheme of the pivot-selection
    literature, enough for PCA to find uncorrelated ones while staying linear in the sample.
    """
    check_metric(metric)
    x = prepare_vectors(sample, metric)
    n = x.shape[0]
    if n_pivots < 1:
        raise ValueError("n_pivots must be >= 1")
    if n < n_pivots:
        raise ValueError(f"need at least {n_pivots} sample vectors to select {n_pivots} pivots, got {n}")
    rng = np.random.default_rng(seed)
    if n > MAX_SAMPLE:
        x = x[np.sort(rng.choice(n, MAX_SAMPLE, replace=False))]
        n = MAX_SAMPLE
    n_cand = min(n, max(n_candidates if n_candidates is not None else max(4 * n_pivots, 16), n_pivots))
    # Farthest-first traversal from a random start: each new candidate is the vector farthest from those chosen.
    chosen = [int(rng.integers(n))]
    nearest = _chords(x, x[chosen])[:, 0]
    while len(chosen) < n_cand:
        nxt = int(np.argmax(nearest))
        if nearest[nxt] <= 0.0:
            break
        chosen.append(nxt)
        nearest = np.minimum(nearest, _chords(x, x[nxt:nxt + 1])[:, 0])
    candidates = np.asarray(chosen)
    if candidates.size < n_pivots:  # fewer distinct vectors than pivots: any rows do
        return np.ascontiguousarray(x[rng.choice(n, n_pivots, replace=False)], dtype=np.float32)
    if candidates.size == n_pivots:
        return np.ascontiguousarray(x[candidates], dtype=np.float32)
    space = _chords(x, x[candidates])
    space -= space.mean(axis=0, keepdims=True)
    _, _, vt = np.linalg.svd(space, full_matrices=False)
    picked: list[int] = []
    for component in vt:
        order = np.argsort(-np.abs(component), kind="stable")
        for j in order:
            if int(j) not in picked:
                picked.append(int(j))
                break
        if len(picked) == n_pivots:
            break
    return np.ascontiguousarray(x[candidates[picked]], dtype=np.float32)


def map_to_pivots(vectors: np.ndarray, pivots: np.ndarray, metric: str = "euclidean",
                  batch: int = 65536) -> np.ndarray:
    """Pivot mapping ``x' = [d(p_1, x), ..., d(p_|P|, x)]`` in the metric's units, float64, shape (n, p).

    Computed in float64 from differences (not from dot products, whose cancellation would cost ~1e-8 near a
    pivot) of the stored float32 form, so the values are accurate to ~1e-15 - the search's bounds rely on it - and
    the same vector maps to the same values whether a Spark task or a query maps it.
    """
    check_metric(metric)
    x = prepare_vectors(vectors, metric)
    piv = prepare_vectors(pivots, metric).astype(np.float64)
    out = np.empty((x.shape[0], piv.shape[0]), dtype=np.float64)
    for s in range(0, x.shape[0], batch):
        block = x[s:s + batch].astype(np.float64)
        for j in range(piv.shape[0]):
            diff = block - piv[j]
            out[s:s + batch, j] = np.sqrt(np.einsum("ij,ij->i", diff, diff))
    if metric == "angular":
        out = 2.0 * np.arcsin(np.clip(out / 2.0, 0.0, 1.0))
    return out
