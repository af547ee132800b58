"""Semantic joinable-table search against a snapshot (PEXESO threshold and top-k search).

The query column's distinct values are encoded with the snapshot's join encoder (the encoder the lake's value vectors
were built with), or, for a column of a lake file as the snapshot indexed it, taken from the kept index, which holds
those very bits (:meth:`LoadedJoinIndex.own_vectors`; ``stats.query_vectors_indexed``), and searched against the
snapshot's PEXESO index, rebuilt from the ``value_vectors`` and
``pivot_mappings`` rows (no mapping is recomputed; :func:`.stage.index_from_rows`).  With one partition the index is
kept per snapshot; with several (a lake larger than the memory budget) each partition is loaded, searched and released
before the next, so a query holds one partition's rows and index at a time, which the pivots stage sized to fit
``[join] memory_budget_mb``.  A partition's rows are read file by file in the query's thread
(:meth:`~discovery.data.store.Snapshot.scan`), the index is gathered from them with one copy of the numbers
(:func:`.stage.index_from_rows`), and the pages Arrow's allocator kept are returned before the search allocates: the
resident set then follows the partition, not the decoded files in flight (``benchmarks/join_memory.py``).  No value
string is kept: the evidence pairs of the results name index rows, and only those rows' strings are read, after the
search.

A query value is given as its whole-cell vector and its segments' (:mod:`discovery.transforms.segments`), as the lake's
values are stored: a value matches a lake value when any vector of one lies within tau of any of the other, and
joinability counts query values.  A lake row names its value (segments carry their value's string), so the evidence
shows whole values.

Two searches: top-k (``top_k``) returns the k columns of highest joinability among those with any match, as PEXESO's
top-k search does; threshold search (``T``, when no ``top_k`` is given) returns every column whose joinability
reaches T.

The order rule (context breaks ties, :mod:`.context`). Joinability is the score, exact, and stays in the result. Exact
ties of joinability rank the lake column with fewer distinct values first, then by column id (:func:`ties_by_size`).
With ``[join] context_margin`` = m, results sorted so fall into groups: a group starts at its highest count h and
holds the following results whose count is at least h - s, where s = floor(m |Q|) matches. Within a group results are
ordered by ``context_score`` (then as before); groups keep their order, so a result never passes one whose joinability
exceeds its own by more than m, and with distinct counts farther apart than m the order is joinability's. A query
column that is a category (few distinct values against its rows, :func:`.context.is_category`) takes ``[join]
category_margin`` instead when it is larger: the lake columns holding its values differ in which rare values they
happen to hold, so the right partner, the table of the same rows, may trail a broader table by a few values that the
rest of the row outweighs. A top-k search returns, in one search, the exact top-k and every column matching at least
(k-th count - s), at most k + :data:`CONTEXT_POOL` (:class:`.tally.TopK`: its pruning threshold is the running k-th
count minus s, so Lemma 7 rejects no column of that set), so that the k-th column's whole group competes for the last
places: the reported set is then the exact top-k except within the k-th column's group, whose members all lie within
the margin of the k-th score. Context is computed for the columns of groups of more than one member that start among
the first k, the only ones whose order it can change (a threshold search: among its first :data:`CONTEXT_POOL`, so
that one returning thousands of columns reads a bounded number of tables); other results carry ``context_score`` None,
as do all results of a query with no other column that can be evidence (none, or only a row number:
:class:`.context.QueryContext`), which keep joinability's order at no extra cost.
"""
from __future__ import annotations

import time
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.store import SCHEMAS, Snapshot, result_names, snapshot_model
from ...data.store.cache import INDEXES, deep_nbytes
from ...data.store.filters import among
from ...query.resolve import QueryError, resolve_query
from ...query.vectors import ColumnValues, query_value_vectors
from .context import Context, QueryContext, context_groups, context_order, is_category, read_postings, table_context
from .metric import max_distance
from .partitioning import search_partitions
from .search import METHODS, JoinIndex
from .stage import (COLUMN_KEY_BASE, MODEL, ROW_KEYS, PivotModel, column_first_rows, column_keys, index_from_rows,
                    values_at)

#: Matched value pairs reported per result column as evidence.
EVIDENCE_PAIRS = 5
#: Columns beyond k a top-k search gathers at most when the k-th column's context group runs past it.
CONTEXT_POOL = 50


class LoadedJoinIndex:
    """A snapshot's PEXESO index: kept whole with one partition, loaded partition by partition otherwise."""

    def __init__(self, snapshot: Snapshot):
        self.snapshot = snapshot
        self.model = PivotModel.from_stored(snapshot_model(snapshot, MODEL))
        self._index: JoinIndex | None = None
        self._first: dict[int, int] = {}               # column key -> first index row, of the kept index
        # of the kept index, for own_vectors: input row -> index row, and each column's rows (column_values order)
        self._rows_of: tuple[np.ndarray, np.ndarray] | None = None

    @property
    def nbytes(self) -> int:
        """What the index cache counts: the kept index (one partition) and its column offsets."""
        return deep_nbytes([self._index, self._first, self._rows_of])

    @property
    def kept(self) -> bool:
        return self._index is not None

    def own_vectors(self, key: int, rows: ColumnValues) -> np.ndarray | None:
        """The vectors of lake column ``key``'s ``rows`` (:func:`~discovery.query.vectors.column_rows` of the column as
        the snapshot indexed it) as the kept index holds them, so that the column asked as a query is not encoded again
        (about 6 of a join's 36 ms on the sample lake); None when they cannot be taken.

        The kept index holds each column's rows in :data:`.stage.ROW_KEYS` order (value, then segment: values sorted
        as the profile sorts them, so row i of ``rows`` is at rank (value_of, segment) among them), and an index row
        is found from its input row by inverting ``JoinIndex.order`` (once per index).  Taken only where they are the
        encoder's own bits: with the index kept (one partition, already built), under the euclidean metric (angular
        indexes keep unit vectors, whose second normalisation need not give the same bits), and when the column
        holds as many rows as ``rows``.
        """
        index = self._index
        if index is None or self.model.metric != "euclidean" or key not in self._first:
            return None
        rows_of = self._rows_of
        if rows_of is None:  # built whole, then published in one assignment: requests call this from many threads
            position = np.empty_like(index.order)
            position[index.order] = np.arange(index.order.size, dtype=index.order.dtype)
            rows_of = self._rows_of = (position, np.bincount(index.col, minlength=index.n_columns))
        position, sizes = rows_of
        n = int(sizes[np.searchsorted(index.column_values, key)])
        if n != rows.value_of.size:
            return None
        rank = np.empty(n, dtype=np.int64)
        rank[np.lexsort((rows.segment, rows.value_of))] = np.arange(n)
        return index.vectors[position[self._first[key] + rank]]

    def partition(self, p: int, first_rows: dict[int, int], held: list[int]) -> JoinIndex | None:
        """The join index of partition ``p`` (kept when there is only one partition); None when it is empty.

        Adds the first index row of each of its columns to ``first_rows`` and appends to ``held`` the bytes this load
        held at once (the Arrow rows read plus the index built from them).
        """
        if self._index is not None:
            first_rows.update(self._first)
            held.append(self._index.nbytes)
            return self._index
        flt = pc.field("partition") == p if self.model.n_partitions > 1 else None
        read = self.snapshot.scan if flt is not None else self.snapshot.read  # one partition of many: lean reads
        mapping = read("pivot_mappings", columns=ROW_KEYS + ["distances", "cell"], filter=flt)
        tables = [mapping, read("value_vectors", columns=ROW_KEYS + ["vector"], filter=_columns_filter(mapping))]
        del mapping
        rows = sum(t.nbytes for t in tables)
        index = index_from_rows(tables.pop(0), tables.pop(0), self.model)  # it alone holds the rows, and drops them
        pa.default_memory_pool().release_unused()  # Arrow's allocator keeps freed pages; the search allocates anew
        if index is None:
            return None
        held.append(rows + index.nbytes)
        first = column_first_rows(index)
        first_rows.update(first)
        if self.model.n_partitions == 1:
            self._index, self._first = index, first
        return index


def _columns_filter(mapping: pa.Table):
    """The value-vector rows of the columns in ``mapping`` only: a table's other columns may lie in other partitions,
    and reading them would hold their vectors too.  The ``table_id`` term lets file statistics prune."""
    keys = column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy())
    key = pc.add(pc.multiply(pc.field("table_id"), pa.scalar(COLUMN_KEY_BASE, pa.int64())),
                 pc.field("ordinal").cast(pa.int64()))
    return among("table_id", keys // COLUMN_KEY_BASE) & key.isin(pa.array(np.unique(keys), pa.int64()))


def _cache_key(snapshot: Snapshot) -> tuple:
    return ("join", snapshot.warehouse.root, snapshot.snapshot_id)


def loaded_index(snapshot: Snapshot) -> LoadedJoinIndex:
    """The snapshot's join index from the process-wide cache bounded in bytes (partitions load on first use)."""
    return INDEXES.get(_cache_key(snapshot), lambda: LoadedJoinIndex(snapshot))


def join_search(snapshot: Snapshot, query: str | int, column: str, tau: float, T: float | None = None,
                top_k: int | None = None, method: str = "pexeso", context_margin: float | None = None,
                category_margin: float = 0.0) -> dict:
    """Lake columns joinable with ``query``'s ``column``, in the JSON shape of ``lakescout join --json``.

    Exactly one of ``top_k`` (the k columns of highest joinability, any match counting) and ``T`` (every column whose
    joinability reaches T).  ``context_margin`` (``[join] context_margin``; None: joinability alone, exact ties as
    :func:`ties_by_size` orders them): results whose joinability ties or lies within the margin are ordered by
    context (the module docstring's rule), and every result carries ``context_score`` and ``context``.
    ``category_margin`` (``[join] category_margin``) is the margin instead when it is larger and the query column is a
    category (:func:`.context.is_category`); it needs context (``context_margin`` not None).
    """
    for name, value in (("context_margin", context_margin), ("category_margin", category_margin)):
        if value is not None and not 0 <= value < 1:
            raise ValueError(f"{name} must be a fraction of the query values in [0, 1), got {value}")
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
    loaded = loaded_index(snapshot)
    key = None if q.table_id is None or not q.indexed else q.table_id * COLUMN_KEY_BASE + ordinal
    taken: list[bool] = []

    def indexed(rows: ColumnValues) -> np.ndarray | None:
        vectors = None if key is None else loaded.own_vectors(key, rows)
        taken.append(vectors is not None)
        return vectors

    qv = query_value_vectors(snapshot, q, ordinal, stored=indexed)
    if not qv.values:
        raise QueryError(f"column {q.names[ordinal]!r} of query {q.label!r} has no values")
    kept = loaded.kept
    own = len(q.names) if q.table_id is not None else 0  # the query's own columns may rank, and are then dropped
    first_rows: dict[int, int] = {}
    held: list[int] = []

    query_context = QueryContext(q.names, q.columns, ordinal) if context_margin is not None else None
    with_context = query_context is not None and bool(query_context.others)  # else no table can have context
    margin = 0.0 if context_margin is None else context_margin
    category = with_context and category_margin > margin and is_category(q.columns[ordinal])
    if category:
        margin = category_margin
    slack = int(np.floor(margin * len(qv.values) + 1e-9)) if with_context else 0
    k = None if top_k is None else top_k + own
    pool = None if k is None else k + CONTEXT_POOL  # the k-th count's ties (and margin) compete for the last places
    loaders = (partial(loaded.partition, p, first_rows, held) for p in range(loaded.model.n_partitions))
    found = search_partitions(loaders,
                              qv.vectors, tau, 0.0 if T is None else T, method, k, value_ids=qv.value_of,
                              slack=slack, pool=pool)
    if loaded.kept != kept:  # the one-partition index was built: the cache re-measures what this entry holds now
        INDEXES.put(_cache_key(snapshot), loaded)
    columns = [c for c in found.columns if int(c.column_id) // COLUMN_KEY_BASE != q.table_id]
    context: dict[int, Context] = {}
    if top_k is not None and len(columns) >= top_k:
        # the search widened by the (k + own)-th count, at most the k-th of the lake's other columns
        floor = columns[top_k - 1].matches - slack
        pool_size = sum(c.matches >= floor for c in found.columns)
        columns = [c for c in columns if c.matches >= floor]
        found.stats.update(pool_capped=int(pool_size == pool))
    columns = ties_by_size(snapshot, columns)
    if with_context and query_context is not None:
        columns, context = _order_by_context(snapshot, query_context, qv, columns, slack, top_k, first_rows,
                                             found.stats)
        found.stats.update(context_margin=margin, context_slack=slack, category=int(category))
    if top_k is not None:
        columns = columns[:top_k]
    evidence = {int(c.column_id): sorted(c.pairs.tolist(), key=lambda x: x[2])[:EVIDENCE_PAIRS] for c in columns}
    strings = values_at(lambda ids: table_values(snapshot, ids),
                        {key: [int(j) - first_rows[key] for _, j, _ in pairs] for key, pairs in evidence.items()})
    paths, names = result_names(snapshot, [int(c.column_id) // COLUMN_KEY_BASE for c in columns])
    results: list[dict] = []
    for col in columns:
        key = int(col.column_id)
        table_id, lake_ordinal = divmod(key, COLUMN_KEY_BASE)
        pairs = [[qv.values[int(i)], strings[(key, int(j) - first_rows[key])], float(d)] for i, j, d in evidence[key]]
        results.append({"rank": len(results) + 1, "table_id": table_id, "path": paths.get(table_id),
                        "column": names.get((table_id, lake_ordinal), str(lake_ordinal)),
                        "joinability": col.joinability, "matched": col.matches, "matches": pairs})
        if query_context is not None:
            ctx = context.get(key)
            results[-1].update(context_score=None if ctx is None else ctx.score,
                               context="" if ctx is None else ctx.text())
    stats = {k: v for k, v in found.stats.items() if isinstance(v, (int, float, str))}
    stats.update(held_bytes_max=max(held, default=0), loaded_bytes=sum(held))
    stats.update(query_values=len(qv.values), query_values_capped=qv.capped, query_vectors_indexed=int(any(taken)),
                 tau_distance=tau * max_distance(loaded.model.metric), seconds=time.perf_counter() - started)
    return {"snapshot_id": snapshot.snapshot_id, "query": q.label, "column": q.names[ordinal], "method": method,
            "tau": tau, "T": T, "top_k": top_k, "results": results, "stats": stats}


def table_values(snapshot: Snapshot, table_ids: list[int]) -> pa.Table:
    """``value_vectors`` rows (:data:`~.stage.ROW_KEYS`, no vectors) of ``table_ids``, kept table by table
    (:func:`kept_by_table`): a search reads the values of the columns it returns twice (context, evidence) and a
    server answers the same popular tables again, while a table's values are a few KB."""
    return kept_by_table(snapshot, "join-values", table_ids, lambda missing: snapshot.read(
        "value_vectors", columns=ROW_KEYS, filter=among("table_id", missing)),
        pa.schema([SCHEMAS["value_vectors"].field(c) for c in ROW_KEYS]))


def table_postings(snapshot: Snapshot, table_ids: list[int]) -> pa.Table:
    """``xash_postings`` rows of ``table_ids`` as :func:`.context.read_postings` reads them, kept table by table
    (:func:`kept_by_table`): reading them from the files was a fifth of a join on the sample lake (5 of 27 ms), every
    time a server was asked about the same tables."""
    return kept_by_table(snapshot, "join-postings", table_ids, lambda missing: read_postings(
        lambda cols, flt: snapshot.scan("xash_postings", cols, flt, table_ids=missing), missing),
        read_postings(None, []).schema)


def kept_by_table(snapshot: Snapshot, kind: str, table_ids: list[int], read, schema: pa.Schema) -> pa.Table:
    """The rows of ``table_ids`` (ascending, each once; within a table in the order ``read`` gives them), each table's
    kept in the process's index cache once read, under (``kind``, warehouse, snapshot, table): the snapshot's swap
    drops them with its indexes, and the cache's byte budget bounds them.  The tables not kept are read in one
    ``read(missing)``, then each table's rows copied out (a slice would hold every table's rows).  ``schema``: the
    rows' schema, for no tables."""
    root, sid = snapshot.warehouse.root, snapshot.snapshot_id
    ids = [int(t) for t in np.unique(np.asarray(table_ids, dtype=np.int64))]
    kept = {t: INDEXES.find((kind, root, sid, t)) for t in ids}
    missing = [t for t, rows in kept.items() if rows is None]
    if missing:
        rows = read(missing)
        rows = rows.take(pc.sort_indices(rows["table_id"]))  # stable: each table's rows keep their order
        bounds = np.searchsorted(rows.column("table_id").to_numpy(), np.stack([missing, np.add(missing, 1)]))
        for t, a, b in zip(missing, bounds[0].tolist(), bounds[1].tolist()):
            kept[t] = rows.take(pa.array(np.arange(a, b, dtype=np.int64)))
            INDEXES.put((kind, root, sid, t), kept[t])
    if not ids:
        return schema.empty_table()
    return pa.concat_tables([kept[t] for t in ids])


def ties_by_size(snapshot: Snapshot, columns: list) -> list:
    """``columns`` (sorted by matches descending, then column id) with each run of equal matches reordered by the
    lake column's distinct values (``columns.distinct_count``), fewer first, then column id.

    Two columns that join the same number of query values are not equally good joins when one holds many more values:
    the smaller one is the table *about* the query's values (a larger share of it joins, the higher Jaccard
    similarity), the larger typically a broader table that happens to contain them (a table of sports leagues and
    one of rugby leagues both hold the rugby leagues a query names).  The rule moves no column past one of higher
    joinability, and reads only the columns table the result names come from (:meth:`Snapshot.cached`), only when a
    tie exists.  A column without a recorded count ranks after those with one.
    """
    matches = [c.matches for c in columns]
    if len(set(matches)) == len(matches):
        return columns
    keys = np.array([int(c.column_id) for c in columns], dtype=np.int64)
    stats = snapshot.cached("columns", ["table_id", "ordinal", "distinct_count"])
    stats = stats.filter(pc.is_in(stats["table_id"], pa.array(np.unique(keys // COLUMN_KEY_BASE))))
    known = (stats.column("table_id").to_numpy() * COLUMN_KEY_BASE
             + stats.column("ordinal").to_numpy().astype(np.int64))
    counts = stats.column("distinct_count").fill_null(np.iinfo(np.int64).max).to_numpy()
    at = {int(key): int(n) for key, n in zip(known, counts)}
    size = [at.get(int(key), np.iinfo(np.int64).max) for key in keys]
    order = sorted(range(len(columns)), key=lambda i: (-matches[i], size[i], int(keys[i])))
    return [columns[i] for i in order]


def _order_by_context(snapshot: Snapshot, query: QueryContext, qv, columns: list, slack: int, top_k: int | None,
                      first_rows: dict[int, int], stats: dict) -> tuple[list, dict]:
    """``columns`` (sorted by matches, then :func:`ties_by_size`) reordered within their context groups, and the
    context of each column whose group decided anything: the groups of more than one column that start within the
    first k (:data:`CONTEXT_POOL` for a threshold search)."""
    matches = [c.matches for c in columns]
    groups = context_groups(matches, slack)
    size: dict[int, int] = {}
    start: dict[int, int] = {}
    for i, g in enumerate(groups):
        size[g] = size.get(g, 0) + 1
        start.setdefault(g, i)
    first = top_k if top_k is not None else CONTEXT_POOL  # a threshold search orders its first 50 results' groups
    need = [i for i, g in enumerate(groups) if size[g] > 1 and start[g] < first]
    stats.update(context_columns=len(need), context_tables=0)
    if not need or "xash_postings" not in snapshot.versions:
        return columns, {}
    started = time.perf_counter()
    keys = [int(columns[i].column_id) for i in need]
    witness = {key: [(int(a), int(b) - first_rows[key]) for a, b, _ in columns[i].pairs.tolist()]
               for key, i in zip(keys, need)}
    strings = values_at(lambda ids: table_values(snapshot, ids),
                        {key: [b for _, b in pairs] for key, pairs in witness.items()})
    links = {key: {qv.values[a]: strings[(key, b)] for a, b in pairs} for key, pairs in witness.items()}
    tables = sorted({key // COLUMN_KEY_BASE for key in keys})
    postings = table_postings(snapshot, tables)
    bounds = np.searchsorted(postings.column("table_id").to_numpy(), np.stack([tables, np.add(tables, 1)]))
    at = {t: (int(a), int(b)) for t, a, b in zip(tables, bounds[0], bounds[1])}
    _, names = result_names(snapshot, tables)
    query.add_values([v for link in links.values() for v in link.values()])
    codes = query.code(postings.column("value"))  # every table's postings in one call: one hash of the vocabulary
    names_of: dict[int, dict[int, str]] = {}
    for (t, o), n in names.items():
        names_of.setdefault(t, {})[o] = n
    context = {}
    for key in keys:
        table_id, lake_ordinal = divmod(key, COLUMN_KEY_BASE)
        a, b = at[table_id]
        context[key] = table_context(query, postings.slice(a, b - a), lake_ordinal, links[key],
                                     names_of.get(table_id, {}), codes[a:b])
    scores = [context.get(int(c.column_id)) for c in columns]
    order = context_order(matches, [None if s is None else s.score for s in scores], slack)
    stats.update(context_tables=len(tables), context_postings=postings.num_rows,
                 context_seconds=time.perf_counter() - started)
    return [columns[i] for i in order], context
