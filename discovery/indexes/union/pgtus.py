"""``pgtus++`` (default) and ``pgtus``: exact's top-k through PGTUS's stages, with candidate generation that cannot
miss.

1. Bound every table from the cones (:mod:`.cones`): every column's angle to its anchor (a k-means split of its base
   centroid) and the query's best cosine with each anchor give an upper bound of the table's score in a few passes
   over the columns, with no column similarity; tables whose bound is 0 hold no admissible pair.
2. Stream the others best first, in batches of doubling size, through member-level Algorithm 3 bounds into EBBP
   (Alg. 5, ``pgtus++``) or BBP (Alg. 4, ``pgtus``), and stop as soon as the next cone bound is below the pruner's
   floor (the k-th exact score, or for EBBP also the k-th lower bound).  Only the first batch is picked from all
   tables; it sets the floor, and only the tables still reaching it are sorted.

Where the cones do not narrow the lake (weakly clustered columns: on UGEN-V1 the cone bounds of 96% of the tables
reach the k-th score), comparing the reachable tables' columns one batch at a time would cost more than one product
with the whole lake, so when the tables reaching the floor the first batch's lower bounds set hold more than
:data:`CONE_WORK_SHARE` of the lake's columns, the lake is scored as ``exact`` does (before any exact matching).
Either way the answer is exact's top-k, scores and ties (by table id) included.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np

from .cones import directions
from .exact import exhaustive
from .pruning import stream_prune
from .results import SearchStats, UnionResult, UnionSearch
from .scoring import CandidateSet

#: candidates in the first batch of the best-first stream: at least 2 phi_r and FIRST_SHARE of the reachable tables;
#: later batches double.  The first batch sets the floor that decides whether the stream pays; picked from the 20
#: best cone bounds, it left the floor far below the k-th score on some queries of the generated 100k-table lake
#: (0.97 against 3.68), from the best 1% it reached the k-th score on all 20 queries inspected.
FIRST_BATCH = 16
FIRST_SHARE = 0.01
#: share of the lake's columns the stream may compare with the query.  Beyond it the lake is scored exhaustively, as
#: ``exact`` does: a streamed column costs about three times what a column of the lake-wide product costs (gathered
#: rows, member bounds), and the cone bounds about a fifth of the product (generated 100k-table lake).
CONE_WORK_SHARE = 0.2


def pgtus_search(index, query, k, tau, phi_r, exclude, pruner_type, method, arrival, q_codes=None) -> UnionSearch:
    """Exact top-k over :class:`~.search.UnionIndex` ``index``: every table the cones leave reachable, streamed best
    first by its cone bound through the pruner (``pruner_type``: EBBP or BBP); the lake is scored exhaustively
    instead when the stream would compare the query with more than ``CONE_WORK_SHARE`` of the lake's columns.  With
    ``arrival`` "table_id" every reachable table is bounded, in table order, and nothing stops early."""
    keys = index.cones.table_bounds(directions(query), tau)
    if exclude >= 0:
        keys[exclude] = 0.0
    tix = np.flatnonzero(keys > 0)  # candidate c is table tix[c]; ascending, so ties by candidate are by id
    ranked_arrival = arrival == "ranked"
    cone_upper = keys[tix]
    ties = index.table_ids[tix]
    batch_of = np.zeros(len(tix), dtype=np.int64)
    slot = np.zeros(len(tix), dtype=np.int64)
    batches: list[CandidateSet] = []

    def materialise(cands: np.ndarray) -> list[tuple[int, float, float]]:
        batch = index.candidates(query, tau, tix[cands], q_codes=q_codes)
        batch_of[cands], slot[cands] = len(batches), np.arange(len(cands))
        batches.append(batch)
        lower, upper = batch.bounds(pruner.floor())
        upper = np.minimum(upper, cone_upper[cands])
        feed = np.lexsort((ties[cands], -upper)) if ranked_arrival else np.arange(len(cands))
        # below the floor the pruner would drop them unscored, and their lower bounds could not raise the floor
        feed = feed[(upper[feed] > 0) & (upper[feed] >= pruner.floor())]
        return [(int(cands[i]), float(lower[i]), float(upper[i])) for i in feed.tolist()]

    def scorer(c: int):
        m = batches[batch_of[c]].match(int(slot[c]))
        return m.score, m.pairs

    pruner = pruner_type(phi_r, ties, scorer)
    if ranked_arrival:
        columns = index.col_offsets[tix + 1] - index.col_offsets[tix]
        first = max(FIRST_BATCH, 2 * phi_r, int(FIRST_SHARE * len(tix)))
        bounded, settled = stream_prune(pruner, cone_upper, materialise, first, columns,
                                        CONE_WORK_SHARE * len(index.vectors))
    else:
        for c, lower, upper in materialise(np.arange(len(tix))):
            pruner.offer(c, lower, upper)
        bounded, settled = len(tix), True
    stats = SearchStats(method, len(tix), 0, pruner.exact, sum(b.solved for b in batches), bounded)
    if not settled:
        return exhaustive(index, query, k, tau, exclude, stats, q_codes)
    ranked = pruner.finish()
    results = [UnionResult(int(ties[r.candidate]), r.score, index.alignment(int(tix[r.candidate]), r.payload))
               for r in ranked[:k] if r.score > 0]
    stats = replace(stats, candidates_after_pruning=len(ranked), exact_matchings=pruner.exact,
                    assignments_solved=sum(b.solved for b in batches))
    return UnionSearch(results, stats, "unionability")
