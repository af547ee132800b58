"""Exact table unionability U(V_Q, V_i, tau) of PGTUS Definition 5.

Definition 5 scores a pair of vector sets by the heaviest matching among the *maximum t-matchings*: first the largest
number of one-to-one column pairs whose similarity is at least tau, then, among those, the largest total similarity.
That lexicographic optimum is one assignment problem: every admissible pair gets weight ``bonus + sim`` with a bonus
larger than any total similarity a matching can gain by dropping a pair, inadmissible pairs get 0, and
``scipy.optimize.linear_sum_assignment`` maximises the total.  One more admissible pair always outweighs any
difference in similarity, so the optimum has maximum cardinality and, among those, maximum weight.

Similarities are inner products of the (unit-normalised) column vectors, computed in float32 like every other
similarity in the union package and accumulated in float64, so the exact score, the bounds and the exhaustive
baseline see the same numbers.  ``linear_sum_assignment`` is deterministic for a given matrix, so equal inputs give
equal alignments; rows and columns without an admissible pair are dropped before solving, which keeps the assignment
problem as small as the admissible graph.
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


EMPTY_MATCHING = Matching(0.0, ())


def similarity_matrix(query_vectors: np.ndarray, lake_vectors: np.ndarray) -> np.ndarray:
    """Inner products (q, m) of two sets of unit vectors, float32 products returned as float64."""
    q = np.asarray(query_vectors, dtype=np.float32)
    v = np.asarray(lake_vectors, dtype=np.float32)
    return (q @ v.T).astype(np.float64)


def match_similarities(sim: np.ndarray, tau: float) -> Matching:
    """Definition 5 on a precomputed similarity matrix (rows: query columns, columns: lake columns)."""
    admissible = sim >= tau
    if not admissible.any():
        return EMPTY_MATCHING
    rows = np.flatnonzero(admissible.any(axis=1))
    cols = np.flatnonzero(admissible.any(axis=0))
    sub = sim[np.ix_(rows, cols)]
    ok = admissible[np.ix_(rows, cols)]
    weights = sub[ok]
    # A matching has at most t pairs; bonus > t * (max sim - min(0, min sim)) makes one more pair always win.
    t = min(len(rows), len(cols))
    bonus = t * (float(weights.max()) - min(0.0, float(weights.min()))) + 1.0
    r, c = linear_sum_assignment(np.where(ok, sub + bonus, 0.0), maximize=True)
    keep = ok[r, c]
    r, c = r[keep], c[keep]
    sims = sub[r, c]
    order = np.argsort(rows[r], kind="stable")
    pairs = tuple(
        (int(rows[r[i]]), int(cols[c[i]]), float(sims[i])) for i in order
    )
    return Matching(float(sims.sum()), pairs)


def unionability(query_vectors: np.ndarray, lake_vectors: np.ndarray, tau: float) -> Matching:
    """U(V_Q, V_i, tau) of Definition 5 with its column alignment (lake columns as row positions of ``lake_vectors``)."""
    if len(query_vectors) == 0 or len(lake_vectors) == 0:
        return EMPTY_MATCHING
    return match_similarities(similarity_matrix(query_vectors, lake_vectors), tau)
