"""Seeded random lakes for the numerical-join tests: values chosen so that distances hit tau exactly."""
from __future__ import annotations

import numpy as np


def integer_lake(seed: int, dim: int, n_sets: int = 25, max_size: int = 30, span: int = 12, dup: bool = True):
    """Sets of small-integer vectors (distances like 3, 4, 5 land exactly on tau), some empty, with duplicates."""
    rng = np.random.default_rng(seed)
    sets = []
    for i in range(n_sets):
        n = 0 if i % 9 == 4 else int(rng.integers(1, max_size))
        x = rng.integers(0, span, size=(n, dim)).astype(np.float64)
        if dup and n > 2:
            x[-1] = x[0]
        sets.append(x if dim > 1 else x[:, 0])
    q = rng.integers(0, span, size=(int(rng.integers(1, 25)), dim)).astype(np.float64)
    if q.shape[0] > 2:
        q[1] = q[0]
    return sets, (q if dim > 1 else q[:, 0])


def clustered_lake(seed: int, dim: int = 20, n_sets: int = 30, n_clusters: int = 6, sigma: float = 0.05):
    rng = np.random.default_rng(seed)
    centers = rng.uniform(0, 1, size=(n_clusters, dim))
    sets = []
    for _ in range(n_sets):
        c = rng.choice(n_clusters, size=2)
        n = int(rng.integers(5, 60))
        sets.append(centers[rng.choice(c, size=n)] + rng.normal(0, sigma, size=(n, dim)))
    q = sets[int(rng.integers(n_sets))][: int(rng.integers(3, 40))] + rng.normal(0, sigma / 4, size=(1, dim))
    return sets, q


def coordinate_lake(seed: int, n_sets: int = 20):
    """(lat, lon) on a 0.01-degree grid of a small region, so many pairs coincide or sit at equal distances."""
    rng = np.random.default_rng(seed)
    sets = []
    for i in range(n_sets):
        n = 0 if i == 3 else int(rng.integers(1, 40))
        sets.append(np.column_stack([40 + rng.integers(0, 30, n) / 100, -74 + rng.integers(0, 30, n) / 100]))
    q = np.column_stack([40 + rng.integers(0, 30, 20) / 100, -74 + rng.integers(0, 30, 20) / 100])
    return sets, q
