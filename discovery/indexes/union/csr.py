"""Compressed-sparse-row helpers: the index stores every one-to-many relation (table -> columns, table ->
partitions, partition -> group entries, centroid -> tables) as an offsets array plus a flat value array."""
from __future__ import annotations

from collections.abc import Sequence

import numpy as np


def offsets_from_counts(counts: np.ndarray | Sequence[int]) -> np.ndarray:
    """Offsets (len(counts) + 1,) of consecutive runs of the given lengths."""
    out = np.zeros(len(counts) + 1, dtype=np.int64)
    np.cumsum(counts, out=out[1:])
    return out


def offsets_from_owners(owners: np.ndarray, n: int) -> np.ndarray:
    """Offsets of ``n`` runs given the (sorted) owner of every element."""
    return offsets_from_counts(np.bincount(owners, minlength=n))


def expand_ranges(offsets: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``offsets[key]:offsets[key + 1]`` of every key, concatenated, and the index of the key each came
    from."""
    keys = np.asarray(keys, dtype=np.int64)
    starts = offsets[keys]
    return expand_spans(starts, offsets[keys + 1] - starts)


def expand_spans(starts: np.ndarray, counts: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Positions ``starts[i]:starts[i] + counts[i]`` of every span, concatenated, and the span each came from."""
    owner = np.repeat(np.arange(len(starts)), counts)
    first = offsets_from_counts(counts)[:-1]
    positions = np.arange(int(np.sum(counts)), dtype=np.int64) - first[owner] + starts[owner]
    return positions, owner
