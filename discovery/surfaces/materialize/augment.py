"""A join answer as rows: the query's rows with columns of a lake table added through the matched values.

A join result pairs query values with lake values (its *value mapping*: the semantic join's nearest lake value within
tau, exactly the pairs the search verifies; the numerical join's nearest lake number, coordinate or vector within
tau; the n-ary join's equal key tuple).  Each query row looks its value up in the mapping, and the lake rows holding
the paired lake value are its matches.  How many rows a query row becomes is a stated policy (:class:`FanOut`),
never an accident of the data:

* ``nearest`` (default): one row per query row, with the first matching lake row in the table's row order (its
  data files in path order, rows in file order); a query row without a match keeps its row with the added columns
  null.
* ``all``: every matching lake row, in row order (a query row without one keeps one row of nulls); a query row with
  more than ``max_matches`` of them is refused, naming the value, and nothing is written.
* ``aggregate``: one row per query row with ``count`` (matching lake rows), each added column's first value, and
  ``min`` / ``max`` / ``mean`` of each added number column.

Every added table also brings ``<short>.distance``: the mapping's distance between the query value and the lake
value its row joined (0 for an n-ary key), null without a match; a text join also ``<short>.match_score`` (the
pair's estimated precision) and ``<short>.match_rule`` (what matched it).  Names follow :mod:`.naming`.

The lake table is read chunk by chunk (:mod:`discovery.data.lake.pinned`); a chunk keeps only its matching rows
(:func:`chunk_matches`), reduced at once to what the policy needs (:func:`partial`: per lake value the first row,
or the counts and number aggregates), and partial results combine in any grouping (:func:`combine`), so the same
functions serve one process reading the table whole and a Spark job reading it in pieces: the reader holds the
matches, never the table.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.lake.pinned import PinnedTable, read_unit
from ...data.lake.table import ParsedTable
from .coerce import Typed, parse_cells, typed_column
from .keys import cell_keys
from .naming import Names, short_name

MODES = ("nearest", "all", "aggregate")
#: Columns of a text join's mapping written beside ``<short>.distance`` as ``<short>.match_<column>``: the pair's
#: estimated precision and the rule that matched it (:mod:`discovery.transforms.match`).
_MATCH_COLUMNS = ("score", "rule")
NUMBER_AGGREGATES = ("min", "max", "mean")


class FanOutError(ValueError):
    """A query value matching more lake rows than the ``all`` policy's bound."""


@dataclass(frozen=True)
class FanOut:
    """How many rows a query row becomes (module docstring): ``mode``, and for ``all`` the most lake rows one query
    row may match."""

    mode: str = "nearest"
    max_matches: int = 100

    def __post_init__(self):
        if self.mode not in MODES:
            raise ValueError(f"fan_out must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.max_matches < 1:
            raise ValueError(f"max_matches must be at least 1, got {self.max_matches}")


@dataclass(frozen=True)
class JoinSource:
    """One lake table joined to the query: its pinned version, the join columns and kind (:mod:`.keys`), the
    columns it adds with their kinds, and the value mapping (``query_key``, ``lake_key``, ``distance``; keys as
    :func:`.keys.cell_keys` makes them)."""

    table: PinnedTable
    kind: str
    lake_columns: tuple[str, ...]
    added: tuple[str, ...]
    kinds: tuple[str, ...]
    mapping: pa.Table
    dim: int = 0
    evidence: dict = field(default_factory=dict)

    @property
    def label(self) -> str:
        return f"lake table {self.table.path!r}"

    def numeric(self) -> list[int]:
        """Positions of the added columns whose kind is a number."""
        return [i for i, k in enumerate(self.kinds) if k in ("int", "float")]

    def to_dict(self) -> dict:
        return {"table_id": self.table.table_id, "path": self.table.path, "format": self.table.format,
                "version": self.table.version_label, "join": self.kind, "lake_columns": list(self.lake_columns),
                "added": list(self.added), "matched_values": self.mapping.num_rows, **self.evidence}


def chunk_matches(chunk: ParsedTable, source: JoinSource, first_row: int) -> pa.Table:
    """The rows of ``chunk`` whose join value the mapping pairs with a query value: ``__key``, ``__row`` (the row's
    position in the table, ``first_row`` for the chunk's first) and the added columns' cells (``c0``, ``c1``...)."""
    n = chunk.num_rows
    cells = [chunk.columns[chunk.names.index(c)] if c in chunk.names else pa.nulls(n, pa.string())
             for c in source.lake_columns]
    keys = cell_keys(cells, source.kind, source.dim)
    keep = pc.fill_null(pc.is_in(keys, value_set=source.mapping.column("lake_key")), False)
    rows = pa.array(np.arange(first_row, first_row + n, dtype=np.int64))
    added = [chunk.columns[chunk.names.index(c)] if c in chunk.names else pa.nulls(n, pa.string())
             for c in source.added]
    table = pa.Table.from_arrays([keys, rows] + added, names=["__key", "__row"] + [f"c{i}" for i in
                                                                                    range(len(added))])
    return table.filter(keep)


#: Bits of a row's position within its unit: ``__row`` is (unit index << ROW_BITS) + row, so rows of different units
#: (read by different tasks) order as the table does.
ROW_BITS = 40


#: Schema metadata key of a partial result: the added columns (by position) with a cell of the lake table, matched
#: or not, that is not of the column's kind; such a column is written as text whatever rows match.
STRAYS_KEY = b"lakescout_strays"


def strays(table: pa.Table) -> set[int]:
    """The added columns :data:`STRAYS_KEY` names in ``table``'s metadata."""
    return set(json.loads((table.schema.metadata or {}).get(STRAYS_KEY, b"[]")))


def _with_strays(table: pa.Table, found: set[int]) -> pa.Table:
    return table.replace_schema_metadata({**(table.schema.metadata or {}), STRAYS_KEY: json.dumps(sorted(found))})


def _chunk_strays(chunk: ParsedTable, source: JoinSource) -> set[int]:
    """The added columns of ``source`` with a cell in ``chunk`` (any row) that does not parse as their kind."""
    return {i for i, (col, kind) in enumerate(zip(source.added, source.kinds))
            if col in chunk.names and typed_column(chunk.columns[chunk.names.index(col)], kind, col,
                                                   source.label).note}


def unit_partial(source: JoinSource, unit_index: int, unit: dict, fan_out: FanOut, limits) -> pa.Table:
    """:func:`partial` of the matches of one unit (:func:`discovery.data.lake.pinned.units`) of ``source``'s table, with
    the added columns whose cells (every row, not only the matched ones) stray from their kind: a column's written
    type is a property of the lake column, the same under every fan-out and whichever rows match."""
    parts, row, found = [], unit_index << ROW_BITS, set()
    for chunk in read_unit(source.table, unit, limits):
        parts.append(partial(chunk_matches(chunk, source, row), source, fan_out))
        found |= _chunk_strays(chunk, source)
        row += chunk.num_rows
    return _with_strays(combine(parts, source, fan_out), found)


def _first(matches: pa.Table) -> pa.Table:
    """Per key, the row with the least ``__row``."""
    least = matches.group_by("__key", use_threads=False).aggregate([("__row", "min")]).column("__row_min")
    return matches.filter(pc.is_in(matches.column("__row"), value_set=least))


def partial(matches: pa.Table, source: JoinSource, fan_out: FanOut) -> pa.Table:
    """What ``fan_out`` keeps of the ``matches`` of some chunks, in the form :func:`combine` reduces again."""
    if fan_out.mode == "all":
        return matches
    if fan_out.mode == "nearest":
        return _first(matches)
    stats = [pa.array(np.ones(matches.num_rows, dtype=np.int64))]
    names = ["__count"]
    for i in source.numeric():
        values, bad = parse_cells(matches.column(f"c{i}"), "float")
        stats += [values, values, values, pc.cast(pc.is_valid(values), pa.int64()), bad]
        names += [f"__min{i}", f"__max{i}", f"__sum{i}", f"__n{i}", f"__bad{i}"]
    return _combine_aggregates(pa.Table.from_arrays(matches.columns + stats, names=matches.column_names + names),
                               source)


def _combine_aggregates(parts: pa.Table, source: JoinSource) -> pa.Table:
    specs = [("__count", "sum")]
    for i in source.numeric():
        specs += [(f"__min{i}", "min"), (f"__max{i}", "max"), (f"__sum{i}", "sum"), (f"__n{i}", "sum"),
                  (f"__bad{i}", "max")]
    grouped = parts.group_by("__key", use_threads=False).aggregate(specs)
    first = _first(parts.select(["__key", "__row"] + [c for c in parts.column_names if c.startswith("c")]))
    at = pc.index_in(grouped.column("__key"), value_set=first.column("__key"))
    out = first.take(at)
    for (name, how) in specs:
        out = out.append_column(name, grouped.column(f"{name}_{how}"))
    return out


def combine(parts: list[pa.Table], source: JoinSource, fan_out: FanOut) -> pa.Table:
    """The partial results of :func:`partial` reduced to one, whatever chunks they came from; for ``all``, sorted
    by lake value and row, and checked against ``max_matches``; the strays of every part are kept."""
    found = set().union(*(strays(p) for p in parts))
    return _with_strays(_combine(parts, source, fan_out), found)


def _combine(parts: list[pa.Table], source: JoinSource, fan_out: FanOut) -> pa.Table:
    parts = [p.replace_schema_metadata(None) for p in parts if p.num_rows]
    if not parts:
        return partial(_empty(source), source, fan_out)
    table = pa.concat_tables(parts)
    if fan_out.mode == "nearest":
        return _first(table)
    if fan_out.mode == "aggregate":
        return _combine_aggregates(table, source)
    table = table.sort_by([("__key", "ascending"), ("__row", "ascending")])
    counts = table.group_by("__key", use_threads=False).aggregate([("__row", "count")])
    over = pc.greater(counts.column("__row_count"), fan_out.max_matches)
    if pc.any(over).as_py():
        n = pc.max(counts.column("__row_count")).as_py()
        raise FanOutError(f"{source.label}: a query value matches {n} lake rows, more than max_matches "
                          f"{fan_out.max_matches} of the 'all' fan-out (raise max_matches, or use nearest or "
                          "aggregate)")
    return table


def _empty(source: JoinSource) -> pa.Table:
    key_type = source.mapping.schema.field("lake_key").type
    fields = [("__key", key_type), ("__row", pa.int64())] + [(f"c{i}", pa.string()) for i in range(len(source.added))]
    return pa.schema(fields).empty_table()


def query_keys(query, join_columns: list[int], source: JoinSource) -> pa.Array:
    """The join key of each query row (its join columns' cells keyed as :func:`.keys.cell_keys` keys them)."""
    keys = cell_keys([query.columns[i] for i in join_columns], source.kind, source.dim)
    return keys.combine_chunks() if isinstance(keys, pa.ChunkedArray) else keys


def finish(keys: pa.Array, base: pa.Table, source: JoinSource, reduced: pa.Table,
           fan_out: FanOut) -> tuple[pa.Table, list[str], int]:
    """``base`` (the query's typed rows, with join ``keys``) with the columns :func:`assemble` adds from ``reduced``
    (the :func:`combine` of every unit), the typing notes, and how many output rows found a match."""
    added = assemble(keys, source, reduced, fan_out, short_name(source.table.path), Names(base.column_names))
    if added.rows is not None:
        base = base.take(pa.array(added.rows))
    for name, array in zip(added.names, added.arrays):
        base = base.append_column(name, array)
    return base, added.notes, added.matched_rows


@dataclass
class Added:
    """Columns an augmentation adds: names and arrays, aligned with the output rows; ``rows`` the query row of each
    output row (None: one output row per query row, in order); ``notes`` the typing warnings."""

    names: list[str]
    arrays: list[pa.Array]
    rows: np.ndarray | None
    matched_rows: int
    notes: list[str]


def assemble(query_keys: pa.Array, source: JoinSource, reduced: pa.Table, fan_out: FanOut, prefix: str,
             names: Names) -> Added:
    """The added columns for query rows with join keys ``query_keys`` (the query's cells keyed as the mapping's
    ``query_key``), from the :func:`combine` result ``reduced``."""
    mapping = source.mapping
    at = pc.index_in(query_keys, value_set=mapping.column("query_key"))
    lake_key = mapping.column("lake_key").take(at)
    distance = mapping.column("distance").take(at)
    if fan_out.mode == "all":
        match = {c: mapping.column(c).take(at) for c in _MATCH_COLUMNS if c in mapping.column_names}
        return _assemble_all(lake_key, distance, match, source, reduced, prefix, names)
    row = pc.index_in(lake_key, value_set=reduced.column("__key"))
    distance = pc.if_else(pc.is_valid(row), distance, pa.scalar(None, pa.float64()))
    out_names, arrays, notes = [], [], []
    if fan_out.mode == "aggregate":
        count = reduced.column("__count").take(row) if reduced.num_rows else pa.nulls(len(row), pa.int64())
        out_names.append(names.take(f"{prefix}.count"))
        arrays.append(pc.fill_null(count, 0))
    stray = strays(reduced)
    for i, (col, kind) in enumerate(zip(source.added, source.kinds)):
        typed = _typed(reduced, i, col, kind, stray, source)
        notes += [typed.note] if typed.note else []
        out_names.append(names.take(f"{prefix}.{col}"))
        arrays.append(typed.array.take(row))
        if fan_out.mode == "aggregate" and i in source.numeric():
            arrays += _number_aggregates(reduced, i, row, col, source, notes, i in stray)
            out_names += [names.take(f"{prefix}.{col}.{a}") for a in NUMBER_AGGREGATES]
    out_names.append(names.take(f"{prefix}.distance"))
    arrays.append(distance)
    for column in _MATCH_COLUMNS:
        if column in mapping.column_names:
            out_names.append(names.take(f"{prefix}.match_{column}"))
            arrays.append(pc.if_else(pc.is_valid(row), mapping.column(column).take(at),
                                     pa.scalar(None, mapping.schema.field(column).type)))
    return Added(out_names, arrays, None, int(pc.sum(pc.is_valid(row)).as_py() or 0), notes)


def _typed(reduced: pa.Table, i: int, col: str, kind: str, stray: set[int], source: JoinSource) -> Typed:
    """Added column ``i`` of ``reduced`` typed: as text, with the note, when the lake column has cells (matched or
    not) that are not of its kind (:func:`unit_partial`)."""
    cells = reduced.column(f"c{i}").combine_chunks()
    if i in stray and kind not in ("string", "empty", None):
        return Typed(cells.cast(pa.string()), f"column {col!r} of {source.label} is mostly {kind} but has cells that "
                                              "are not: written as text")
    return typed_column(cells, kind, col, source.label)


def _number_aggregates(reduced: pa.Table, i: int, row: pa.Array, col: str, source: JoinSource,
                       notes: list[str], stray: bool = False) -> list[pa.Array]:
    n = reduced.column(f"__n{i}").take(row)
    bad = stray or (bool(pc.max(reduced.column(f"__bad{i}")).as_py()) if reduced.num_rows else False)
    if bad:
        notes.append(f"column {col!r} of {source.label} has cells that are not numbers: no min, max or mean")
        return [pa.nulls(len(row), pa.float64())] * 3
    mean = pc.divide(reduced.column(f"__sum{i}").take(row), pc.cast(n, pa.float64()))
    return [reduced.column(f"__min{i}").take(row), reduced.column(f"__max{i}").take(row), mean]


def _assemble_all(lake_key, distance, match: dict, source: JoinSource, reduced: pa.Table, prefix: str,
                  names: Names) -> Added:
    groups = reduced.group_by("__key", use_threads=False).aggregate([("__row", "count"), ("__row", "min")])
    # reduced is sorted by (key, row): a key's rows start where its first row is
    first = pc.index_in(groups.column("__row_min"), value_set=reduced.column("__row")).to_numpy()
    g = pc.index_in(lake_key, value_set=groups.column("__key"))
    valid = pc.is_valid(g).to_numpy(zero_copy_only=False)
    gi = g.fill_null(0).to_numpy()
    count = np.where(valid, groups.column("__row_count").to_numpy()[gi] if len(groups) else 0, 0)
    reps = np.maximum(count, 1)
    rows = np.repeat(np.arange(len(lake_key)), reps)
    offset = np.arange(rows.size) - np.repeat(np.cumsum(reps) - reps, reps)
    has = np.repeat(count > 0, reps)
    lake_rows = np.where(has, np.repeat(first[gi] if len(groups) else np.zeros(len(gi), np.int64), reps) + offset, 0)
    take = pa.array(lake_rows, mask=~has)
    out_names, arrays, notes = [], [], []
    stray = strays(reduced)
    for i, (col, kind) in enumerate(zip(source.added, source.kinds)):
        typed = _typed(reduced, i, col, kind, stray, source)
        notes += [typed.note] if typed.note else []
        out_names.append(names.take(f"{prefix}.{col}"))
        arrays.append(typed.array.take(take))
    out_names.append(names.take(f"{prefix}.distance"))
    dist = distance.take(pa.array(rows))
    arrays.append(pc.if_else(pa.array(has), dist, pa.scalar(None, pa.float64())))
    for column, values in match.items():
        out_names.append(names.take(f"{prefix}.match_{column}"))
        arrays.append(pc.if_else(pa.array(has), values.take(pa.array(rows)), pa.scalar(None, values.type)))
    return Added(out_names, arrays, rows, int(has.sum()), notes)
