"""Resolving what a user names as a query table: a file outside the lake, a lake table id, or a catalogued path.

Every search (union, semantic join, n-ary join) takes its query through :func:`resolve_query`, so a query is parsed
by the same reader, within the same bounds, as the lake tables were; a lake table used as the query is reported so
that searches leave it out of its own results.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import pyarrow as pa
import pyarrow.compute as pc

from .config import Limits
from .lake import LakeFileError, read_lake_table
from .lake.listing import table_format
from .lake.profile import infer_type
from .store import Snapshot


class QueryError(ValueError):
    """A query that cannot be run; the message names the query and what is wrong with it."""


@dataclass
class QueryTable:
    label: str                    # what the user gave, for messages and results
    names: list[str]
    columns: list[pa.Array]       # string cells, trimmed, empty cells null
    table_id: int | None = None   # set when the query is a lake table (excluded from its own results)
    path: str | None = None

    def column(self, name: str) -> pa.Array:
        return self.columns[self.ordinal(name)]

    def ordinal(self, name: str) -> int:
        if name in self.names:
            return self.names.index(name)
        folded = [n.casefold() for n in self.names]
        if name.casefold() in folded:
            return folded.index(name.casefold())
        raise QueryError(f"query {self.label!r} has no column {name!r} (columns: {', '.join(self.names)})")

    def kinds(self, agreement: float = 0.95) -> list[str]:
        return [infer_type(c, agreement) for c in self.columns]

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0


def _from_lake(snapshot: Snapshot, row: dict, label: str, limits: Limits) -> QueryTable:
    if row["status"] != "ok":
        raise QueryError(f"query {label!r} is lake table {row['path']!r}, which is {row['status']}"
                         + (f": {row['error']}" if row.get("error") else ""))
    lake = snapshot.lake_root()
    try:
        parsed = read_lake_table(lake, row["path"], row["format"], row["bytes"], limits)
    except (LakeFileError, OSError) as exc:
        raise QueryError(f"query {label!r}: lake table {row['path']!r} cannot be read now: {exc}") from None
    return QueryTable(label, parsed.names, parsed.columns, row["table_id"], row["path"])


def resolve_query(snapshot: Snapshot, query: str | int, limits: Limits | None = None) -> QueryTable:
    """Turn ``query`` (a lake table id, a path the catalog knows, or a file) into a :class:`QueryTable`."""
    limits = limits or Limits()
    label = str(query)
    catalog = snapshot.read("catalog", columns=["table_id", "path", "format", "bytes", "status", "error"])
    if isinstance(query, int) or label.isdigit():
        hit = catalog.filter(pc.equal(catalog["table_id"], int(label)))
        if hit.num_rows == 0:
            raise QueryError(f"no lake table with id {label} in snapshot {snapshot.snapshot_id}")
        return _from_lake(snapshot, hit.to_pylist()[0], label, limits)
    lake = snapshot.lake_root()
    rel = label
    if lake and os.path.isabs(label) and os.path.abspath(label).startswith(os.path.abspath(lake) + os.sep):
        rel = os.path.relpath(os.path.abspath(label), lake).replace(os.sep, "/")
    hit = catalog.filter(pc.equal(catalog["path"], rel))
    if hit.num_rows and hit.column("status")[0].as_py() != "deleted":
        return _from_lake(snapshot, hit.to_pylist()[0], label, limits)
    if not os.path.isfile(label):
        raise QueryError(f"query {label!r} is neither a file nor a table of the lake")
    fmt = table_format(label) or "csv"
    try:
        parsed = read_lake_table(os.path.dirname(os.path.abspath(label)), os.path.basename(label), fmt,
                                 os.path.getsize(label), limits)
    except LakeFileError as exc:
        raise QueryError(f"query file {label!r} cannot be read: {exc}") from None
    return QueryTable(label, parsed.names, parsed.columns)
