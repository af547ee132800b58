"""The whole value mapping of one numerical-join result: each query value with its nearest lake value within tau.

A numerical join says which query values have a lake value within tau; writing the joined table needs, for each
of them, *which* lake value: the nearest one (:func:`nearest_within`), ties by the lower position in the lake set
(the set's values are distinct and ascending, so the smaller value).  Distances are the search's canonical ones
(:func:`.metric.chord_rows`, decided by :meth:`.metric.Metric.matches`), so a value is matched here exactly when
the search counts it.

The query side is every distinct value of the query group, not only the search's sample (``[numjoin]
max_values``), while tau, when derived from the query's spread (``tau_share``), is the search's: computed on the
group the search builds.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow.compute as pc

from ...config import NumjoinConfig
from ...data.store import Snapshot
from ...query.resolve import QueryError, QueryTable
from .columns import KIND_METRICS, MAX_NUMBERS, query_group
from .metric import chord_rows, get_metric, max_norm, slack
from .service import loaded_numeric, set_values
from .stage import family_name

#: Nearest neighbours a k-d tree returns per query value before the exact pass decides among them.
_NEIGHBOURS = 4


@dataclass(frozen=True)
class NumericPairs:
    """``lake[i]`` is the nearest lake value of ``query[i]`` (rows of ``dim`` numbers) at ``distance[i]`` (in
    ``units``); ``values`` every distinct query value; ``kind``, ``metric`` and ``tau`` those the join used."""

    query: np.ndarray
    lake: np.ndarray
    distance: np.ndarray
    values: np.ndarray
    kind: str
    metric: str
    tau: float
    units: str


def _nearest_1d(q: np.ndarray, lake: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    order = np.argsort(lake, kind="stable")
    ls = lake[order]
    at = np.searchsorted(ls, q)
    lo, hi = np.clip(at - 1, 0, ls.size - 1), np.clip(at, 0, ls.size - 1)
    d_lo, d_hi = np.abs(q - ls[lo]), np.abs(q - ls[hi])
    take_hi = (d_hi < d_lo) | ((d_hi == d_lo) & (order[hi] < order[lo]))
    return np.where(take_hi, order[hi], order[lo]), np.where(take_hi, d_hi, d_lo)


def _nearest_tree(qp: np.ndarray, lp: np.ndarray, bound: float, eps: float) -> tuple[np.ndarray, np.ndarray]:
    """Canonical nearest (position, chord) of each prepared query row among the prepared lake rows within
    ``bound`` (position -1 beyond); the tree proposes, :func:`chord_rows` decides, and where more neighbours than
    proposed could be nearest (within ``2 eps`` of the best) all of them within that reach are checked."""
    from scipy.spatial import cKDTree

    tree = cKDTree(lp)
    k = min(_NEIGHBOURS, lp.shape[0])
    dist, idx = tree.query(qp, k=k, distance_upper_bound=bound + eps)
    dist, idx = dist.reshape(len(qp), k), idx.reshape(len(qp), k)
    best, best_chord = np.full(len(qp), -1, np.int64), np.full(len(qp), np.inf)
    for j in range(k):
        ok = idx[:, j] < lp.shape[0]
        rows = np.flatnonzero(ok)
        chord = chord_rows(qp[rows], lp[idx[rows, j]])
        better = (chord < best_chord[rows]) | ((chord == best_chord[rows]) & (idx[rows, j] < best[rows]))
        best[rows[better]], best_chord[rows[better]] = idx[rows[better], j], chord[better]
    crowded = np.flatnonzero((idx[:, -1] < lp.shape[0]) & (dist[:, -1] <= dist[:, 0] + 2 * eps))
    for i in crowded:  # more neighbours tie within rounding than the tree returned: take them all
        near = np.array(sorted(tree.query_ball_point(qp[i], dist[i, 0] + 2 * eps)), dtype=np.int64)
        chord = chord_rows(np.repeat(qp[i:i + 1], near.size, axis=0), lp[near])
        j = int(np.lexsort((near, chord))[0])
        best[i], best_chord[i] = near[j], chord[j]
    return best, best_chord


def nearest_within(query: np.ndarray, lake: np.ndarray, metric: str, tau: float):
    """``(query positions, lake positions, distances)`` of every query row whose nearest lake row lies within
    ``tau`` (canonical distances, ties by the lower lake position)."""
    m = get_metric(metric)
    qp, lp = m.prepare(query), m.prepare(lake)
    if not (qp.shape[0] and lp.shape[0]):
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0)
    if qp.shape[1] == 1:
        pos, chord = _nearest_1d(qp[:, 0], lp[:, 0])
    else:
        pos, chord = _nearest_tree(qp, lp, m.chord_band(tau)[1], 3 * slack(qp.shape[1], max_norm(qp, lp)))
    found = pos >= 0
    found[found] = m.matches(chord[found], tau)
    qi = np.flatnonzero(found)
    return qi, pos[qi], m.to_units(chord[qi])


def group_pairs(snapshot: Snapshot, q: QueryTable, ordinals: list[int], table_id: int, lake_ordinals: list[int],
                config: NumjoinConfig, tau: float | None = None, tau_share: float | None = None,
                metric: str | None = None) -> NumericPairs:
    """The mapping of the query group named by ``ordinals`` onto lake group (``table_id``, ``lake_ordinals``) at the
    search's tau (given in units, as a share of the query's spread, or the default of ``config``).  ``config`` is
    the ``[numjoin]`` section of the caller's session, as :func:`~discovery.indexes.numjoin.service.numeric_join_search`
    takes it: the group is sampled to the same ``max_values`` and matched at the same default tau as the search
    that found the result, so the pairs written are the ones it reported."""
    searched = query_group(q.names, q.columns, ordinals, config.max_values)
    every = query_group(q.names, q.columns, ordinals, MAX_NUMBERS)
    if isinstance(searched, str) or isinstance(every, str):
        raise QueryError(f"query {q.label!r}: {searched if isinstance(searched, str) else every}")
    metric = metric or KIND_METRICS[searched.kind][0]
    if metric not in KIND_METRICS[searched.kind]:
        raise QueryError(f"metric {metric!r} does not apply to {searched.kind} column {searched.label!r}")
    spread, values = searched.spread, every.values
    if metric == "angular":
        spread = np.pi
        values = values[np.einsum("ij,ij->i", values, values) > 0]
    if tau is None:
        tau = (tau_share * spread if tau_share is not None
               else config.tau_metres if searched.kind == "coordinates" else config.tau_share * spread)
    family = family_name(metric, searched.dim)
    entry = loaded_numeric(snapshot).families.get(family)
    set_id = None
    if entry is not None:
        ix, sets = entry
        mine = pc.equal(sets["table_id"], table_id).to_numpy(zero_copy_only=False)
        for i in np.flatnonzero(mine):
            if sets["ordinals"][int(i)].as_py() == list(lake_ordinals):
                set_id = int(i)
    if set_id is None:
        raise QueryError(f"lake columns {list(lake_ordinals)} of table {table_id} are not a {searched.kind} group "
                         f"of the numerical-join index")
    lake = set_values(ix, set_id)
    qi, li, dist = nearest_within(values, lake, metric, tau)
    return NumericPairs(values[qi], lake[li], dist, values, searched.kind, metric, float(tau),
                        searched.units(metric))
