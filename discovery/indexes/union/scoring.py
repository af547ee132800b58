"""Exact Definition 5 scores for many tables from one similarity product per query.

Every method that returns unionability scores computes the query's similarities with all the columns it looks at in
one BLAS product (see ``matching`` for how it is rounded) and reads bounds and exact scores from that matrix; per-table
work is then limited to the admissible pairs, and an assignment problem is solved only where admissible pairs compete.

* :class:`CandidateSet` - a candidate list (refinement or Starmie output): similarities of its columns, MWMTO bounds
  (Algorithm 3) and exact scores on demand for the pruning loop.
* :func:`exhaustive_scores` - the ``exact`` baseline: a float32 product over the whole lake in blocks finds every
  pair that can reach tau (threshold lowered by the float32 error bound), those pairs are recomputed as
  ``matching`` defines similarities, and tables whose admissible pairs are all isolated are scored with one
  vectorised sum, the rest one by one.

A pair is admissible when its similarity reaches tau *and* its two columns' quantities are compatible
(:mod:`discovery.transforms.quantities`: a number column of years never pairs with one of kilograms).  Both take the
quantity codes of the query's and the lake's columns (None: every pair compatible); the rule only removes pairs, so
every upper bound computed without it (cones, int8 codes) still bounds the score with it.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from ...transforms.quantities import pair_mask, pairs_compatible
from .bounds import mwmto_bounds
from .matching import (Matching, float32_product_error, match_entries, match_similarities, pair_similarities,
                       screened_similarities)

#: lake columns per block of the exhaustive product; bounds the (q, block) similarity block in memory.
_BLOCK = 65536


class CandidateSet:
    """Similarities of a query with the columns of candidate tables, their bounds and exact scores.

    Similarities are screened (:func:`~discovery.indexes.union.matching.screened_similarities`): exact wherever they can
    reach tau, which is all that bounds and matchings read.

    Candidate i owns columns ``col_offsets[i]:col_offsets[i + 1]`` of ``sims``; its partitions start at the local
    column positions ``part_starts[part_offsets[i]:part_offsets[i + 1]]`` (members of a partition are contiguous).
    ``solved`` counts the exact scorings that needed an assignment problem.
    """

    def __init__(self, query: np.ndarray, columns: np.ndarray, col_offsets: np.ndarray, part_starts: np.ndarray,
                 part_offsets: np.ndarray, tau: float, query_quantities: np.ndarray | None = None,
                 column_quantities: np.ndarray | None = None) -> None:
        self.sims = screened_similarities(query, columns, tau)
        if query_quantities is not None and column_quantities is not None:
            self.sims[~pair_mask(query_quantities, column_quantities)] = -1.0
        self.col_offsets = col_offsets
        self.part_starts = part_starts
        self.part_offsets = part_offsets
        self.tau = tau
        self.solved = 0

    def bounds(self, floor: float = -math.inf) -> tuple[np.ndarray, np.ndarray]:
        """MWMTO (lower, upper) bounds of every candidate; (0, 0) for candidates without an admissible pair; only
        an upper bound below ``floor`` (and lower bound 0) for candidates that cannot reach it."""
        return mwmto_bounds(self.sims, self.tau, self.part_starts, self.part_offsets, floor)

    def match(self, i: int) -> Matching:
        """Definition 5 for candidate i, lake columns as positions within the candidate."""
        m = match_similarities(self.sims[:, self.col_offsets[i]:self.col_offsets[i + 1]], self.tau)
        self.solved += m.solved
        return m


@dataclass(frozen=True)
class ExhaustiveScores:
    """Exact scores of every table with at least one admissible pair (``tables`` ascending, ``scores`` aligned)."""

    tables: np.ndarray
    scores: np.ndarray
    solved: int
    entry_table: np.ndarray  # admissible pairs, grouped by table: owning table,
    entry_query: np.ndarray  # query column,
    entry_column: np.ndarray  # global column row,
    entry_sim: np.ndarray  # similarity

    def match(self, table: int, col_offsets: np.ndarray) -> Matching:
        """The optimal matching of one scored table, lake columns as positions within the table."""
        a, b = np.searchsorted(self.entry_table, [table, table + 1])
        return match_entries(self.entry_query[a:b], self.entry_column[a:b] - col_offsets[table], self.entry_sim[a:b])


def exhaustive_scores(query: np.ndarray, vectors: np.ndarray, col_table: np.ndarray, col_offsets: np.ndarray,
                      tau: float, query_quantities: np.ndarray | None = None,
                      column_quantities: np.ndarray | None = None) -> ExhaustiveScores:
    """U(V_Q, V_i, tau) of every table i whose columns (rows ``col_offsets[i]:col_offsets[i+1]`` of ``vectors``, owner
    ``col_table``, quantity codes ``column_quantities``) have an admissible pair with the query; all other tables
    score 0."""
    query = np.asarray(query, dtype=np.float32)
    floor = tau - float32_product_error(query.shape[1])
    q_parts, c_parts = [], []
    for start in range(0, len(vectors), _BLOCK):
        r, c = np.nonzero(query @ vectors[start:start + _BLOCK].T >= floor)
        q_parts.append(r)
        c_parts.append(c + start)
    entry_q = np.concatenate(q_parts) if q_parts else np.zeros(0, dtype=np.int64)
    entry_c = np.concatenate(c_parts) if c_parts else np.zeros(0, dtype=np.int64)
    entry_s = pair_similarities(query[entry_q], vectors[entry_c])
    ok = entry_s >= tau
    if query_quantities is not None and column_quantities is not None:
        ok &= pairs_compatible(np.asarray(query_quantities)[entry_q], np.asarray(column_quantities)[entry_c])
    entry_q, entry_c, entry_s = entry_q[ok], entry_c[ok], entry_s[ok].astype(np.float64)
    order = np.argsort(entry_c, kind="stable")  # columns are stored grouped by table, so this groups tables
    entry_q, entry_c, entry_s = entry_q[order], entry_c[order], entry_s[order]
    entry_t = col_table[entry_c]

    # a pair is isolated when its query column has no other admissible column in the table and its column no other
    # admissible query column; a table of isolated pairs only scores the plain sum of their similarities
    q_count = len(query)
    _, row_of, row_deg = np.unique(entry_t * q_count + entry_q, return_inverse=True, return_counts=True)
    _, col_of, col_deg = np.unique(entry_c, return_inverse=True, return_counts=True)
    isolated = (row_deg[row_of] == 1) & (col_deg[col_of] == 1)
    tables, first = np.unique(entry_t, return_index=True)
    bounds = np.append(first, len(entry_t))
    trivial = np.logical_and.reduceat(isolated, first) if len(first) else np.zeros(0, dtype=bool)
    scores = np.add.reduceat(entry_s, first) if len(first) else np.zeros(0)
    solved = 0
    for j in np.flatnonzero(~trivial):
        a, b = bounds[j], bounds[j + 1]
        m = match_entries(entry_q[a:b], entry_c[a:b], entry_s[a:b])
        scores[j] = m.score
        solved += m.solved
    return ExhaustiveScores(tables, scores, solved, entry_t, entry_q, entry_c, entry_s)
