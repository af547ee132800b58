"""A lake table read as a snapshot indexed it: the same Delta version, the same Iceberg snapshot, every row.

Acting on an answer (writing the union or the join it describes) must read the rows the answer was computed from, not
whatever the table holds now.  The catalog row a snapshot pins names the table's version: a Delta table is read at
that version and an Iceberg table at that snapshot, whatever was committed since (:func:`changed_since` has nothing
to say about them); a plain file or a folder of data files has no older version to read, so :func:`changed_since`
compares its content with the indexed one (the file's digest, the folder's data-file fingerprint) and says so when it
moved on.

Rows come as the lake reader gives them (:class:`~discovery.data.lake.table.ParsedTable`: trimmed text cells, empty
cells null, the same names), but every row rather than the first ``[limits] max_rows``, in chunks: a Parquet, ORC,
Delta, Iceberg or dataset table a batch at a time, so a reader holds one batch of a table of any size; a text or JSON
file whole (within ``max_file_bytes``, as when it was indexed).  A table is cut into *units* (:func:`units`) that can be
read apart, in order -- the data files of a Delta version or of a dataset folder, else the whole table -- so a Spark
job can read a large table on its executors, one unit per task, and a driver never holds it.  A Delta version with
deletion vectors or column mapping is one unit read through delta-rs' engine, which applies them.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import pyarrow as pa
import pyarrow.dataset as pads

from ... import storage
from ...config import Limits
from .arrow import parsed_from_arrow
from .dataset import data_files, dataset_file_tables
from .formats import file_format
from .reader import reader_for
from .source import file_digest
from .table import LakeFileError, ParsedTable, first_line

#: Rows of one chunk of a typed table.
CHUNK_ROWS = 65_536
#: What "every row" is: no [limits] max_rows cut.
ALL_ROWS = 2 ** 62


@dataclass(frozen=True)
class PinnedTable:
    """A catalogued lake table at the version snapshot ``snapshot_id`` indexed."""

    snapshot_id: int
    table_id: int
    root: str
    path: str
    format: str
    bytes: int
    content_hash: str
    version: str | None          # the format's own version: Delta table version, Iceberg snapshot id

    @property
    def version_label(self) -> str:
        """What provenance names: the Delta version, the Iceberg snapshot id, else the content digest."""
        if self.version:
            return f"{self.format.split('/')[0]}:{self.version}"
        return self.content_hash

    def to_dict(self) -> dict:
        return dict(self.__dict__)


def pin(row: dict, root: str, snapshot_id: int) -> PinnedTable:
    """The pinned table of catalog row ``row`` (``table_id, path, format, bytes, content_hash, version``)."""
    return PinnedTable(snapshot_id, int(row["table_id"]), root, row["path"], row["format"], int(row["bytes"] or 0),
                       row["content_hash"] or "", row.get("version"))


def changed_since(table: PinnedTable) -> str | None:
    """Why the rows read now may differ from the indexed ones, or None when they cannot: a Delta or Iceberg table is
    read at its version; a file is compared by its digest, a dataset folder by its data files' fingerprint."""
    kind = table.format.split("/")[0]
    if kind in ("delta", "iceberg"):
        return None
    try:
        if kind in ("hive", "parts"):
            from .listing import locate

            _, now = locate(storage.join(table.root, table.path))
            current = f"files:{now.fingerprint}"
        else:
            current = file_digest(table.root, table.path)
    except (OSError, ValueError) as exc:
        raise LakeFileError(f"lake table {table.path!r} cannot be read now: {exc}") from None
    if current == table.content_hash:
        return None
    return (f"lake table {table.path!r} changed since snapshot {table.snapshot_id} indexed it (a plain "
            f"{'folder' if kind in ('hive', 'parts') else 'file'} keeps no older version): its current rows are used")


def _delta(table: PinnedTable):
    from deltalake import DeltaTable

    uri = storage.delta_uri(storage.join(table.root, table.path))
    if table.version is None:
        raise LakeFileError(f"Delta table {table.path!r} has no version in snapshot {table.snapshot_id}'s catalog")
    try:
        return DeltaTable(uri, version=int(table.version), storage_options=storage.delta_options(uri))
    except Exception as exc:  # delta-rs raises its own types
        raise LakeFileError(f"Delta version {table.version} of {table.path!r}, which snapshot {table.snapshot_id} "
                            f"indexed, cannot be read: {first_line(exc)}") from None


def _delta_dataset(dt):
    """The version's Parquet dataset, or None when only delta-rs' engine reads it right (deletion vectors, column
    mapping)."""
    features = set(dt.protocol().reader_features or [])
    if features & {"deletionVectors", "columnMapping"}:
        return None
    try:
        return dt.to_pyarrow_dataset()
    except Exception:  # a feature pyarrow's dataset refuses: the engine reads the version whole
        return None


def units(table: PinnedTable) -> list[dict]:
    """The parts of ``table`` that can be read apart, in row order (JSON-able, for Spark tasks)."""
    kind, _, inner = table.format.partition("/")
    if kind == "delta":
        dataset = _delta_dataset(_delta(table))
        if dataset is None:
            return [{"whole": True}]
        return [{"file": f.path} for f in sorted(dataset.get_fragments(), key=lambda f: f.path)] or [{"whole": True}]
    if kind in ("hive", "parts"):
        files = [f for f in data_files(table.root, table.path) if file_format(f.rpartition("/")[2]) == inner]
        return [{"file": f} for f in files] or [{"whole": True}]
    return [{"whole": True}]


def _chunks(batches, schema: pa.Schema, limits: Limits) -> Iterator[ParsedTable]:
    for batch in batches:
        if batch.num_rows:
            yield parsed_from_arrow(pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch,
                                    schema, limits)


def read_unit(table: PinnedTable, unit: dict, limits: Limits) -> Iterator[ParsedTable]:
    """The rows of one unit of ``table`` as chunks of text cells (the lake reader's names and parsing rules)."""
    limits = replace(limits, max_rows=ALL_ROWS)
    kind, _, inner = table.format.partition("/")
    try:
        if kind == "delta":
            yield from _read_delta(table, unit, limits)
        elif kind == "iceberg":
            yield from _read_iceberg(table, limits)
        elif kind in ("hive", "parts") and "file" in unit:
            for chunk in dataset_file_tables(table.root, table.path, unit["file"], kind, inner, limits):
                yield parsed_from_arrow(chunk, chunk.schema, limits)
        else:
            yield reader_for(table.format).read(table.root, table.path, table.format, limits)
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise LakeFileError(f"lake table {table.path!r} cannot be read now: {exc}") from None
        raise LakeFileError(f"lake table {table.path!r} cannot be read now: {first_line(exc)}") from None


def read_table(table: PinnedTable, limits: Limits) -> Iterator[ParsedTable]:
    """Every row of ``table``, unit after unit."""
    for unit in units(table):
        yield from read_unit(table, unit, limits)


def _read_delta(table: PinnedTable, unit: dict, limits: Limits) -> Iterator[ParsedTable]:
    dt = _delta(table)
    schema = pa.schema(dt.schema())
    if "file" in unit:
        dataset = _delta_dataset(dt)
        fragment = next((f for f in dataset.get_fragments() if f.path == unit["file"]), None) if dataset else None
        if fragment is None:
            raise LakeFileError(f"data file {unit['file']!r} is not part of Delta version {table.version} of "
                                f"{table.path!r}")
        scanner = pads.Scanner.from_fragment(fragment, schema=dataset.schema, batch_size=CHUNK_ROWS)
        yield from _chunks(scanner.to_batches(), schema, limits)
        return
    from deltalake import QueryBuilder

    reader = pa.RecordBatchReader.from_stream(QueryBuilder().register("t", dt).execute("SELECT * FROM t"))
    yield from _chunks(reader, schema, limits)


def _read_iceberg(table: PinnedTable, limits: Limits) -> Iterator[ParsedTable]:
    from .iceberg import open_table

    ice = open_table(table.root, table.path)
    schema = ice.schema().as_arrow()
    if table.version in (None, "", "empty"):
        return
    try:
        batches = ice.scan(snapshot_id=int(table.version)).to_arrow_batch_reader()
    except Exception as exc:
        raise LakeFileError(f"Iceberg snapshot {table.version} of {table.path!r}, which snapshot "
                            f"{table.snapshot_id} indexed, cannot be read: {first_line(exc)}") from None
    yield from _chunks(batches, schema, limits)
