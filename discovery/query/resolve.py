"""Resolving what a user names as a query table: a file outside the lake, a lake table id, or a catalogued path.

Every search (union, semantic join, n-ary join) takes its query through :func:`resolve_query`, so a query is parsed
by the same reader, within the same bounds, as the lake tables were; a lake table used as the query is reported so
that searches leave it out of its own results.

Two modes.  The CLI and the Python API read any local file they are given: their user owns the machine.  A served
query (``allow_files=False``: the Lake discovery page, the ``query_batch`` and ``standing_queries`` DAGs) runs as the
server on behalf of someone who does not, so it may only name a lake table: a table id or a path the catalog knows,
whose file resolves (links followed) inside the lake root.  Anything else is refused by a message that names the
path and never reads it, and a served query's read errors keep their reason and positions (row, line, column) but
not the cell excerpts the reader quotes.  An upload the server itself saved is read by :func:`read_query_file`.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field

import pyarrow as pa

from .. import storage
from ..config import Limits
from ..data.lake import LakeFileError, locate, read_lake_table
from ..data.lake.arrow import parsed_from_arrow
from ..data.lake.formats import file_format
from ..data.lake.profile import infer_type
from ..data.lake.source import join_lake_path
from ..data.store import Snapshot
from ..data.store.cache import INDEXES
from ..data.store.snapshot import CATALOG_COLUMNS


class QueryError(ValueError):
    """A query that cannot be run; the message names the query and what is wrong with it."""


@dataclass
class QueryTable:
    label: str                    # what the user gave, for messages and results
    names: list[str]
    columns: list[pa.Array]       # string cells, trimmed, empty cells null
    table_id: int | None = None   # set when the query is a lake table (excluded from its own results)
    path: str | None = None
    types: list[str | None] | None = None   # column types the table's format declares (None: inferred)
    arrow: pa.Table | None = None           # the columns as given, typed, when the query came as data (from_arrow)
    indexed: bool = False         # the cells read are those the snapshot indexed (:func:`_unchanged`)
    _kinds: dict[float, list[str]] = field(default_factory=dict, init=False, repr=False, compare=False)

    def column(self, name: str) -> pa.Array:
        return self.columns[self.ordinal(name)]

    def ordinal(self, name: str) -> int:
        """The column called exactly ``name``, else the one column whose name equals it but for case.

        A file may have both ``id`` and ``ID`` (the reader keeps both, see
        :func:`discovery.data.lake.table.dedupe_names`), so a name differing in case from several columns names none of
        them.
        """
        if name in self.names:
            return self.names.index(name)
        folded = [i for i, n in enumerate(self.names) if n.casefold() == name.casefold()]
        if len(folded) == 1:
            return folded[0]
        if folded:
            raise QueryError(f"query {self.label!r} has no column {name!r}, and {len(folded)} columns differ from it "
                             f"only in case ({', '.join(self.names[i] for i in folded)}): name one exactly")
        raise QueryError(f"query {self.label!r} has no column {name!r} (columns: {', '.join(self.names)})")

    def kinds(self, agreement: float = 0.95) -> list[str]:
        """Each column's type: the one its format declares, else inferred from its values.  Inferred once per
        table object: a lake file kept for later queries (:func:`_unchanged`) answers every search of its snapshot,
        and a join asks twice (routing, then the search)."""
        if agreement not in self._kinds:
            declared = self.types or [None] * len(self.columns)
            self._kinds[agreement] = [t or infer_type(c, agreement) for t, c in zip(declared, self.columns)]
        return list(self._kinds[agreement])

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0


#: A parsed lake file is kept for later queries (:func:`_unchanged`) only while it needs at most this share of the
#: index cache's budget (32 MiB of the default 2 GiB): a large table asked once must not push out the indexes every
#: search needs.
KEPT_QUERY_SHARE = 64

#: Positions a served read error may keep from the detail after its reason (the detail may quote cells).
_POSITION = re.compile(r"\b(?:data row|row|line|column) \d+")


def _reason(message: str) -> str:
    """A reader error reduced to what a served query may show: the reason before the first colon, without any
    ``e.g.`` / ``near`` excerpt or quoted text other than a column name, and the row, line and column numbers the
    rest names."""
    head, _, detail = message.partition(":")
    head = re.split(r",? (?:e\.g\.|near) ", head)[0].rstrip(" ,")
    head = re.sub(r"(column )?(['\"]).*?(?:\2|$)", lambda m: m[0] if m[1] else "…", head)
    positions = [p for p in dict.fromkeys(_POSITION.findall(detail)) if p not in head]
    return head + (f" ({', '.join(positions)})" if positions else "")


def _real_lake_file(lake: str, rel: str, label: str) -> tuple[str, str]:
    """(root, rel) to read a served lake table from: the file's real path, refused when a link leads outside."""
    if storage.on_disk(lake) is None:
        return lake, rel
    root = os.path.realpath(lake)
    real = os.path.realpath(join_lake_path(lake, rel))
    if os.path.commonpath([root, real]) != root:
        raise QueryError(f"query {label!r} is refused: lake path {rel!r} is a link to a file outside the lake")
    return root, os.path.relpath(real, root).replace(os.sep, "/")


def _from_lake(snapshot: Snapshot, row: dict, label: str, limits: Limits, served: bool = False) -> QueryTable:
    lake = snapshot.lake_root()
    root, rel = _real_lake_file(lake, row["path"], label) if served else (lake, row["path"])
    if row["status"] not in ("ok", "stale"):
        reason = row.get("error") and (_reason(row["error"]) if served else row["error"])
        raise QueryError(f"query {label!r} is lake table {row['path']!r}, which is {row['status']}"
                         + (f": {reason}" if reason else ""))
    before = _unchanged(root, rel, row)
    key = ("query-table", snapshot.warehouse.root, snapshot.snapshot_id, row["table_id"], limits)
    parsed = INDEXES.find(key) if before else None
    indexed = parsed is not None
    if parsed is None:
        try:
            parsed = read_lake_table(root, rel, row["format"], row["bytes"], limits)
        except (LakeFileError, OSError) as exc:
            reason = _reason(str(exc)) if served else exc
            raise QueryError(f"query {label!r}: lake table {row['path']!r} cannot be read now: {reason}") from None
        indexed = before and _unchanged(root, rel, row)
        if indexed and sum(c.nbytes for c in parsed.columns) * KEPT_QUERY_SHARE <= INDEXES.budget_bytes:
            INDEXES.put(key, parsed)
    return QueryTable(label, list(parsed.names), list(parsed.columns), row["table_id"], row["path"],
                      None if parsed.types is None else list(parsed.types), indexed=indexed)


def _unchanged(root: str, rel: str, row: dict) -> bool:
    """Whether a lake table is still the file the snapshot indexed: an ok file table on disk whose size and
    modification time are the catalog's, the rule by which a refresh leaves a file's vectors as they are.  Checked
    before and after the read, so the cells read are the indexed ones and a search may take the snapshot's own
    vectors of them instead of encoding them again (a folder, a Delta or Iceberg table, or an object-store lake is
    always encoded).  By the same rule a long-running process keeps what it parsed of such a file (up to
    :data:`KEPT_QUERY_SHARE`), per snapshot and bounds, in the index cache, and a later query of the file, still the
    catalog's by size and time, takes that instead of reading and parsing it again (a fifth of a served search's CPU
    on the sample lake)."""
    if row["status"] != "ok" or row.get("mtime_ns") is None or storage.on_disk(root) is None:
        return False
    if file_format(rel) is None:
        return False
    try:
        st = os.stat(join_lake_path(root, rel))
    except OSError:
        return False
    return st.st_size == row["bytes"] and st.st_mtime_ns == row["mtime_ns"]


def _served_path(lake: str, label: str) -> str:
    """The catalog path a served query names: a lake path, or an absolute path inside the lake root; no ``..``."""
    if ".." in re.split(r"[/\\]", label):
        raise QueryError(f"query {label!r} is refused: '..' may not appear in the path of a served query")
    if storage.on_disk(lake) is None:
        prefix = lake.rstrip("/") + "/"
        return label[len(prefix):] if label.startswith(prefix) else label
    if os.path.isabs(label):
        root = os.path.abspath(lake)
        if not label.startswith(root + os.sep):
            raise QueryError(f"query {label!r} is refused: it is outside the lake; name a lake table id or a "
                             "catalogued lake path")
        return os.path.relpath(label, root).replace(os.sep, "/")
    return label


def read_query_file(path: str, label: str | None = None, limits: Limits | None = None,
                    served: bool = False) -> QueryTable:
    """Parse a table the user names by its own path as a query table, named ``label`` (default the path) in results
    and messages: a file of any table format (compressed or not), a Delta, Iceberg, partitioned or part-file folder,
    or an object-store URI of one.

    ``served`` is for a file the server saved itself (an upload): its read errors keep only their reason and positions.
    """
    label = label or path
    try:
        # A link the user made is theirs to follow; the reader refuses links out of a lake.
        local = storage.on_disk(path)
        root, table = locate(os.path.realpath(local) if local else path)
        parsed = read_lake_table(root, table.path, table.format, table.size, limits or Limits())
    except LakeFileError as exc:
        raise QueryError(f"query file {label!r} cannot be read: {_reason(str(exc)) if served else exc}") from None
    except ValueError as exc:
        raise QueryError(f"query {label!r}: {exc}") from None
    except OSError as exc:
        raise QueryError(f"query file {label!r} cannot be read: {exc.strerror or exc}") from None
    return QueryTable(label, parsed.names, parsed.columns, types=parsed.types)


def is_data(query) -> bool:
    """Whether ``query`` is a table given as data: a pyarrow Table or RecordBatch, or a pandas DataFrame."""
    if isinstance(query, (pa.Table, pa.RecordBatch)):
        return True
    return type(query).__name__ == "DataFrame" and type(query).__module__.startswith("pandas")


def from_arrow(data, label: str = "query table", limits: Limits | None = None) -> QueryTable:
    """A query given as data (:func:`is_data`), read as a lake table of a typed format is: nested columns as dotted
    leaves, cells as trimmed text for the searches, types from the schema; the typed columns are kept as given
    (``arrow``) for what is written from it.  A pandas index is not a column."""
    if not isinstance(data, (pa.Table, pa.RecordBatch)):
        data = pa.Table.from_pandas(data, preserve_index=False)
    table = pa.Table.from_batches([data]) if isinstance(data, pa.RecordBatch) else data
    while any(pa.types.is_struct(f.type) for f in table.schema):
        table = table.flatten()
    try:
        parsed = parsed_from_arrow(table, table.schema, limits or Limits())
    except LakeFileError as exc:
        raise QueryError(f"query {label}: {exc}") from None
    if not parsed.names:
        raise QueryError(f"query {label} has no columns")
    return QueryTable(label, parsed.names, parsed.columns, types=parsed.types,
                      arrow=pa.Table.from_arrays(table.columns, names=parsed.names))


def catalog_entry(snapshot: Snapshot, name: str | int, served: bool = False) -> dict | None:
    """The catalog row (:data:`CATALOG_COLUMNS`) that a lake table id or a catalogued lake path names, or None.

    A path is relative to the lake, or absolute inside it; ``served`` applies the served rules to it
    (:func:`_served_path`, which refuses ``..`` and paths outside the lake).  An id names its table whatever its
    status; a path does not name a deleted table (another may have its path later).
    """
    label = str(name)
    catalog, at = snapshot.lookup("catalog", CATALOG_COLUMNS)
    if isinstance(name, int) or label.isdigit():
        hit = catalog.take(at.by_ids([int(label)])) if int(label) < 2 ** 63 else catalog.slice(0, 0)
        return hit.to_pylist()[0] if hit.num_rows else None
    lake = snapshot.lake_root()
    rel = label
    if served:
        rel = _served_path(lake, label)
    elif lake and os.path.isabs(label) and os.path.abspath(label).startswith(os.path.abspath(lake) + os.sep):
        rel = os.path.relpath(os.path.abspath(label), lake).replace(os.sep, "/")
    for row in catalog.take(at.by_path(rel)).to_pylist():
        if row["status"] != "deleted":
            return row
    return None


def resolve_query(snapshot: Snapshot, query: str | int | QueryTable, limits: Limits | None = None,
                  allow_files: bool = True) -> QueryTable:
    """Turn ``query`` (a lake table id, a path the catalog knows, or a file) into a :class:`QueryTable`.

    ``allow_files=False`` is the served mode (see the module docstring): files outside the lake are refused unread.
    A :class:`QueryTable` is returned as it is, so a server can resolve a query under its own rules and hand the
    table to a search.
    """
    if isinstance(query, QueryTable):
        return query
    limits = limits or Limits()
    label = str(query)
    served = not allow_files
    row = catalog_entry(snapshot, query, served)
    if row is not None:
        return _from_lake(snapshot, row, label, limits, served)
    if isinstance(query, int) or label.isdigit():
        raise QueryError(f"no lake table with id {label} in snapshot {snapshot.snapshot_id}")
    if served:
        raise QueryError(f"query {label!r} is refused: it is not a table of the lake; name a lake table id or a "
                         "catalogued lake path")
    if storage.on_disk(label) is not None and not os.path.exists(label):
        raise QueryError(f"query {label!r} is neither a file nor a table of the lake")
    return read_query_file(label, limits=limits)
