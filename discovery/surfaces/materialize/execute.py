"""Acting on an answer: the union or the join it describes, as one Arrow table with its description.

Called with a search's own results (the API, the CLI and the page run the search first; the ``materialize`` DAG reads
them back from ``query_results``), so what is written is what the answer showed: the union of the tables it ranked,
aligned as it aligned them; the join through the lake column it found, at its tau.  Each function returns a
:class:`Materialized`: the rows, and a description of them (rows, columns and types, the lake tables with the
versions read, warnings) that the CLI prints with ``--json``, the API attaches to the table's schema metadata
(``b"lakescout"``) and writers keep in Parquet and Delta files.

Reproducibility: lake tables are read at the versions the answer's snapshot indexed (:mod:`discovery.data.lake.pinned`);
a plain file or folder that changed since is read as it is now with a warning, or refused with ``strict``.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass

import pyarrow as pa

from ...config import Limits, NumjoinConfig
from ...data.lake import LakeFileError
from ...data.lake.pinned import PinnedTable, changed_since
from ...data.store import Snapshot
from ...query.resolve import QueryTable
from .augment import FanOut, JoinSource, query_keys
from .coerce import query_columns
from .local import run_augment, run_union
from .plan import JoinPlan, UnionPlan
from .sources import Matching, PlanError, key_source, numeric_source, pinned_table, text_source, union_sources
from .union import left_out_note

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


def _read_errors(action):
    try:
        return action()
    except LakeFileError as exc:
        raise PlanError(str(exc)) from None


def describe(plan, schema: pa.Schema, rows: int, sources: list, warnings: list[str], engine: str, started: float,
             matched: int | None = None) -> dict:
    """What was materialised: rows, columns and types, the lake tables with the versions read, warnings."""
    out = {"kind": plan.kind, "snapshot_id": plan.snapshot_id, "query": plan.query_label, "rows": rows,
           "columns": [{"name": f.name, "type": str(f.type)} for f in schema]}
    if plan.kind == "union":
        out.update(query_rows=plan.include_query, dedupe=plan.dedupe, sources=[s.to_dict() for s in sources])
    else:
        described = plan.source.to_dict()
        described.update({k: plan.result[k] for k in ("rank", "joinability", "matched", "score", "chosen")
                          if k in plan.result})
        if matched == 0:
            warnings = warnings + [f"no query row matched {plan.source.label} on "
                                   f"{', '.join(plan.source.lake_columns)}: its added columns are null"]
        out.update(query_rows=plan.base.num_rows, matched_rows=matched, join_columns=plan.join_columns,
                   fan_out=plan.fan_out.mode,
                   max_matches=plan.fan_out.max_matches if plan.fan_out.mode == "all" else None,
                   sources=[described])
    out.update(warnings=plan.notes + warnings, engine=engine, seconds=round(time.perf_counter() - started, 3))
    return out


def union_plan(snapshot: Snapshot, query: QueryTable, results: list[dict], *, include_query: bool = True,
               dedupe: bool = False, strict: bool = False) -> UnionPlan:
    """The plan of the union of ``query`` with the lake tables of union ``results`` (table id, score,
    alignment)."""
    if not results:
        raise PlanError(f"no lake table to union with query {query.label!r}: the answer is empty")
    sources = union_sources(snapshot, query, results)
    warnings = _fresh([s.table for s in sources], strict) + [left_out_note(s) for s in sources if s.left_out]
    columns, notes = query_columns(query)
    own = pinned_table(snapshot, query.table_id) if query.table_id is not None else None
    return UnionPlan(snapshot.snapshot_id, query.label, pa.Table.from_arrays(columns, names=query.names), sources,
                     include_query, dedupe, warnings + notes, None if own is None else own.table_id,
                     None if own is None else own.version_label)


def run_plan(plan: UnionPlan | JoinPlan, limits: Limits | None = None) -> Materialized:
    """Materialise ``plan`` in this process."""
    started = time.perf_counter()
    limits = limits or Limits()
    if isinstance(plan, UnionPlan):
        table, notes, final = _read_errors(lambda: run_union(plan, limits))
        return Materialized(table, describe(plan, table.schema, table.num_rows, final, notes, "local", started))
    table, notes, matched = _read_errors(lambda: run_augment(plan, limits))
    return Materialized(table, describe(plan, table.schema, table.num_rows, plan.sources, notes, "local", started,
                                        matched))


def join_source(snapshot: Snapshot, query: QueryTable, kind: str, join_columns: list[int], result: dict,
                params: dict, columns: list[str] | None, matching: Matching, numjoin: NumjoinConfig) -> JoinSource:
    """The plan of one join ``result`` of ``kind`` (text | numeric | nary) for the query columns ``join_columns``:
    ``result`` names the lake table and its column(s) (``column``, a comma-joined pair for coordinates) or, for
    n-ary, the ``mapping``; ``params`` carries the search's ``tau`` (and ``tau_share``, ``metric``); ``matching``
    how a text join's values are paired; ``numjoin`` the caller's ``[numjoin]`` section, whose ``max_values`` and
    default tau a numerical join's pairs are found with, as its search found them."""
    from .sources import lake_columns

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
        return text_source(snapshot, query, join_columns, result["table_id"], ordinals[0], params["tau"], columns,
                           matching)
    return numeric_source(snapshot, query, join_columns, result["table_id"], ordinals, columns, numjoin,
                          params.get("tau"), params.get("tau_share"), params.get("metric"))


def join_plan(snapshot: Snapshot, query: QueryTable, source: JoinSource, join_columns: list[int], *,
              fan_out: FanOut = FanOut(), strict: bool = False, result: dict | None = None) -> JoinPlan:
    """The plan of ``query``'s rows with ``source``'s columns added by ``fan_out`` (see :mod:`.augment`)."""
    warnings = _fresh([source.table], strict)
    columns, notes = query_columns(query)
    return JoinPlan(snapshot.snapshot_id, query.label, pa.Table.from_arrays(columns, names=query.names),
                    query_keys(query, join_columns, source), source, fan_out, [query.names[i] for i in join_columns],
                    warnings + notes, result or {})


def compose(plan: JoinPlan, previous: pa.Table) -> JoinPlan:
    """``plan`` applied to the rows another augmentation wrote (``previous``: its query columns, under their names,
    then what it added): the same lake table and value mapping, keyed on those rows."""
    from dataclasses import replace

    from ...query.resolve import from_arrow

    q = from_arrow(previous, plan.query_label)
    keys = query_keys(q, [q.ordinal(c) for c in plan.join_columns], plan.source)
    return replace(plan, base=previous.replace_schema_metadata(None), keys=keys, notes=[])


def run_plans(plans: list, limits: Limits | None = None) -> Materialized:
    """Materialise ``plans`` in this process, in order: one union, or augmentations each applied to the rows the
    previous one wrote (:func:`compose`); the description lists every lake table added."""
    m = run_plan(plans[0], limits)
    for plan in plans[1:]:
        step = run_plan(compose(plan, m.table), limits)
        step.description["sources"] = m.description["sources"] + step.description["sources"]
        step.description["warnings"] = m.description["warnings"] + step.description["warnings"]
        step.description["query_rows"] = m.description["query_rows"]
        m = step
    return m
