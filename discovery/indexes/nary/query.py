"""Query side of MATE: validation, normalisation, distinct key tuples, initial column (§6.1) and query super keys.

Joinability (Eq. 1) counts *distinct* key tuples of the query, so the query is reduced to its distinct tuples over
rows that have a value in every key column.  Tuples with a value that occurs nowhere in the lake can join no table;
they count in ``n_tuples`` but are dropped from the search.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, TypeAlias
from collections.abc import Mapping

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.ground.normalize import normalize_array
from discovery.ground.xash import as_string_array

if TYPE_CHECKING:
    from discovery.indexes.nary.index import NaryIndex

QueryColumns: TypeAlias = Mapping[str, "pa.Array | pa.ChunkedArray | list"] | pa.Table


@dataclass(frozen=True)
class PreparedQuery:
    """Distinct matchable key tuples as lake value ids, and the initial column."""

    key: tuple[str, ...]
    initial: int
    n_tuples: int
    tuples: np.ndarray
    cardinalities: tuple[int, ...]


def _columns_of(query_columns: QueryColumns) -> dict[str, pa.Array | pa.ChunkedArray]:
    if isinstance(query_columns, pa.Table):
        return {name: query_columns.column(name) for name in query_columns.column_names}
    if not isinstance(query_columns, Mapping):
        raise TypeError("query must be a pyarrow Table or a mapping of column name to values")
    return {str(name): values if isinstance(values, (pa.Array, pa.ChunkedArray)) else pa.array(list(values))
            for name, values in query_columns.items()}


def validate_key(columns: Mapping[str, object], key: list[str] | tuple[str, ...]) -> tuple[str, ...]:
    """The key as a tuple, or a ``ValueError`` that says what is wrong with it."""
    key = tuple(key)
    if len(key) == 0:
        raise ValueError("the key must name at least two query columns")
    unknown = [c for c in key if c not in columns]
    if unknown:
        raise ValueError(f"unknown key column(s) {unknown}; the query has columns {list(columns)}")
    if len(set(key)) != len(key):
        raise ValueError(f"key columns must be distinct, got {list(key)}")
    if len(key) == 1:
        raise ValueError(f"a one-column key ({key[0]!r}) is a unary join: use the semantic join (`lakescout join`) "
                         "or an equi-join on that column; n-ary join discovery needs a key of two or more columns")
    return key


def prepare_query(index: NaryIndex, query_columns: QueryColumns, key: list[str],
                  initial_column: str | None = None) -> PreparedQuery:
    """Normalise the key columns, reduce them to distinct tuples and pick the initial column.

    The initial column is the key column with the fewest distinct values (ties: first in key order) unless the
    caller names one.
    """
    columns = _columns_of(query_columns)
    names = validate_key(columns, key)
    if initial_column is not None and initial_column not in names:
        raise ValueError(f"initial column {initial_column!r} is not one of the key columns {list(names)}")
    lengths = {len(columns[c]) for c in names}
    if len(lengths) != 1:
        raise ValueError("key columns have different lengths")
    normalised = [as_string_array(normalize_array(as_string_array(columns[c]))) for c in names]
    complete = np.ones(lengths.pop(), dtype=bool)
    for values in normalised:
        complete &= values.is_valid().to_numpy(zero_copy_only=False)
    if not complete.any():
        raise ValueError(f"the query is empty: no row has a value in every key column {list(names)}")
    rows = pa.array(np.flatnonzero(complete))
    dictionaries, codes = [], []
    for values in normalised:
        encoded = pc.dictionary_encode(values.take(rows))
        dictionaries.append(encoded.dictionary)
        codes.append(encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64))
    cardinalities = tuple(len(d) for d in dictionaries)
    initial = names.index(initial_column) if initial_column is not None else int(np.argmin(cardinalities))
    distinct = np.unique(np.stack(codes, axis=1), axis=0)
    value_ids = [index.value_ids(d) for d in dictionaries]
    tuples = np.stack([value_ids[i][distinct[:, i]] for i in range(len(names))], axis=1)
    matchable = (tuples >= 0).all(axis=1)
    return PreparedQuery(key=names, initial=initial, n_tuples=int(distinct.shape[0]), tuples=tuples[matchable],
                         cardinalities=cardinalities)
