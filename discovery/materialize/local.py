"""Running a plan in this process: lake tables read chunk by chunk, the rows written kept, nothing else.

The transforms are those of :mod:`.union` and :mod:`.augment`, the ones a Spark job runs on its executors
(:mod:`spark_jobs.materialize`); here one process applies them to every chunk of every lake table in order.  A
union holds the rows it writes; an augmentation holds the query and the matching lake rows (reduced as it reads),
never a lake table.
"""
from __future__ import annotations

import pyarrow as pa
import pyarrow.compute as pc

from ..config import Limits
from ..lake.pinned import read_table
from ..query import QueryTable
from .augment import FanOut, JoinSource, assemble, chunk_matches, combine, partial
from .coerce import ARROW_TYPES, TEXT, typed_column
from .keys import cell_keys
from .naming import Names, short_name
from .union import UnionSource, first_rows, plan_layout, query_rows, replan, type_notes, union_chunk

#: Plans a union tries before every column that still surprises is read as text (each try may turn one kind of
#: surprise into another: naive to zoned times, then to text).
MAX_PLANS = 3


def _normalised(array: pa.Array) -> pa.Array:
    """A column given as data in one of the written types (integers int64, floats and decimals float64, times in
    microseconds, dictionaries decoded); what has no such type is written as its text."""
    t = array.type
    if pa.types.is_dictionary(t):
        return _normalised(array.dictionary_decode())
    for check, to in ((pa.types.is_integer, pa.int64()), (pa.types.is_floating, pa.float64()),
                      (pa.types.is_decimal, pa.float64()), (pa.types.is_date, pa.date32()),
                      (pa.types.is_boolean, pa.bool_()), (pa.types.is_null, pa.null())):
        if check(t):
            return array.cast(to)
    if pa.types.is_timestamp(t):
        return array.cast(pa.timestamp("us", tz="UTC" if t.tz else None))
    try:
        return array.cast(TEXT)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else str(v) for v in array.to_pylist()], TEXT)


def query_columns(query: QueryTable) -> tuple[list[pa.Array], list[str]]:
    """The query's columns typed for writing, with the notes typing gave: a query given as data keeps its columns
    (in the written types, :func:`_normalised`), a file's columns are typed as a lake table's are."""
    if query.arrow is not None:
        return [_normalised(c.combine_chunks()) for c in query.arrow.columns], []
    out, notes = [], []
    for name, cells, kind in zip(query.names, query.columns, query.kinds()):
        typed = typed_column(cells, kind if kind in ARROW_TYPES else "string", name, f"query {query.label!r}")
        out.append(typed.array)
        notes += [typed.note] if typed.note else []
    return out, notes


def run_union(snapshot_id: int, query: QueryTable, sources: list[UnionSource], limits: Limits,
              include_query: bool = True, dedupe: bool = False) -> tuple[pa.Table, list[str], list[UnionSource]]:
    """The union of ``query`` (its rows first, unless ``include_query`` is off) and ``sources``; also the warnings
    and the sources as finally typed."""
    columns, notes = query_columns(query)
    planned, attempt = sources, 0
    while True:
        layout = plan_layout(query.names, [c.type for c in columns], f"query {query.label!r}", planned, snapshot_id)
        parts = [query_rows(columns, query.label, layout)] if include_query else []
        observed: dict[tuple[int, str], set[str]] = {}
        for source in planned:
            for chunk in read_table(source.table, limits):
                rows, seen = union_chunk(chunk, source, layout)
                for lake, kind in seen.items():
                    observed.setdefault((source.table.table_id, lake), set()).add(kind)
                parts.append(rows)
        if not observed:
            break
        attempt += 1
        planned = replan(planned, observed if attempt < MAX_PLANS else {k: {"string"} for k in observed})
    table = pa.concat_tables(parts) if parts else layout.schema.empty_table()
    if dedupe:
        table = first_rows(table, list(layout.query_names))
    return table, notes + type_notes(sources, planned) + list(layout.warnings), planned


def run_augment(query: QueryTable, base: pa.Table, source: JoinSource, fan_out: FanOut, join_columns: list[int],
                limits: Limits) -> tuple[pa.Table, list[str], int]:
    """``base`` (the query's rows, typed, one per query row) with ``source``'s columns added by ``fan_out``; also
    the warnings and how many rows found a match."""
    parts, row = [], 0
    for chunk in read_table(source.table, limits):
        parts.append(partial(chunk_matches(chunk, source, row), source, fan_out))
        row += chunk.num_rows
    reduced = combine(parts, source, fan_out)
    keys = cell_keys([query.columns[i] for i in join_columns], source.kind, source.dim)
    if isinstance(keys, pa.ChunkedArray):
        keys = keys.combine_chunks()
    added = assemble(keys, source, reduced, fan_out, short_name(source.table.path), Names(base.column_names))
    if added.rows is not None:
        base = base.take(pa.array(added.rows))
    for name, array in zip(added.names, added.arrays):
        base = base.append_column(name, array)
    return base, added.notes, added.matched_rows


def lake_key_counts(source: JoinSource, limits: Limits) -> pa.StructArray:
    """How many rows of ``source``'s lake table (every row, at the pinned version) hold each mapped lake value:
    ``value_counts`` of their keys."""
    keys, row = [], 0
    for chunk in read_table(source.table, limits):
        keys.append(chunk_matches(chunk, source, row).column("__key"))
        row += chunk.num_rows
    keys = pa.chunked_array(keys, type=source.mapping.schema.field("lake_key").type).combine_chunks()
    return pc.value_counts(keys)


def base_table(query: QueryTable) -> tuple[pa.Table, list[str]]:
    """The query's rows as the first columns of an augmentation."""
    columns, notes = query_columns(query)
    return pa.Table.from_arrays(columns, names=query.names), notes
