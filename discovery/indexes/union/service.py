"""Union search against a snapshot: load the index once per snapshot, encode the query, search, explain.

The query table is resolved (:mod:`discovery.query.resolve`) and encoded with the snapshot's own encoders
(:func:`discovery.query.vectors.embed_query`), so a lake table used as the query gets exactly the vectors and column
quantities it was indexed with, and is left out of its own results.

Two indexes serve a snapshot.  ``exact``, ``pgtus`` and ``pgtus++`` (the default), which all return exact's top-k,
are answered by the compact index (:mod:`.compact`) over the snapshot's memory-mapped query arrays (:mod:`.arrays`,
built in memory from Delta for a snapshot written without them): int8 codes bound every table, float32 vectors are
read only for the tables that can still reach the k-th score.  There ``phi_r`` and ``arrival``, which shape the work
of the full index's pruning, change nothing.  ``pgtus++-approx``, ``starmie`` and ``tactus`` need centroids, HNSW
graphs and table vectors: the full :class:`UnionIndex`, built from Delta on their first query.
"""
from __future__ import annotations

import time
from collections.abc import Callable
from functools import partial

import numpy as np
import pyarrow as pa

from ...data.store import Snapshot, result_names, snapshot_model
from ...data.store.cache import INDEXES
from ...query.resolve import resolve_query
from ...query.vectors import current_quantities, embed_query, query_terms
from ...transforms.quantities import codes as quantity_codes
from .arrays import build_arrays, open_arrays
from .compact import COMPACT_METHODS, CompactIndex
from .csr import offsets_from_counts
from .lexical import DEFAULT_WEIGHT, LexicalIndex, bonus
from .partitioning import PartitionArrays
from .search import DEFAULT_TAU, EXACT_METHODS, METHODS, UnionIndex
from .stage import MODEL, CentroidModel


class LoadedUnionIndex:
    """A snapshot's :class:`UnionIndex`, built once from its column vectors, centroids, partitions and table vectors."""

    def __init__(self, snapshot: Snapshot):
        started = time.perf_counter()
        cv = snapshot.read("column_vectors", columns=["table_id", "ordinal", "vector", "quantity"])
        dim = len(cv.column("vector")[0]) if cv.num_rows else 0
        vectors = _matrix(cv.column("vector"), dim)
        model = CentroidModel.from_stored(snapshot_model(snapshot, MODEL))
        parts = snapshot.read("centroid_partitions", columns=["table_id", "partition_id", "member_ordinals",
                                                              "iw_centroid_ids", "iw_counts"])
        parts = parts.sort_by([("table_id", "ascending"), ("partition_id", "ascending")])
        tv = snapshot.read("table_vectors", columns=["table_id", "vector"])
        self.index = UnionIndex.build(
            vectors, cv.column("table_id").to_numpy(), cv.column("ordinal").to_numpy(), model.centroids,
            _partition_arrays(parts),
            _matrix(tv.column("vector"), len(tv.column("vector")[0])) if tv.num_rows else None,
            tv.column("table_id").to_numpy() if tv.num_rows else None,
            column_quantities=quantity_codes(cv.column("quantity").to_pylist()))
        self.load_seconds = time.perf_counter() - started


class LoadedCompactIndex:
    """A snapshot's :class:`CompactIndex` over its stored arrays (``source`` "files"), or over the same arrays built
    from Delta when the snapshot has none (``source`` "delta")."""

    def __init__(self, snapshot: Snapshot):
        started = time.perf_counter()
        arrays = open_arrays(snapshot.warehouse, snapshot.versions)
        self.source = "files" if arrays is not None else "delta"
        if arrays is None:
            arrays = build_arrays(snapshot.warehouse, snapshot.versions)
        self.index = CompactIndex(**arrays)
        self.load_seconds = time.perf_counter() - started

    @property
    def nbytes(self) -> int:
        return self.index.nbytes


class LoadedLexicalIndex:
    """A snapshot's lexical table vectors (:mod:`.lexical`), built once from the terms of its column rows; ``index``
    is None when a row has no terms (a snapshot indexed before terms were stored: the next refresh encodes every
    table again and adds them), and its searches then add no lexical term."""

    def __init__(self, snapshot: Snapshot):
        started = time.perf_counter()
        cv = snapshot.read("column_vectors", columns=["table_id", "terms", "term_counts"])
        self.index: LexicalIndex | None = None
        self.table_ids = np.unique(cv.column("table_id").to_numpy())
        if cv.num_rows and cv.column("terms").null_count == 0:
            self.index = LexicalIndex.build(self.table_ids, cv.column("table_id").to_numpy(), cv.column("terms"),
                                            cv.column("term_counts"))
        self.load_seconds = time.perf_counter() - started

    @property
    def nbytes(self) -> int:
        return self.table_ids.nbytes + (self.index.nbytes if self.index is not None else 0)


def lexical_index(snapshot: Snapshot) -> LoadedLexicalIndex:
    """The snapshot's lexical table vectors, built on first use and kept in the index cache."""
    return INDEXES.get(("union-lexical", snapshot.warehouse.root, snapshot.snapshot_id),
                       lambda: LoadedLexicalIndex(snapshot))


def lexical_cosines(snapshot: Snapshot, weight: float, terms: Callable[[], list[tuple[np.ndarray, np.ndarray]]],
                    table_count: int) -> tuple[np.ndarray | None, dict]:
    """The query's lexical cosine with every table (in the union index's table order: ascending ids), or None when
    ``weight`` is 0 or the snapshot has no terms; and what the search reports about it.  ``terms`` gives the query's
    column terms, asked only when needed."""
    if weight == 0:
        return None, {"lexical": 0.0}
    loaded = lexical_index(snapshot)
    if loaded.index is None or len(loaded.table_ids) != table_count:
        return None, {"lexical": 0.0, "lexical_note": "the snapshot stores no terms (indexed before they were "
                                                      "stored); the next refresh adds them"}
    return loaded.index.cosines(terms()), {"lexical": weight}


def _matrix(column: pa.ChunkedArray, dim: int) -> np.ndarray:
    flat = column.combine_chunks().flatten().to_numpy(zero_copy_only=False)
    return np.ascontiguousarray(flat, dtype=np.float32).reshape(-1, dim)


def _list(parts: pa.Table, name: str, dtype) -> tuple[np.ndarray, np.ndarray]:
    col = parts.column(name).combine_chunks()
    counts = col.value_lengths().to_numpy(zero_copy_only=False)
    return offsets_from_counts(counts), col.flatten().to_numpy(zero_copy_only=False).astype(dtype)


def _partition_arrays(parts: pa.Table) -> PartitionArrays:
    member_offsets, members = _list(parts, "member_ordinals", np.int64)
    iw_offsets, iw_ids = _list(parts, "iw_centroid_ids", np.int64)
    _, iw_counts = _list(parts, "iw_counts", np.int64)
    return PartitionArrays(parts.column("table_id").to_numpy(), member_offsets, members, iw_offsets, iw_ids,
                           iw_counts)


def _cache_key(snapshot: Snapshot) -> tuple:
    return ("union", snapshot.warehouse.root, snapshot.snapshot_id)


def loaded_index(snapshot: Snapshot) -> LoadedUnionIndex:
    """The snapshot's full union index, built on first use and kept in the process-wide cache bounded in bytes."""
    return INDEXES.get(_cache_key(snapshot), lambda: LoadedUnionIndex(snapshot))


def compact_index(snapshot: Snapshot) -> LoadedCompactIndex:
    """The snapshot's compact union index, opened on first use and kept in the same cache (where mapped arrays count
    only with the codes, which every query reads whole; see :attr:`CompactIndex.nbytes`)."""
    return INDEXES.get(("union", snapshot.warehouse.root, snapshot.snapshot_id, "compact"),
                       lambda: LoadedCompactIndex(snapshot))


def union_scores(snapshot: Snapshot, query, table_ids: list[int], tau: float = DEFAULT_TAU,
                 score: str = "sum", lexical: float = DEFAULT_WEIGHT) -> list[dict]:
    """Results, in :func:`union_search`'s shape (rank as they order among themselves), for the lake tables
    ``table_ids`` the user names: their scores (``score``: :mod:`.widths`) and alignments, exactly as a search
    returning them reports them (``lexical``: the weight of the lexical term, :mod:`.lexical`); a table scoring 0
    (no column pair reaching tau, no word in common) is left out."""
    q = resolve_query(snapshot, query)
    emb = embed_query(snapshot, q)
    index = compact_index(snapshot).index
    cosines, _ = lexical_cosines(snapshot, lexical, lambda: emb.terms, index.table_count)
    found = index.score(emb.column_vectors, table_ids, tau=tau, query_quantities=quantity_codes(emb.quantities),
                        score=score, bonus=bonus(lexical, score, len(q.names), cosines))
    paths, names = result_names(snapshot, [r.table_id for r in found])
    return [{"rank": rank, "table_id": r.table_id, "path": paths.get(r.table_id), "score": r.score,
             "alignment": [[q.names[qc], names.get((r.table_id, lc), str(lc)), sim] for qc, lc, sim in r.alignment]}
            for rank, r in enumerate(found, start=1)]


def union_search(snapshot: Snapshot, query: str | int, k: int = 10, method: str = "pgtus++", **params) -> dict:
    """Top-``k`` lake tables unionable with ``query``, in the JSON shape of ``lakescout union --json``."""
    if method not in METHODS:
        raise ValueError(f"unknown union method {method!r}; expected one of {', '.join(METHODS)}")
    if k < 1:
        raise ValueError("k must be at least 1")
    q = resolve_query(snapshot, query)
    compact = method in COMPACT_METHODS
    if compact and params.get("phi_r") is not None and params["phi_r"] < k:
        raise ValueError("phi_r must be at least k")
    loaded = compact_index(snapshot) if compact else loaded_index(snapshot)
    started = time.perf_counter()
    stored = (loaded.index.table_columns(q.table_id) if isinstance(loaded, LoadedCompactIndex) and q.indexed
              and q.table_id is not None and current_quantities(snapshot) else None)
    weight = params.pop("lexical", DEFAULT_WEIGHT)
    weight = weight if method in EXACT_METHODS else 0.0  # the other methods answer their own score
    score = params.get("score", "sum")
    if isinstance(loaded, LoadedCompactIndex):
        # a lake table as the snapshot indexed it: its columns are the index's own rows, so encoding it again (most
        # of a search's time) would give the same bits
        normalised = stored is not None and len(stored[0]) == len(q.names)
        if normalised:
            assert stored is not None  # normalised only with the rows it stores
            rows, quantities = stored
            # its terms as the refresh stored them, computed once per snapshot (profiling its columns costs more
            # than the rest of the lexical term: 2.8 ms of a 6 ms search on the sample lake)
            terms = partial(INDEXES.get, ("query-terms", snapshot.warehouse.root, snapshot.snapshot_id, q.table_id),
                            partial(query_terms, q))
        else:
            emb = embed_query(snapshot, q)
            rows, quantities = emb.column_vectors, quantity_codes(emb.quantities)
            terms = partial(getattr, emb, "terms")
        cosines, lexical = lexical_cosines(snapshot, weight, terms, loaded.index.table_count)
        found = loaded.index.search(rows, k, method, tau=params.get("tau", DEFAULT_TAU), exclude_table_id=q.table_id,
                                    query_quantities=quantities, score=score, normalised=normalised,
                                    bonus=bonus(weight, score, len(rows), cosines))
    else:
        emb = embed_query(snapshot, q)
        graphs = loaded.index.graphs
        cosines, lexical = lexical_cosines(snapshot, weight, partial(getattr, emb, "terms"),
                                           len(loaded.index.table_ids))
        found = loaded.index.search(emb.column_vectors, k, method, exclude_table_id=q.table_id,
                                    query_table_vector=emb.table_vector,
                                    query_quantities=quantity_codes(emb.quantities), lexical=weight,
                                    lexical_cosines=cosines, **params)
        if loaded.index.graphs != graphs:  # starmie, tactus or the approximate mode built its HNSW graph: re-measured
            INDEXES.put(_cache_key(snapshot), loaded)
    paths, names = result_names(snapshot, [r.table_id for r in found.results])
    results = []
    for rank, r in enumerate(found.results, start=1):
        results.append({
            "rank": rank, "table_id": r.table_id, "path": paths.get(r.table_id), "score": r.score,
            "alignment": [[q.names[qc], names.get((r.table_id, lc), str(lc)), sim] for qc, lc, sim in r.alignment],
        })
    stats = found.stats.as_dict()
    stats.update(lexical, score_kind=found.score_kind, seconds=time.perf_counter() - started,
                 index_load_seconds=loaded.load_seconds, index="compact" if compact else "full")
    return {"snapshot_id": snapshot.snapshot_id, "query": q.label, "method": method, "results": results,
            "stats": stats}
