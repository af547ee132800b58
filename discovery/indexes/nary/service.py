"""N-ary join search against a published snapshot: query resolution, the search, and the JSON-shaped answer.

Shared by :meth:`discovery.api.Lakescout.nary` and ``lakescout nary``.  The query goes through
:func:`discovery.query.resolve.resolve_query` like every search; a lake table used as the query is excluded from its own
results inside the search (so the top-k stays exact over the other tables).  Results name lake columns by their
profiled names (``columns`` table) and tables by their catalogued path, and explain themselves: the first
:data:`MATCHED_SAMPLE` of the distinct key tuples J counts (normalised, as matched; in the index's value order) and
how many of the query's distinct key tuples the table does not hold.
"""
from __future__ import annotations

import time
from dataclasses import asdict


from discovery.config import Limits
from discovery.data.store import Snapshot, result_names
from discovery.indexes.nary.joinability import matched_tuples
from discovery.indexes.nary.loader import load_nary_index
from discovery.indexes.nary.query import validate_key
from discovery.indexes.nary.search import METHODS
from discovery.query.resolve import QueryError, resolve_query


#: Matched key tuples a result carries: enough to see what joined, bounded whatever J is.
MATCHED_SAMPLE = 10


def parse_key(key: str | list[str] | tuple[str, ...]) -> list[str]:
    """A key as a list of column names; a string is split on commas (``"country,city"``)."""
    names = [k.strip() for k in key.split(",")] if isinstance(key, str) else [str(k).strip() for k in key]
    if not names or any(not n for n in names):
        raise QueryError(f"the key {key!r} has an empty column name; give it as COL1,COL2[,...]")
    return names




def nary_search(snapshot: Snapshot, query: str | int, key: str | list[str], k: int = 10, method: str = "mate",
                bits: int | None = None, initial_column: str | None = None, limits: Limits | None = None) -> dict:
    """Top-k tables joinable with ``query`` on the multi-column ``key``, as the JSON-shaped answer of the CLI."""
    if method not in METHODS:
        raise QueryError(f"unknown method {method!r}; choose one of {', '.join(METHODS)}")
    if not isinstance(k, int) or k < 1:
        raise QueryError(f"k must be a positive integer, got {k!r}")
    names = parse_key(key)
    table = resolve_query(snapshot, query, limits)
    ordinals = [table.ordinal(n) for n in names]
    try:
        validate_key(dict.fromkeys(names), names)
    except ValueError as exc:
        raise QueryError(str(exc)) from None
    if len(set(ordinals)) != len(ordinals):
        raise QueryError(f"key columns must be distinct, got {names}")
    if initial_column is not None:
        if initial_column not in names:
            matches = [n for n in names if n.casefold() == initial_column.casefold()]
            if not matches:
                raise QueryError(f"initial column {initial_column!r} is not one of the key columns {names}")
            initial_column = matches[0]
    started = time.perf_counter()
    index = load_nary_index(snapshot, bits)
    loaded = time.perf_counter()
    columns = {n: table.columns[o] for n, o in zip(names, ordinals)}
    try:
        found = index.search(columns, names, k=k, method=method, initial_column=initial_column,
                             exclude=table.table_id)
    except ValueError as exc:
        raise QueryError(f"query {table.label!r}: {exc}") from None
    finished = time.perf_counter()
    assert found.query is not None and found.stats is not None  # a search fills both
    paths, lake_names = result_names(snapshot, [m.table_id for m in found.results])
    results = []
    for rank, m in enumerate(found.results, start=1):
        tuples = matched_tuples(index, found.query.tuples, m.table_id, tuple(m.mapping[c] for c in found.key))
        sample = index.vocab.take(tuples[:MATCHED_SAMPLE].ravel()).to_pylist()
        results.append({"rank": rank, "table_id": m.table_id, "path": paths.get(m.table_id),
                        "joinability": m.joinability,
                        "mapping": {q: lake_names.get((m.table_id, c), f"#{c}") for q, c in m.mapping.items()},
                        "matched_tuples": [sample[i:i + len(names)] for i in range(0, len(sample), len(names))],
                        "tuples_not_found": found.stats.query_tuples - m.joinability})
    stats = asdict(found.stats)
    stats.update(bits=index.model.bits, alpha=index.model.alpha, index_rows=index.n_rows,
                 index_postings=index.n_postings, load_seconds=round(loaded - started, 4),
                 search_seconds=round(finished - loaded, 4))
    return {"snapshot_id": snapshot.snapshot_id, "query": table.label, "key": names, "method": method,
            "results": results, "stats": stats}
