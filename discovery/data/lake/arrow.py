"""Arrow record batches of a typed format (Parquet, ORC, JSON, Delta, Iceberg, partitioned folders) as a
:class:`~discovery.data.lake.table.ParsedTable`.

Typed formats share one conversion, so a column reads the same whatever file holds it:

* nested records become dotted leaf columns (``address.city``), as JSON and Parquet users name them;
* every column is kept as trimmed strings (the index compares values as text) and its type comes from the
  format's schema (:func:`schema_type`), not from guessing at the strings; lists and maps, which have no string
  cast, are rendered as JSON;
* rows are taken batch by batch up to ``max_rows``, so a dataset of any size costs at most the row bound in memory.
"""
from __future__ import annotations

import json
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.types as pat

from ...config import Limits
from .table import LakeFileError, ParsedTable, check_cell_lengths, dedupe_names, first_line, text_cells


def schema_type(t: pa.DataType) -> str | None:
    """The profile type of an Arrow type; None where the strings decide (text, binary, nested)."""
    if pat.is_boolean(t):
        return "bool"
    if pat.is_integer(t):
        return "int"
    if pat.is_floating(t) or pat.is_decimal(t):
        return "float"
    if pat.is_date(t):
        return "date"
    if pat.is_timestamp(t):
        return "datetime"
    if pat.is_dictionary(t):
        return schema_type(t.value_type)
    return None


def flatten_schema(schema: pa.Schema) -> pa.Schema:
    """``schema`` with struct fields replaced by their dotted leaves, recursively."""
    fields: list[pa.Field] = []

    def walk(prefix: str, field: pa.Field):
        if pat.is_struct(field.type):
            for i in range(field.type.num_fields):
                walk(f"{prefix}{field.name}.", field.type.field(i))
        else:
            fields.append(pa.field(prefix + field.name, field.type))

    for f in schema:
        walk("", f)
    return pa.schema(fields)


def _flatten(batch: pa.RecordBatch | pa.Table) -> pa.Table:
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    while any(pat.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    return table


def _as_text(col: pa.ChunkedArray) -> pa.Array:
    col = col.combine_chunks() if isinstance(col, pa.ChunkedArray) else col
    if pat.is_dictionary(col.type):
        col = col.dictionary_decode()
    try:
        return col.cast(pa.string())
    except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
        # Lists and maps have no cast to string: their JSON rendering is what a user would search for.
        return pa.array([None if v is None else json.dumps(v, default=str, ensure_ascii=False)
                         for v in col.to_pylist()], type=pa.string())


def take_rows(batches: Iterable[pa.RecordBatch | pa.Table], limit: int) -> tuple[pa.Table | None, bool]:
    """The first ``limit`` rows of ``batches`` (flattened), and whether rows were left unread."""
    parts, n, more = [], 0, False
    for batch in batches:
        if batch.num_rows == 0:
            continue
        if n >= limit:
            more = True
            break
        table = _flatten(batch)
        if n + table.num_rows > limit:
            table, more = table.slice(0, limit - n), True
        parts.append(table)
        n += table.num_rows
        if more:
            break
    if not parts:
        return None, more
    try:
        return pa.concat_tables(parts, promote_options="permissive"), more
    except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
        raise LakeFileError(f"its parts have conflicting column types: {first_line(exc)}") from None


def parsed_from_arrow(table: pa.Table | None, schema: pa.Schema, limits: Limits, *, truncated: bool = False,
                      total_rows: int | None = None, warnings: list[str] | None = None) -> ParsedTable:
    """A ParsedTable of ``table`` (already cut to ``max_rows``); ``schema`` gives the columns when it has no rows."""
    warnings = list(warnings or [])
    flat = flatten_schema(schema)
    if len(flat) == 0:
        raise LakeFileError("the table has no columns")
    if len(flat) > limits.max_columns:
        raise LakeFileError(f"{len(flat)} columns, more than the limit of {limits.max_columns}")
    if table is None:
        table = flat.empty_table()
    if truncated:
        total = f"{total_rows} rows" if total_rows else "more rows"
        warnings.append(f"{total}, only the first {limits.max_rows} indexed")
    names, notes = dedupe_names(table.column_names)
    warnings += notes
    cols, types = [], []
    for i, _name in enumerate(table.column_names):
        col = table.column(i)
        cols.append(check_cell_lengths(text_cells(_as_text(col)), limits, i + 1))
        types.append(schema_type(col.type))
    return ParsedTable(names, cols, None, None, warnings, types)
