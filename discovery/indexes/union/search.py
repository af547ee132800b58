"""In-memory union-search index over one snapshot, and the choice of search method (one module per family).

:meth:`UnionIndex.build` turns the snapshot's arrays (column vectors, centroids, Algorithm 1 partitions, table vectors)
into query-ready structures once; every query reuses them.  Column vectors are stored grouped by table and, within a
table, by partition, so a partition's members are a contiguous run and Algorithm 3 reads them with one reduction.

* ``exact``  - U(V_Q, V_i, tau) of Definition 5 for every table (:mod:`.exact`).
* ``pgtus++`` (default), ``pgtus`` - exact's top-k through PGTUS's stages, with candidate generation that cannot miss:
  cone bounds, a best-first stream through Algorithm 3 bounds into EBBP (Alg. 5) or BBP (Alg. 4), and ``exact``
  where the cones do not narrow the lake (:mod:`.pgtus`).  The answer is exact's top-k, scores and ties (by table
  id) included, so it holds k tables whenever k tables have an admissible pair.
* ``pgtus++-approx`` - the paper's candidate generation: HNSW over centroids and refinement (Alg. 2), then bounds
  and EBBP (:mod:`.approximate`; recall@10 against ``exact`` 0.93 on UGEN-V1 at the defaults); exact's top-k when
  its candidates hold fewer than k unionable tables.
* ``starmie`` - HNSW over all column vectors, per-column bounds, BBP, exact scores (the baseline of the PGTUS
  paper; :mod:`.approximate`).
* ``tactus`` - table-vector HNSW for the top-3k tables, adaptive cut, dual-evidence rerank (TACTUS Alg. 2;
  :mod:`.tactus`).

All but ``tactus`` return exact Definition 5 scores; the pruning is exact over the candidates, so only
``pgtus++-approx`` and ``starmie`` can miss, through candidate generation.  Tables scoring 0 (no admissible pair) are
never returned.  Ties rank by table id.  HNSW graphs (:mod:`.hnsw`) are built on the first query that needs them.

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

import hnswlib
import numpy as np

from .approximate import APPROXIMATE, approximate_search, starmie_search
from .cones import Cones, build_cones
from .csr import expand_ranges, offsets_from_counts, offsets_from_owners
from .exact import exact_search
from .hnsw import hnsw
from .lexical import DEFAULT_WEIGHT, bonus
from .matching import unit_rows
from .partitioning import PartitionArrays
from .pgtus import pgtus_search
from .pruning import BasePruner, EnhancedPruner
from .results import Alignment, UnionSearch
from .scoring import CandidateSet
from .tactus import DEFAULT_TAU_ABS, DEFAULT_TAU_DROP, tactus_search
from .widths import check_score, factors, score_kind

METHODS = ("pgtus++", "pgtus", APPROXIMATE, "starmie", "tactus", "exact")
#: the methods that return exact's top-k, under every score of :mod:`.widths`.
EXACT_METHODS = ("pgtus++", "pgtus", "exact")
ARRIVALS = ("ranked", "table_id")
DEFAULT_TAU = 0.4
DEFAULT_PHI_C = 1
DEFAULT_PHI_REF_PER_K = 3
DEFAULT_K_PRIME_PER_K = 10
#: The HNSW graphs a query may need: what each is built over, its hnswlib space, whether it is built on the index's
#: threads (the centroid graph is small).
GRAPHS = {"centroids": ("centroids", "l2", False), "columns": ("vectors", "ip", True),
          "tables": ("table_vectors", "ip", True)}


class UnionIndex:
    """Query-ready structures of one snapshot for union search; build once, query many times."""

    # set by build (columns grouped by table and, within a table, by partition: the storage order)
    dim: int
    threads: int
    table_ids: np.ndarray                 # (t,) int64, sorted: the table of every table index
    col_offsets: np.ndarray               # (t + 1,) each table's run of columns
    col_table: np.ndarray                 # (n,) the table index of every column
    centroids: np.ndarray                 # (c, d) float32
    vectors: np.ndarray                   # (n, d) float32 unit column vectors
    ordinals: np.ndarray                  # (n,) int64
    quantities: np.ndarray | None         # (n,) int16 quantity codes, or None
    cones: Cones
    table_vectors: np.ndarray | None      # (t, d') float32, or None without table vectors
    _graphs: dict[str, hnswlib.Index]     # the HNSW graphs built so far, by kind of GRAPHS

    def __init__(self) -> None:
        raise TypeError("use UnionIndex.build(...)")

    @classmethod
    def build(cls, column_vectors: np.ndarray, column_table_ids: np.ndarray, column_ordinals: np.ndarray,
              centroids: np.ndarray, partitions: PartitionArrays, table_vectors: np.ndarray | None = None,
              table_vector_ids: np.ndarray | None = None, *, threads: int = 1,
              column_quantities: np.ndarray | None = None) -> UnionIndex:
        """Index a snapshot.

        ``column_vectors`` (n, d) unit-normalised; ``column_table_ids`` (n,) int64; ``column_ordinals`` (n,);
        ``centroids`` (c, d) the base centroids; ``partitions`` Algorithm 1's output for every table (every column a
        member of exactly one partition of its table); ``table_vectors`` (t, d) for TACTUS, one per id in
        ``table_vector_ids`` (default: the sorted distinct ``column_table_ids``).  ``threads`` is used to build the
        HNSW indexes over columns and tables.  ``column_quantities`` (n,) are the columns' quantity codes
        (:mod:`discovery.transforms.quantities`; None: every pair compatible).
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
        self._graphs = {}
        return self

    @property
    def graphs(self) -> int:
        """HNSW graphs built so far: they are built on the first query that needs them, after the index was cached
        and measured, so a service re-measures its cache entry when this changes."""
        return len(self._graphs)

    def graph(self, kind: str) -> hnswlib.Index:
        """The HNSW graph ``kind`` of :data:`GRAPHS`, built on first use."""
        if kind not in self._graphs:
            attribute, space, threaded = GRAPHS[kind]
            self._graphs[kind] = hnsw(getattr(self, attribute), space, self.threads if threaded else 1)
        return self._graphs[kind]

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

    # candidates and exact scoring, shared by the methods -------------------------------------------------------------

    def candidates(self, query: np.ndarray, tau: float, tix: np.ndarray, partitioned: bool = True,
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

    def candidate_bounds(self, query: np.ndarray, tau: float, tix: np.ndarray,
                         q_codes: np.ndarray | None = None) -> tuple[np.ndarray, np.ndarray]:
        """MWMTO (lower, upper) bounds of the tables ``tix``."""
        return self.candidates(unit_rows(query), tau, np.asarray(tix, dtype=np.int64), q_codes=q_codes).bounds()

    def alignment(self, tix: int, pairs: Alignment) -> Alignment:
        """A matching's (query column, candidate column position, similarity) pairs of table ``tix`` with the
        candidate's column ordinals."""
        ords = self.ordinals[self.col_offsets[tix]:self.col_offsets[tix + 1]]
        return tuple((q, int(ords[c]), s) for q, c, s in pairs)

    def score(self, query: np.ndarray, tix: int, tau: float,
              q_codes: np.ndarray | None = None) -> tuple[float, Alignment]:
        """U(V_Q, V_tix, tau) and its alignment for one table."""
        m = self.candidates(unit_rows(query), tau, np.array([tix], dtype=np.int64), q_codes=q_codes).match(0)
        return m.score, self.alignment(tix, m.pairs)

    # methods ------------------------------------------------------------------------------------------------------

    def search(self, query_column_vectors: np.ndarray, k: int = 10, method: str = "pgtus++", *,
               tau: float = DEFAULT_TAU, phi_c: int = DEFAULT_PHI_C, phi_ref: int | None = None,
               phi_r: int | None = None, k_prime: int | None = None, exclude_table_id: int | None = None,
               query_table_vector: np.ndarray | None = None, tau_abs: float = DEFAULT_TAU_ABS,
               tau_drop: float = DEFAULT_TAU_DROP, arrival: str = "ranked",
               query_quantities: np.ndarray | None = None, score: str = "sum",
               lexical: float = DEFAULT_WEIGHT, lexical_cosines: np.ndarray | None = None) -> UnionSearch:
        """Top-``k`` tables unionable with a query given as its column vectors (q, d) and its columns' quantity
        codes (``query_quantities``; None: every pair compatible, as when the index has none).

        ``exclude_table_id`` drops the query's own table when the query is a lake table.  ``query_table_vector`` is
        the query's table vector, needed by ``tactus``.  ``phi_c`` and ``phi_ref`` apply to ``pgtus++-approx`` only.
        ``arrival`` is the order in which candidates reach the pruning: "ranked" as candidate generation ranks them
        (pgtus / pgtus++: cone upper bound, streamed best first with the early stop; pgtus++-approx: refinement
        score; starmie: best neighbour similarity), "table_id" ascending table id, as a scan of centroid partitions
        in storage order would deliver them (pgtus / pgtus++ then bound every candidate and stop nowhere); results
        are the same, the work spent differs.  ``score`` (:mod:`.widths`): Definition 5 (``sum``) or a width-weighted
        form of it, which ``exact``, ``pgtus`` and ``pgtus++`` answer exactly (here by scoring the lake exhaustively;
        the served compact index prunes under it).  ``lexical`` weighs the lexical table score (:mod:`.lexical`;
        ``lexical_cosines``, one per table in the index's order, computed by the caller), added by the same three
        methods; the others answer their own score.  Other parameters default as described in the module docstring.
        """
        if method not in METHODS:
            raise ValueError(f"unknown union method {method!r}; expected one of {', '.join(METHODS)}")
        if check_score(score) != "sum" and method not in EXACT_METHODS:
            raise ValueError(f"score {score!r} is answered by {', '.join(EXACT_METHODS)}, not {method!r}")
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
        added = bonus(lexical, score, len(query), lexical_cosines) if method in EXACT_METHODS else None
        if method == "exact" or score != "sum" or added is not None:
            found = exact_search(self, query, k, tau, exclude, q_codes,
                                 factors(score, len(query), np.diff(self.col_offsets)), added)
            stats = found.stats if method == "exact" else replace(found.stats, method=method, exhaustive=True)
            return UnionSearch(found.results, stats, score_kind(score))
        if method == "tactus":
            return tactus_search(self, query, k, exclude, query_table_vector, tau_abs, tau_drop)
        if method == "starmie":
            k_prime = DEFAULT_K_PRIME_PER_K * k if k_prime is None else k_prime
            return starmie_search(self, query, k, tau, phi_r, k_prime, exclude, arrival, q_codes)
        if method == APPROXIMATE:
            phi_ref = DEFAULT_PHI_REF_PER_K * k if phi_ref is None else phi_ref
            return approximate_search(self, query, k, tau, phi_c, phi_ref, phi_r, exclude, arrival, q_codes)
        return pgtus_search(self, query, k, tau, phi_r, exclude, EnhancedPruner if method == "pgtus++" else BasePruner,
                            method, arrival, q_codes)
