"""Exact table unionability U(V_Q, V_i, tau) of PGTUS Definition 5, with a lean path for the common cases.

Definition 5 scores a pair of vector sets by the heaviest matching among the *maximum t-matchings*: first the largest
number of one-to-one column pairs whose similarity is at least tau, then, among those, the largest total similarity.

Only admissible pairs (similarity >= tau) matter, and the optimum decomposes over the connected components of the
bipartite graph they form.  An *isolated* pair (its query column and its lake column have no other admissible
partner) is a component of its own and belongs to every optimum, so it is taken without solving anything; when every
admissible pair is isolated the matching is trivial.  The remaining pairs form a small assignment problem: every
admissible pair gets weight ``bonus + sim`` with a bonus larger than any total similarity a matching can gain by
dropping a pair, inadmissible pairs get 0, and ``scipy.optimize.linear_sum_assignment`` maximises the total, so the
optimum has maximum cardinality and, among those, maximum weight.  Only the rows and columns of non-isolated pairs
enter the solver.

Similarities are inner products of the unit-normalised float32 column vectors, computed in float64 and rounded to
float32 (:func:`similarity_matrix`, :func:`pair_similarities`).  A float32 BLAS product would be faster, but its
rounding depends on the matrix shape, so the same pair could be admissible in one call and not in another, and the
bounds could miss the exact score by an ulp; the float64 product is accurate to ~1e-14, so its float32 rounding is the
same whatever the shape.  The exact score, the bounds and the exhaustive baseline therefore see the same numbers, and
since a float32 value >= 2^-19 is a multiple of 2^-42, a float64 sum of fewer than 2^10 admissible similarities is
exact for any tau above that: scores do not depend on summation order.  Pairs are reported sorted by query column;
``linear_sum_assignment`` is deterministic, so equal inputs give equal alignments.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from scipy.optimize import linear_sum_assignment


@dataclass(frozen=True)
class Matching:
    """Optimal matching of Definition 5: its score and the matched (query column, lake column, similarity) pairs."""

    score: float
    pairs: tuple[tuple[int, int, float], ...]
    solved: bool = False  # whether an assignment problem had to be solved (False: isolated pairs only)


EMPTY_MATCHING = Matching(0.0, ())


def unit_rows(x: np.ndarray) -> np.ndarray:
    """Rows of ``x`` as float32 unit vectors (zero rows stay zero): how the index stores columns and queries."""
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return x / np.where(norms > 0, norms, np.float32(1.0))


def similarity_matrix(query_vectors: np.ndarray, lake_vectors: np.ndarray) -> np.ndarray:
    """Inner products (q, m) of two sets of float32 unit vectors: one float64 BLAS product, rounded to float32."""
    q = np.asarray(query_vectors, dtype=np.float32).astype(np.float64)
    v = np.asarray(lake_vectors, dtype=np.float32).astype(np.float64)
    return (q @ v.T).astype(np.float32)


def pair_similarities(query_vectors: np.ndarray, lake_vectors: np.ndarray) -> np.ndarray:
    """Row-wise inner products of equally long lists of float32 vectors, as :func:`similarity_matrix` rounds them."""
    q = np.asarray(query_vectors, dtype=np.float32).astype(np.float64)
    v = np.asarray(lake_vectors, dtype=np.float32).astype(np.float64)
    return np.einsum("ij,ij->i", q, v).astype(np.float32)


def float32_product_error(dim: int) -> float:
    """Bound on how far a float32 BLAS inner product of unit vectors can be from the float64 one, doubled."""
    return 2.0 * dim * float(np.finfo(np.float32).eps) + 1e-6


def match_entries(rows: np.ndarray, cols: np.ndarray, sims: np.ndarray) -> Matching:
    """Definition 5 over the admissible pairs ``(rows[j], cols[j])`` with similarities ``sims[j]`` (all >= tau).

    Rows are query columns and cols lake columns (any integer labels); no (row, col) pair may repeat.
    """
    n = len(rows)
    if n == 0:
        return EMPTY_MATCHING
    sims = np.asarray(sims, dtype=np.float64)
    if n == 1:
        return Matching(float(sims[0]), ((int(rows[0]), int(cols[0]), float(sims[0])),))
    row_keys, row_of, row_deg = np.unique(rows, return_inverse=True, return_counts=True)
    col_keys, col_of, col_deg = np.unique(cols, return_inverse=True, return_counts=True)
    isolated = (row_deg[row_of] == 1) & (col_deg[col_of] == 1)
    take_r, take_c, take_s = rows[isolated], cols[isolated], sims[isolated]
    solved = not isolated.all()
    if solved:
        rest = ~isolated
        r_keys, r_idx = np.unique(row_of[rest], return_inverse=True)
        c_keys, c_idx = np.unique(col_of[rest], return_inverse=True)
        w = sims[rest]
        # a matching has at most t pairs; bonus > t * (max sim - min(0, min sim)) makes one more pair always win
        t = min(len(r_keys), len(c_keys))
        bonus = t * (float(w.max()) - min(0.0, float(w.min()))) + 1.0
        weights = np.zeros((len(r_keys), len(c_keys)))
        weights[r_idx, c_idx] = w + bonus
        ok = np.zeros(weights.shape, dtype=bool)
        ok[r_idx, c_idx] = True
        value = np.zeros(weights.shape)
        value[r_idx, c_idx] = w
        r, c = linear_sum_assignment(weights, maximize=True)
        keep = ok[r, c]
        r, c = r[keep], c[keep]
        take_r = np.concatenate([take_r, row_keys[r_keys[r]]])
        take_c = np.concatenate([take_c, col_keys[c_keys[c]]])
        take_s = np.concatenate([take_s, value[r, c]])
    order = np.argsort(take_r, kind="stable")
    take_r, take_c, take_s = take_r[order], take_c[order], take_s[order]
    pairs = tuple(zip(take_r.tolist(), take_c.tolist(), take_s.tolist()))
    return Matching(float(take_s.sum()), pairs, solved)


def match_similarities(sim: np.ndarray, tau: float) -> Matching:
    """Definition 5 on a similarity matrix (rows: query columns, columns: lake columns)."""
    rows, cols = np.nonzero(sim >= tau)
    if len(rows) > 1 and (np.any(rows[1:] == rows[:-1]) or np.bincount(cols).max() > 1):
        return match_entries(rows, cols, sim[rows, cols])
    # no query column and no lake column has two admissible partners: every pair is isolated (rows come sorted)
    sims = sim[rows, cols].astype(np.float64)
    return Matching(float(sims.sum()), tuple(zip(rows.tolist(), cols.tolist(), sims.tolist())))


def unionability(query_vectors: np.ndarray, lake_vectors: np.ndarray, tau: float) -> Matching:
    """U(V_Q, V_i, tau) of Definition 5 with its column alignment (lake columns as row positions of ``lake_vectors``)."""
    if len(query_vectors) == 0 or len(lake_vectors) == 0:
        return EMPTY_MATCHING
    return match_similarities(similarity_matrix(query_vectors, lake_vectors), tau)
