"""Exact joinability J of Eq. 2 for one candidate table, from verified (row, query tuple) pairs.

``calculateJ`` of Algorithm 1 reads the cells of the candidate rows and compares them to the key values.  Here that is
done for all candidate pairs of a table at once:

1. :func:`column_hits` builds, for every pair, which lake columns hold the value of each key column.  Pairs whose row
   lacks some key value entirely are dropped on the way (they are false positives of the filter).  The hits are kept
   only for the columns hit at least once: the per-column value hits that bound the mapping search.
2. :func:`best_mapping` searches the injective mappings key column -> lake column depth-first in key order, over the
   hit columns only, with branch and bound: the distinct tuples still consistent with a partial mapping bound every
   completion, so a branch that cannot beat the best mapping found (or the current k-th score) is cut.  Enumerating
   in lexicographic order and replacing only on a strictly larger J makes the chosen mapping the lexicographically
   smallest of the best ones, whatever set of candidate pairs (with or without false positives) reached this step.
3. :func:`injective_match` decides per pair whether some injective mapping matches all key values (Hall's condition
   over the key-column subsets): true vs false positive rows for the statistics.

:func:`matched_tuples` then explains a result: the query tuples its J counts, read off the table's rows under the
chosen mapping.
"""
from __future__ import annotations

from dataclasses import dataclass
from itertools import combinations
from typing import TYPE_CHECKING

import numpy as np

from discovery.indexes.nary.ranges import expand_ranges

if TYPE_CHECKING:
    from discovery.indexes.nary.index import NaryIndex

_PAIR_CELLS_PER_CHUNK = 1 << 22


@dataclass(frozen=True)
class ColumnHits:
    """``hits[p, i, c]``: lake column ``columns[c]`` of pair ``kept[p]``'s row holds its tuple's key value ``i``."""

    kept: np.ndarray
    hits: np.ndarray
    columns: np.ndarray


def column_hits(index: NaryIndex, rows: np.ndarray, tuple_values: np.ndarray) -> ColumnHits:
    """Per-pair column hits for pairs (``rows[p]``, tuple with value ids ``tuple_values[p]``)."""
    n_pairs, m = tuple_values.shape
    if n_pairs == 0:
        return ColumnHits(np.zeros(0, np.int64), np.zeros((0, m, 0), bool), np.zeros(0, np.int64))
    distinct_rows, row_of_pair = np.unique(rows, return_inverse=True)
    starts = index.cell_ptr[distinct_rows]
    counts = index.cell_ptr[distinct_rows + 1] - starts
    cells = expand_ranges(starts, counts)
    owner = np.repeat(np.arange(distinct_rows.size), counts)
    cell_col = index.cell_col[cells].astype(np.int64)
    n_cols = int(cell_col.max()) + 1
    dense = np.full((distinct_rows.size, n_cols), -1, dtype=np.int64)
    dense[owner, cell_col] = index.cell_vid[cells]
    chunk = max(1, _PAIR_CELLS_PER_CHUNK // n_cols)
    kept_parts, hit_parts = [], []
    for lo in range(0, n_pairs, chunk):
        alive = np.arange(lo, min(lo + chunk, n_pairs))
        hit: list[np.ndarray] = []
        for i in range(m):
            h = dense[row_of_pair[alive]] == tuple_values[alive, i, None]
            ok = h.any(axis=1)
            alive = alive[ok]
            hit = [prev[ok] for prev in hit] + [h[ok]]
            if alive.size == 0:
                break
        if alive.size:
            kept_parts.append(alive)
            hit_parts.append(np.stack(hit, axis=1))
    if not kept_parts:
        return ColumnHits(np.zeros(0, np.int64), np.zeros((0, m, 0), bool), np.zeros(0, np.int64))
    hits = np.concatenate(hit_parts)
    used = np.flatnonzero(hits.any(axis=(0, 1)))
    return ColumnHits(np.concatenate(kept_parts), hits[:, :, used], used)


def injective_match(hits: np.ndarray) -> np.ndarray:
    """Per pair: does an injective key-column -> lake-column assignment match every key value (Hall's theorem)?"""
    n, m, _ = hits.shape
    ok = np.ones(n, dtype=bool)
    for size in range(2, m + 1):
        for subset in combinations(range(m), size):
            ok &= hits[:, list(subset), :].any(axis=1).sum(axis=1) >= size
    return ok & np.all(np.any(hits, axis=2), axis=1)


def best_mapping(hits: np.ndarray, tuple_ids: np.ndarray, floor: int = 0) -> tuple[int, tuple[int, ...] | None]:
    """Largest J above ``floor`` and its mapping (indices into the hit columns), or ``(floor, None)`` if none.

    ``tuple_ids[p]`` identifies pair ``p``'s query tuple; J of a mapping is the number of distinct tuples among the
    pairs whose row matches every key value in the mapped column.
    """
    n, m, _ = hits.shape
    if n == 0:
        return floor, None
    candidates = [np.flatnonzero(hits[:, i, :].any(axis=0)) for i in range(m)]
    best_j, best_map = floor, None

    def descend(i: int, alive: np.ndarray, chosen: tuple[int, ...]) -> None:
        nonlocal best_j, best_map
        for c in candidates[i]:
            if c in chosen:
                continue
            nxt = alive[hits[alive, i, c]]
            if nxt.size <= best_j:
                continue
            bound = int(np.unique(tuple_ids[nxt]).size)
            if bound <= best_j:
                continue
            if i == m - 1:
                best_j, best_map = bound, chosen + (int(c),)
            else:
                descend(i + 1, nxt, chosen + (int(c),))

    descend(0, np.arange(n), ())
    return best_j, best_map


def _row_keys(values: np.ndarray) -> np.ndarray:
    """Each row of an int64 matrix as one opaque value, so that rows compare (``np.isin``) as wholes."""
    values = np.ascontiguousarray(values, dtype=np.int64)
    return values.view(np.dtype((np.void, 8 * values.shape[1]))).ravel()


def matched_tuples(index: NaryIndex, tuples: np.ndarray, table_id: int, columns: tuple[int, ...]) -> np.ndarray:
    """The distinct query ``tuples`` (value ids, in key order) that some row of ``table_id`` holds with key value
    ``i`` in lake column ``columns[i]``: the tuples J (Eq. 2) counts under that mapping, in ``tuples``' order."""
    lo, hi = np.searchsorted(index.row_table, [table_id, table_id + 1])     # a table's rows are contiguous
    if hi == lo or tuples.shape[0] == 0:
        return tuples[:0]
    starts = index.cell_ptr[lo:hi]
    counts = index.cell_ptr[lo + 1:hi + 1] - starts
    cells = expand_ranges(starts, counts)
    owner = np.repeat(np.arange(hi - lo), counts)
    col = index.cell_col[cells]
    rows = np.full((hi - lo, len(columns)), -1, dtype=np.int64)
    for i, c in enumerate(columns):
        mine = col == c
        rows[owner[mine], i] = index.cell_vid[cells[mine]]
    rows = rows[(rows >= 0).all(axis=1)]
    return tuples[np.isin(_row_keys(tuples), _row_keys(rows))]
