"""Compile the semantic-join search's numba kernels into numba's on-disk cache before the first query needs them.

Every kernel is ``@njit(cache=True)``: a process loads the machine code a previous one compiled instead of compiling
again.  But the first join query after an install has no previous process, and compiling the search's kernels took
about 19 s of ``make demo``'s join query on the sample lake.  ``make venv`` therefore runs this module once
(``python -m discovery.indexes.join.warmup``): it indexes a small random lake exactly as the served path does (pivot
model from :func:`.stage.fit_pivot_model`, ``pivot_mappings`` rows from :func:`.stage.mapping_rows`, the index from
:func:`.stage.index_from_rows`) and searches it with every method, threshold and top-k, so every kernel is compiled
for the argument types a served query passes.

numba keeps the cache next to the modules (``__pycache__``), or, where that folder cannot be written (a read-only
installation), in the user's cache folder; ``NUMBA_CACHE_DIR`` overrides both.  A warm-up that cannot write any of
them compiles in memory only, and queries then compile on first use as before.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from ...config import JoinConfig, load_config
from .partitioning import search_partitions
from .search import METHODS
from .stage import column_keys, fit_pivot_model, index_from_rows, mapping_rows

#: Shape of the random lake: enough values per column and columns for every pruning rule to fire.
_TABLES, _COLUMNS, _VALUES, _DIM = 6, 2, 40, 48


def _lake(rng: np.random.Generator) -> pa.Table:
    """``value_vectors`` rows of a random lake: unit float32 vectors, clustered per column so that some pairs match."""
    n = _TABLES * _COLUMNS * _VALUES
    centres = rng.normal(size=(_TABLES * _COLUMNS, _DIM))
    x = np.repeat(centres, _VALUES, axis=0) + 0.05 * rng.normal(size=(n, _DIM))
    x = (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32)
    table_id = np.repeat(np.arange(1, _TABLES + 1, dtype=np.int64), _COLUMNS * _VALUES)
    ordinal = np.tile(np.repeat(np.arange(_COLUMNS, dtype=np.int32), _VALUES), _TABLES)
    return pa.table({
        "table_id": table_id, "content_hash": pa.array(["warmup"] * n), "ordinal": ordinal,
        "value": pa.array([f"v{i}" for i in range(n)]),
        "vector": pa.ListArray.from_arrays(np.arange(0, x.size + 1, _DIM, dtype=np.int32), pa.array(x.ravel())),
        "segment": pa.array(np.zeros(n, dtype=np.int32)),
    })


def warm(cfg: JoinConfig, seed: int = 0) -> int:
    """Run every join search method on a random served-path index with ``cfg``'s metric, tau and top-k (the
    configuration's: those are the argument types a served query passes); returns the number of searches run."""
    rng = np.random.default_rng(seed)
    vv = _lake(rng)
    x = vv.column("vector").combine_chunks().flatten().to_numpy().reshape(-1, _DIM)
    keys = column_keys(vv.column("table_id").to_numpy(), vv.column("ordinal").to_numpy())
    model = fit_pivot_model(x, keys, "warmup", cfg.n_pivots or 7, cfg.levels or 3, cfg.metric, 1, cfg.seed)
    index = index_from_rows(mapping_rows(vv, model), vv, model)
    query = x[:_VALUES] + 0.01 * rng.normal(size=(_VALUES, _DIM))
    query = (query / np.linalg.norm(query, axis=1, keepdims=True)).astype(np.float32)
    runs = 0
    for method in METHODS:
        for top_k, T in ((cfg.top_k, 0.0), (None, 0.5)):
            search_partitions([lambda: index], query, cfg.tau, T, method, top_k)
            runs += 1
    return runs


if __name__ == "__main__":
    print(f"compiled the join search kernels ({warm(load_config().join)} searches)")
