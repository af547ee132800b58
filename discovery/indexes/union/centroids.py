"""Centroid utilities shared by the Spark centroid stage, Algorithm 1 and the benchmarks.

``assign_to_centroids`` is the nearest-centroid map mu(v) of PGTUS Section 4.1 (Euclidean, as in the paper).  The
incremental refresh uses it to place new columns under the current model between retrains.
``kmeans`` is a small deterministic Lloyd's k-means with k-means++ seeding: the centroids stage fits the base
centroids with it on a bounded sample in the driver, and Algorithm 1 runs it on a single table's vectors to obtain
cascade centroids.
"""
from __future__ import annotations

import numpy as np

#: rows per block when comparing vectors with centroids; bounds the (block, c) distance matrix in memory.
_BLOCK = 16384


def assign_to_centroids(vectors: np.ndarray, centroids: np.ndarray) -> np.ndarray:
    """Index (int64) of the Euclidean-nearest centroid of every row of ``vectors``; ties go to the smaller index."""
    vectors = np.asarray(vectors, dtype=np.float32)
    centroids = np.asarray(centroids, dtype=np.float32)
    out = np.empty(len(vectors), dtype=np.int64)
    c_sq = np.einsum("ij,ij->i", centroids, centroids)
    for start in range(0, len(vectors), _BLOCK):
        block = vectors[start:start + _BLOCK]
        # ||v - c||^2 = ||v||^2 - 2<v, c> + ||c||^2; ||v||^2 does not change the argmin.
        out[start:start + len(block)] = np.argmin(c_sq[None, :] - 2.0 * (block @ centroids.T), axis=1)
    return out


def _kmeans_pp(vectors: np.ndarray, k: int, rng: np.random.Generator) -> np.ndarray:
    n = len(vectors)
    sq = np.einsum("ij,ij->i", vectors, vectors)

    def sq_dist(i: int) -> np.ndarray:
        # ||v - v_i||^2 = ||v||^2 - 2<v, v_i> + ||v_i||^2: one matrix-vector product per seed instead of an (n, d)
        # temporary, which made seeding k = 224 centroids on 50,000 vectors take about a minute.
        return np.maximum(sq - 2.0 * (vectors @ vectors[i]) + sq[i], 0.0)

    chosen = [int(rng.integers(n))]
    d2 = sq_dist(chosen[0])
    for _ in range(1, k):
        total = float(d2.sum())
        if total <= 0.0:
            break
        nxt = int(np.searchsorted(np.cumsum(d2), rng.random() * total, side="right"))
        nxt = min(nxt, n - 1)
        chosen.append(nxt)
        d2 = np.minimum(d2, sq_dist(nxt))
    return vectors[chosen].copy()


def kmeans(vectors: np.ndarray, k: int, *, seed: int = 0, iterations: int = 25,
           tolerance: float = 1e-6) -> np.ndarray:
    """Centroids (<= k rows, float32) of Lloyd's k-means with k-means++ seeding; empty clusters are dropped.

    Deterministic for a given input and seed.  Fewer than ``k`` centroids come back when the input has fewer than
    ``k`` distinct vectors.
    """
    x = np.asarray(vectors, dtype=np.float64)
    if len(x) == 0:
        return np.zeros((0, x.shape[1] if x.ndim == 2 else 0), dtype=np.float32)
    k = max(1, min(int(k), len(x)))
    rng = np.random.default_rng(seed)
    centres = _kmeans_pp(x, k, rng)
    for _ in range(iterations):
        labels = assign_to_centroids(x, centres)
        order = np.argsort(labels, kind="stable")
        present, starts, counts = np.unique(labels[order], return_index=True, return_counts=True)
        updated = np.add.reduceat(x[order], starts, axis=0) / counts[:, None]
        keep = len(present) == len(centres)
        shift = float(np.max(np.abs(updated - centres))) if keep else np.inf
        centres = updated
        if shift <= tolerance:
            break
    return centres.astype(np.float32)
