"""In-memory union-search index over one snapshot, and the five search methods.

:meth:`UnionIndex.build` turns the snapshot's arrays (column vectors, centroids, Algorithm 1 partitions, table vectors)
into query-ready structures once; every query reuses them:

* ``exact``  - U(V_Q, V_i, tau) of Definition 5 for every table; tables with no column pair reaching tau have U = 0
  and need no assignment problem, so only the others are solved.
* ``pgtus``  - HNSW over centroids -> refinement (Alg. 2) -> MWMTO bounds (Alg. 3) -> BBP (Alg. 4) -> exact scores.
* ``pgtus++`` - the same with EBBP (Alg. 5).
* ``starmie`` - HNSW over all column vectors, candidate tables from every query column's k' nearest columns, bounds
  from the exact column vectors, BBP, exact scores (the baseline of the PGTUS paper).
* ``tactus`` - table-vector HNSW for the top-3k tables, adaptive cut, dual-evidence rerank (TACTUS Alg. 2).

All but ``tactus`` return exact Definition 5 scores; the pruning is exact over the candidates, so the only source of
misses is candidate generation.  Tables scoring 0 (no admissible column pair) are not unionable and never returned.
Ties rank by table id.  HNSW indexes use M = 16 and efConstruction = 200 (the paper's setting); the ones over all
columns and over table vectors are built on the first query that needs them.

Defaults: tau = 0.7 (the paper fixes none; 0.7 keeps only strongly similar column pairs for contrastive column
embeddings), phi_c = 32 (the probe the paper fixes for most datasets in Fig. 4a), phi_ref = 10k (inside the paper's
tuning range k..20k), phi_r = 3k (the paper's uniform setting), k' = 10k for Starmie (inside the paper's range
1k..30k), tau_abs = 0.5 and tau_drop = 0.2 (TACTUS defaults).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Callable

import hnswlib
import numpy as np

from .bounds import mwmto_bounds, rounding_margin
from .matching import Matching, similarity_matrix, unionability
from .partitioning import PartitionArrays
from .pruning import Scored, base_prune, enhanced_prune
from .csr import expand_ranges, offsets_from_counts, offsets_from_owners
from .refinement import refine
from .tactus import DEFAULT_TAU_ABS, DEFAULT_TAU_DROP, adaptive_cut, alignment_scores

METHODS = ("pgtus++", "pgtus", "starmie", "tactus", "exact")
DEFAULT_TAU = 0.7
DEFAULT_PHI_C = 32
HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200
_BLOCK = 65536


@dataclass(frozen=True)
class UnionResult:
    """One ranked table: its score and the column alignment (query column, lake column ordinal, similarity)."""

    table_id: int
    score: float
    alignment: tuple[tuple[int, int, float], ...]


@dataclass(frozen=True)
class SearchStats:
    """How much work a query did: candidates after refinement / after pruning, and exact matchings computed."""

    method: str
    candidates_after_refinement: int
    candidates_after_pruning: int
    exact_matchings: int

    def as_dict(self) -> dict:
        return asdict(self)


@dataclass(frozen=True)
class UnionSearch:
    """Ranked results of one query; ``score_kind`` is "unionability" (Def. 5) or "dual_evidence" (TACTUS mu)."""

    results: list[UnionResult]
    stats: SearchStats
    score_kind: str


def _unit_rows(x: np.ndarray) -> np.ndarray:
    x = np.asarray(x, dtype=np.float32)
    norms = np.linalg.norm(x, axis=1, keepdims=True)
    return np.divide(x, norms, out=np.zeros_like(x), where=norms > 0)


def _hnsw(vectors: np.ndarray, space: str, threads: int) -> hnswlib.Index:
    index = hnswlib.Index(space=space, dim=vectors.shape[1])
    index.init_index(max_elements=max(1, len(vectors)), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                     random_seed=0)
    index.add_items(vectors, np.arange(len(vectors)), num_threads=threads)
    return index


def _knn(index: hnswlib.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    index.set_ef(max(k, 64))
    return index.knn_query(query, k=k)


class UnionIndex:
    """Query-ready structures of one snapshot for union search; build once, query many times."""

    def __init__(self) -> None:
        raise TypeError("use UnionIndex.build(...)")

    @classmethod
    def build(cls, column_vectors: np.ndarray, column_table_ids: np.ndarray, column_ordinals: np.ndarray,
              centroids: np.ndarray, partitions: PartitionArrays, table_vectors: np.ndarray | None = None,
              table_vector_ids: np.ndarray | None = None, *, threads: int = 1) -> "UnionIndex":
        """Index a snapshot.

        ``column_vectors`` (n, d) unit-normalised; ``column_table_ids`` (n,) int64; ``column_ordinals`` (n,);
        ``centroids`` (c, d) the base centroids; ``partitions`` Algorithm 1's output for every table;
        ``table_vectors`` (t, d) for TACTUS, one per id in ``table_vector_ids`` (default: the sorted distinct
        ``column_table_ids``).  ``threads`` is used to build the HNSW indexes over columns and tables.
        """
        self = object.__new__(cls)
        table_ids = np.asarray(column_table_ids, dtype=np.int64)
        ordinals = np.asarray(column_ordinals, dtype=np.int64)
        order = np.lexsort((ordinals, table_ids))
        self.vectors = _unit_rows(np.asarray(column_vectors)[order])
        self.ordinals = ordinals[order]
        self.dim = self.vectors.shape[1]
        self.threads = threads
        self.table_ids, col_counts = np.unique(table_ids[order], return_counts=True)
        self.col_offsets = offsets_from_counts(col_counts)
        self.col_table = np.repeat(np.arange(len(self.table_ids)), col_counts)
        self.centroids = np.asarray(centroids, dtype=np.float32)
        self._build_partitions(partitions)
        self.centroid_index = _hnsw(self.centroids, "l2", 1)
        self.table_vectors = None
        if table_vectors is not None:
            tv_ids = self.table_ids if table_vector_ids is None else np.asarray(table_vector_ids, dtype=np.int64)
            tix = self._tix(tv_ids)
            if (tix < 0).any():
                raise ValueError("table vectors given for tables without columns")
            tv = np.zeros((len(self.table_ids), self.dim), dtype=np.float32)
            tv[tix] = _unit_rows(table_vectors)
            self.table_vectors = tv
        self._column_index = None
        self._table_index = None
        return self

    def _tix(self, ids: np.ndarray) -> np.ndarray:
        """Internal table index of every table id, -1 where unknown."""
        ids = np.asarray(ids, dtype=np.int64)
        pos = np.searchsorted(self.table_ids, ids)
        pos = np.minimum(pos, len(self.table_ids) - 1)
        return np.where(self.table_ids[pos] == ids, pos, -1)

    def _build_partitions(self, parts: PartitionArrays) -> None:
        part_tix = self._tix(parts.table_ids)
        if (part_tix < 0).any():
            raise ValueError("partitions refer to tables without columns")
        order = np.argsort(part_tix, kind="stable")
        part_tix = part_tix[order]
        n_tables = len(self.table_ids)
        self.part_offsets = offsets_from_owners(part_tix, n_tables)

        # members of every partition as column rows, partitions in table order
        m_pos, m_part = expand_ranges(parts.member_offsets, order)
        member_rows = self._rows(part_tix[m_part], parts.member_ordinals[m_pos])
        sizes = np.bincount(m_part, minlength=len(order))
        if (sizes == 0).any():
            raise ValueError("every partition needs at least one member column")
        self.part_capacity = sizes.astype(np.int64)

        # group entries of every partition, and the entry each member is closest to in angle
        g_pos, g_part = expand_ranges(parts.group_offsets, order)
        directions = _unit_rows(np.asarray(parts.group_vectors, dtype=np.float32)[g_pos])
        zero = ~np.any(directions, axis=1)
        directions[zero, 0] = 1.0  # a zero centroid has no direction: any unit vector is a valid cone axis
        group_offsets = offsets_from_owners(g_part, len(order))
        pair_entry, pair_member = expand_ranges(group_offsets, m_part)
        angle = np.empty(len(pair_entry))
        for s in range(0, len(pair_entry), _BLOCK):
            v = self.vectors[member_rows[pair_member[s:s + _BLOCK]]].astype(np.float64)
            cos = np.einsum("ij,ij->i", v, directions[pair_entry[s:s + _BLOCK]].astype(np.float64))
            angle[s:s + _BLOCK] = np.arccos(np.clip(cos, -1.0, 1.0))
        by_member = np.lexsort((pair_entry, angle, pair_member))
        first = np.ones(len(by_member), dtype=bool)
        first[1:] = pair_member[by_member][1:] != pair_member[by_member][:-1]
        nearest = by_member[first]
        angle_min = np.full(len(directions), np.inf)
        angle_max = np.full(len(directions), -np.inf)
        np.minimum.at(angle_min, pair_entry[nearest], angle[nearest])
        np.maximum.at(angle_max, pair_entry[nearest], angle[nearest])
        keep = np.isfinite(angle_max)
        self.entry_directions = directions[keep]
        self.entry_angle_min = angle_min[keep]
        self.entry_angle_max = angle_max[keep]
        self.entry_offsets = offsets_from_owners(g_part[keep], len(order))

        # inverted index I_w: centroid -> (table, number of its columns under the centroid)
        w_pos, w_part = expand_ranges(parts.iw_offsets, order)
        w_cent = parts.iw_centroid_ids[w_pos]
        w_tix = part_tix[w_part]
        key = w_cent * n_tables + w_tix
        uniq, inverse = np.unique(key, return_inverse=True)
        self.iw_counts = np.bincount(inverse, weights=parts.iw_counts[w_pos]).astype(np.int64)
        self.iw_tables = (uniq % n_tables).astype(np.int64)
        cents = uniq // n_tables
        self.iw_offsets = offsets_from_owners(cents, len(self.centroids))

    def _rows(self, tix: np.ndarray, ordinals: np.ndarray) -> np.ndarray:
        """Column rows of (table index, ordinal) pairs."""
        span = int(self.ordinals.max()) + 1 if len(self.ordinals) else 1
        keys = self.col_table * span + self.ordinals
        wanted = tix * span + ordinals
        rows = np.searchsorted(keys, wanted)
        rows = np.minimum(rows, len(keys) - 1)
        if (keys[rows] != wanted).any():
            raise ValueError("partition members refer to unknown columns")
        return rows

    @property
    def table_count(self) -> int:
        return len(self.table_ids)

    # exact scoring ----------------------------------------------------------------------------------------------

    def _score(self, query: np.ndarray, tix: int, tau: float) -> tuple[float, tuple[tuple[int, int, float], ...]]:
        lo, hi = self.col_offsets[tix], self.col_offsets[tix + 1]
        m: Matching = unionability(query, self.vectors[lo:hi], tau)
        ords = self.ordinals[lo:hi]
        return m.score, tuple((q, int(ords[c]), s) for q, c, s in m.pairs)

    def _results(self, ranked: list[Scored], tix: np.ndarray, k: int) -> list[UnionResult]:
        out = [UnionResult(int(self.table_ids[tix[r.candidate]]), r.score, r.payload) for r in ranked if r.score > 0]
        return out[:k]

    # methods ------------------------------------------------------------------------------------------------------

    def search(self, query_column_vectors: np.ndarray, k: int = 10, method: str = "pgtus++", *,
               tau: float = DEFAULT_TAU, phi_c: int = DEFAULT_PHI_C, phi_ref: int | None = None,
               phi_r: int | None = None, k_prime: int | None = None, exclude_table_id: int | None = None,
               query_table_vector: np.ndarray | None = None, tau_abs: float = DEFAULT_TAU_ABS,
               tau_drop: float = DEFAULT_TAU_DROP) -> UnionSearch:
        """Top-``k`` tables unionable with a query given as its column vectors (q, d).

        ``exclude_table_id`` drops the query's own table when the query is a lake table.  ``query_table_vector`` is
        the query's table vector, needed by ``tactus``.  Parameters default as described in the module docstring.
        """
        if method not in METHODS:
            raise ValueError(f"unknown union method {method!r}; expected one of {', '.join(METHODS)}")
        query = np.asarray(query_column_vectors, dtype=np.float32)
        if query.ndim != 2 or query.shape[1] != self.dim or len(query) == 0:
            raise ValueError(f"query must be a non-empty (q, {self.dim}) array of column vectors")
        if k < 1:
            raise ValueError("k must be at least 1")
        query = _unit_rows(query)
        exclude = -1
        if exclude_table_id is not None:
            exclude = int(self._tix(np.array([exclude_table_id]))[0])
        if method == "exact":
            return self._exact(query, k, tau, exclude)
        if method == "tactus":
            return self._tactus(query, k, exclude, query_table_vector, tau_abs, tau_drop)
        phi_r = 3 * k if phi_r is None else phi_r
        if method == "starmie":
            return self._starmie(query, k, tau, phi_r, 10 * k if k_prime is None else k_prime, exclude)
        return self._pgtus(query, k, tau, phi_c, 10 * k if phi_ref is None else phi_ref, phi_r, exclude,
                           enhanced_prune if method == "pgtus++" else base_prune, method)

    def _exact(self, query: np.ndarray, k: int, tau: float, exclude: int) -> UnionSearch:
        floor = tau - rounding_margin(self.dim)
        hit = np.zeros(len(self.table_ids), dtype=bool)
        for s in range(0, len(self.vectors), _BLOCK):
            admissible = (query @ self.vectors[s:s + _BLOCK].T >= floor).any(axis=0)
            hit[self.col_table[s:s + _BLOCK][admissible]] = True
        if exclude >= 0:
            hit[exclude] = False
        tix = np.flatnonzero(hit)
        scored = [(self._score(query, int(t), tau), int(t)) for t in tix]
        ranked = sorted(((s, a, t) for (s, a), t in scored if s > 0),
                        key=lambda e: (-e[0], self.table_ids[e[2]]))
        results = [UnionResult(int(self.table_ids[t]), s, a) for s, a, t in ranked[:k]]
        return UnionSearch(results, SearchStats("exact", len(self.table_ids) - (exclude >= 0), len(tix), len(tix)),
                           "unionability")

    def _candidate_bounds(self, query: np.ndarray, tau: float, tix: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        p_pos, p_owner = expand_ranges(self.part_offsets, tix)
        part_offsets = offsets_from_owners(p_owner, len(tix))
        e_pos, e_owner = expand_ranges(self.entry_offsets, p_pos)
        entry_offsets = offsets_from_owners(e_owner, len(p_pos))
        return mwmto_bounds(query, tau, self.entry_directions[e_pos], self.entry_angle_min[e_pos],
                            self.entry_angle_max[e_pos], entry_offsets, self.part_capacity[p_pos], part_offsets,
                            np.diff(self.col_offsets)[tix])

    def _prune(self, prune: Callable, query, tau, tix, lower, upper, keep):
        return prune(range(len(tix)), lower, upper, self.table_ids[tix],
                     lambda i: self._score(query, int(tix[i]), tau), keep)

    def _pgtus(self, query, k, tau, phi_c, phi_ref, phi_r, exclude, prune, method) -> UnionSearch:
        probes = min(phi_c, len(self.centroids))
        labels, _ = _knn(self.centroid_index, query, probes)
        labels = labels.astype(np.int64)
        pair_sims = np.einsum("qd,qpd->qp", query.astype(np.float64), self.centroids[labels].astype(np.float64))
        tix, _ = refine(labels, pair_sims, self.iw_offsets, self.iw_tables, self.iw_counts, phi_ref, exclude)
        lower, upper = self._candidate_bounds(query, tau, tix)
        ranked, exact = self._prune(prune, query, tau, tix, lower, upper, phi_r)
        return UnionSearch(self._results(ranked, tix, k), SearchStats(method, len(tix), len(ranked), exact),
                           "unionability")

    def _starmie(self, query, k, tau, phi_r, k_prime, exclude) -> UnionSearch:
        if self._column_index is None:
            self._column_index = _hnsw(self.vectors, "ip", self.threads)
        labels, dist = _knn(self._column_index, query, min(k_prime, len(self.vectors)))
        tables = self.col_table[labels.reshape(-1)]
        sims = 1.0 - dist.reshape(-1).astype(np.float64)
        order = np.lexsort((tables, -sims))
        tix = tables[order][np.sort(np.unique(tables[order], return_index=True)[1])]
        tix = tix[tix != exclude]
        c_pos, c_owner = expand_ranges(self.col_offsets, tix)
        col_offsets = offsets_from_owners(c_owner, len(tix))
        singles = np.arange(len(c_pos) + 1, dtype=np.int64)
        flat = np.zeros(len(c_pos))
        lower, upper = mwmto_bounds(query, tau, self.vectors[c_pos], flat, flat, singles,
                                    np.ones(len(c_pos), dtype=np.int64), col_offsets, np.diff(col_offsets))
        ranked, exact = self._prune(base_prune, query, tau, tix, lower, upper, phi_r)
        return UnionSearch(self._results(ranked, tix, k), SearchStats("starmie", len(tix), len(ranked), exact),
                           "unionability")

    def _tactus(self, query, k, exclude, query_table_vector, tau_abs, tau_drop) -> UnionSearch:
        if self.table_vectors is None:
            raise ValueError("tactus needs table vectors; this snapshot has none")
        if query_table_vector is None:
            raise ValueError("tactus needs the query's table vector")
        tq = _unit_rows(np.asarray(query_table_vector, dtype=np.float32).reshape(1, -1))
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
