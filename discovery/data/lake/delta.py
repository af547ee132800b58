"""Delta tables of the lake, read at their latest version with delta-rs.

Rows are read through delta-rs' query engine (``QueryBuilder``), which applies deletion vectors and column mapping
(``to_pyarrow_dataset`` refuses the first and reads mapped columns as nulls), with ``LIMIT`` pushed down so at most
``max_rows`` rows are ever decoded.  Only the files of the latest version are read: files a later commit removed
are never a table's rows, vacuumed or not.

A table's content version (:func:`delta_version`) is a digest of its latest version's file set (each file's path,
size and deletion vector), not the version number: commits that change no data -- a vacuum's start and end, a
property change -- leave it as it was, so they cause no re-indexing, while every commit that adds, removes or
masks rows changes it.
"""
from __future__ import annotations

import hashlib

import pyarrow as pa

from ... import storage
from ...config import Limits
from .arrow import parsed_from_arrow, take_rows
from .table import LakeFileError, ParsedTable, first_line


def _open(root: str, rel: str):
    from deltalake import DeltaTable

    uri = storage.delta_uri(storage.join(root, rel))
    try:
        return DeltaTable(uri, storage_options=storage.delta_options(uri))
    except Exception as exc:  # delta-rs raises its own types for an unreadable log
        raise LakeFileError(f"unreadable Delta log: {first_line(exc)}") from None


def delta_version(root: str, rel: str) -> tuple[str, str]:
    """(content version, table version number) of the latest version."""
    dt = _open(root, rel)
    h = hashlib.blake2b(digest_size=16)
    try:
        adds = pa.table(dt.get_add_actions(flatten=True)).select(["path", "size_bytes"])
        for path, size in sorted(zip(adds.column("path").to_pylist(), adds.column("size_bytes").to_pylist())):
            h.update(f"{path}\0{size}\0".encode())
        if "deletionVectors" in (dt.protocol().reader_features or []):
            dvs = pa.table(dt.deletion_vectors())
            for path, selection in sorted(zip(dvs.column(0).to_pylist(), dvs.column(1).to_pylist())):
                h.update(f"{path}\0".encode() + bytes(selection))
    except LakeFileError:
        raise
    except Exception as exc:
        raise LakeFileError(f"unreadable Delta log: {first_line(exc)}") from None
    return f"delta:{h.hexdigest()}", str(dt.version())


def read_delta(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    from deltalake import QueryBuilder

    dt = _open(root, rel)
    try:
        schema = pa.schema(dt.schema())
        reader = QueryBuilder().register("t", dt).execute(f"SELECT * FROM t LIMIT {limits.max_rows + 1}")
        table, more = take_rows(pa.RecordBatchReader.from_stream(reader), limits.max_rows)
    except LakeFileError:
        raise
    except Exception as exc:  # a data file the log names is missing or corrupt
        raise LakeFileError(f"Delta table cannot be read: {first_line(exc)}") from None
    return parsed_from_arrow(table, schema, limits, truncated=more)
