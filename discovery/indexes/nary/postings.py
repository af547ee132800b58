"""Posting lists with super keys (the MATE index of §5.1): one posting per non-null cell of a lake table.

``build_postings`` is what the Spark XASH stage runs once per lake table; it is vectorised over the whole table
(every column is normalised and hashed as one Arrow array, the row super keys are an OR-reduction over a
``(columns, rows, words)`` array), so a 100k-row table costs a few numpy passes, not a Python loop per cell.

The super key is stored on every posting of its row (the paper's per-cell layout of §7.1): a posting list fetch then
brings the super key along without a join.  The Bloom-filter baseline needs no stored key of its own: postings hold
every cell of every row, so :class:`discovery.indexes.nary.index.NaryIndex` rebuilds Bloom super keys from them on
demand.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.ground.normalize import normalize_array
from discovery.ground.xash import XashModel, as_string_array

POSTINGS_SCHEMA = pa.schema([
    pa.field("value", pa.string(), nullable=False),
    pa.field("table_id", pa.int64(), nullable=False),
    pa.field("column", pa.int32(), nullable=False),
    pa.field("row", pa.int64(), nullable=False),
    pa.field("superkey", pa.binary(), nullable=False),
])


def superkeys_to_binary(keys: np.ndarray) -> pa.Array | pa.ChunkedArray:
    """``(n, words)`` uint64 keys -> Arrow ``binary`` of ``words * 8`` bytes each, without a per-row loop.

    Chunks stay below the 2 GiB limit of 32-bit binary offsets.
    """
    keys = np.ascontiguousarray(keys, dtype="<u8")
    n, words = keys.shape
    width = words * 8
    per_chunk = max(1, (np.iinfo(np.int32).max // width))
    chunks = []
    for start in range(0, max(n, 1), per_chunk):
        part = keys[start:start + per_chunk]
        offsets = np.arange(len(part) + 1, dtype=np.int32) * np.int32(width)
        chunks.append(pa.Array.from_buffers(pa.binary(), len(part),
                                            [None, pa.py_buffer(offsets), pa.py_buffer(part.tobytes())]))
    return chunks[0] if len(chunks) == 1 else pa.chunked_array(chunks, type=pa.binary())


def binary_to_superkeys(values: pa.Array | pa.ChunkedArray, words: int) -> np.ndarray:
    """Inverse of :func:`superkeys_to_binary`: Arrow binary super keys -> ``(n, words)`` uint64."""
    chunks = values.chunks if isinstance(values, pa.ChunkedArray) else [values]
    parts = [np.zeros((0, words), dtype=np.uint64)]
    width = words * 8
    for chunk in chunks:
        if chunk.type != pa.binary():
            chunk = chunk.cast(pa.binary())
        n = len(chunk)
        if n == 0:
            continue
        if chunk.null_count:
            raise ValueError("postings contain null super keys")
        offsets = np.frombuffer(chunk.buffers()[1], dtype=np.int32, count=chunk.offset + n + 1)[chunk.offset:]
        if not np.all(np.diff(offsets) == width):
            raise ValueError(f"super keys are not all {width} bytes; was the index built with another XASH size?")
        data = np.frombuffer(chunk.buffers()[2], dtype=np.uint8)[offsets[0]:offsets[-1]]
        parts.append(data.view("<u8").reshape(n, words).astype(np.uint64))
    return np.concatenate(parts)


def normalised_cells(columns: list[pa.Array | pa.ChunkedArray], max_rows: int | None = None) -> tuple[pa.Array, int]:
    """Every cell of a table, normalised, as one array column after column, and the row count kept.

    ``max_rows`` keeps the first rows only (the caller reports the bound).  The postings and the corpus statistics
    of the XASH model are both computed from this one normalisation pass.
    """
    if not columns:
        return pa.array([], pa.string()), 0
    n_rows = len(columns[0])
    if any(len(c) != n_rows for c in columns):
        raise ValueError("all columns of a table must have the same length")
    if max_rows is not None:
        if max_rows < 0:
            raise ValueError("max_rows must be non-negative")
        n_rows = min(n_rows, max_rows)
    normalised = [as_string_array(normalize_array(as_string_array(c).slice(0, n_rows))) for c in columns]
    return pa.concat_arrays(normalised), n_rows


def postings_from_cells(table_id: int, cells: pa.Array, n_rows: int, model: XashModel) -> pa.Table:
    """Postings of a table given by :func:`normalised_cells`; the super key of a row is the OR of its cells' XASH."""
    if n_rows == 0 or len(cells) == 0:
        return POSTINGS_SCHEMA.empty_table()
    n_columns = len(cells) // n_rows
    hashes = model.hash_values(cells).reshape(n_columns, n_rows, model.words)
    superkeys = np.bitwise_or.reduce(hashes, axis=0)
    valid = np.flatnonzero(cells.is_valid().to_numpy(zero_copy_only=False))
    row = (valid % n_rows).astype(np.int64)
    column = (valid // n_rows).astype(np.int32)
    return pa.table({
        "value": pc.drop_null(cells),
        "table_id": pa.array(np.full(valid.size, table_id, dtype=np.int64)),
        "column": pa.array(column),
        "row": pa.array(row),
        "superkey": superkeys_to_binary(superkeys[row]),
    }, schema=POSTINGS_SCHEMA)


def build_postings(table_id: int, columns: list[pa.Array | pa.ChunkedArray], model: XashModel,
                   max_rows: int | None = None) -> pa.Table:
    """Postings ``(value, table_id, column, row, superkey)`` of one lake table.

    Values are normalised with :func:`discovery.ground.normalize.normalize_array`; null cells (and null tokens) produce
    no posting but still belong to their row.  ``max_rows`` keeps the first rows only (the caller reports the bound).
    The super key of a row is the OR of the XASH of its cells.
    """
    cells, n_rows = normalised_cells(columns, max_rows)
    return postings_from_cells(table_id, cells, n_rows, model)
