"""Browsing the index: which lake tables a snapshot holds, and what it knows of each table's columns.

Everything here is read from the snapshot's own tables (``catalog``, ``columns``, and which columns have rows in the
union, join, numerical-join and n-ary index tables), never from the lake, so it answers for any table the catalog
names, one that stopped reading included, and serves over HTTP without reading a lake file.

Whether a column is in an index is read from the index itself; why it is not is the rule of the stage that decides
(:func:`discovery.query.vectors.is_join_candidate` with the snapshot's own ``join_min_distinct``, the numerical groups
of :func:`discovery.indexes.numjoin.columns.column_groups`, every non-null cell of every column posted for MATE), so the
reason given is the one that applied when the snapshot was built.
"""
from __future__ import annotations

import json
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from ..data.lake.patterns import TableFilter
from ..data.store import Snapshot, WarehouseError
from ..query.resolve import QueryError, catalog_entry

#: What ``tables`` returns of each catalog row, in this order.
TABLE_FIELDS = ["table_id", "path", "format", "status", "rows", "cols", "bytes", "version", "content_hash",
                "indexed_at", "refresh_id", "error"]
#: Table statuses (``catalog.status``).
STATUSES = ("ok", "stale", "error", "deleted")
#: The indexes a column can be in, as ``describe`` names them.
INDEXES = ("union", "join", "numeric", "nary")


def _listed(value: str | Sequence[str] | None) -> list[str]:
    if value is None:
        return []
    return [value] if isinstance(value, str) else [str(v) for v in value]


def list_tables(snapshot: Snapshot, path: str | Sequence[str] | None = None, format: str | Sequence[str] | None = None,
                status: str | Sequence[str] | None = None) -> list[dict]:
    """The catalogued lake tables of ``snapshot``, by path: those matching any ``path`` pattern (gitignore-style,
    as ``--include`` takes), of any ``format`` (as ``status`` shows it, or its first part: ``hive`` for
    ``hive/parquet``, ``csv`` for ``csv.gz``) and of any ``status`` (ok, stale, error, deleted; default: all but
    deleted).  Each row has :data:`TABLE_FIELDS`; ``version`` is the format's own (a Delta version, an Iceberg
    snapshot id), null for a file, whose ``content_hash`` is the digest of the bytes indexed."""
    statuses = _listed(status) or [s for s in STATUSES if s != "deleted"]
    unknown = [s for s in statuses if s not in STATUSES]
    if unknown:
        raise QueryError(f"status must be one of {', '.join(STATUSES)}, got {unknown[0]!r}")
    catalog = snapshot.cached("catalog", TABLE_FIELDS)
    keep = pc.is_in(catalog["status"], pa.array(statuses))
    formats = _listed(format)
    if formats:
        family = pc.replace_substring_regex(catalog["format"], r"[/.].*$", "")
        keep = pc.and_(keep, pc.or_(pc.is_in(catalog["format"], pa.array(formats)),
                                    pc.is_in(family, pa.array(formats))))
    catalog = catalog.filter(keep).sort_by("path")
    patterns = _listed(path)
    if patterns:
        match = TableFilter(include=patterns)
        catalog = catalog.filter(pa.array([match(p) for p in catalog.column("path").to_pylist()], pa.bool_()))
    return catalog.to_pylist()


def _ordinals(snapshot: Snapshot, name: str, table_id: int, column: str = "ordinal") -> set[int]:
    t = snapshot.read(name, columns=[column], filter=pc.field("table_id") == table_id)
    return set(pc.unique(t.column(column)).to_pylist()) if t.num_rows else set()


def _join_min_distinct(snapshot: Snapshot) -> int | None:
    from ..query.vectors import snapshot_refs

    try:
        return snapshot_refs(snapshot).spec.join_min_distinct
    except WarehouseError:
        return None


def _why_not(index: str, col: dict, table_ok: bool, numeric_kinds: list[str], min_distinct: int | None) -> str:
    """Why ``col`` is not in ``index``, by the rule of the stage that builds it."""
    kind = col["type"]
    if not table_ok:
        return "the table is not indexed"
    if col["non_null"] == 0:
        return "no values"
    if index == "union":
        return "no column vector (the embed stage has not encoded this table)"
    if index == "join":
        if kind != "string":
            return f"{kind} values; the semantic join indexes text" + (
                " (the numerical join takes this column)" if numeric_kinds else "")
        if min_distinct is not None and col["distinct_count"] < min_distinct:
            return f"{col['distinct_count']} distinct values, fewer than [embed] join_min_distinct ({min_distinct})"
        return "no value vectors (the snapshot has no join encoder)"
    if index == "numeric":
        if kind in ("int", "float"):
            return "no finite numbers among its values"
        return f"{kind} values, not numbers"
    return "the table is not in the n-ary index (the xash stage has not posted it)"


def describe_table(snapshot: Snapshot, table: str | int) -> dict:
    """What the snapshot knows of one lake table (an id or a catalogued path): its catalog row, its warnings, and
    each column with its inferred type, counts, the indexes it is in (``indexes``) and why not the others
    (``not_indexed``: index -> reason)."""
    entry = catalog_entry(snapshot, table)
    if entry is None:
        raise QueryError(f"no lake table {str(table)!r} in snapshot {snapshot.snapshot_id} (name a table id or a "
                         "catalogued lake path; `lakescout tables` lists them)")
    tid = entry["table_id"]
    row = snapshot.read("catalog", filter=pc.field("table_id") == tid).to_pylist()[0]
    columns = snapshot.read("columns", filter=pc.field("table_id") == tid).sort_by("ordinal").to_pylist()
    ok = row["status"] in ("ok", "stale")
    have = {"union": _ordinals(snapshot, "column_vectors", tid), "join": _ordinals(snapshot, "value_vectors", tid)}
    numeric: dict[int, list[str]] = {}
    if "numeric_sets" in snapshot.versions:
        for s in snapshot.read("numeric_sets", columns=["kind", "ordinals", "names"],
                               filter=pc.field("table_id") == tid).to_pylist():
            for o in s["ordinals"] or ():
                numeric.setdefault(o, []).append(s["kind"] if s["kind"] != "coordinates"
                                                 else "coordinates (" + ",".join(s["names"]) + ")")
    stats = snapshot.read("xash_stats", columns=["rows_total", "rows_indexed"], filter=pc.field("table_id") == tid)
    posted = stats.num_rows > 0
    min_distinct = _join_min_distinct(snapshot)
    out_columns = []
    for c in columns:
        o = c["ordinal"]
        member = {"union": o in have["union"], "join": o in have["join"], "numeric": o in numeric,
                  "nary": posted and c["non_null"] > 0}
        out_columns.append({
            "ordinal": o, "name": c["name"], "type": c["type"], "distinct_count": c["distinct_count"],
            "non_null": c["non_null"], "null_fraction": c["null_fraction"], "key_candidate": c["key_candidate"],
            "indexes": [i for i in INDEXES if member[i]], "numeric_kinds": numeric.get(o, []),
            "not_indexed": {i: _why_not(i, c, ok, numeric.get(o, []), min_distinct) for i in INDEXES
                            if not member[i]}})
    warnings = json.loads(row["warnings"]) if row["warnings"] not in (None, "") else []
    if posted:
        total, indexed = stats.column("rows_total")[0].as_py(), stats.column("rows_indexed")[0].as_py()
        if indexed < total:
            warnings.append(f"the n-ary index holds the first {indexed:,} of {total:,} rows ([xash] "
                            "max_rows_per_table)")
    return {"snapshot_id": snapshot.snapshot_id, "table": {k: row[k] for k in TABLE_FIELDS},
            "warnings": warnings, "columns": out_columns}
