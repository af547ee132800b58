"""The two methods whose candidates come from an HNSW graph, and so can miss: ``pgtus++-approx`` and ``starmie``.

* ``pgtus++-approx`` - the paper's candidate generation: HNSW over centroids, the top-phi_c centroids per query
  column, refinement (Alg. 2) to the phi_ref best tables (ties at the cut kept), then bounds and EBBP.  Refinement
  sums centroid-query similarities, so it ranks by centroid proximity rather than by Definition 5, and its cut loses
  answers where columns cluster weakly.  When its candidates hold fewer than k unionable tables it answers with
  exact's top-k (:func:`.exact.exhaustive`), so it too returns k tables whenever k tables have an admissible pair.
* ``starmie`` - HNSW over all column vectors, candidate tables from every query column's k' nearest columns, bounds
  with every column its own partition, BBP, exact scores (the baseline of the PGTUS paper).

Over its candidates each is exact: bounds, pruning and Definition 5 scores (:func:`pruned_search`).
"""
from __future__ import annotations

from collections.abc import Callable

import numpy as np

from .exact import exhaustive
from .hnsw import knn
from .pruning import base_prune, enhanced_prune
from .refinement import refine
from .results import SearchStats, UnionResult, UnionSearch
from .scoring import CandidateSet

APPROXIMATE = "pgtus++-approx"


def pruned_search(index, method: str, cands: CandidateSet, tix: np.ndarray, prune: Callable, k: int, phi_r: int,
                  arrival: str) -> UnionSearch:
    """Bounds, pruning and exact scores over candidates ``tix`` of :class:`~.search.UnionIndex` ``index`` (ranked
    by candidate generation, or by table id with ``arrival`` "table_id")."""
    lower, upper = cands.bounds()
    live = np.flatnonzero(upper > 0)
    if arrival == "table_id":
        live = live[np.argsort(tix[live], kind="stable")]

    def scorer(i: int):
        m = cands.match(int(i))
        return m.score, m.pairs

    ranked, exact = prune(live, lower, upper, index.table_ids[tix], scorer, phi_r)
    results = [UnionResult(int(index.table_ids[tix[r.candidate]]), r.score,
                           index.alignment(int(tix[r.candidate]), r.payload))
               for r in ranked[:k] if r.score > 0]
    stats = SearchStats(method, len(tix), len(ranked), exact, cands.solved, len(tix))
    return UnionSearch(results, stats, "unionability")


def approximate_search(index, query, k, tau, phi_c, phi_ref, phi_r, exclude, arrival, q_codes=None) -> UnionSearch:
    """The paper's candidate generation (HNSW over centroids, Algorithm 2), then bounds and EBBP; exact's answer
    when its candidates hold fewer than k unionable tables."""
    labels, _ = knn(index.graph("centroids"), query, min(phi_c, len(index.centroids)))
    labels = labels.astype(np.int64)
    pair_sims = np.einsum("qd,qpd->qp", query.astype(np.float64), index.centroids[labels].astype(np.float64))
    tix, _ = refine(labels, pair_sims, index.iw_offsets, index.iw_tables, index.iw_counts, phi_ref, exclude)
    found = pruned_search(index, APPROXIMATE, index.candidates(query, tau, tix, q_codes=q_codes), tix, enhanced_prune,
                          k, phi_r, arrival)
    if len(found.results) == k:
        return found
    return exhaustive(index, query, k, tau, exclude, found.stats, q_codes)


def starmie_search(index, query, k, tau, phi_r, k_prime, exclude, arrival, q_codes=None) -> UnionSearch:
    """Starmie: the tables of every query column's ``k_prime`` nearest columns (HNSW over all columns), in order of
    their best neighbour similarity, then per-column bounds, BBP and exact scores."""
    labels, dist = knn(index.graph("columns"), query, min(k_prime, len(index.vectors)))
    tables = index.col_table[labels.reshape(-1)]
    sims = 1.0 - dist.reshape(-1).astype(np.float64)
    order = np.lexsort((tables, -sims))
    tix = tables[order][np.sort(np.unique(tables[order], return_index=True)[1])]
    tix = tix[tix != exclude]
    return pruned_search(index, "starmie", index.candidates(query, tau, tix, partitioned=False, q_codes=q_codes), tix,
                         base_prune, k, phi_r, arrival)
