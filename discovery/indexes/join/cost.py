"""|P| (pivots) and m (grid levels) from PEXESO's cost analysis (§III-E), evaluated on a sample of the lake.

The paper estimates a search's cost by the distance computations verification will make (Eq. 1), and finds m by
minimising that estimate over a query workload made of the lake's own columns.  It counts only distances, because
blocking is cheap next to them; but that count alone falls as |P| and m grow, so it would always pick the finest
grid, while the paper's own sweep (Table VI) has an interior optimum: finer grids trade distance computations for
more (query vector, cell) pairs and pivot-space checks.  The estimate here therefore counts every unit of work a
search does, in floating-point operations: ``d`` per distance, ``|P|`` per pivot-space check of a candidate pair
(Lemmas 1-2), ``2|P|`` per box test of blocking (cell pairs and (vector, leaf) pairs, Lemmas 3-6), and ``|P| d`` per
query vector mapped.  The counts come from the real search (``method="pexeso"``) on an index of the sample, so they
are exact for the sample and deterministic: no timing, and the searches count on one thread, as several threads
verify some columns further than one would, by how they happen to interleave (the same sample always gives the same
choice, on any machine, whatever its cores).  The vector-pair terms are scaled by ``lake vectors / sample vectors``,
as the candidate vectors behind each cell grow with the lake, and so are the cell terms: the grids that cost the most
in cells are the fine ones, whose leaves are sparse, so the non-empty cells a query pairs with grow about as the lake
does.  Left unscaled (the earlier choice, on the view that cells grow slower than the lake), the estimate took the
deep levels for cheap: on the AutoFJ lake (182,570 value vectors, a 20,000-vector sample) it chose |P| = 7, m = 5,
where blocking paired 1.6 billion cells for 100 queries and took 82% of the search; scaled, it chooses 5 x 3, whose
searches took 1.73 s against 2.32 s for 7 x 5 in one run (50 queries, identical answers).  The answer of a search
does not depend on the choice: every (|P|, m) is exact.
"""
from __future__ import annotations

import numpy as np

from ...ground.threads import threads_of_this_caller
from .grid import GridSpec
from .pivots import map_to_pivots, select_pivots
from .search import JoinIndex

#: (|P|, m) pairs the cost model chooses among: the paper's optima (5/6 on OPEN, 3/4 on SWDC) and this project's
#: former fixed 7/3 lie inside the range.
CANDIDATES = tuple((p, m) for p in (3, 5, 7, 9) for m in (2, 3, 4, 5, 6))
#: Lakes with fewer value vectors than this get :data:`SMALL_LAKE` without the cost model: on them every candidate
#: answers a query in milliseconds, while the model itself (pivots, an index and 16 searches per candidate) took
#: 15 s for 3,000 vectors and 25 s for 20,000 on the shared 2-core machine, most of a small lake's refresh.
MIN_VECTORS = 50_000
#: (|P|, m) of a lake below :data:`MIN_VECTORS`: the project's former fixed choice, and the cost model's on AutoFJ.
SMALL_LAKE = (7, 3)
#: Query columns of the workload (lake columns of the sample with at least :data:`MIN_QUERY` sampled vectors).
QUERIES = 16
MIN_QUERY = 5


def workload(keys: np.ndarray, seed: int) -> list[np.ndarray]:
    """Sample rows of up to :data:`QUERIES` lake columns (seeded choice among columns with enough sampled values)."""
    columns, col, counts = np.unique(np.asarray(keys), return_inverse=True, return_counts=True)
    eligible = np.flatnonzero(counts >= MIN_QUERY)
    if eligible.size == 0:
        eligible = np.argsort(-counts, kind="stable")[:1]
    chosen = np.random.default_rng(seed).choice(eligible, min(QUERIES, eligible.size), replace=False)
    return [np.flatnonzero(col == c) for c in np.sort(chosen)]


def estimated_cost(stats: dict, n_pivots: int, dim: int, scale: float) -> float:
    """Floating-point operations of one search from its counters (see the module docstring)."""
    pairs = stats.get("lemma1_filtered", 0) + stats.get("lemma2_matched", 0) + stats.get("distance_computations", 0)
    per_pair = scale * (dim * stats.get("distance_computations", 0) + n_pivots * pairs)
    cells = scale * 2 * n_pivots * (stats.get("cell_pairs", 0) + stats.get("candidate_pairs", 0))
    return float(per_pair + cells + n_pivots * dim * stats.get("query_vectors", 0))


def choose_parameters(sample: np.ndarray, keys: np.ndarray, n_total: int, tau: float, metric: str, seed: int,
                      candidates=CANDIDATES, top_k: int = 10) -> tuple[int, int, dict]:
    """``(n_pivots, levels, choice)``: the candidate of least estimated cost over the workload's top-k searches at
    ``tau``; ``choice`` holds every candidate's cost, for the model's record.  Ties go to the cheaper index (fewer
    pivots, then fewer levels)."""
    sample = np.asarray(sample, dtype=np.float32)
    queries = workload(keys, seed)
    scale = max(1.0, n_total / max(len(sample), 1))
    costs: dict[str, float] = {}
    with threads_of_this_caller(1):
        for p in sorted({p for p, _ in candidates}):
            if p > len(sample):
                continue
            pivots = select_pivots(sample, n_pivots=p, seed=seed, metric=metric)
            mapped = map_to_pivots(sample, pivots, metric)
            for m in sorted(m for q, m in candidates if q == p):
                index = JoinIndex(sample, keys, mapped, pivots, GridSpec.fit(mapped, m), metric)
                total = 0.0
                for rows in queries:
                    found = index.search(sample[rows], tau, 0.0, "pexeso", top_k)
                    total += estimated_cost(found.stats, p, sample.shape[1], scale)
                costs[f"{p}x{m}"] = total
    best = min(costs, key=lambda c: (costs[c], *map(int, c.split("x"))))
    p, m = map(int, best.split("x"))
    return p, m, {"by": "cost model", "tau": tau, "queries": len(queries), "sample": int(len(sample)),
                  "lake_vectors": int(n_total), "cost": costs}
