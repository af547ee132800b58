"""Reductions whose result for one row never depends on the process, the thread count or the batch it is in.

BLAS kernels pick blocking and summation order by matrix shape and thread count, so ``a @ b`` may round a row
differently when it is encoded alone (a query) or inside a large batch (a Spark task).  Inference therefore uses these
fixed-order float64 reductions (numpy's own loops, no BLAS) and rounds to float32 once at the end.
"""
from __future__ import annotations

import numpy as np


def matmul(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """``a @ b`` in float64, each output summed over the inner axis in index order (``np.einsum`` without BLAS)."""
    return np.einsum("nk,kh->nh", np.asarray(a, dtype=np.float64), np.asarray(b, dtype=np.float64), optimize=False)


def segment_sum(rows: np.ndarray, offsets: np.ndarray) -> np.ndarray:
    """Sum of ``rows[offsets[i]:offsets[i+1]]`` for each segment i, sequentially; empty segments give zeros."""
    out = np.zeros((offsets.size - 1, rows.shape[1]))
    nonempty = offsets[1:] > offsets[:-1]
    if nonempty.any():
        out[nonempty] = np.add.reduceat(rows, offsets[:-1][nonempty], axis=0)
    return out


def weighted_mean(vectors: np.ndarray, counts: np.ndarray) -> np.ndarray:
    """Frequency-weighted mean of value vectors (TACTUS Eq. 7) in float64, summed in row order without BLAS."""
    if vectors.shape[0] == 0 or counts.sum() <= 0:
        return np.zeros(vectors.shape[1])
    weighted = vectors.astype(np.float64) * counts[:, None]
    return np.add.reduce(weighted, axis=0) / counts.sum()


def unit(x: np.ndarray) -> np.ndarray:
    """L2-normalise the last axis; zero rows stay zero."""
    norm = np.sqrt(np.add.reduce(x * x, axis=-1, keepdims=True))
    return np.divide(x, norm, out=np.zeros_like(x), where=norm > 0)
