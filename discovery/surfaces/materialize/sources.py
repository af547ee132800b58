"""From an answer to a plan: which lake tables, at which versions, joined or aligned how.

A union plan is the answer's tables with their Definition 5 alignments (:func:`union_sources`); a join plan is one
lake table with its join columns and the value mapping of the result (:func:`join_source`): the semantic join's
pairs (:func:`discovery.indexes.join.pairs.column_pairs`), the numerical join's nearest values
(:func:`discovery.indexes.numjoin.pairs.group_pairs`) or the n-ary join's key mapping.  The mapping is computed from the
snapshot the answer came from, by the functions that give the search its evidence, so the table written is the one
the answer describes.  Lake tables are pinned to the versions that snapshot indexed (:mod:`discovery.data.lake.pinned`).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...config import Limits, NumjoinConfig
from ...data.lake.pinned import PinnedTable, pin
from ...data.store import Snapshot
from ...query.resolve import QueryError, QueryTable
from .augment import JoinSource
from .keys import cell_keys, value_keys
from .union import UnionSource

_CATALOG = ["table_id", "path", "format", "bytes", "status", "content_hash", "version"]


class PlanError(QueryError):
    """An answer that cannot be turned into a table: the message names the table, rank or column at fault."""


def pinned_table(snapshot: Snapshot, table_id: int) -> PinnedTable:
    """The lake table ``table_id`` as ``snapshot`` indexed it; an unknown, deleted or failed table is refused."""
    catalog = snapshot.cached("catalog", _CATALOG)
    hit = catalog.filter(pc.equal(catalog["table_id"], table_id))
    if hit.num_rows == 0:
        raise PlanError(f"no lake table with id {table_id} in snapshot {snapshot.snapshot_id}")
    row = hit.to_pylist()[0]
    if row["status"] not in ("ok", "stale"):
        raise PlanError(f"lake table {row['path']!r} is {row['status']} in snapshot {snapshot.snapshot_id}: it has "
                        "no indexed rows to write")
    return pin(row, snapshot.lake_root(), snapshot.snapshot_id)


def table_id_of(snapshot: Snapshot, table: int | str) -> int:
    """The id of a lake table named by id or by catalogued path."""
    catalog = snapshot.cached("catalog", _CATALOG)
    if isinstance(table, int) or (isinstance(table, str) and table.isdigit()):
        if int(table) >= 2 ** 63 or not pc.any(pc.equal(catalog["table_id"], int(table))).as_py():
            raise PlanError(f"no lake table with id {table} in snapshot {snapshot.snapshot_id}")
        return int(table)
    hit = catalog.filter(pc.and_(pc.equal(catalog["path"], str(table)), pc.not_equal(catalog["status"], "deleted")))
    if hit.num_rows == 0:
        raise PlanError(f"no lake table {table!r} in snapshot {snapshot.snapshot_id} (name a table id or a "
                        "catalogued lake path)")
    return int(hit.column("table_id")[0].as_py())


def lake_columns(snapshot: Snapshot, table_id: int) -> tuple[list[str], list[str]]:
    """Names and profiled types of a lake table's columns, in order."""
    cols = snapshot.cached("columns", ["table_id", "ordinal", "name", "type"])
    mine = cols.filter(pc.equal(cols["table_id"], table_id)).sort_by("ordinal")
    return mine.column("name").to_pylist(), mine.column("type").to_pylist()


def union_sources(snapshot: Snapshot, query: QueryTable, results: list[dict]) -> list[UnionSource]:
    """The union plan of ``results`` (union answers: table id, score, alignment of query to lake column names)."""
    sources = []
    for r in results:
        names, types = lake_columns(snapshot, r["table_id"])
        kind = dict(zip(names, types))
        aligned = tuple((query.ordinal(qc), lc, float(sim)) for qc, lc, sim in r["alignment"])
        placed = {lc for _, lc, _ in aligned}
        sources.append(UnionSource(pinned_table(snapshot, r["table_id"]), aligned,
                                   tuple(kind.get(lc, "string") for _, lc, _ in aligned), r.get("rank"),
                                   r.get("score"), tuple(n for n in names if n not in placed)))
    return sources


def chosen_columns(snapshot: Snapshot, table_id: int, wanted: list[str] | None) -> list[str]:
    """The lake columns an augmentation adds: ``wanted`` (checked against the table), else every column."""
    names, _ = lake_columns(snapshot, table_id)
    if wanted is None:
        return names
    missing = [c for c in wanted if c not in names]
    if missing:
        raise PlanError(f"lake table {table_id} has no column {missing[0]!r} (columns: {', '.join(names)})")
    return list(dict.fromkeys(wanted))


def _source(snapshot: Snapshot, table_id: int, kind: str, joined: list[str], added: list[str] | None,
            mapping: pa.Table, dim: int = 0, evidence: dict | None = None) -> JoinSource:
    names, types = lake_columns(snapshot, table_id)
    added = chosen_columns(snapshot, table_id, added)
    kinds = dict(zip(names, types))
    return JoinSource(pinned_table(snapshot, table_id), kind, tuple(joined), tuple(added),
                      tuple(kinds.get(c, "string") for c in added), mapping, dim, evidence or {})


@dataclass(frozen=True)
class Matching:
    """How a text join's values are paired when it is written (``[materialize] matcher`` and ``precision``): the
    two-table matcher (``auto``, :mod:`discovery.transforms.match`) for a precision target, or the search's own pairs;
    with a Spark ``master``, a lake table of at least ``spark_min_bytes`` has its column paired on Spark
    (:mod:`.spark_match`), its distinct values never held here."""

    matcher: str
    precision: float
    limits: Limits
    master: str | None = None
    spark_min_bytes: int = 0


def text_source(snapshot: Snapshot, query: QueryTable, ordinals: list[int], table_id: int, lake_ordinal: int,
                tau: float, added: list[str] | None, matching: Matching) -> JoinSource:
    """A semantic-join plan: each query value (or row of the query columns ``ordinals``) paired with the lake value
    :class:`Matching` says it names.  The mapping carries each pair's ``score`` (the auto matcher's estimated
    precision; null for the search's pairs) and the ``rule`` that matched it.  Several query columns are paired
    by the matcher only: the search's pairs are a single column's."""
    if matching.matcher == "auto":
        return _matched_source(snapshot, query, ordinals, table_id, lake_ordinal, added, matching)
    if len(ordinals) > 1:
        raise PlanError(f"a join on several query columns ({', '.join(query.names[i] for i in ordinals)}) is paired "
                        "by the matcher: matcher 'search' pairs one column's values")
    ordinal = ordinals[0]
    from ...indexes.join.pairs import all_query_values, column_pairs

    pairs = column_pairs(snapshot, all_query_values(snapshot, query, ordinal), table_id, lake_ordinal, tau)
    names, _ = lake_columns(snapshot, table_id)
    n = len(pairs.query)
    mapping = pa.table({"query_key": pa.array(pairs.query, pa.string()), "lake_key": pa.array(pairs.lake, pa.string()),
                        "distance": pa.array(pairs.distance, pa.float64()), "score": pa.nulls(n, pa.float64()),
                        "rule": pa.array([f"search: nearest within tau {tau:g}"] * n, pa.string())})
    return _source(snapshot, table_id, "text", [names[lake_ordinal]], added, mapping,
                   evidence={"matcher": "search", "tau": tau, "query_values": len(pairs.values)})


def _matched_source(snapshot: Snapshot, query: QueryTable, ordinals: list[int], table_id: int, lake_ordinal: int,
                    added: list[str] | None, matching: Matching) -> JoinSource:
    """The text join's pairs by the two-table matcher over the query column's (or columns' rows') and the lake
    column's distinct keys (the lake column read whole at the pinned version: its distinct values are what tells
    the matcher how alike different entities look; on Spark for a large table, :class:`Matching`), one-to-one when
    both sides hold one row per value."""
    from ...transforms.match import match_rows, match_values
    from .local import lake_values

    names, _ = lake_columns(snapshot, table_id)
    keys = cell_keys([query.columns[i] for i in ordinals], "text")
    keys = keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys
    table = pinned_table(snapshot, table_id)
    present = keys.drop_null()
    distinct = pc.unique(present)
    query_keys = len(distinct) == len(present)
    master = (matching.master or None) if len(ordinals) == 1 and table.bytes >= matching.spark_min_bytes else None
    if master is not None:
        from .spark_match import spark_matches

        found = spark_matches(master, distinct.to_pylist(), table, names[lake_ordinal], matching.limits,
                              matching.precision, query_keys)
    elif len(ordinals) == 1:
        lake, held = lake_values(table, names[lake_ordinal], matching.limits)
        found = match_values(distinct.to_pylist(), lake.to_pylist(), matching.precision,
                             keys=query_keys and len(lake) == held)
    else:
        lake, held = lake_values(table, names[lake_ordinal], matching.limits)
        both_keys = query_keys and len(lake) == held
        rows = _distinct_rows(query, ordinals, keys)
        found = match_rows([r for r, _ in rows], [k for _, k in rows], lake.to_pylist(),
                           [query.names[i] for i in ordinals], matching.precision, keys=both_keys)
    keep, evidence = _row_evidence(snapshot, query, ordinals, keys, table_id, names[lake_ordinal], found, matching)
    pick = [i for i, k in enumerate(keep) if k]
    mapping = pa.table({"query_key": pa.array([found.query[i] for i in pick], pa.string()),
                        "lake_key": pa.array([found.lake[i] for i in pick], pa.string()),
                        "distance": pa.array(found.distance[pick], pa.float64()),
                        "score": pa.array(found.score[pick], pa.float64()),
                        "rule": pa.array([found.rule[i] for i in pick], pa.string())})
    described = {**found.describe(), "paired_on": "local" if master is None else "spark"}
    if evidence:
        described["evidence"] = [e.describe() for e in evidence]
        described["matched_values"] = len(pick)
        if len(pick) < len(keep):
            described["estimated_precision"] = round(float(found.score[pick].mean()), 4) if pick else None
    return _source(snapshot, table_id, "text", [names[lake_ordinal]], added, mapping, evidence=described)


def _row_evidence(snapshot: Snapshot, query: QueryTable, ordinals: list[int], keys: pa.Array, table_id: int,
                  lake_column: str, found, matching: Matching) -> tuple[list[bool], list]:
    """Which matched pairs stand once the other columns of both tables are read as evidence
    (:mod:`discovery.transforms.match.evidence`), and the evidence columns.  Only the rows of matched values are read:
    the query's other columns, and the lake table's other columns in the rows of the lake values matched."""
    from ...transforms.match.evidence import judge
    from ...ground.normalize import normalize_array
    from .local import lake_cells

    others = [i for i in range(len(query.columns)) if i not in ordinals]
    if not others or all(rule == "equal" for rule in found.rule):
        return [True] * len(found.query), []
    matched = set(found.query)
    key_list = keys.to_pylist()
    query_cells: dict[str, dict[str, set[str]]] = {}
    for i in others:
        cells = normalize_array(query.columns[i])
        cells = (cells.combine_chunks() if isinstance(cells, pa.ChunkedArray) else cells).to_pylist()
        by_key: dict[str, set[str]] = {}
        for key, cell in zip(key_list, cells):
            if key in matched and cell is not None:
                by_key.setdefault(key, set()).add(cell)
        query_cells[query.names[i]] = by_key
    lake = lake_cells(pinned_table(snapshot, table_id), lake_column, set(found.lake), matching.limits)
    keep, evidence = judge(list(zip(found.query, found.lake, found.rule)), query_cells, lake)
    return keep, evidence


def _distinct_rows(query: QueryTable, ordinals: list[int], keys: pa.Array) -> list[tuple[tuple[str, ...], str]]:
    """Each distinct row of the query columns ``ordinals`` with no null, as (normalised values, join key)."""
    from ...ground.normalize import normalize_array

    values = [normalize_array(query.columns[i]) for i in ordinals]
    values = [v.combine_chunks() if isinstance(v, pa.ChunkedArray) else v for v in values]
    seen: dict[str, tuple[str, ...]] = {}
    for key, *row in zip(keys.to_pylist(), *(v.to_pylist() for v in values)):
        if key is not None:
            seen.setdefault(key, tuple(row))
    return [(row, key) for key, row in seen.items()]


def numeric_source(snapshot: Snapshot, query: QueryTable, ordinals: list[int], table_id: int,
                   lake_ordinals: list[int], added: list[str] | None, config: NumjoinConfig, tau: float | None = None,
                   tau_share: float | None = None, metric: str | None = None) -> JoinSource:
    """A numerical-join plan: every query value's nearest lake value (number, coordinate pair, vector) within tau
    (``config``: the ``[numjoin]`` section its defaults come from,
    :func:`~discovery.indexes.numjoin.pairs.group_pairs`)."""
    from ...indexes.numjoin.pairs import group_pairs

    pairs = group_pairs(snapshot, query, ordinals, table_id, lake_ordinals, config, tau, tau_share, metric)
    kind = pairs.kind
    names, _ = lake_columns(snapshot, table_id)
    mapping = pa.table({"query_key": value_keys(pairs.query, kind), "lake_key": value_keys(pairs.lake, kind),
                        "distance": pa.array(pairs.distance, pa.float64())})
    dim = pairs.values.shape[1] if kind == "vector" else 0
    return _source(snapshot, table_id, kind, [names[o] for o in lake_ordinals], added, mapping, dim,
                   {"tau": pairs.tau, "units": pairs.units, "metric": pairs.metric,
                    "query_values": int(pairs.values.shape[0])})


def key_source(snapshot: Snapshot, query: QueryTable, key: list[str], table_id: int, lake_key: list[str],
               added: list[str] | None) -> JoinSource:
    """An n-ary plan: rows join where the normalised key tuple of the query equals the lake's under the mapping."""
    names, _ = lake_columns(snapshot, table_id)
    missing = [c for c in lake_key if c not in names]
    if missing:
        raise PlanError(f"lake table {table_id} has no column {missing[0]!r} (columns: {', '.join(names)})")
    keys = cell_keys([query.columns[query.ordinal(c)] for c in key], "key")
    distinct = pc.unique(keys.drop_null() if isinstance(keys, pa.Array) else keys.combine_chunks().drop_null())
    mapping = pa.table({"query_key": distinct, "lake_key": distinct,
                        "distance": pa.array(np.zeros(len(distinct)), pa.float64())})
    return _source(snapshot, table_id, "key", list(lake_key), added, mapping,
                   evidence={"mapping": dict(zip(key, lake_key))})
