"""Running a plan in this process: each lake table read unit by unit, the rows written kept, nothing else.

The steps are those a Spark job runs on its executors (:mod:`spark_jobs.materialize`): :func:`.union.unit_rows` and
:func:`.augment.unit_partial` per unit of a lake table (:func:`discovery.lake.pinned.units`), then the same finishing
step; here one process takes the units in order.  A union holds the rows it writes; an augmentation holds the query
and the matching lake rows (reduced as it reads), never a lake table.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..config import Limits
from ..lake.pinned import units
from ..query import QueryTable
from .augment import FanOut, JoinSource, combine, finish, unit_partial
from .coerce import query_columns
from .union import UnionSource, first_rows, plan_layout, query_rows, replan_observed, type_notes, unit_rows


def run_union(snapshot_id: int, query: QueryTable, sources: list[UnionSource], limits: Limits,
              include_query: bool = True, dedupe: bool = False) -> tuple[pa.Table, list[str], list[UnionSource]]:
    """The union of ``query`` (its rows first, unless ``include_query`` is off) and ``sources``; also the warnings
    and the sources as finally typed (:func:`.union.replan_observed`)."""
    columns, notes = query_columns(query)
    planned, attempt = sources, 0
    while True:
        layout = plan_layout(query.names, [c.type for c in columns], f"query {query.label!r}", planned, snapshot_id)
        parts = [query_rows(columns, query.label, layout)] if include_query else []
        observed: dict[tuple[int, str], set[str]] = {}
        for source in planned:
            for unit in units(source.table):
                rows, seen = unit_rows(source, unit, layout, limits)
                parts += rows
                for lake, kinds in seen.items():
                    observed.setdefault((source.table.table_id, lake), set()).update(kinds)
        if not observed:
            break
        attempt += 1
        planned = replan_observed(planned, observed, attempt)
    table = pa.concat_tables(parts) if parts else layout.schema.empty_table()
    if dedupe:
        table = first_rows(table, list(layout.query_names))
    return table, notes + type_notes(sources, planned) + list(layout.warnings), planned


def run_augment(query: QueryTable, base: pa.Table, source: JoinSource, fan_out: FanOut, join_columns: list[int],
                limits: Limits) -> tuple[pa.Table, list[str], int]:
    """``base`` (the query's rows, typed, one per query row) with ``source``'s columns added by ``fan_out``; also
    the warnings and how many rows found a match."""
    parts = [unit_partial(source, i, unit, fan_out, limits) for i, unit in enumerate(units(source.table))]
    return finish(query, join_columns, base, source, combine(parts, source, fan_out), fan_out)


def lake_key_counts(source: JoinSource, limits: Limits) -> pa.StructArray:
    """How many rows of ``source``'s lake table (every row, at the pinned version) hold each mapped lake value:
    ``value_counts`` of their keys."""
    every = FanOut("all", 2 ** 62)
    keys = [unit_partial(source, i, unit, every, limits).column("__key") for i, unit in enumerate(units(source.table))]
    keys = pa.chunked_array(keys, type=source.mapping.schema.field("lake_key").type).combine_chunks()
    return pc.value_counts(keys)


def base_table(query: QueryTable) -> tuple[pa.Table, list[str]]:
    """The query's rows as the first columns of an augmentation."""
    columns, notes = query_columns(query)
    return pa.Table.from_arrays(columns, names=query.names), notes
