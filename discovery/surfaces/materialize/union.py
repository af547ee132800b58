"""A union answer as rows: each lake table's columns placed by the alignment that scored it.

PGTUS scores a lake table by a one-to-one alignment of query columns to lake columns (Definition 5: the maximum-weight
matching of column pairs whose similarity reaches tau).  The written union has the query's columns, in its order;
a lake table contributes its rows with each aligned lake column under the query column it was matched to, and the
query columns it left unmatched null.  Every row names where it came from in the provenance columns
(:mod:`.naming`): the lake table, its id, the version the snapshot indexed, and the snapshot.

Types follow :mod:`.coerce`: the output type of a query column is the common type of the query's column and every
lake column aligned to it (the lake column's profiled type, the query's declared or inferred one).  A chunk whose
cells turn out not to be of the planned kind reports the kind they are (:func:`union_chunk`), and the caller plans
again with it (:func:`replan`): types are decided on every row written, on one machine or on many, before any is
kept.

With ``dedupe``, identical rows (on the query's columns, provenance aside) are written once, the first in output
order: the query's rows first, then the lake tables in the answer's rank order, each in its own row order
(:func:`first_rows`, exact: a group-by over the columns themselves, not a hash).
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa

from ...data.lake.pinned import PinnedTable, read_unit
from ...data.lake.table import ParsedTable
from .coerce import TEXT, arrow_type, common_type, kind_of, to_type, typed_column
from .naming import PROVENANCE, Names

_PROVENANCE_TYPES = (pa.string(), pa.int64(), pa.string(), pa.int64())


@dataclass(frozen=True)
class UnionSource:
    """One lake table of a union: its pinned version and its alignment, ``(query column index, lake column name,
    similarity)`` per aligned pair, with the kind each lake column is read as."""

    table: PinnedTable
    aligned: tuple[tuple[int, str, float], ...]
    kinds: tuple[str, ...]
    rank: int | None = None
    score: float | None = None
    left_out: tuple[str, ...] = ()   # the lake columns the alignment placed under no query column

    @property
    def label(self) -> str:
        return f"lake table {self.table.path!r}"

    def to_dict(self) -> dict:
        return {"table_id": self.table.table_id, "path": self.table.path, "format": self.table.format,
                "version": self.table.version_label, "rank": self.rank, "score": self.score,
                "alignment": [list(a) for a in self.aligned], "left_out": list(self.left_out)}


def left_out_note(source: UnionSource, shown: int = 8) -> str:
    """The warning naming the lake columns a union leaves out, and why."""
    names = ", ".join(repr(c) for c in source.left_out[:shown])
    more = f" and {len(source.left_out) - shown} more" if len(source.left_out) > shown else ""
    return (f"{source.label}: {len(source.left_out)} column(s) not written, aligned to no query column (none "
            f"similar enough at tau, or a closer pair took it): {names}{more}")


@dataclass(frozen=True)
class UnionLayout:
    """The written table: output names (the query's columns, then provenance) and the query columns' types."""

    query_names: tuple[str, ...]
    names: tuple[str, ...]
    types: tuple[pa.DataType, ...]
    snapshot_id: int
    warnings: tuple[str, ...] = field(default_factory=tuple)

    @property
    def schema(self) -> pa.Schema:
        return pa.schema(list(zip(self.names, list(self.types) + list(_PROVENANCE_TYPES))))


def plan_layout(query_names: list[str], query_types: list[pa.DataType], query_label: str,
                sources: list[UnionSource], snapshot_id: int) -> UnionLayout:
    """Output names and types of a union of the query (its columns' types) with ``sources``."""
    names = Names(query_names)
    provenance = [names.take(n) for n in PROVENANCE]
    feeds: list[list[tuple[str, pa.DataType]]] = [[(query_label, t)] for t in query_types]
    for s in sources:
        for (qi, _, _), kind in zip(s.aligned, s.kinds):
            feeds[qi].append((s.table.path, arrow_type(kind)))
    types, warnings = [], []
    for name, feed in zip(query_names, feeds):
        t, warning = common_type(feed, name)
        types.append(t)
        if warning:
            warnings.append(warning)
    return UnionLayout(tuple(query_names), tuple(query_names) + tuple(provenance), tuple(types), snapshot_id,
                       tuple(warnings))


def _provenance(n: int, source: str, table_id: int | None, version: str | None, snapshot_id: int) -> list[pa.Array]:
    return [pa.repeat(pa.scalar(source, pa.string()), n), pa.repeat(pa.scalar(table_id, pa.int64()), n),
            pa.repeat(pa.scalar(version, pa.string()), n), pa.repeat(pa.scalar(snapshot_id, pa.int64()), n)]


def query_rows(columns: list[pa.Array], label: str, layout: UnionLayout, table_id: int | None = None,
               version: str | None = None) -> pa.Table:
    """The query's own rows (its typed columns) in the union's layout; a query that is a lake table names its id
    and the version the snapshot indexed, as every lake table's rows do."""
    n = len(columns[0]) if columns else 0
    arrays = [to_type(c, t) for c, t in zip(columns, layout.types)]
    return pa.Table.from_arrays(arrays + _provenance(n, label, table_id, version, layout.snapshot_id),
                                schema=layout.schema)


def union_chunk(chunk: ParsedTable, source: UnionSource, layout: UnionLayout) -> tuple[pa.Table, dict[str, str]]:
    """A chunk of ``source``'s rows in the union's layout, and the kinds its aligned columns turned out to be where
    they are not the planned ones (``{lake column: kind}``; the rows are then not to be kept)."""
    n = chunk.num_rows
    arrays: list[pa.Array | None] = [None] * len(layout.query_names)
    observed: dict[str, str] = {}
    for (qi, lake, _), kind in zip(source.aligned, source.kinds):
        cells = chunk.columns[chunk.names.index(lake)] if lake in chunk.names else pa.nulls(n, TEXT)
        typed = typed_column(cells, kind, lake, source.label)
        if typed.array.type != arrow_type(kind) and not pa.types.is_null(typed.array.type):
            observed[lake] = kind_of(typed.array.type)
            continue
        arrays[qi] = to_type(typed.array, layout.types[qi])
    arrays = [pa.nulls(n, t) if a is None else a for a, t in zip(arrays, layout.types)]
    prov = _provenance(n, source.table.path, source.table.table_id, source.table.version_label, layout.snapshot_id)
    return pa.Table.from_arrays(arrays + prov, schema=layout.schema), observed


def unit_rows(source: UnionSource, unit: dict, layout: UnionLayout, limits) -> tuple[list[pa.Table], dict]:
    """The rows of one unit of ``source``'s table in the union's layout (:func:`union_chunk` per chunk), and the
    kinds its columns turned out to be where they are not the planned ones (``{lake column: kinds}``)."""
    tables: list[pa.Table] = []
    observed: dict[str, set[str]] = {}
    for chunk in read_unit(source.table, unit, limits):
        rows, seen = union_chunk(chunk, source, layout)
        tables.append(rows)
        for lake, kind in seen.items():
            observed.setdefault(lake, set()).add(kind)
    return tables, observed


#: Plans a union tries before every column that still surprises is read as text (each try may turn one kind of
#: surprise into another: naive to zoned times, then to text).
MAX_PLANS = 3


def replan_observed(sources: list[UnionSource], observed: dict[tuple[int, str], set[str]],
                    attempt: int) -> list[UnionSource]:
    """:func:`replan` for the ``attempt``-th time: from :data:`MAX_PLANS` on, whatever surprised is text."""
    return replan(sources, observed if attempt < MAX_PLANS else {k: {"string"} for k in observed})


def replan(sources: list[UnionSource], observed: dict[tuple[int, str], set[str]]) -> list[UnionSource]:
    """``sources`` with each column reported by :func:`union_chunk` (``{(table id, lake column): kinds seen}``) read
    as what its cells are: zoned or naive times as such, anything else (or a mix) as text."""
    out = []
    for s in sources:
        kinds = list(s.kinds)
        for i, (_, lake, _) in enumerate(s.aligned):
            seen = observed.get((s.table.table_id, lake))
            if seen:
                kinds[i] = seen.pop() if len(seen) == 1 and seen <= {"datetime", "datetime_zoned"} else "string"
        out.append(replace(s, kinds=tuple(kinds)))
    return out


def type_notes(before: list[UnionSource], after: list[UnionSource]) -> list[str]:
    """What replanning changed (``before`` -> ``after``), as warnings naming column and table."""
    notes = []
    for b, s in zip(before, after):
        for (_, lake, _), was, now in zip(s.aligned, b.kinds, s.kinds):
            if was != now:
                notes.append(f"column {lake!r} of {s.label} is mostly {was} but has cells that are not: "
                             f"written as {'text' if now == 'string' else now}")
    return notes


#: Keys of the two 64-bit row hashes that identify a row for ``dedupe`` (16 bytes each, as pandas' SipHash takes).
HASH_KEYS = ("lakescout-row-01", "lakescout-row-02")


def row_hashes(table: pa.Table, columns: list[str]) -> np.ndarray:
    """A 128-bit hash of each row of ``table`` over ``columns`` (two SipHash-2-4 values, pandas' row hash), as
    ``(rows, 2)`` uint64.  Equal rows hash equal in any process; two different rows share a hash with probability
    about n^2 / 2^129 (for a billion rows, 10^-21), so identical rows are found without holding rows."""
    import pandas as pd

    frame = table.select(columns).to_pandas()
    return np.stack([pd.util.hash_pandas_object(frame, index=False, hash_key=key).to_numpy() for key in HASH_KEYS],
                    axis=1) if columns else np.zeros((table.num_rows, 2), np.uint64)


def first_rows(table: pa.Table, columns: list[str]) -> pa.Table:
    """``table`` without repeats of a row already seen on ``columns`` (the first occurrence kept, order kept)."""
    if table.num_rows == 0:
        return table
    _, first = np.unique(row_hashes(table, columns), axis=0, return_index=True)
    return table.take(np.sort(first))
