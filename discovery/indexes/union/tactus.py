"""TACTUS online search (Algorithm 2 of the TACTUS paper): adaptive candidate cut and dual-evidence rerank.

The candidate pool is the top-3k tables by table-level score mu_T (cosine of table vectors), cut adaptively: the
first k are always kept, and the scan over positions k+1..3k stops before the first table whose mu_T is below
tau_abs or lies more than tau_drop under its predecessor.  Each surviving table is reranked by
mu = mu_T + mu_A (Eq. 9) where mu_A (Eq. 8) is the mean over query columns of the best cosine similarity to any of the
table's columns; that best column is the alignment reported for the query column (many-to-one, as Eq. 8 defines it).

When no position in k+1..3k triggers a stop, the printed algorithm would leave i_cut at k; the text says the pool
runs up to where the scan stops, and the ablation "w/o adaptive" is the full 3k pool, so an unstopped scan keeps all
3k tables.
"""
from __future__ import annotations

import numpy as np

from .csr import expand_ranges, offsets_from_owners
from .hnsw import knn
from .matching import unit_rows
from .results import SearchStats, UnionResult, UnionSearch

DEFAULT_TAU_ABS = 0.5
DEFAULT_TAU_DROP = 0.2


def adaptive_cut(scores: np.ndarray, k: int, tau_abs: float = DEFAULT_TAU_ABS,
                 tau_drop: float = DEFAULT_TAU_DROP) -> int:
    """Pool size i_cut for mu_T ``scores`` sorted descending (TACTUS Alg. 2 lines 3-8), at most len(scores)."""
    s = np.asarray(scores, dtype=np.float64)
    n = len(s)
    if n <= k:
        return n
    tail = np.arange(k, n)  # 0-based positions of 1-based i = k+1 .. n
    stop = (s[tail] < tau_abs) | (s[tail - 1] - s[tail] > tau_drop)
    hits = np.flatnonzero(stop)
    return int(tail[hits[0]]) if len(hits) else n


def alignment_scores(query_vectors: np.ndarray, column_vectors: np.ndarray,
                     table_offsets: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """mu_A (Eq. 8) per table whose columns are ``column_vectors[table_offsets[i]:table_offsets[i+1]]``.

    Returns (mu_A (n,), best column position within its table (q, n), its cosine similarity (q, n)).  Vectors are
    unit-normalised, so cosine is the inner product.  Every table must have at least one column.
    """
    q = np.asarray(query_vectors, dtype=np.float32)
    sims = (q @ np.asarray(column_vectors, dtype=np.float32).T).astype(np.float64)
    starts = table_offsets[:-1]
    best = np.maximum.reduceat(sims, starts, axis=1)
    sizes = np.diff(table_offsets)
    owner = np.repeat(np.arange(len(sizes)), sizes)
    # position of the first column reaching the table's maximum, per (query column, table)
    hit = sims == best[:, owner]
    position = np.arange(sims.shape[1]) - starts[owner]
    first = np.full(best.shape, np.iinfo(np.int64).max)
    rows = np.nonzero(hit)
    np.minimum.at(first, (rows[0], owner[rows[1]]), position[rows[1]])
    return best.mean(axis=0), first, best


def tactus_search(index, query: np.ndarray, k: int, exclude: int, query_table_vector: np.ndarray | None,
                  tau_abs: float, tau_drop: float) -> UnionSearch:
    """TACTUS Alg. 2 over :class:`~.search.UnionIndex` ``index``: the top-3k tables by table vector (HNSW), the
    adaptive cut, and the rerank by mu_T + mu_A, leaving out table position ``exclude`` (-1: none)."""
    if index.table_vectors is None:
        raise ValueError("tactus needs table vectors; this snapshot has none")
    if query_table_vector is None:
        raise ValueError("tactus needs the query's table vector")
    tq = unit_rows(np.asarray(query_table_vector, dtype=np.float32).reshape(1, -1))
    n_init = min(3 * k + (exclude >= 0), len(index.table_ids))
    labels, dist = knn(index.graph("tables"), tq, n_init)
    tix = labels[0].astype(np.int64)
    mu_t = 1.0 - dist[0].astype(np.float64)
    keep = tix != exclude
    tix, mu_t = tix[keep][:3 * k], mu_t[keep][:3 * k]
    order = np.lexsort((index.table_ids[tix], -mu_t))
    tix, mu_t = tix[order], mu_t[order]
    cut = adaptive_cut(mu_t, k, tau_abs, tau_drop)
    pool, mu_t = tix[:cut], mu_t[:cut]
    if len(pool) == 0:
        return UnionSearch([], SearchStats("tactus", len(tix), 0, 0), "dual_evidence")
    c_pos, c_owner = expand_ranges(index.col_offsets, pool)
    offsets = offsets_from_owners(c_owner, len(pool))
    mu_a, best_pos, best_sim = alignment_scores(query, index.vectors[c_pos], offsets)
    mu = mu_t + mu_a
    rank = np.lexsort((index.table_ids[pool], -mu))[:k]
    results = []
    for i in rank:
        rows = index.col_offsets[pool[i]] + best_pos[:, i]
        alignment = tuple((q, int(index.ordinals[rows[q]]), float(best_sim[q, i])) for q in range(len(query)))
        results.append(UnionResult(int(index.table_ids[pool[i]]), float(mu[i]), alignment))
    return UnionSearch(results, SearchStats("tactus", len(tix), len(pool), 0), "dual_evidence")
