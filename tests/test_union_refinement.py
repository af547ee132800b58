"""The vectorised refinement against a literal heap implementation of PGTUS Algorithm 2."""
import heapq

import numpy as np
import pytest

from discovery.indexes.union.csr import offsets_from_owners
from discovery.indexes.union.refinement import refine


def literal_algorithm_2(pair_centroids, pair_sims, table_cols_by_centroid, iw, phi_ref, exclude):
    heap = []
    for q in range(pair_centroids.shape[0]):
        for j in range(pair_centroids.shape[1]):
            heapq.heappush(heap, (-pair_sims[q, j], int(pair_centroids[q, j]), q))
    visited, used, score = {}, {}, {}
    while heap:
        neg, c, q = heapq.heappop(heap)
        for i in table_cols_by_centroid.get(c, []):  # one entry per column of table i under c
            if i not in score:
                score[i] = 0.0
            if not visited.get((i, q), False):
                if used.get((i, c), 0) < iw[(i, c)]:
                    used[(i, c)] = used.get((i, c), 0) + 1
                    score[i] += -neg
                visited[(i, q)] = True
    ranked = sorted((-s, i) for i, s in score.items() if i != exclude)
    if len(ranked) > phi_ref:  # the phi_ref best, and every table tied with the last of them
        ranked = [r for r in ranked if r[0] <= ranked[phi_ref - 1][0]]
    return [i for _, i in ranked], [-s for s, _ in ranked]


@pytest.mark.parametrize("seed", range(60))
def test_refinement_equals_algorithm_2(seed):
    rng = np.random.default_rng(seed)
    n_tables, n_cent = int(rng.integers(1, 30)), int(rng.integers(2, 12))
    col_table = np.repeat(np.arange(n_tables), rng.integers(1, 6, size=n_tables))
    col_cent = rng.integers(n_cent, size=len(col_table))
    iw = {}
    for t, c in zip(col_table, col_cent):
        iw[(int(t), int(c))] = iw.get((int(t), int(c)), 0) + 1
    by_centroid = {}
    for t, c in zip(col_table, col_cent):
        by_centroid.setdefault(int(c), []).append(int(t))
    keys = sorted((c, t) for t, c in iw)
    iw_tables = np.array([t for _, t in keys], dtype=np.int64)
    iw_counts = np.array([iw[(t, c)] for c, t in keys], dtype=np.int64)
    iw_offsets = offsets_from_owners(np.array([c for c, _ in keys], dtype=np.int64), n_cent)
    q = int(rng.integers(1, 6))
    probes = int(rng.integers(1, n_cent + 1))
    pair_centroids = np.stack([rng.choice(n_cent, probes, replace=False) for _ in range(q)])
    pair_sims = rng.uniform(-0.5, 1.0, size=(q, probes))
    if seed % 2:
        pair_sims = np.round(pair_sims, 1)
    phi_ref = int(rng.integers(1, n_tables + 2))
    exclude = int(rng.integers(-1, n_tables))
    want_t, want_s = literal_algorithm_2(pair_centroids, pair_sims, by_centroid, iw, phi_ref, exclude)
    got_t, got_s = refine(pair_centroids, pair_sims, iw_offsets, iw_tables, iw_counts, phi_ref, exclude)
    assert list(got_t) == want_t
    np.testing.assert_allclose(got_s, want_s, atol=1e-12)
