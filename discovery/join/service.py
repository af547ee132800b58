"""Semantic joinable-table search against a snapshot (PEXESO threshold and top-k search).

The query column's distinct values are encoded with the snapshot's join encoder (the encoder the lake's value vectors
were built with) and searched against the snapshot's PEXESO index, rebuilt from the ``value_vectors`` and
``pivot_mappings`` rows (no mapping is recomputed; :func:`.stage.index_from_rows`).  With one partition the index is
kept per snapshot; with several (a lake larger than the memory budget) partitions are loaded one at a time, searched,
and merged.

Two searches: top-k (``top_k``) returns the k columns of highest joinability among those with any match, as PEXESO's
top-k search does; threshold search (``T``, when no ``top_k`` is given) returns every column whose joinability
reaches T.
"""
from __future__ import annotations

import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..query import QueryError, resolve_query
from ..store import Snapshot, result_names, snapshot_model
from ..store.cache import INDEXES, deep_nbytes
from ..vectors import query_value_vectors
from .metric import max_distance
from .search import METHODS, JoinIndex
from .partitioning import search_partitions
from .stage import COLUMN_KEY_BASE, MODEL, ROW_KEYS, PivotModel, index_from_rows

#: Matched value pairs reported per result column as evidence.
EVIDENCE_PAIRS = 5


class LoadedJoinIndex:
    """A snapshot's PEXESO index (or its partitions), with the value strings evidence is reported in."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.model = PivotModel.from_stored(snapshot_model(snapshot, MODEL))
        self.values: dict[int, np.ndarray] = {}       # partition -> lake value strings, in index order
        self.partition_of: dict[int, int] = {}          # column key -> partition
        self._index: JoinIndex | None = None

    @property
    def nbytes(self) -> int:
        """What the index cache counts: the kept index and the value strings evidence is reported in."""
        return deep_nbytes([self._index, self.values, self.partition_of])

    def partition(self, p: int) -> JoinIndex | None:
        """The join index of partition ``p`` (kept when there is only one partition); None when it is empty."""
        if self._index is not None:
            return self._index
        flt = pc.field("partition") == p if self.model.n_partitions > 1 else None
        mapping = self.snapshot.read("pivot_mappings", columns=ROW_KEYS + ["distances", "cell"], filter=flt)
        ids = pa.array(np.unique(mapping.column("table_id").to_numpy()), pa.int64())
        vectors = self.snapshot.read("value_vectors", columns=ROW_KEYS + ["vector"],
                                     filter=pc.field("table_id").isin(ids))
        built = index_from_rows(mapping, vectors, self.model)
        if built is None:
            return None
        index, self.values[p] = built
        self.partition_of.update(dict.fromkeys(index.column_values.tolist(), p))
        if self.model.n_partitions == 1:
            self._index = index
        return index


def _cache_key(snapshot: Snapshot) -> tuple:
    return ("join", snapshot.warehouse.root, snapshot.snapshot_id)


def loaded_index(snapshot: Snapshot) -> LoadedJoinIndex:
    """The snapshot's join index from the process-wide cache bounded in bytes (partitions load on first use)."""
    return INDEXES.get(_cache_key(snapshot), lambda: LoadedJoinIndex(snapshot))


def join_search(snapshot: Snapshot, query: str | int, column: str, tau: float = 0.03, T: float | None = None,
                top_k: int | None = None, method: str = "pexeso") -> dict:
    """Lake columns joinable with ``query``'s ``column``, in the JSON shape of ``lakescout join --json``.

    Exactly one of ``top_k`` (the k columns of highest joinability, any match counting) and ``T`` (every column whose
    joinability reaches T).
    """
    if method not in METHODS:
        raise ValueError(f"unknown join method {method!r}; expected one of {', '.join(METHODS)}")
    if not 0 < tau < 1:
        raise ValueError(f"tau must be a fraction of the maximum distance in (0, 1), got {tau}")
    if (top_k is None) == (T is None):
        raise ValueError("give either top_k (the k most joinable columns) or T (every column whose joinability "
                         "reaches T), not " + ("both" if T is not None else "neither"))
    if top_k is not None and top_k < 1:
        raise ValueError("top-k must be at least 1")
    if T is not None and not 0 <= T <= 1:
        raise ValueError(f"T must be a fraction of the query column's distinct values in [0, 1], got {T}")
    q = resolve_query(snapshot, query)
    ordinal = q.ordinal(column)
    kind = q.kinds()[ordinal]
    if kind == "empty":
        raise QueryError(f"column {q.names[ordinal]!r} of query {q.label!r} is empty")
    if kind in ("int", "float", "bool"):
        raise QueryError(f"column {q.names[ordinal]!r} of query {q.label!r} is {kind}: semantic join compares "
                         "string values; use an equi-join or the n-ary join for numeric keys")
    started = time.perf_counter()
    qv = query_value_vectors(snapshot, q, ordinal)
    if not qv.values:
        raise QueryError(f"column {q.names[ordinal]!r} of query {q.label!r} has no values")
    loaded = loaded_index(snapshot)
    held = len(loaded.values)
    own = len(q.names) if q.table_id is not None else 0  # the query's own columns may rank, and are then dropped
    found = search_partitions((lambda p=p: loaded.partition(p) for p in range(loaded.model.n_partitions)),
                              qv.vectors, tau, 0.0 if T is None else T, method, None if top_k is None else top_k + own)
    if len(loaded.values) != held:  # partitions were loaded: the cache re-measures what this index holds now
        INDEXES.put(_cache_key(snapshot), loaded)
    paths, names = result_names(snapshot, [int(c.column_id) // COLUMN_KEY_BASE for c in found.columns])
    results = []
    for col in found.columns:
        table_id, lake_ordinal = divmod(int(col.column_id), COLUMN_KEY_BASE)
        if table_id == q.table_id:
            continue
        values = loaded.values[loaded.partition_of[int(col.column_id)]]
        pairs = sorted(((qv.values[int(i)], values[int(j)], float(d)) for i, j, d in col.pairs), key=lambda x: x[2])
        results.append({"rank": len(results) + 1, "table_id": table_id, "path": paths.get(table_id),
                        "column": names.get((table_id, lake_ordinal), str(lake_ordinal)),
                        "joinability": col.joinability, "matched": col.matches,
                        "matches": [list(p) for p in pairs[:EVIDENCE_PAIRS]]})
    if top_k is not None:
        results = results[:top_k]
    stats = {k: v for k, v in found.stats.items() if isinstance(v, (int, float, str))}
    stats.update(query_values=len(qv.values), query_values_capped=qv.capped,
                 tau_distance=tau * max_distance(loaded.model.metric), seconds=time.perf_counter() - started)
    return {"snapshot_id": snapshot.snapshot_id, "query": q.label, "column": q.names[ordinal], "method": method,
            "tau": tau, "T": T, "top_k": top_k, "results": results, "stats": stats}
