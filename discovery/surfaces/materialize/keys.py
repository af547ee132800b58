"""Join keys: what the cells of a row are when they are matched against a join's value mapping.

A value mapping pairs a query *value* with a lake *value* as the search saw them: a semantic join normalised strings
(:func:`discovery.ground.normalize.normalize_array`), a numerical join numbers parsed by the ``numeric`` stage's rules
(:func:`discovery.indexes.numjoin.columns.parse_number_column`), a coordinate pair the two numbers of a row in range, a
vector column its fixed-length list, an n-ary join the tuple of normalised key values.  To write the joined table the
rows of both tables are turned into the same values, by the same functions, and looked up: each kind here is one
function from cells to an Arrow array of keys (null: the row has no value and joins nothing).

Numbers are keyed by their float64 value (-0.0 as 0.0), coordinates and vectors by the bytes of their float64 row,
and an n-ary tuple by its normalised values joined by a separator that cannot be confused with a value (the
separator and the escape character inside values are escaped).
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...ground.normalize import normalize_array
from ...indexes.numjoin.columns import parse_number_column, vector_rows

KINDS = ("text", "number", "coordinates", "vector", "key")
_SEP, _ESC = "\x1f", "\x1e"


def _row_bytes(rows: np.ndarray) -> pa.Array:
    """Rows of float64 as fixed-size binary keys, null where a number is missing."""
    ok = np.isfinite(rows).all(axis=1)
    data = np.ascontiguousarray(np.where(ok[:, None], rows + 0.0, 0.0), dtype=np.float64)
    validity = pa.py_buffer(np.packbits(ok, bitorder="little").tobytes())
    return pa.FixedSizeBinaryArray.from_buffers(pa.binary(8 * rows.shape[1]), len(rows),
                                                [validity, pa.py_buffer(data.tobytes())])


def value_keys(rows: np.ndarray, kind: str) -> pa.Array:
    """Keys of values given as numbers (``(n, dim)`` rows): a value mapping's side, keyed as cells are."""
    if kind == "number":
        return pa.array(rows[:, 0] + 0.0, pa.float64())
    return _row_bytes(np.asarray(rows, dtype=np.float64))


def cell_keys(columns: list[pa.Array], kind: str, dim: int = 0) -> pa.Array:
    """The key of each row of ``columns`` (text cells, the join's columns in order) for a join of ``kind``; ``dim``
    is a vector column's length.  A text join on several query columns keys a row as an n-ary tuple is keyed (the
    two-table matcher pairs such rows with one lake value, :func:`discovery.transforms.match.match_rows`)."""
    if kind == "text":
        return normalize_array(columns[0]) if len(columns) == 1 else tuple_keys([normalize_array(c) for c in columns])
    if kind == "number":
        values = parse_number_column(columns[0]) + 0.0
        return pa.array(values, pa.float64(), mask=np.isnan(values))
    if kind == "coordinates":
        lat, lon = parse_number_column(columns[0]), parse_number_column(columns[1])
        rows = np.column_stack([lat, lon])
        rows[(np.abs(lat) > 90) | (np.abs(lon) > 180)] = np.nan
        return _row_bytes(rows)
    if kind == "vector":
        return _row_bytes(vector_rows(columns[0], dim))
    if kind == "key":
        return tuple_keys([normalize_array(c) for c in columns])
    raise ValueError(f"unknown join kind {kind!r}; expected one of {', '.join(KINDS)}")


def split_tuple_keys(keys: pa.Array) -> pa.Array:
    """Each key of :func:`tuple_keys` as the list of values it joined."""
    parts = pc.split_pattern(keys, _SEP)
    flat = pc.replace_substring(pc.replace_substring(parts.flatten(), _ESC + "1", _SEP), _ESC + "0", _ESC)
    return pa.ListArray.from_arrays(parts.offsets, flat, mask=parts.is_null())


def tuple_keys(values: list[pa.Array]) -> pa.Array:
    """Normalised values of each row joined into one key (null when any is null)."""
    escaped = [pc.replace_substring(pc.replace_substring(v, _ESC, _ESC + "0"), _SEP, _ESC + "1") for v in values]
    return pc.binary_join_element_wise(*escaped, _SEP, null_handling="emit_null")
