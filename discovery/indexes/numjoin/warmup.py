"""Compile the numerical join's numba kernels into numba's on-disk cache before the first query needs them.

Every kernel is ``@njit(cache=True)``, but the first numerical join after an install has no earlier process to load
machine code from: compiling took about 8 s of ``make demo``'s coordinate join on the sample lake, against 0.3 s once
cached.  ``make venv`` therefore runs this module once (``python -m discovery.indexes.numjoin.warmup``), as it does
:mod:`discovery.indexes.join.warmup` for the semantic join.

numba compiles one version of a kernel per argument type, and a read-only array is another type than a writable
one: a local warehouse's query maps the published ``.npy`` files read-only (:mod:`.arrays`), while a warehouse on
object storage builds the same index in memory.  So each metric family's small random index is searched both ways,
with both methods, both similarity functions, threshold and top-k, and the exact reference
(:func:`.baselines.brute_force`) as ``--method exact`` calls it.
"""
from __future__ import annotations

import os
import tempfile

import numpy as np

from .arrays import load_array
from .baselines import brute_force
from .index import NumericIndex
from .search import METHODS
from .service import set_values

#: (metric, dimensions, value generator) of each family a served query can search.
_FAMILIES = (("absolute", 1), ("haversine", 2), ("euclidean", 8), ("angular", 8))
_SETS, _VALUES = 12, 30


def _values(rng: np.random.Generator, metric: str, dim: int) -> np.ndarray:
    if metric == "haversine":  # latitude, longitude in degrees around a few centres
        centre = rng.uniform([-60.0, -170.0], [60.0, 170.0])
        return centre + rng.normal(0.0, 0.01, size=(_VALUES, 2))
    return rng.normal(rng.uniform(-1.0, 1.0, size=dim), 0.05, size=(_VALUES, dim))


def _mapped(index: NumericIndex, folder: str) -> NumericIndex:
    """``index`` saved and mapped back as a published snapshot's query maps it."""
    for key, value in index.to_arrays().items():
        np.save(os.path.join(folder, f"{key}.npy"), np.asarray(value), allow_pickle=False)
    return NumericIndex.from_arrays({key: load_array(os.path.join(folder, f"{key}.npy"))
                                     for key in index.to_arrays()})


def warm(seed: int = 0) -> int:
    """Search every family with every method; returns the number of searches run."""
    rng = np.random.default_rng(seed)
    searches = 0
    with tempfile.TemporaryDirectory(prefix="lakescout-numjoin-warmup-") as tmp:
        for metric, dim in _FAMILIES:
            sets = [np.ascontiguousarray(_values(rng, metric, dim), dtype=np.float64) for _ in range(_SETS)]
            built = NumericIndex.build(sets, metric)
            folder = os.path.join(tmp, f"{metric}-{dim}")
            os.makedirs(folder)
            query = np.ascontiguousarray(sets[0][: _VALUES // 2])
            tau = 2_000.0 if metric == "haversine" else 0.1
            for ix in (built, _mapped(built, folder)):
                for method in METHODS:
                    for similarity in ("hit", "all"):
                        ix.search(query, tau, T=0.2, similarity=similarity, method=method, exact_scores=True)
                        ix.search(query, tau, k=3, similarity=similarity, method=method, exact_scores=True)
                        searches += 2
                brute_force([set_values(ix, s) for s in range(ix.n_sets)], query, tau, metric, k=3)
                searches += 1
    return searches


if __name__ == "__main__":
    print(f"numerical join kernels compiled ({warm()} searches)")
