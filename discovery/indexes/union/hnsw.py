"""The HNSW graphs of union search (hnswlib): over centroids (``pgtus++-approx``), columns (``starmie``) and table
vectors (``tactus``), with M = 16 and efConstruction = 200, the PGTUS paper's setting.

A graph is built by :meth:`~discovery.indexes.union.search.UnionIndex.graph` on the first query that needs it, never by
the exact methods, which do not."""
from __future__ import annotations

import hnswlib
import numpy as np

HNSW_M = 16
HNSW_EF_CONSTRUCTION = 200


def hnsw(vectors: np.ndarray, space: str, threads: int) -> hnswlib.Index:
    """An HNSW graph over ``vectors`` (labels are row numbers) in hnswlib's ``space``, seeded so it is the same every
    time it is built."""
    index = hnswlib.Index(space=space, dim=vectors.shape[1])
    index.init_index(max_elements=max(1, len(vectors)), M=HNSW_M, ef_construction=HNSW_EF_CONSTRUCTION,
                     random_seed=0)
    index.add_items(vectors, np.arange(len(vectors)), num_threads=threads)
    return index


def knn(index: hnswlib.Index, query: np.ndarray, k: int) -> tuple[np.ndarray, np.ndarray]:
    """(labels, distances) of the ``k`` nearest rows to each query row, with the search breadth ef at least 64."""
    index.set_ef(max(k, 64))
    return index.knn_query(query, k=k, num_threads=1)
