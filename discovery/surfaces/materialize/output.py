"""Writing a materialised table: Parquet, CSV or Delta, to a local path or an object-store URI, atomically.

The format is the one asked for, else the target's ending (``.parquet`` / ``.pq``, ``.csv``, ``.delta``), else
Delta (a folder without an ending); another ending (``out.xlsx``) is refused rather than written as a Delta folder
of that name.  A target that exists is refused unless ``overwrite``; either way the write is whole or nothing:

* a local file is written beside the target under a hidden temporary name and moved into place in one rename
  (``os.replace``; without ``overwrite``, ``os.link``, which refuses an existing target atomically);
* a remote file is written to a local temporary file first and uploaded in one ``put`` (an object appears only
  when its upload completes), so a failure leaves nothing at the target;
* a Delta table is one commit of delta-rs (``mode="error"`` unless ``overwrite``): readers see the whole table or
  the previous version, never part of the write.  :func:`finish_parts` does the same for the parts Spark tasks
  wrote into the table folder (one commit adding them all), or streams parts staged beside a file into it.

A column with no value at all has Arrow's null type, which not every reader takes; it is written as text.
"""
from __future__ import annotations

import os
import tempfile
import time
import uuid
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ... import storage

FORMATS = ("parquet", "csv", "delta")
_ENDINGS = {".parquet": "parquet", ".pq": "parquet", ".csv": "csv", ".delta": "delta"}


class OutputError(ValueError):
    """A target that cannot be written (exists, wrong kind, unknown format); nothing was written."""


def output_format(target: str, fmt: str | None = None) -> str:
    """The format of a write to ``target`` (see the module docstring)."""
    if fmt is not None:
        if fmt not in FORMATS:
            raise OutputError(f"format must be one of {', '.join(FORMATS)}, got {fmt!r}")
        return fmt
    ext = os.path.splitext(str(target).rstrip("/"))[1].lower()
    if ext and ext not in _ENDINGS:
        raise OutputError(f"output {str(target)[-80:]!r} ends in {ext!r}, which names no format written here: end it "
                          "in .parquet, .csv or .delta (or none, a Delta folder), or give the format")
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
        fresh = not _exists(target)
        reader = pa.RecordBatchReader.from_batches(schema, (b for b in batches))
        try:
            write_deltalake(uri, reader, mode="overwrite" if overwrite else "error",
                            storage_options=storage.delta_options(uri), commit_properties=_commit_properties(schema))
        except BaseException:
            if fresh:  # no commit happened: the data files delta-rs wrote so far belong to nothing
                fs, path = storage.filesystem(target)
                if fs.exists(path):
                    fs.rm(path, recursive=True)
            raise
        return 0
    path = storage.on_disk(target)
    if path is None:  # object storage: one put of a complete local file
        with tempfile.TemporaryDirectory(prefix="lakescout-out-") as tmp:
            local = os.path.join(tmp, "out")
            _write_file(batches, schema, local, fmt)
            fs, remote = storage.filesystem(target)
            fs.put_file(local, remote)
            return os.path.getsize(local)
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


def _commit_properties(schema: pa.Schema):
    """A Delta commit's properties carrying the description a schema's metadata holds (``lakescout``), so a Delta
    output keeps it in its log as a Parquet output keeps it in its footer."""
    from deltalake import CommitProperties

    meta = (schema.metadata or {}).get(b"lakescout")
    return CommitProperties(custom_metadata={"lakescout": meta.decode()}) if meta else None


def write_table(table: pa.Table, target: str, fmt: str, overwrite: bool = False) -> int:
    """Write ``table`` whole (see :func:`write_batches`)."""
    table = writable(table)
    return write_batches(table.to_batches(max_chunksize=65_536), table.schema, target, fmt, overwrite)


# -- parts written by Spark tasks ------------------------------------------------------------------------------------
def staging(target: str, fmt: str, token: str) -> str:
    """Where Spark tasks write the parts of a ``fmt`` output at ``target``: the Delta table's own folder (its files
    are invisible until committed), else a hidden folder beside the target file."""
    if fmt == "delta":
        return str(target).rstrip("/")
    parent, name = storage.split(target)
    return f"{parent}/.{name}.staging-{token}"


def write_part(table: pa.Table, folder: str, name: str) -> dict:
    """Write one part (Parquet) into ``folder``; returns what finishing needs: path, size, rows, Delta stats."""
    from ...data.store.files import file_stats, resolve

    fs, root = resolve(folder)
    fs.create_dir(root, recursive=True)
    table = writable(table)
    path = f"{root.rstrip('/')}/{name}"
    pq.write_table(table, path, compression="zstd", filesystem=fs)
    return {"name": name, "size": fs.get_file_info(path).size, "rows": table.num_rows, "stats": file_stats(table)}


def read_part(folder: str, name: str) -> pa.Table:
    from ...data.store.files import resolve

    fs, root = resolve(folder)
    return pq.read_table(f"{root.rstrip('/')}/{name}", filesystem=fs)


def part_batches(folder: str, names: list[str], drop: tuple[str, ...] = ()):
    """The rows of the parts ``names`` of ``folder``, in order, a batch at a time (without the ``drop`` columns)."""
    from ...data.store.files import resolve

    fs, root = resolve(folder)
    for name in names:
        pf = pq.ParquetFile(fs.open_input_file(f"{root.rstrip('/')}/{name}"))
        columns = [c for c in pf.schema_arrow.names if c not in drop]
        yield from pf.iter_batches(batch_size=65_536, columns=columns)


def remove_parts(folder: str, names: list[str], whole: bool = False) -> None:
    """Delete staged parts (and the staging folder itself when ``whole``); missing ones are no error."""
    from ...data.store.files import resolve

    fs, root = resolve(folder)
    for name in names:
        try:
            fs.delete_file(f"{root.rstrip('/')}/{name}")
        except (FileNotFoundError, OSError):
            pass
    if whole:
        try:
            fs.delete_dir(root)
        except (FileNotFoundError, OSError):
            pass


def finish_parts(folder: str, parts: list[dict], schema: pa.Schema, target: str, fmt: str,
                 overwrite: bool = False) -> int:
    """Turn staged parts (in output order) into the output: one Delta commit adding them, or one file streamed from
    them and put in place as :func:`write_batches` does; returns the bytes written."""
    if fmt != "delta":
        names = [p["name"] for p in parts]
        return write_batches(part_batches(folder, names), writable(schema.empty_table()).schema, target, fmt,
                             overwrite)
    from deltalake import Schema as DeltaSchema
    from deltalake.transaction import AddAction, create_table_with_add_actions

    now = int(time.time() * 1000)  # the folder holds the staged parts now; mode "error" refuses a table there
    uri = storage.delta_uri(target)
    actions = [AddAction(p["name"], p["size"], {}, now, True, p["stats"]) for p in parts]
    create_table_with_add_actions(uri, DeltaSchema.from_arrow(writable(schema.empty_table()).schema), actions,
                                  mode="overwrite" if overwrite else "error",
                                  storage_options=storage.delta_options(uri),
                                  commit_properties=_commit_properties(schema))
    return sum(p["size"] for p in parts)
