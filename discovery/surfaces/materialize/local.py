"""Running a plan in this process: each lake table read unit by unit, the rows written kept, nothing else.

The steps are those a Spark job runs on its executors (:mod:`spark_jobs.materialize`): :func:`.union.unit_rows` and
:func:`.augment.unit_partial` per unit of a lake table (:func:`discovery.data.lake.pinned.units`), then the same
finishing step; here one process takes the units in order.  A union holds the rows it writes; an augmentation holds the
query and the matching lake rows (reduced as it reads), never a lake table.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ...config import Limits
from ...data.lake.pinned import PinnedTable, read_table, units
from ...ground.normalize import normalize_array
from .augment import FanOut, JoinSource, combine, finish, unit_partial
from .plan import JoinPlan, UnionPlan
from .union import UnionSource, first_rows, plan_layout, query_rows, replan_observed, type_notes, unit_rows


def run_union(plan: UnionPlan, limits: Limits) -> tuple[pa.Table, list[str], list[UnionSource]]:
    """The union ``plan`` describes (the query's rows first, unless it leaves them out); also the warnings and the
    sources as finally typed (:func:`.union.replan_observed`)."""
    columns = [c.combine_chunks() for c in plan.query.columns]
    planned, attempt = plan.sources, 0
    while True:
        layout = plan_layout(plan.query.column_names, [c.type for c in columns], f"query {plan.query_label!r}",
                             planned, plan.snapshot_id)
        parts = [query_rows(columns, plan.query_label, layout, plan.query_id, plan.query_version)] \
            if plan.include_query else []
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
    if plan.dedupe:
        table = first_rows(table, list(layout.query_names))
    return table, type_notes(plan.sources, planned) + list(layout.warnings), planned


def run_augment(plan: JoinPlan, limits: Limits) -> tuple[pa.Table, list[str], int]:
    """The query's rows with the plan's lake columns added by its fan-out; also the warnings and how many rows
    found a match."""
    source, fan_out = plan.source, plan.fan_out
    parts = [unit_partial(source, i, unit, fan_out, limits) for i, unit in enumerate(units(source.table))]
    return finish(plan.keys, plan.base, source, combine(parts, source, fan_out), fan_out)


def lake_key_counts(source: JoinSource, limits: Limits) -> pa.StructArray:
    """How many rows of ``source``'s lake table (every row, at the pinned version) hold each mapped lake value:
    ``value_counts`` of their keys."""
    every = FanOut("all", 2 ** 62)
    keys = [unit_partial(source, i, unit, every, limits).column("__key") for i, unit in enumerate(units(source.table))]
    keys = pa.chunked_array(keys, type=source.mapping.schema.field("lake_key").type).combine_chunks()
    return pc.value_counts(keys)


def lake_cells(table: PinnedTable, column: str, values: set[str], limits: Limits) -> dict[str, dict[str, set[str]]]:
    """Per other column of ``table``: each of ``values`` (join keys of ``column``, normalised as
    :func:`lake_values` keys them) with the cells of that column (normalised, non-null) in the rows holding it.
    Only the rows of those values are held."""
    out: dict[str, dict[str, set[str]]] = {}
    wanted = pa.array(sorted(values), pa.string())
    for chunk in read_table(table, limits):
        if column not in chunk.names:
            continue
        keys = normalize_array(chunk.columns[chunk.names.index(column)])
        at = pc.indices_nonzero(pc.fill_null(pc.is_in(keys, value_set=wanted), False))
        if not len(at):
            continue
        row_keys = keys.take(at).to_pylist()
        for name, cells in zip(chunk.names, chunk.columns):
            if name == column:
                continue
            by_key = out.setdefault(name, {})
            for key, cell in zip(row_keys, normalize_array(cells.take(at)).to_pylist()):
                if cell is not None:
                    by_key.setdefault(key, set()).add(cell)
    return out


def lake_values(table: PinnedTable, column: str, limits: Limits) -> tuple[pa.Array, int]:
    """The distinct join keys of a text ``column`` of ``table`` (every row at the pinned version, normalised as
    :func:`.keys.cell_keys` keys text), in order of first appearance, and how many rows hold one: what the two-table
    matcher pairs query values with.  Only the column's distinct values are held."""
    seen: list[pa.Array] = []
    held = 0
    for chunk in read_table(table, limits):
        if column in chunk.names:
            keys = normalize_array(chunk.columns[chunk.names.index(column)]).drop_null()
            held += len(keys)
            seen.append(pc.unique(keys))
    if not seen:
        return pa.array([], pa.string()), 0
    return pc.unique(pa.chunked_array(seen, pa.string()).combine_chunks()), held
