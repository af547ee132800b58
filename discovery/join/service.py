"""Semantic joinable-table search against a snapshot (PEXESO threshold and top-k search).

The query column's distinct values are encoded with the snapshot's join encoder (the encoder the lake's value vectors
were built with) and searched against the snapshot's PEXESO index, rebuilt from the ``value_vectors`` and
``pivot_mappings`` rows (no mapping is recomputed).  With one partition the index is kept per snapshot; with several
(a lake larger than the memory budget) partitions are loaded one at a time, searched, and merged.
"""
from __future__ import annotations

import threading
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..query import QueryError, resolve_query
from ..store import Snapshot, result_names, snapshot_model
from ..vectors import query_value_vectors
from .metric import max_distance
from .search import METHODS, JoinIndex
from .partitioning import search_partitions
from .stage import COLUMN_KEY_BASE, MODEL, PivotModel, column_keys

#: Matched value pairs reported per result column as evidence.
EVIDENCE_PAIRS = 5

_CACHE: dict[tuple[str, int], "LoadedJoinIndex"] = {}
_LOCK = threading.Lock()


class LoadedJoinIndex:
    """A snapshot's PEXESO index (or its partitions), with the value strings evidence is reported in."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.model = PivotModel.from_stored(snapshot_model(snapshot, MODEL))
        self.values: dict[int, np.ndarray] = {}       # partition -> lake value strings, in index order
        self.partition_of: dict[int, int] = {}          # column key -> partition
        self._index: JoinIndex | None = None

    def partition(self, p: int) -> JoinIndex:
        """The join index of partition ``p`` (kept when there is only one partition)."""
        if self._index is not None:
            return self._index
        flt = pc.field("partition") == p if self.model.n_partitions > 1 else None
        keys = ["table_id", "ordinal", "value"]
        mapping = self.snapshot.read("pivot_mappings", columns=keys + ["distances", "cell"], filter=flt)
        ids = pa.array(sorted(set(mapping.column("table_id").to_pylist())), pa.int64())
        vectors = self.snapshot.read("value_vectors", columns=keys + ["vector"], filter=pc.field("table_id").isin(ids))
        order = [(k, "ascending") for k in keys]
        mapping, vectors = mapping.sort_by(order), vectors.sort_by(order)
        if mapping.num_rows != vectors.num_rows:
            raise RuntimeError(f"snapshot {self.snapshot.snapshot_id}: pivot_mappings and value_vectors disagree")
        dim = len(vectors.column("vector")[0]) if vectors.num_rows else 1
        vec = vectors.column("vector").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        mapped = mapping.column("distances").combine_chunks().flatten().to_numpy(zero_copy_only=False)
        keys_arr = column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy())
        index = JoinIndex.from_mapped(np.asarray(vec, np.float32).reshape(-1, dim), keys_arr,
                                      np.asarray(mapped, np.float64).reshape(-1, len(self.model.pivots)),
                                      self.model.pivots, self.model.grid, self.model.metric,
                                      mapping.column("cell").to_numpy())
        self.values[p] = np.asarray(mapping.column("value").to_pylist(), dtype=object)
        self.partition_of.update(dict.fromkeys(np.unique(keys_arr).tolist(), p))
        if self.model.n_partitions == 1:
            self._index = index
        return index


def loaded_index(snapshot: Snapshot) -> LoadedJoinIndex:
    key = (snapshot.warehouse.root, snapshot.snapshot_id)
    with _LOCK:
        if key not in _CACHE:
            _CACHE[key] = LoadedJoinIndex(snapshot)
        return _CACHE[key]


def join_search(snapshot: Snapshot, query: str | int, column: str, tau: float = 0.03, T: float = 0.6,
                top_k: int | None = None, method: str = "pexeso") -> dict:
    """Lake columns joinable with ``query``'s ``column``, in the JSON shape of ``lakescout join --json``."""
    if method not in METHODS:
        raise ValueError(f"unknown join method {method!r}; expected one of {', '.join(METHODS)}")
    if not 0 < tau < 1:
        raise ValueError(f"tau must be a fraction of the maximum distance in (0, 1), got {tau}")
    if not 0 <= T <= 1:
        raise ValueError(f"T must be a fraction of the query column's distinct values in [0, 1], got {T}")
    if top_k is not None and top_k < 1:
        raise ValueError("top-k must be at least 1")
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
    own = len(q.names) if q.table_id is not None else 0  # the query's own columns may rank, and are then dropped
    found = search_partitions((lambda p=p: loaded.partition(p) for p in range(loaded.model.n_partitions)),
                              qv.vectors, tau, T, method, None if top_k is None else top_k + own)
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
            "tau": tau, "T": T, "results": results, "stats": stats}
