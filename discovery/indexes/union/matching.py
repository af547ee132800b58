"""Exact table unionability U(V_Q, V_i, tau) of PGTUS Definition 5, with a lean path for the common cases.

Definition 5 scores a pair of vector sets by the heaviest matching among the *maximum t-matchings*: first the largest
number of one-to-one column pairs whose similarity is at least tau, then, among those, the largest total similarity.

Only admissible pairs (similarity >= tau) matter, and the optimum decomposes over the connected components of the
bipartite graph they form.  An *isolated* pair (its query column and its lake column have no other admissible
partner) is a component of its own and belongs to every optimum, so it is taken without solving anything; when every
admissible pair is isolated the matching is trivial.  The remaining pairs form a small assignment problem, solved
for maximum cardinality and, among those, maximum weight (:func:`_assign`): by scoring every injective map when
there are few (the usual case), else by ``scipy.optimize.linear_sum_assignment`` with every admissible pair weighted
``bonus + sim``, the bonus larger than any total similarity a matching can gain by dropping a pair.  Only the rows
and columns of non-isolated pairs enter the solver.

Similarities are inner products of the unit-normalised float32 column vectors, computed in float64 and rounded to
float32 (:func:`similarity_matrix`, :func:`pair_similarities`).  A float32 BLAS product would be faster, but its
rounding depends on the matrix shape, so the same pair could be admissible in one call and not in another, and the
bounds could miss the exact score by an ulp; the float64 product is accurate to ~1e-14, so its float32 rounding is the
same whatever the shape.  The exact score, the bounds and the exhaustive baseline therefore see the same numbers, and
since a float32 value >= 2^-19 is a multiple of 2^-42, a float64 sum of fewer than 2^10 admissible similarities is
exact for any tau above that: scores do not depend on summation order.  Pairs are reported sorted by query column;
both solvers are deterministic, so equal inputs give equal alignments.
"""
from __future__ import annotations

import itertools
import math
from collections import Counter
from dataclasses import dataclass
from functools import lru_cache

import numpy as np

from ...transforms.quantities import pair_mask


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


def screened_similarities(query_vectors: np.ndarray, lake_vectors: np.ndarray, tau: float) -> np.ndarray:
    """:func:`similarity_matrix` on every entry that can reach ``tau``; every other entry is a float32 BLAS product
    below tau.  Bounds and matchings read only the entries >= tau, so they see what the float64 product gives, at
    the cost of a float32 product plus the few entries within :func:`float32_product_error` of tau recomputed."""
    q = np.asarray(query_vectors, dtype=np.float32)
    v = np.asarray(lake_vectors, dtype=np.float32)
    sims = q @ v.T
    rows, cols = np.nonzero(sims >= tau - float32_product_error(q.shape[1]))
    sims[rows, cols] = pair_similarities(q[rows], v[cols])
    return sims


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
    # Python lists, not numpy: a table's pairs are a handful, and this runs once per scored table, so numpy's
    # per-call overhead (np.unique and friends) was most of a warm union query's time
    rows, cols = np.asarray(rows).tolist(), np.asarray(cols).tolist()
    sims = np.asarray(sims, dtype=np.float64).tolist()
    if n == 1:
        return Matching(sims[0], ((rows[0], cols[0], sims[0]),))
    row_deg, col_deg = Counter(rows), Counter(cols)
    taken: list[tuple] = []
    rest: list[tuple] = []
    for pair in zip(rows, cols, sims):
        (taken if row_deg[pair[0]] == 1 and col_deg[pair[1]] == 1 else rest).append(pair)
    solved = bool(rest)
    if solved:
        r_keys, c_keys = sorted({p[0] for p in rest}), sorted({p[1] for p in rest})
        r_pos, c_pos = {k: i for i, k in enumerate(r_keys)}, {k: i for i, k in enumerate(c_keys)}
        r_idx, c_idx = [r_pos[p[0]] for p in rest], [c_pos[p[1]] for p in rest]
        ok = np.zeros((len(r_keys), len(c_keys)), dtype=bool)
        ok[r_idx, c_idx] = True
        value = np.zeros(ok.shape)
        value[r_idx, c_idx] = [p[2] for p in rest]
        r, c = _assign(ok, value)
        taken += [(r_keys[i], c_keys[j], float(value[i, j])) for i, j in zip(r.tolist(), c.tolist())]
    taken.sort(key=lambda p: p[0])
    return Matching(float(np.sum([p[2] for p in taken])), tuple(taken), solved)


def _assign(ok: np.ndarray, value: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Rows and columns of the matched admissible cells (``ok``) of a maximum-cardinality matching that, among those,
    has the largest total ``value`` (0 outside ``ok``).

    The problems left after isolated pairs are taken are tiny (on the sample lake 1x2 to 3x5), so up to
    :data:`_ENUMERATED` injective row-to-column maps are all scored at once and the first best in lexicographic order
    is taken, which is exact (the sums are exact, see the module docstring) and deterministic.  Larger ones go to
    ``scipy.optimize.linear_sum_assignment`` with every admissible cell weighted ``bonus + sim``, the bonus larger
    than any total similarity a matching can gain by dropping a pair.  scipy is imported only then: importing
    ``scipy.optimize`` costs more than the rest of a cold union query.
    """
    n_rows, n_cols = ok.shape
    if n_rows > n_cols:
        c, r = _assign(ok.T, value.T)
        return r, c
    rows = np.arange(n_rows)
    if math.perm(n_cols, n_rows) <= _ENUMERATED:
        maps = _injections(n_rows, n_cols)
        count = ok[rows, maps].sum(axis=1)
        total = value[rows, maps].sum(axis=1)
        cols = maps[np.lexsort((-total, -count))[0]]
    else:
        from scipy.optimize import linear_sum_assignment

        w = value[ok]
        bonus = n_rows * (float(w.max()) - min(0.0, float(w.min()))) + 1.0
        rows, cols = linear_sum_assignment(np.where(ok, value + bonus, 0.0), maximize=True)
    keep = ok[rows, cols]
    return rows[keep], cols[keep]


#: Largest number of injective row-to-column maps :func:`_assign` scores by enumeration (7 x 7 has 5040).
_ENUMERATED = 5040


@lru_cache(maxsize=128)
def _injections(n_rows: int, n_cols: int) -> np.ndarray:
    """Every injective map of ``n_rows`` rows into ``n_cols >= n_rows`` columns, (maps, n_rows), lexicographic."""
    return np.array(list(itertools.permutations(range(n_cols), n_rows)), dtype=np.intp).reshape(-1, n_rows)


def match_similarities(sim: np.ndarray, tau: float) -> Matching:
    """Definition 5 on a similarity matrix (rows: query columns, columns: lake columns)."""
    rows, cols = np.nonzero(sim >= tau)
    if len(rows) > 1 and (np.any(rows[1:] == rows[:-1]) or np.bincount(cols).max() > 1):
        return match_entries(rows, cols, sim[rows, cols])
    # no query column and no lake column has two admissible partners: every pair is isolated (rows come sorted)
    sims = sim[rows, cols].astype(np.float64)
    return Matching(float(sims.sum()), tuple(zip(rows.tolist(), cols.tolist(), sims.tolist())))


def unionability(query_vectors: np.ndarray, lake_vectors: np.ndarray, tau: float,
                  query_quantities: np.ndarray | None = None, lake_quantities: np.ndarray | None = None) -> Matching:
    """U(V_Q, V_i, tau) of Definition 5 with its column alignment (lake columns as row positions of ``lake_vectors``);
    given both sides' quantity codes, pairs of incompatible quantities are not admissible
    (:mod:`discovery.transforms.quantities`)."""
    if len(query_vectors) == 0 or len(lake_vectors) == 0:
        return EMPTY_MATCHING
    sims = similarity_matrix(query_vectors, lake_vectors)
    if query_quantities is not None and lake_quantities is not None:
        sims[~pair_mask(query_quantities, lake_quantities)] = -1.0
    return match_similarities(sims, tau)
