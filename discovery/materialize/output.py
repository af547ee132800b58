"""Writing a materialised table: Parquet, CSV or Delta, to a local path or an object-store URI, atomically.

The format is the one asked for, else the target's ending (``.parquet`` / ``.pq``, ``.csv``), else Delta (a
folder).  A target that exists is refused unless ``overwrite``; either way the write is whole or nothing:

* a local file is written beside the target under a hidden temporary name and moved into place in one rename
  (``os.replace``; without ``overwrite``, ``os.link``, which refuses an existing target atomically);
* a remote file is written to a local temporary file first and uploaded in one ``put`` (an object appears only
  when its upload completes), so a failure leaves nothing at the target;
* a Delta table is one commit of delta-rs (``mode="error"`` unless ``overwrite``): readers see the whole table or
  the previous version, never part of the write.  :func:`commit_files` does the same for data files Spark tasks
  wrote into the table folder.

A column with no value at all has Arrow's null type, which not every reader takes; it is written as text.
"""
from __future__ import annotations

import os
import tempfile
import uuid
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from .. import storage

FORMATS = ("parquet", "csv", "delta")
_ENDINGS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv"}


class OutputError(ValueError):
    """A target that cannot be written (exists, wrong kind, unknown format); nothing was written."""


def output_format(target: str, fmt: str | None = None) -> str:
    """The format of a write to ``target`` (see the module docstring)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise OutputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    ext = os.path.splitext(str(target).rstrip("/"))[1].lower()
    return _ENDINGS.get(ext, "delta")


def writable(table: pa.Table) -> pa.Table:
    """``table`` with null-typed columns as text (see the module docstring)."""
    schema = pa.schema([pa.field(f.name, pa.string()) if pa.types.is_null(f.type) else f for f in table.schema],
                       metadata=table.schema.metadata)
    return table.cast(schema) if schema != table.schema else table


def _exists(target: str) -> bool:
    fs, path = storage.filesystem(target)
    return fs.exists(path)


def check_target(target: str, fmt: str, overwrite: bool) -> None:
    """Refuse a target that exists (unless ``overwrite``) or that cannot take the format; reads nothing else."""
    if not str(target).strip():
        raise OutputError("output must name a file, a folder or a URI")
    if fmt == "delta":
        from deltalake import DeltaTable

        uri = storage.delta_uri(target)
        if DeltaTable.is_deltatable(uri, storage_options=storage.delta_options(uri)):
            if not overwrite:
                raise OutputError(f"output {target!r} is a Delta table already (overwrite it with --overwrite)")
            return
    if _exists(target):
        if not overwrite or fmt == "delta":
            raise OutputError(f"output {target!r} exists" + (" (overwrite it with --overwrite)" if fmt != "delta"
                                                              else " and is not a Delta table"))
        fs, path = storage.filesystem(target)
        if fs.isdir(path):
            raise OutputError(f"output {target!r} is a folder; a {fmt} output is one file")


def _write_file(batches: Iterable[pa.RecordBatch], schema: pa.Schema, path: str, fmt: str) -> None:
    if fmt == "parquet":
        with pq.ParquetWriter(path, schema, compression="zstd") as writer:
            for batch in batches:
                writer.write_batch(batch)
        return
    with pacsv.CSVWriter(path, schema) as writer:
        for batch in batches:
            writer.write_batch(batch)


def write_batches(batches: Iterable[pa.RecordBatch], schema: pa.Schema, target: str, fmt: str,
                  overwrite: bool = False) -> int:
    """Write ``batches`` (of ``schema``) to ``target`` as one ``fmt`` file or Delta table; returns the bytes
    written (0 when the store does not say)."""
    check_target(target, fmt, overwrite)
    if fmt == "delta":
        from deltalake import write_deltalake

        uri = storage.delta_uri(target)
        reader = pa.RecordBatchReader.from_batches(schema, (b for b in batches))
        write_deltalake(uri, reader, mode="overwrite" if overwrite else "error",
                        storage_options=storage.delta_options(uri))
        return 0
    if storage.is_remote(target):
        with tempfile.TemporaryDirectory(prefix="lakescout-out-") as tmp:
            local = os.path.join(tmp, "out")
            _write_file(batches, schema, local, fmt)
            fs, path = storage.filesystem(target)
            fs.put_file(local, path)
            return os.path.getsize(local)
    path = storage.local_path(target)
    os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
    tmp = os.path.join(os.path.dirname(path), f".{os.path.basename(path)}.{uuid.uuid4().hex[:12]}.tmp")
    try:
        _write_file(batches, schema, tmp, fmt)
        size = os.path.getsize(tmp)
        if overwrite:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)
            except FileExistsError:
                raise OutputError(f"output {target!r} exists (overwrite it with --overwrite)") from None
        return size
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def write_table(table: pa.Table, target: str, fmt: str, overwrite: bool = False) -> int:
    """Write ``table`` whole (see :func:`write_batches`)."""
    table = writable(table)
    return write_batches(table.to_batches(max_chunksize=65_536), table.schema, target, fmt, overwrite)
