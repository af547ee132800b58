"""Acting on an answer: the union or the join it describes, as one Arrow table with its description.

Called with a search's own results (the API, the CLI and the page run the search first; the ``materialize`` DAG reads
them back from ``query_results``), so what is written is what the answer showed: the union of the tables it ranked,
aligned as it aligned them; the join through the lake column it found, at its tau.  Each function returns a
:class:`Materialized`: the rows, and a description of them (rows, columns and types, the lake tables with the
versions read, warnings) that the CLI prints with ``--json``, the API attaches to the table's schema metadata
(``b"lakescout"``) and writers keep in Parquet and Delta files.

Reproducibility: lake tables are read at the versions the answer's snapshot indexed (:mod:`discovery.lake.pinned`);
a plain file or folder that changed since is read as it is now with a warning, or refused with ``strict``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pyarrow as pa

from ..config import Limits
from ..lake import LakeFileError
from ..lake.pinned import PinnedTable, changed_since
from ..query import QueryTable
from ..store import Snapshot
from .augment import FanOut, JoinSource
from .local import base_table, run_augment, run_union
from .plans import PlanError, key_source, numeric_source, text_source, union_sources

#: Schema metadata key of the description.
METADATA_KEY = b"lakescout"


@dataclass
class Materialized:
    table: pa.Table
    description: dict

    def with_metadata(self) -> pa.Table:
        """The rows with the description in their schema's metadata."""
        meta = dict(self.table.schema.metadata or {})
        meta[METADATA_KEY] = json.dumps(self.description, default=str).encode()
        return self.table.replace_schema_metadata(meta)


def _fresh(tables: list[PinnedTable], strict: bool) -> list[str]:
    """Warnings for plain files and folders changed since the snapshot; with ``strict`` the first is an error."""
    warnings = []
    for t in tables:
        try:
            note = changed_since(t)
        except LakeFileError as exc:
            raise PlanError(str(exc)) from None
        if note and strict:
            raise PlanError(note.replace("its current rows are used", "refused (strict)"))
        if note:
            warnings.append(note)
    return warnings


def _columns(table: pa.Table) -> list[dict]:
    return [{"name": f.name, "type": str(f.type)} for f in table.schema]


def _read_errors(action):
    try:
        return action()
    except LakeFileError as exc:
        raise PlanError(str(exc)) from None


def union_rows(snapshot: Snapshot, query: QueryTable, results: list[dict], *, include_query: bool = True,
               dedupe: bool = False, strict: bool = False, limits: Limits | None = None) -> Materialized:
    """The union of ``query`` with the lake tables of union ``results`` (table id, score, alignment)."""
    started = time.perf_counter()
    if not results:
        raise PlanError(f"no lake table to union with query {query.label!r}: the answer is empty")
    sources = union_sources(snapshot, query, results)
    warnings = _fresh([s.table for s in sources], strict)
    table, notes, final = _read_errors(lambda: run_union(snapshot.snapshot_id, query, sources, limits or Limits(),
                                                         include_query, dedupe))
    return Materialized(table, {
        "kind": "union", "snapshot_id": snapshot.snapshot_id, "query": query.label, "rows": table.num_rows,
        "columns": _columns(table), "query_rows": include_query, "dedupe": dedupe,
        "sources": [s.to_dict() for s in final], "warnings": warnings + notes, "engine": "local",
        "seconds": round(time.perf_counter() - started, 3)})


def join_source(snapshot: Snapshot, query: QueryTable, kind: str, join_columns: list[int], result: dict,
                params: dict, columns: list[str] | None) -> JoinSource:
    """The plan of one join ``result`` of ``kind`` (text | numeric | nary) for the query columns ``join_columns``:
    ``result`` names the lake table and its column(s) (``column``, a comma-joined pair for coordinates) or, for
    n-ary, the ``mapping``; ``params`` carries the search's ``tau`` (and ``tau_share``, ``metric``)."""
    from .plans import lake_columns

    names, _ = lake_columns(snapshot, result["table_id"])
    if kind == "nary":
        key = [query.names[i] for i in join_columns]
        return key_source(snapshot, query, key, result["table_id"], [result["mapping"][k] for k in key], columns)
    lake = [c.strip() for c in result["column"].split(",")] if kind == "numeric" and result["column"] not in names \
        else [result["column"]]
    missing = [c for c in lake if c not in names]
    if missing:
        raise PlanError(f"lake table {result['table_id']} has no column {missing[0]!r} (columns: {', '.join(names)})")
    ordinals = [names.index(c) for c in lake]
    if kind == "text":
        return text_source(snapshot, query, join_columns[0], result["table_id"], ordinals[0], params["tau"], columns)
    return numeric_source(snapshot, query, join_columns, result["table_id"], ordinals, columns, params.get("tau"),
                          params.get("tau_share"), params.get("metric"))


def join_rows(snapshot: Snapshot, query: QueryTable, source: JoinSource, join_columns: list[int], *,
              fan_out: FanOut = FanOut(), strict: bool = False, limits: Limits | None = None,
              result: dict | None = None) -> Materialized:
    """``query``'s rows with ``source``'s columns added by ``fan_out`` (see :mod:`.augment`)."""
    started = time.perf_counter()
    warnings = _fresh([source.table], strict)
    base, notes = base_table(query)
    table, more, matched = _read_errors(lambda: run_augment(query, base, source, fan_out, join_columns,
                                                            limits or Limits()))
    described = source.to_dict()
    if result is not None:
        described.update({k: result[k] for k in ("rank", "joinability", "matched", "score") if k in result})
    return Materialized(table, {
        "kind": "join", "snapshot_id": snapshot.snapshot_id, "query": query.label, "rows": table.num_rows,
        "query_rows": query.num_rows, "matched_rows": matched, "columns": _columns(table),
        "join_columns": [query.names[i] for i in join_columns], "fan_out": fan_out.mode,
        "max_matches": fan_out.max_matches if fan_out.mode == "all" else None, "sources": [described],
        "warnings": warnings + notes + more, "engine": "local", "seconds": round(time.perf_counter() - started, 3)})
