"""Compile the union bound pass into numba's on-disk cache before the first query needs it.

The bound pass of the compact index (:mod:`.quantised`) is one ``@njit(cache=True)`` kernel; compiling it took about
7 s, which a cold ``lakescout union`` would otherwise pay on the first query after an install.  ``make venv`` runs
this module once (``python -m discovery.indexes.union.warmup``), as it runs ``discovery.indexes.join.warmup``: it writes
a small random lake's query arrays as the refresh does, maps them as a query does (read-only arrays, the types a served
query passes) and runs the bound pass over them.
"""
from __future__ import annotations

import tempfile

import numpy as np

from .arrays import FILES, save_arrays
from .compact import CompactIndex
from .matching import unit_rows
from .quantised import table_upper_bounds


def warm(seed: int = 0) -> int:
    """Run the bound pass over a small mapped compact index once per query size; returns the passes run.  (A search
    would not: lakes this small are scored exhaustively, see :data:`.compact.BOUND_PASS_MIN_COLUMNS`.)"""
    rng = np.random.default_rng(seed)
    vectors = unit_rows(rng.normal(size=(60, 16)).astype(np.float32))
    built = CompactIndex.build(vectors, np.repeat(np.arange(20), 3), np.tile(np.arange(3), 20))
    runs = 0
    with tempfile.TemporaryDirectory(prefix="lakescout-union-warmup-") as folder:
        index = CompactIndex(**save_arrays(folder, {name: getattr(built, name) for name in FILES}, {}))
        for q in (1, 3):
            table_upper_bounds(vectors[:q], index.codes, index.steps, index.error, index.col_offsets, 0.1)
            runs += 1
    return runs


if __name__ == "__main__":
    print(f"compiled the union bound pass ({warm()} passes)")
