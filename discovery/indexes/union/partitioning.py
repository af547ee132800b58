"""PGTUS Algorithm 1 (BuildPartitionInvertedIndex) for one table, and the flat array layout of its output.

A Spark task calls :func:`partition_table` once per table; it is a pure function of the table's column vectors, their
nearest base centroids mu(v) and the base centroids, so retries and incremental refreshes reproduce it exactly.

Per table V_i with dispersion rho = |L(V_i)| / |V_i| (L = distinct nearest centroids):

* rho <= rho_l (columns crowd into few centroids): k-means on V_i gives cascade centroids; each cascade centroid with
  the columns nearest to it becomes a partition.  The paper leaves the number of cascade centroids open; we take
  ceil(rho_mid * |V_i|) with rho_mid = (rho_l + rho_h) / 2, the middle of the band the algorithm leaves alone, so a
  refined table is neither low- nor high-dispersed.
* rho >= rho_h (nearly one centroid per column): start from singleton groups and repeatedly merge the two groups of
  highest gsim(G_p, G_q) = max <c_x, c_y> until |P_i| / |V_i| < rho_h (Alg. 1 lines 10-17).  gsim of a merged group
  to any other is the max of its parts' gsim, so the loop keeps one |L| x |L| matrix and updates a row per merge.
* otherwise: one partition per distinct nearest centroid.

Defaults rho_l = 0.2 and rho_h = 0.9 (the paper gives none): merging loosens the many-to-one bounds, so only tables
where almost every column has its own centroid are merged; cascading only pays off when five or more columns share a
centroid on average.

Every partition also records the I_w counts of its members (how many of them have each base centroid as mu(v)); the
counts of all partitions of a table sum to W(V_i), which the refinement (Alg. 2) uses as per-centroid capacity.

What queries read of Algorithm 1 is the partitions S_k (the capacities of Algorithm 3's bounds) and their I_w counts.
The groups G_k are kept on :class:`Partition` as the algorithm's output but not flattened or stored, and cascade
centroid vectors not at all: Algorithm 3 scores a partition by max_{c in G_k} <q, c>, which bounds nothing about the
members, and the sound cone bounds over the groups that would replace it cost, per reachable table, as much as
comparing its columns (``cones``), so nothing at query time is tightened or cut by them.
"""
from __future__ import annotations

import math
from dataclasses import dataclass
from collections.abc import Sequence

import numpy as np

from .centroids import assign_to_centroids, kmeans
from .csr import offsets_from_counts

#: group id marking a cascade centroid (one not among the base centroids C_E).
CASCADE = -1

DEFAULT_RHO_L = 0.2
DEFAULT_RHO_H = 0.9


@dataclass(frozen=True)
class Partition:
    """(G_k, S_k) of Algorithm 1 plus the I_w counts of S_k."""

    group_centroid_ids: np.ndarray  # int64 (g,): base centroid ids, CASCADE for cascade centroids
    members: np.ndarray  # int64 (s,): column ordinals of S_k
    centroid_ids: np.ndarray  # int64 (w,): distinct base centroids mu(v) of the members (I_w keys)
    centroid_counts: np.ndarray  # int64 (w,): members per such centroid (I_w values)


def _counts(ids: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    keys, counts = np.unique(ids, return_counts=True)
    return keys.astype(np.int64), counts.astype(np.int64)


def _partition(group_ids, members, ordinals, col_centroid_ids) -> Partition:
    members = np.sort(members)
    keys, counts = _counts(col_centroid_ids[members])
    return Partition(np.asarray(group_ids, dtype=np.int64), ordinals[members].astype(np.int64), keys, counts)


def _cascade(vectors, col_centroid_ids, ordinals, rho_l, rho_h, seed) -> list[Partition]:
    m = len(vectors)
    r = min(m, max(1, math.ceil((rho_l + rho_h) / 2.0 * m)))
    cascade = kmeans(vectors, r, seed=seed)
    labels = assign_to_centroids(vectors, cascade)
    out = []
    for j in range(len(cascade)):
        members = np.flatnonzero(labels == j)
        if len(members):
            out.append(_partition([CASCADE], members, ordinals, col_centroid_ids))
    return out


def _merged(vectors, col_centroid_ids, centroids, ordinals, rho_h) -> list[Partition]:
    m = len(vectors)
    distinct = np.unique(col_centroid_ids)
    c = centroids[distinct].astype(np.float64)
    gsim = c @ c.T
    np.fill_diagonal(gsim, -np.inf)
    groups: list[list[int] | None] = [[j] for j in range(len(distinct))]
    alive = len(groups)
    while alive > 1 and alive / m >= rho_h:
        flat = int(np.argmax(gsim))
        p, q = divmod(flat, len(distinct))
        p, q = min(p, q), max(p, q)
        kept, gone = groups[p], groups[q]
        assert kept is not None and gone is not None  # merged groups' similarities are -inf: the pair is live
        kept.extend(gone)
        groups[q] = None
        merged_row = np.maximum(gsim[p], gsim[q])
        gsim[p, :] = merged_row
        gsim[:, p] = merged_row
        gsim[p, p] = -np.inf
        gsim[q, :] = -np.inf
        gsim[:, q] = -np.inf
        alive -= 1
    out = []
    for group in groups:
        if group is None:
            continue
        ids = np.sort(distinct[group])
        members = np.flatnonzero(np.isin(col_centroid_ids, ids))
        out.append(_partition(ids, members, ordinals, col_centroid_ids))
    return out


def _singletons(col_centroid_ids, ordinals) -> list[Partition]:
    out = []
    for cid in np.unique(col_centroid_ids):
        members = np.flatnonzero(col_centroid_ids == cid)
        out.append(_partition([cid], members, ordinals, col_centroid_ids))
    return out


def partition_table(col_vectors: np.ndarray, col_centroid_ids: np.ndarray, centroids: np.ndarray,
                    rho_l: float = DEFAULT_RHO_L, rho_h: float = DEFAULT_RHO_H, *,
                    col_ordinals: np.ndarray | None = None, seed: int = 0) -> list[Partition]:
    """Algorithm 1 for one table: its partitions P_i = [(G_k, S_k)] with I_w counts.

    ``col_vectors`` (m, d) are the table's column vectors, ``col_centroid_ids`` (m,) their nearest base centroids,
    ``centroids`` (c, d) the base centroids.  Members are reported as ``col_ordinals`` (default 0..m-1).  ``seed``
    fixes the cascade k-means.
    """
    vectors = np.asarray(col_vectors, dtype=np.float32)
    ids = np.asarray(col_centroid_ids, dtype=np.int64)
    centroids = np.asarray(centroids, dtype=np.float32)
    m = len(vectors)
    if m == 0:
        return []
    ordinals = np.arange(m, dtype=np.int64) if col_ordinals is None else np.asarray(col_ordinals, dtype=np.int64)
    rho = len(np.unique(ids)) / m
    if rho <= rho_l:
        return _cascade(vectors, ids, ordinals, rho_l, rho_h, seed)
    if rho >= rho_h:
        return _merged(vectors, ids, centroids, ordinals, rho_h)
    return _singletons(ids, ordinals)


@dataclass(frozen=True)
class PartitionArrays:
    """All tables' partitions as flat arrays (the shape of the ``centroid_partitions`` Delta table, exploded).

    Partition p belongs to ``table_ids[p]``; its members are ``member_ordinals[member_offsets[p]:member_offsets[p+1]]``,
    its I_w counts ``iw_centroid_ids`` / ``iw_counts`` over ``iw_offsets[p]:iw_offsets[p+1]``.
    """

    table_ids: np.ndarray
    member_offsets: np.ndarray
    member_ordinals: np.ndarray
    iw_offsets: np.ndarray
    iw_centroid_ids: np.ndarray
    iw_counts: np.ndarray


def flatten_partitions(table_ids: Sequence[int] | np.ndarray,
                       partitions: Sequence[Sequence[Partition]]) -> PartitionArrays:
    """Flatten per-table partition lists (``partitions[i]`` belongs to ``table_ids[i]``) into
    :class:`PartitionArrays`."""
    flat = [(int(t), p) for t, parts in zip(table_ids, partitions) for p in parts]

    def cat(arrays, dtype):
        return np.concatenate(arrays).astype(dtype) if arrays else np.zeros(0, dtype=dtype)

    return PartitionArrays(
        table_ids=np.array([t for t, _ in flat], dtype=np.int64),
        member_offsets=offsets_from_counts([len(p.members) for _, p in flat]),
        member_ordinals=cat([p.members for _, p in flat], np.int64),
        iw_offsets=offsets_from_counts([len(p.centroid_ids) for _, p in flat]),
        iw_centroid_ids=cat([p.centroid_ids for _, p in flat], np.int64),
        iw_counts=cat([p.centroid_counts for _, p in flat], np.int64),
    )


def partition_lake(column_vectors: np.ndarray, column_table_ids: np.ndarray, column_ordinals: np.ndarray,
                   n_centroids: int | None = None, *, sample: int = 100_000, rho_l: float = DEFAULT_RHO_L,
                   rho_h: float = DEFAULT_RHO_H, seed: int = 0) -> tuple[np.ndarray, PartitionArrays]:
    """The centroid stage on one machine: base centroids by k-means on a sample of the column vectors (default
    k = sqrt(#columns), as the Spark stage), nearest-centroid assignment of every column and Algorithm 1 per table.

    Benchmarks and tests use it where the Spark stage (Algorithm 1 in Spark tasks) would be overkill.
    """
    vectors = np.asarray(column_vectors, dtype=np.float32)
    table_ids = np.asarray(column_table_ids, dtype=np.int64)
    ordinals = np.asarray(column_ordinals, dtype=np.int64)
    k = n_centroids or max(1, int(round(math.sqrt(len(vectors)))))
    rng = np.random.default_rng(seed)
    train = vectors if len(vectors) <= sample else vectors[rng.choice(len(vectors), sample, replace=False)]
    centroids = kmeans(train, k, seed=seed, iterations=15)
    assigned = assign_to_centroids(vectors, centroids)
    order = np.argsort(table_ids, kind="stable")
    tables, starts = np.unique(table_ids[order], return_index=True)
    ends = np.append(starts[1:], len(order))
    parts = []
    for a, b in zip(starts.tolist(), ends.tolist()):
        rows = order[a:b]
        parts.append(partition_table(vectors[rows], assigned[rows], centroids, rho_l, rho_h,
                                     col_ordinals=ordinals[rows], seed=seed))
    return centroids, flatten_partitions(tables, parts)
