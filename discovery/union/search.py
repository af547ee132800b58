"""In-memory union-search index over one snapshot, and the search methods.

:meth:`UnionIndex.build` turns the snapshot's arrays (column vectors, centroids, Algorithm 1 partitions, table vectors)
into query-ready structures once; every query reuses them.  Column vectors are stored grouped by table and, within a
table, by partition, so a partition's members are a contiguous run and Algorithm 3 reads them with one reduction.

* ``exact``  - U(V_Q, V_i, tau) of Definition 5 for every table: one blocked BLAS product with the whole lake, then
  only the admissible pairs; tables without one score 0 and need nothing more (see ``scoring``).
* ``pgtus++`` (default), ``pgtus`` - exact's top-k through PGTUS's stages, with candidate generation that cannot miss:
  1. bound every table from the cones (``cones``): every column's angle to its anchor (a k-means split of its base
     centroid) and the query's best cosine with each anchor give an upper bound of the table's score in a few passes
     over the columns, with no column similarity; tables whose bound is 0 hold no admissible pair;
  2. stream the others best first, in batches of doubling size, through member-level Algorithm 3 bounds into EBBP
     (Alg. 5, ``pgtus++``) or BBP (Alg. 4, ``pgtus``), and stop as soon as the next cone bound is below the pruner's
     floor (the k-th exact score, or for EBBP also the k-th lower bound).  Only the first batch is picked from all
     tables; it sets the floor, and only the tables still reaching it are sorted.
  Where the cones do not narrow the lake (weakly clustered columns: on UGEN-V1 the cone bounds of 96% of the tables
  reach the k-th score), comparing the reachable tables' columns one batch at a time would cost more than one
  product with the whole lake, so when the tables reaching the floor the first batch's lower bounds set hold more
  than ``CONE_WORK_SHARE`` of the lake's columns, the lake is scored as ``exact`` does (before any exact matching).
  Either way the answer is exact's top-k, scores and ties (by table id) included, so it holds k tables whenever k
  tables have an admissible pair.
* ``pgtus++-approx`` - the paper's candidate generation: HNSW over centroids, the top-phi_c centroids per query
  column, refinement (Alg. 2) to the phi_ref best tables (ties at the cut kept), then bounds and EBBP.  Refinement
  sums centroid-query similarities, so it ranks by centroid proximity rather than by Definition 5, and its cut loses
  answers where columns cluster weakly (recall@10 against ``exact`` 0.93 on UGEN-V1 at the defaults).  When its
  candidates hold fewer than k unionable tables it answers with exact's top-k, so it too returns k tables whenever
  k tables have an admissible pair.
* ``starmie`` - HNSW over all column vectors, candidate tables from every query column's k' nearest columns, bounds
  with every column its own partition, BBP, exact scores (the baseline of the PGTUS paper).
* ``tactus`` - table-vector HNSW for the top-3k tables, adaptive cut, dual-evidence rerank (TACTUS Alg. 2).

All but ``tactus`` return exact Definition 5 scores; the pruning is exact over the candidates, so only
``pgtus++-approx`` and ``starmie`` can miss, through candidate generation.  Tables scoring 0 (no admissible pair) are
never returned.  Ties rank by table id.  HNSW indexes use M = 16 and efConstruction = 200 (the paper's setting) and
are built on the first query that needs them.

Pruning keeps ``phi_r`` tables in H.  In the paper phi_r (3k) sizes a pool ranked by approximate scores and re-ranked
exactly afterwards; here H holds exact Definition 5 scores, so the top-k of the top-phi_r is the top-k for every
phi_r >= k and a larger phi_r only lowers H's threshold and costs exact matchings.  The default is therefore
phi_r = k.

Defaults: tau = 0.4 (the paper fixes none; chosen with ``[embed] header_weight`` 0.4 by exact search on UGEN-V1,
fivethirtyeight and the sample lake, see :class:`discovery.config.EmbedConfig`: over the combined name-and-values
similarity, a column pair whose names differ keeps at most 0.6 of its value similarity, so 0.7 would drop synonymous
columns outright), phi_r = k; for
``pgtus++-approx`` phi_c = 1 and phi_ref = 3k, the cheapest setting reaching recall@10 >= 0.95 against ``exact`` on
the generated 100k-table lake (benchmarks/union.py); k' = 10k for Starmie
(inside the paper's range 1k..30k); tau_abs = 0.5 and tau_drop = 0.2 (TACTUS defaults).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import hnswlib
import numpy as np

from .cones import build_cones, directions
from .csr import expand_ranges, offsets_from_counts, offsets_from_owners
from .matching import unit_rows
from .partitioning import PartitionArrays
from .pruning import BasePruner, EnhancedPruner, base_prune, enhanced_prune, stream_prune
from .refinement import refine
from .results import Alignment, SearchStats, UnionResult, UnionSearch
from .scoring import CandidateSet, exhaustive_scores
from .tactus import DEFAULT_TAU_ABS, DEFAULT_TAU_DROP, adaptive_cut, alignment_scores

METHODS = ("pgtus++", "pgtus", "pgtus++-approx", "starmie", "tactus", "exact")
APPROXIMATE = "pgtus++-approx"
ARRIVALS = ("ranked", "table_id")
DEFAULT_TAU = 0.4
DEFAULT_PHI_C = 1
DEFAULT_PHI_REF_PER_K = 3
DEFAULT_K_PRIME_PER_K = 10
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
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

def _hnsw(vectors: np.ndarray, space: str, threads: int) -> hnswlib.Index:
    index = hnswlib.Index(space=space, dim=vectors.shape[1])
    index.init_index(max_elements=max(1, len(vectors)), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                     random_seed=0)
    index.add_items(vectors, np.arange(len(vectors)), num_threads=threads)
    return index


def _knn(index: hnswlib.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    index.set_ef(max(k, 64))
    return index.knn_query(query, k=k, num_threads=1)


class UnionIndex:
    """Query-ready structures of one snapshot for union search; build once, query many times."""

    def __init__(self) -> None:
        raise TypeError("use UnionIndex.build(...)")

    @classmethod
    def build(cls, column_vectors: np.ndarray, column_table_ids: np.ndarray, column_ordinals: np.ndarray,
              centroids: np.ndarray, partitions: PartitionArrays, table_vectors: np.ndarray | None = None,
              table_vector_ids: np.ndarray | None = None, *, threads: int = 1,
              column_quantities: np.ndarray | None = None) -> "UnionIndex":
        """Index a snapshot.

        ``column_vectors`` (n, d) unit-normalised; ``column_table_ids`` (n,) int64; ``column_ordinals`` (n,);
        ``centroids`` (c, d) the base centroids; ``partitions`` Algorithm 1's output for every table (every column a
        member of exactly one partition of its table); ``table_vectors`` (t, d) for TACTUS, one per id in
        ``table_vector_ids`` (default: the sorted distinct ``column_table_ids``).  ``threads`` is used to build the
        HNSW indexes over columns and tables.  ``column_quantities`` (n,) are the columns' quantity codes
        (:mod:`discovery.quantities`; None: every pair compatible).
        """
        self = object.__new__(cls)
        table_ids = np.asarray(column_table_ids, dtype=np.int64)
        ordinals = np.asarray(column_ordinals, dtype=np.int64)
        order = np.lexsort((ordinals, table_ids))
        vectors = unit_rows(np.asarray(column_vectors)[order])
        ordinals = ordinals[order]
        self.dim = vectors.shape[1]
        self.threads = threads
        self.table_ids, col_counts = np.unique(table_ids[order], return_counts=True)
        self.col_offsets = offsets_from_counts(col_counts)
        self.col_table = np.repeat(np.arange(len(self.table_ids)), col_counts)
        self.centroids = np.asarray(centroids, dtype=np.float32)
        member_rows, part_order = self._build_partitions(partitions, ordinals)
        self.vectors = np.ascontiguousarray(vectors[member_rows])
        self.ordinals = ordinals[member_rows]
        self.quantities = (None if column_quantities is None
                           else np.asarray(column_quantities, dtype=np.int16)[order][member_rows])
        self.cones = build_cones(self.vectors, self.col_table, self.part_starts, self.centroids, partitions,
                                 part_order)
        self.table_vectors = None
        if table_vectors is not None:
            tv_ids = self.table_ids if table_vector_ids is None else np.asarray(table_vector_ids, dtype=np.int64)
            tix = self._tix(tv_ids)
            if (tix < 0).any():
                raise ValueError("table vectors given for tables without columns")
            # Table vectors may live in another space than column vectors (a trained table encoder's output).
            tv = np.zeros((len(self.table_ids), np.asarray(table_vectors).shape[1]), dtype=np.float32)
            tv[tix] = unit_rows(table_vectors)
            self.table_vectors = tv
        self._centroid_index = None
        self._column_index = None
        self._table_index = None
        return self

    @property
    def graphs(self) -> int:
        """HNSW graphs built so far: they are built on the first query that needs them, after the index was cached
        and measured, so a service re-measures its cache entry when this changes."""
        return sum(g is not None for g in (self._centroid_index, self._column_index, self._table_index))

    def _tix(self, ids: np.ndarray) -> np.ndarray:
        """Internal table index of every table id, -1 where unknown."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.table_ids, ids)
        pos = np.minimum(pos, len(self.table_ids) - 1)
        return np.where(self.table_ids[pos] == ids, pos, -1)

    def _build_partitions(self, parts: PartitionArrays, ordinals: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Partition layout and inverted index I_w; returns the column rows (in (table, ordinal) order) listed
        partition by partition, which becomes the storage order of the columns, and the row in ``parts`` of every
        partition in index order."""
        part_tix = self._tix(parts.table_ids)
        if (part_tix < 0).any():
            raise ValueError("partitions refer to tables without columns")
        order = np.argsort(part_tix, kind="stable")
        part_tix = part_tix[order]
        n_tables = len(self.table_ids)
        self.part_offsets = offsets_from_owners(part_tix, n_tables)

        m_pos, m_part = expand_ranges(parts.member_offsets, order)
        member_rows = self._rows(part_tix[m_part], parts.member_ordinals[m_pos], ordinals)
        if len(member_rows) != len(ordinals) or (np.bincount(member_rows, minlength=len(ordinals)) != 1).any():
            raise ValueError("every column must be a member of exactly one partition of its table")
        sizes = np.bincount(m_part, minlength=len(order))
        if (sizes == 0).any():
            raise ValueError("every partition needs at least one member column")
        self.part_starts = offsets_from_counts(sizes)[:-1]

        # inverted index I_w: centroid -> (table, number of its columns under the centroid)
        w_pos, w_part = expand_ranges(parts.iw_offsets, order)
        w_cent = parts.iw_centroid_ids[w_pos]
        w_tix = part_tix[w_part]
        key = w_cent * n_tables + w_tix
        uniq, inverse = np.unique(key, return_inverse=True)
        self.iw_counts = np.bincount(inverse, weights=parts.iw_counts[w_pos]).astype(np.int64)
        self.iw_tables = (uniq % n_tables).astype(np.int64)
        self.iw_offsets = offsets_from_owners(uniq // n_tables, len(self.centroids))
        return member_rows, order

    def _rows(self, tix: np.ndarray, wanted_ordinals: np.ndarray, ordinals: np.ndarray) -> np.ndarray:
        """Column rows (in (table, ordinal) order) of (table index, ordinal) pairs."""
        span = int(ordinals.max()) + 1 if len(ordinals) else 1
        keys = self.col_table * span + ordinals
        wanted = tix * span + wanted_ordinals
        rows = np.minimum(np.searchsorted(keys, wanted), len(keys) - 1)
        if (keys[rows] != wanted).any():
            raise ValueError("partition members refer to unknown columns")
        return rows

    @property
    def table_count(self) -> int:
        return len(self.table_ids)

    # candidates and exact scoring -------------------------------------------------------------------------------

    def _candidates(self, query: np.ndarray, tau: float, tix: np.ndarray, partitioned: bool = True,
                    q_codes: np.ndarray | None = None) -> CandidateSet:
        """Similarities of the query with every column of the candidate tables ``tix`` in one product; partitions
        are Algorithm 1's, or every column its own (``partitioned=False``, Starmie's bounds)."""
        rows, owner = expand_ranges(self.col_offsets, tix)
        col_offsets = offsets_from_owners(owner, len(tix))
        if partitioned:
            p_pos, p_owner = expand_ranges(self.part_offsets, tix)
            part_starts = self.part_starts[p_pos] - self.col_offsets[tix[p_owner]] + col_offsets[p_owner]
            part_offsets = offsets_from_owners(p_owner, len(tix))
        else:
            part_starts, part_offsets = np.arange(len(rows), dtype=np.int64), col_offsets
        c_codes = None if q_codes is None or self.quantities is None else self.quantities[rows]
        return CandidateSet(query, self.vectors[rows], col_offsets, part_starts, part_offsets, tau, q_codes, c_codes)

    def _candidate_bounds(self, query: np.ndarray, tau: float, tix: np.ndarray,
                          q_codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """MWMTO (lower, upper) bounds of the tables ``tix``."""
        return self._candidates(unit_rows(query), tau, np.asarray(tix, dtype=np.int64), q_codes=q_codes).bounds()

    def _alignment(self, tix: int, pairs: Alignment) -> Alignment:
        ords = self.ordinals[self.col_offsets[tix]:self.col_offsets[tix + 1]]
        return tuple((q, int(ords[c]), s) for q, c, s in pairs)

    def _score(self, query: np.ndarray, tix: int, tau: float,
               q_codes: np.ndarray | None = None) -> tuple[float, Alignment]:
        """U(V_Q, V_tix, tau) and its alignment for one table."""
        m = self._candidates(unit_rows(query), tau, np.array([tix], dtype=np.int64), q_codes=q_codes).match(0)
        return m.score, self._alignment(tix, m.pairs)

    # methods ------------------------------------------------------------------------------------------------------

    def search(self, query_column_vectors: np.ndarray, k: int = 10, method: str = "pgtus++", *,
               tau: float = DEFAULT_TAU, phi_c: int = DEFAULT_PHI_C, phi_ref: int | None = None,
               phi_r: int | None = None, k_prime: int | None = None, exclude_table_id: int | None = None,
               query_table_vector: np.ndarray | None = None, tau_abs: float = DEFAULT_TAU_ABS,
               tau_drop: float = DEFAULT_TAU_DROP, arrival: str = "ranked",
               query_quantities: np.ndarray | None = None) -> UnionSearch:
        """Top-``k`` tables unionable with a query given as its column vectors (q, d) and its columns' quantity
        codes (``query_quantities``; None: every pair compatible, as when the index has none).

        ``exclude_table_id`` drops the query's own table when the query is a lake table.  ``query_table_vector`` is
        the query's table vector, needed by ``tactus``.  ``phi_c`` and ``phi_ref`` apply to ``pgtus++-approx`` only.
        ``arrival`` is the order in which candidates reach the pruning: "ranked" as candidate generation ranks them
        (pgtus / pgtus++: cone upper bound, streamed best first with the early stop; pgtus++-approx: refinement
        score; starmie: best neighbour similarity), "table_id" ascending table id, as a scan of centroid partitions
        in storage order would deliver them (pgtus / pgtus++ then bound every candidate and stop nowhere); results
        are the same, the work spent differs.  Other parameters default as described in the module docstring.
        """
        if method not in METHODS:
            raise ValueError(f"unknown union method {method!r}; expected one of {', '.join(METHODS)}")
        if arrival not in ARRIVALS:
            raise ValueError(f"unknown arrival order {arrival!r}; expected one of {', '.join(ARRIVALS)}")
        query = np.asarray(query_column_vectors, dtype=np.float32)
        if query.ndim != 2 or query.shape[1] != self.dim or len(query) == 0:
            raise ValueError(f"query must be a non-empty (q, {self.dim}) array of column vectors")
        if k < 1:
            raise ValueError("k must be at least 1")
        phi_r = k if phi_r is None else phi_r
        if phi_r < k:
            raise ValueError("phi_r must be at least k")
        query = unit_rows(query)
        exclude = -1
        if exclude_table_id is not None:
            exclude = int(self._tix(np.array([exclude_table_id]))[0])
        q_codes = (None if query_quantities is None or self.quantities is None
                   else np.asarray(query_quantities, dtype=np.int16))
        if method == "exact":
            return self._exact(query, k, tau, exclude, q_codes)
        if method == "tactus":
            return self._tactus(query, k, exclude, query_table_vector, tau_abs, tau_drop)
        if method == "starmie":
            k_prime = DEFAULT_K_PRIME_PER_K * k if k_prime is None else k_prime
            return self._starmie(query, k, tau, phi_r, k_prime, exclude, arrival, q_codes)
        if method == APPROXIMATE:
            phi_ref = DEFAULT_PHI_REF_PER_K * k if phi_ref is None else phi_ref
            return self._approximate(query, k, tau, phi_c, phi_ref, phi_r, exclude, arrival, q_codes)
        return self._pgtus(query, k, tau, phi_r, exclude, EnhancedPruner if method == "pgtus++" else BasePruner,
                           method, arrival, q_codes)

    def _exact(self, query: np.ndarray, k: int, tau: float, exclude: int,
               q_codes: np.ndarray | None = None) -> UnionSearch:
        found = exhaustive_scores(query, self.vectors, self.col_table, self.col_offsets, tau, q_codes,
                                  None if q_codes is None else self.quantities)
        keep = (found.scores > 0) & (found.tables != exclude)
        tables, scores = found.tables[keep], found.scores[keep]
        top = np.lexsort((self.table_ids[tables], -scores))[:k]
        results = []
        for i in top:
            t = int(tables[i])
            m = found.match(t, self.col_offsets)
            results.append(UnionResult(int(self.table_ids[t]), float(scores[i]), self._alignment(t, m.pairs)))
        stats = SearchStats("exact", len(self.table_ids) - (exclude >= 0), int(keep.sum()), int(keep.sum()),
                            found.solved)
        return UnionSearch(results, stats, "unionability")

    def _pruned(self, method: str, cands: CandidateSet, tix: np.ndarray, prune: Callable, k: int, phi_r: int,
                arrival: str) -> UnionSearch:
        """Bounds, pruning and exact scores over candidates ``tix`` (ranked by candidate generation)."""
        lower, upper = cands.bounds()
        live = np.flatnonzero(upper > 0)
        if arrival == "table_id":
            live = live[np.argsort(tix[live], kind="stable")]

        def scorer(i: int):
            m = cands.match(int(i))
            return m.score, m.pairs

        ranked, exact = prune(live, lower, upper, self.table_ids[tix], scorer, phi_r)
        results = [UnionResult(int(self.table_ids[tix[r.candidate]]), r.score,
                               self._alignment(int(tix[r.candidate]), r.payload))
                   for r in ranked[:k] if r.score > 0]
        stats = SearchStats(method, len(tix), len(ranked), exact, cands.solved, len(tix))
        return UnionSearch(results, stats, "unionability")

    def _pgtus(self, query, k, tau, phi_r, exclude, pruner_type, method, arrival, q_codes=None) -> UnionSearch:
        """Exact top-k: every table the cones leave reachable, streamed best first by its cone bound through the
        pruner; the lake is scored exhaustively instead when the stream would compare the query with more than
        ``CONE_WORK_SHARE`` of the lake's columns."""
        keys = self.cones.table_bounds(directions(query), tau)
        if exclude >= 0:
            keys[exclude] = 0.0
        tix = np.flatnonzero(keys > 0)  # candidate c is table tix[c]; ascending, so ties by candidate are by id
        ranked_arrival = arrival == "ranked"
        cone_upper = keys[tix]
        ties = self.table_ids[tix]
        batch_of = np.zeros(len(tix), dtype=np.int64)
        slot = np.zeros(len(tix), dtype=np.int64)
        batches: list[CandidateSet] = []

        def materialise(cands: np.ndarray) -> list[tuple[int, float, float]]:
            batch = self._candidates(query, tau, tix[cands], q_codes=q_codes)
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
            columns = self.col_offsets[tix + 1] - self.col_offsets[tix]
            first = max(FIRST_BATCH, 2 * phi_r, int(FIRST_SHARE * len(tix)))
            bounded, settled = stream_prune(pruner, cone_upper, materialise, first, columns,
                                            CONE_WORK_SHARE * len(self.vectors))
        else:
            for c, lower, upper in materialise(np.arange(len(tix))):
                pruner.offer(c, lower, upper)
            bounded, settled = len(tix), True
        stats = SearchStats(method, len(tix), 0, pruner.exact, sum(b.solved for b in batches), bounded)
        if not settled:
            return self._exhaustive(query, k, tau, exclude, stats, q_codes)
        ranked = pruner.finish()
        results = [UnionResult(int(ties[r.candidate]), r.score, self._alignment(int(tix[r.candidate]), r.payload))
                   for r in ranked[:k] if r.score > 0]
        stats = replace(stats, candidates_after_pruning=len(ranked), exact_matchings=pruner.exact,
                        assignments_solved=sum(b.solved for b in batches))
        return UnionSearch(results, stats, "unionability")

    def _exhaustive(self, query, k, tau, exclude, spent: SearchStats, q_codes=None) -> UnionSearch:
        """``exact``'s answer, reported under ``spent.method`` with the work already ``spent`` added."""
        found = self._exact(query, k, tau, exclude, q_codes)
        done = found.stats
        stats = replace(spent, exhaustive=True, candidates_after_refinement=done.candidates_after_refinement,
                        candidates_after_pruning=done.candidates_after_pruning,
                        exact_matchings=spent.exact_matchings + done.exact_matchings,
                        assignments_solved=spent.assignments_solved + done.assignments_solved)
        return UnionSearch(found.results, stats, found.score_kind)

    def _approximate(self, query, k, tau, phi_c, phi_ref, phi_r, exclude, arrival, q_codes=None) -> UnionSearch:
        """The paper's candidate generation (HNSW over centroids, Algorithm 2), then bounds and EBBP; exact's answer
        when its candidates hold fewer than k unionable tables."""
        if self._centroid_index is None:
            self._centroid_index = _hnsw(self.centroids, "l2", 1)
        labels, _ = _knn(self._centroid_index, query, min(phi_c, len(self.centroids)))
        labels = labels.astype(np.int64)
        pair_sims = np.einsum("qd,qpd->qp", query.astype(np.float64), self.centroids[labels].astype(np.float64))
        tix, _ = refine(labels, pair_sims, self.iw_offsets, self.iw_tables, self.iw_counts, phi_ref, exclude)
        found = self._pruned(APPROXIMATE, self._candidates(query, tau, tix, q_codes=q_codes), tix, enhanced_prune, k,
                             phi_r, arrival)
        if len(found.results) == k:
            return found
        return self._exhaustive(query, k, tau, exclude, found.stats, q_codes)

    def _starmie(self, query, k, tau, phi_r, k_prime, exclude, arrival, q_codes=None) -> UnionSearch:
        if self._column_index is None:
            self._column_index = _hnsw(self.vectors, "ip", self.threads)
        labels, dist = _knn(self._column_index, query, min(k_prime, len(self.vectors)))
        tables = self.col_table[labels.reshape(-1)]
        sims = 1.0 - dist.reshape(-1).astype(np.float64)
        order = np.lexsort((tables, -sims))
        tix = tables[order][np.sort(np.unique(tables[order], return_index=True)[1])]
        tix = tix[tix != exclude]
        return self._pruned("starmie", self._candidates(query, tau, tix, partitioned=False, q_codes=q_codes), tix,
                            base_prune, k, phi_r, arrival)

    def _tactus(self, query, k, exclude, query_table_vector, tau_abs, tau_drop) -> UnionSearch:
        if self.table_vectors is None:
            raise ValueError("tactus needs table vectors; this snapshot has none")
        if query_table_vector is None:
            raise ValueError("tactus needs the query's table vector")
        tq = unit_rows(np.asarray(query_table_vector, dtype=np.float32).reshape(1, -1))
        if self._table_index is None:
            self._table_index = _hnsw(self.table_vectors, "ip", self.threads)
        n_init = min(3 * k + (exclude >= 0), len(self.table_ids))
        labels, dist = _knn(self._table_index, tq, n_init)
        tix = labels[0].astype(np.int64)
        mu_t = 1.0 - dist[0].astype(np.float64)
        keep = tix != exclude
        tix, mu_t = tix[keep][:3 * k], mu_t[keep][:3 * k]
        order = np.lexsort((self.table_ids[tix], -mu_t))
        tix, mu_t = tix[order], mu_t[order]
        cut = adaptive_cut(mu_t, k, tau_abs, tau_drop)
        pool, mu_t = tix[:cut], mu_t[:cut]
        if len(pool) == 0:
            return UnionSearch([], SearchStats("tactus", len(tix), 0, 0), "dual_evidence")
        c_pos, c_owner = expand_ranges(self.col_offsets, pool)
        offsets = offsets_from_owners(c_owner, len(pool))
        mu_a, best_pos, best_sim = alignment_scores(query, self.vectors[c_pos], offsets)
        mu = mu_t + mu_a
        rank = np.lexsort((self.table_ids[pool], -mu))[:k]
        results = []
        for i in rank:
            rows = self.col_offsets[pool[i]] + best_pos[:, i]
            alignment = tuple((q, int(self.ordinals[rows[q]]), float(best_sim[q, i])) for q in range(len(query)))
            results.append(UnionResult(int(self.table_ids[pool[i]]), float(mu[i]), alignment))
        return UnionSearch(results, SearchStats("tactus", len(tix), len(pool), 0), "dual_evidence")
