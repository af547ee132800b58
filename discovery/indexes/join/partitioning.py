"""Partitioning for lakes larger than memory (PEXESO §IV): JSD k-means of columns, and search partition by partition.

Columns with similar distributions in the pivot space share good pivots, so columns are clustered by the divergence
of their distributions: each column becomes a histogram over the cells of a coarse level of the pivot grid (a
"space region" per bin), and k-means runs with the Jensen-Shannon divergence as the distance and the mean histogram
as the centre (steps 1-5 of §IV).  The paper writes the symmetrised KL divergence; that is infinite whenever a
column has mass in a bin where a centre has none, which is the common case for sparse column histograms, so the
Jensen-Shannon divergence proper (KL to the mixture ``(A + B) / 2``, finite and bounded by ln 2) is used.  Histograms
stay sparse (one entry per non-empty (column, bin)); the divergence to every centre is computed from those entries:
bins where the column has no mass contribute ``C(x) ln 2 / 2`` each, i.e. ``(1 - sum of C over the column's bins)
ln 2 / 2`` in total.

The paper sizes partitions by memory but clusters by distribution, and k-means does not balance: a lake dominated by
one domain puts most of its vectors in one partition, which then breaks the budget.  Partitions here are balanced by
size with per-centre prices fitted on the pivots stage's sample (:func:`balance_prices`), their number follows the
lake (:func:`partition_count`), and the stage settles the stored partitions on the full column sizes
(:func:`settle`): prices fitted on a sample's sparse column histograms carry over to the full columns' histograms only
roughly (on a generated lake of 1M vectors the largest partition held twice the capacity after three refits).
"""
from __future__ import annotations

from collections.abc import Callable, Iterable

import numpy as np

from .grid import GridSpec
from .search import JoinableColumn, JoinIndex, JoinResult
from .tally import TopK

_LN2 = float(np.log(2.0))
_PER_QUERY = ("query_vectors", "query_values", "required_matches")


def column_histograms(mapped: np.ndarray, column_ids: np.ndarray, grid: GridSpec, level: int = 2):
    """Sparse per-column histograms over the grid cells of ``level``: (columns, entry column index, bin, prob,
    n_bins)."""
    level = min(level, grid.levels)
    coarse = GridSpec(grid.lower, grid.upper, level).leaf_cells(mapped)
    columns, col = np.unique(np.asarray(column_ids, dtype=np.int64), return_inverse=True)
    bins, b = np.unique(coarse, return_inverse=True)
    key = col.astype(np.int64) * bins.size + b
    ukey, counts = np.unique(key, return_counts=True)
    e_col, e_bin = ukey // bins.size, ukey % bins.size
    sizes = np.bincount(col, minlength=columns.size)
    return columns, e_col, e_bin, counts / sizes[e_col], bins.size


#: Histogram entries whose divergence terms are computed at once: the terms are (entries, centres) arrays, and the
#: stage computes them for every (column, bin) of the lake (7.5M entries at 750,000 columns of ten bins).
_ENTRY_CHUNK = 1 << 18


def jsd_to_centres(e_col, e_bin, e_p, n_cols, centres):
    """JSD of every sparse column histogram to every dense centre, shape (n_cols, k).  Entries are taken
    :data:`_ENTRY_CHUNK` at a time, in order, so the sums are the same whatever the chunk."""
    inside = np.zeros((n_cols, centres.shape[0]))
    covered = np.zeros((n_cols, centres.shape[0]))
    for start in range(0, len(e_col), _ENTRY_CHUNK):
        cols, c = e_col[start:start + _ENTRY_CHUNK], centres[:, e_bin[start:start + _ENTRY_CHUNK]].T   # (n, k)
        a = e_p[start:start + _ENTRY_CHUNK, None]
        mix = (a + c) / 2.0
        with np.errstate(divide="ignore", invalid="ignore"):
            term = (0.5 * a * np.log(a / mix)
                    + np.where(c > 0, 0.5 * c * np.log(np.where(c > 0, c, 1.0) / mix), 0.0))
        np.add.at(inside, cols, term)
        np.add.at(covered, cols, c)
    return inside + 0.5 * _LN2 * np.clip(1.0 - covered, 0.0, None)


def partition_columns(mapped: np.ndarray, column_ids: np.ndarray, n_partitions: int, seed: int = 0,
                      grid: GridSpec | None = None, level: int = 2, iterations: int = 20):
    """JSD k-means of columns; returns ``(columns, partition)``: sorted distinct column ids and a partition id each.

    ``grid`` defaults to one fitted to ``mapped``; ``level`` sets the histogram resolution (``2**(|P| level)``
    bins at most).  Initial centres are ``n_partitions`` random columns (seeded); an emptied cluster is re-seeded
    with the column farthest from its centre, so every partition id is used when there are enough columns.
    """
    mapped = np.asarray(mapped, dtype=np.float64)
    grid = grid if grid is not None else GridSpec.fit(mapped, max(level, 1))
    columns, e_col, e_bin, e_p, n_bins = column_histograms(mapped, column_ids, grid, level)
    n_cols = columns.size
    k = int(min(max(n_partitions, 1), n_cols))
    rng = np.random.default_rng(seed)
    seeds = rng.choice(n_cols, k, replace=False)
    slot = np.full(n_cols, -1)
    slot[seeds] = np.arange(k)
    seeded = slot[e_col] >= 0
    centres = np.zeros((k, n_bins))
    centres[slot[e_col[seeded]], e_bin[seeded]] = e_p[seeded]
    assign = np.full(n_cols, -1)
    for _ in range(iterations):
        dist = jsd_to_centres(e_col, e_bin, e_p, n_cols, centres)
        new = np.argmin(dist, axis=1)
        sizes = np.bincount(new, minlength=k)
        for empty in np.flatnonzero(sizes == 0):
            far = int(np.argmax(dist[np.arange(n_cols), new]))
            new[far] = empty
            dist[far, :] = 0.0
            sizes = np.bincount(new, minlength=k)
        if np.array_equal(new, assign):
            break
        assign = new
        centres = np.zeros((k, n_bins))
        np.add.at(centres, (assign[e_col], e_bin), e_p)
        centres /= np.bincount(assign, minlength=k)[:, None]
    return columns, assign


#: Share of the budget a partition is sized for when the count is chosen: the rest absorbs the sample's error in the
#: balance and the lake's growth until the next refit (:func:`partition_count`).
FILL = 0.8
#: Balance target on the sample: no partition above this factor of the mean load (:func:`balance_prices`).
BALANCE = 1.1


def vector_bytes(dim: int, n_pivots: int, value_bytes: float = 32.0) -> int:
    """Bytes one value vector costs a query while its partition is loaded: an upper bound.

    The index holds the float32 vector, its float64 mapping, norm, column and order, a run and a leaf cell at most
    per vector (a leaf cell: ids, offsets and its float64 box, see :class:`.grid.CellHierarchy`); loading also holds
    the Arrow rows read from ``pivot_mappings`` and ``value_vectors`` (keys, the value string of ``value_bytes`` on
    average, float32 distances and vector, offsets) until the index is built.  The grid's upper levels are a per
    partition cost (:func:`partition_capacity`).  ``benchmarks/join_memory.py`` checks the bound against the peak
    resident set of a query.
    """
    index = 4 * dim + 8 * n_pivots + 3 * 8 + 2 * 8 + _cell_bytes(n_pivots) + 8
    rows = 2 * (8 + 4 + 4 + value_bytes) + 4 * n_pivots + 4 + 8 + 4 * dim + 4
    return int(np.ceil(index + rows))


def _cell_bytes(n_pivots: int) -> int:
    return 7 * 8 + 2 * 8 * n_pivots


def partition_capacity(memory_budget_bytes: float, dim: int, n_pivots: int, levels: int,
                       value_bytes: float = 32.0) -> int:
    """Value vectors a partition may hold for its loaded index to stay within the budget: the per-vector bound, and
    the cells of the grid's upper levels (level l has at most ``2**(|P| l)`` of them, and no more than vectors)."""
    per_vector = vector_bytes(dim, n_pivots, value_bytes)
    most = memory_budget_bytes / per_vector
    upper = sum(min(2.0 ** (n_pivots * level), most) for level in range(levels)) * _cell_bytes(n_pivots)
    return max(int((memory_budget_bytes - upper) // per_vector), 1)


def partition_count(n_vectors: int, dim: int, n_pivots: int, levels: int, memory_budget_bytes: float,
                    value_bytes: float = 32.0) -> int:
    """Partitions for a lake of ``n_vectors``: one while the whole index fits the budget, else enough that the mean
    partition fills :data:`FILL` of it.  Recomputed on every refresh from the lake's current size, so the count
    follows the lake as it grows."""
    if n_vectors <= partition_capacity(memory_budget_bytes, dim, n_pivots, levels, value_bytes):
        return 1
    return int(np.ceil(n_vectors / partition_capacity(FILL * memory_budget_bytes, dim, n_pivots, levels,
                                                        value_bytes)))


def balance_prices(dist: np.ndarray, weight: np.ndarray, cap: float, rounds: int | None = None) -> np.ndarray:
    """Per-partition prices that make ``argmin(dist + price)`` a size-constrained assignment (loads <= ``cap``).

    JSD k-means follows the data, not the budget: one dense domain makes one partition several times the mean.  A
    capacity-constrained assignment is found in its Lagrangian form: a price is added to the divergence to each
    centre, and the most loaded partition's price is raised just enough to push out its members that lose least by
    moving (those nearest another centre), until no partition exceeds ``cap``.  Columns stay with their nearest
    centre unless balance requires otherwise, which keeps JSD locality; and the prices assign any later column the
    same way, independently, in the Spark tasks that map it.  ``weight`` is each column's vector count (in a uniform
    sample, an unbiased share of its size).  Returns the prices with the smallest maximum load reached.
    """
    n, k = dist.shape
    price = np.zeros(k)
    best, best_load = price.copy(), np.inf
    for _ in range(rounds if rounds is not None else 20 * k):
        cost = dist + price
        assign = np.argmin(cost, axis=1)
        load = np.bincount(assign, weights=weight, minlength=k)
        if load.max() < best_load:
            best, best_load = price.copy(), float(load.max())
        j = int(np.argmax(load))
        excess = load[j] - cap
        if excess <= 0:
            break
        members = np.flatnonzero(assign == j)
        other = cost[members].copy()
        other[:, j] = np.inf
        gap = other.min(axis=1) - cost[members, j]          # price rise at which each member leaves j
        order = np.argsort(gap, kind="stable")
        out = min(int(np.searchsorted(np.cumsum(weight[members][order]), excess)), members.size - 1)
        step = gap[order[out]]
        if not np.isfinite(step):
            break
        price[j] += step + max(abs(step), 1.0) * 1e-9
    return best


def settle(cost: np.ndarray, sizes: np.ndarray, assign: np.ndarray, cap: float) -> np.ndarray:
    """Column assignment with no partition above ``cap`` vectors unless it holds a single column: the final pass on
    the lake's full column sizes after prices fitted on a sample.

    Prices (:func:`balance_prices`) balance the sample's histograms; full columns diverge from their sampled shares
    and the stored loads can end far above the capacity (twice it on a generated lake of 1M vectors).  Here every
    column's size is known exactly, so the over-full partitions are emptied greedily: of all (member, partition with
    room) moves, the one that raises ``cost`` (divergence to the centre plus its price, shape (columns, k)) least is
    made first, which keeps JSD locality, until the partition fits.  A column larger than ``cap`` fits nowhere: it
    ends alone in a partition (its own, or an empty one), and the bound is then "``cap`` or the largest column".
    Returns the new assignment; a partition that cannot be settled (no room anywhere) stays over and the caller
    refits with more partitions.
    """
    assign = np.asarray(assign, dtype=np.int64).copy()
    sizes = np.asarray(sizes, dtype=np.float64)
    k = cost.shape[1]
    load = np.bincount(assign, weights=sizes, minlength=k)
    count = np.bincount(assign, minlength=k)
    stuck: set[int] = set()
    while True:
        over = [j for j in np.argsort(-load, kind="stable") if load[j] > cap and count[j] > 1 and j not in stuck]
        if not over:
            return assign
        j = int(over[0])
        members = np.flatnonzero(assign == j)
        fits = (sizes[members][:, None] <= cap - load[None, :]) | (load[None, :] == 0)
        fits[:, j] = False
        if not fits.any():
            stuck.add(j)
            continue
        rise = np.where(fits, cost[members] - cost[members, j][:, None], np.inf)
        c, t = np.unravel_index(int(np.argmin(rise)), rise.shape)
        col = members[c]
        assign[col] = t
        load[j] -= sizes[col]
        load[t] += sizes[col]
        count[j] -= 1
        count[t] += 1


def search_partitions(loaders: Iterable[Callable[[], JoinIndex | None]], query_vectors, tau: float = 0.06,
                      T: float = 0.6, method: str = "pexeso", top_k: int | None = None,
                      exact_joinability: bool = True, value_ids=None, min_matches: int = 1, slack: int = 0,
                      pool: int | None = None) -> JoinResult:
    """Search one partition at a time (only one index in memory) and merge; a loader returns None for a partition
    that holds no vectors.

    Threshold search: the union of the partitions' answers (columns never span partitions).  Top-k (``T`` not
    applied): each partition's exact top-k, merged; the running k-th best count is passed on as a floor, so later
    partitions prune with the threshold already reached (the k-size buffer of top-k search carried across partitions).
    With ``slack`` and ``pool`` (:class:`.tally.TopK`) each partition returns its widened set and the floor carried is
    the merged answer's (k-th - slack, or the pool-th): a partition's k-th count is at most the lake's, so no column of
    the lake's widened set is lost.  ``value_ids``: the query value of each query vector (see
    :meth:`JoinIndex.search`).  ``min_matches``: a floor on the match count from the start (a top-k among the columns
    matching at least that many query values).
    """
    merged: list[JoinableColumn] = []
    stats: dict = {"partitions": 0}
    floor = max(1, int(min_matches))
    top = None if top_k is None else TopK(top_k, slack, pool)
    for load in loaders:
        index = load()
        if index is None:
            continue
        result = index.search(query_vectors, tau, T, method, top_k, exact_joinability, min_matches=floor,
                              value_ids=value_ids, slack=slack, pool=pool)
        del index
        stats["partitions"] += 1
        for key, value in result.stats.items():
            if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and key not in _PER_QUERY:
                stats[key] = stats.get(key, 0) + int(value)
            elif key.endswith("_seconds"):
                stats[key] = stats.get(key, 0.0) + float(value)
        merged.extend(result.columns)
        merged.sort(key=lambda c: (-c.matches, c.column_id))
        if top is not None:
            ranked = [c.matches for c in merged]
            merged = merged[:top.cut(ranked)]
            floor = max(floor, top.floor(ranked))
    stats["method"] = method
    return JoinResult(merged, stats)
