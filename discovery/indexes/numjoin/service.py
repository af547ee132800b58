"""Numerical joinable-column search against a snapshot, in the result shape of the semantic join.

``lakescout join --column price`` / ``--column lat,lng`` / ``Lakescout.join`` reach :func:`numeric_join_search`
when the query column is numbers, a latitude / longitude pair or a fixed-length numeric list
(:func:`discovery.orchestration.searches.join.route` decides, and checks the parameters of either join against the
column). The query's group is
read by the rules the ``numeric`` stage used on the lake (:func:`.columns.query_group`), searched with
:meth:`~.index.NumericIndex.search` in its family's index (mapped from the snapshot's query arrays, else built from
``numeric_sets``), and reported with joinability (matched distinct query values / distinct query values; f_all:
matched pairs / distinct query values) and matched pairs (query value, lake value, distance in the column's units).
A number column joins only lake columns of a compatible quantity (:mod:`discovery.transforms.quantities`: a population
never joins a weight); every method, ``exact`` included, leaves the others out alike (:func:`allowed_sets`).

``tau`` is in the data's units (metres for coordinates, the column's units for numbers, the vectors' units or
radians); ``tau_share`` instead gives it as a fraction of the query group's spread.  ``exact`` compares every pair
(:func:`.baselines.brute_force`): the same answer, for checking.
"""
from __future__ import annotations

import math
import time

import numpy as np
import pyarrow.compute as pc

from ...config import NumjoinConfig
from ...data.store import Snapshot, result_names
from ...data.store.cache import INDEXES, deep_nbytes
from ...query.params import ParameterError
from ...query.resolve import QueryError, QueryTable
from ...transforms.quantities import codes, pairs_compatible
from .arrays import build_numeric, open_numeric
from .baselines import brute_force
from .columns import KIND_METRICS, joinable_columns, query_group
from .search import METHODS as SEARCH_METHODS
from .stage import family_name

METHODS = SEARCH_METHODS + ("exact",)
EVIDENCE_PAIRS = 5


class LoadedNumeric:
    """A snapshot's numerical join families: ``{family: (index, sets)}``."""

    def __init__(self, snapshot: Snapshot):
        versions = snapshot.versions
        if "numeric_sets" not in versions:
            self.families = {}
        else:
            self.families = open_numeric(snapshot.warehouse, versions) or build_numeric(snapshot.warehouse,
                                                                                      versions)

    @property
    def nbytes(self) -> int:
        return deep_nbytes([ix.to_arrays() for ix, _ in self.families.values()])


def loaded_numeric(snapshot: Snapshot) -> LoadedNumeric:
    return INDEXES.get(("numjoin", snapshot.warehouse.root, snapshot.snapshot_id), lambda: LoadedNumeric(snapshot))


def set_values(ix, set_id: int) -> np.ndarray:
    """The values of set ``set_id`` of ``ix`` as indexed (its rows in order)."""
    g = ix.groups
    a, b = int(g.set_start[set_id]), int(g.set_start[set_id + 1])
    lo, hi = int(g.start[a]), int(g.start[b])
    rows, vals = np.asarray(g.member_row[lo:hi]), np.asarray(ix.values[lo:hi])
    return vals[np.argsort(rows, kind="stable")]


def _shown(v: np.ndarray):
    return float(v[0]) if v.shape[0] == 1 else [float(x) for x in v]


def allowed_sets(quantity: str, sets) -> np.ndarray | None:
    """Which sets of a family a query group of ``quantity`` may join (:mod:`discovery.transforms.quantities`), or None
    when the family's sets have no quantity (coordinates, vectors) or the query has none."""
    if not quantity or "quantity" not in sets.column_names:
        return None
    return pairs_compatible(np.full(sets.num_rows, codes([quantity])[0]), codes(sets["quantity"].to_pylist()))


def numeric_join_search(snapshot: Snapshot, q: QueryTable, ordinals: list[int], tau: float | None = None,
                        tau_share: float | None = None, T: float | None = None, top_k: int | None = None,
                        similarity: str = "hit", method: str = "pexeso", metric: str | None = None, *,
                        config: NumjoinConfig) -> dict:
    """Lake column groups joinable with the query's group at distance ``tau``, in ``lakescout join --json``'s shape
    (each result also names its ``kind``; distances are in ``stats["units"]``).  ``config``: where ``max_values``
    and the default tau come from; the search's plan passes the configuration it was planned with, so a Spark task
    answers with the driver's, not with the files of the executor's machine."""
    cfg = config
    if (top_k is None) == (T is None):
        raise ValueError("give either top_k or T, not " + ("both" if T is not None else "neither"))
    group = query_group(q.names, q.columns, ordinals, cfg.max_values)
    label = ",".join(q.names[i] for i in ordinals)
    if isinstance(group, str):
        raise QueryError(f"query {q.label!r}: {group}; columns that can be joined: {joinable_columns(q)}")
    label = group.label  # a coordinate pair as (latitude, longitude), whichever order it was named in
    metrics = KIND_METRICS[group.kind]
    if metric is not None and metric not in metrics:
        raise ParameterError("metric", f"metric {metric!r} does not apply to {group.kind} column {label!r} "
                               f"(metrics: {', '.join(metrics)})")
    metric = metric or metrics[0]
    values = group.values
    spread = group.spread
    if metric == "angular":
        values = values[np.einsum("ij,ij->i", values, values) > 0]
        spread = math.pi
    if not values.shape[0]:
        raise QueryError(f"column {label!r} of query {q.label!r} has no values")
    if tau is None:
        tau = (tau_share * spread if tau_share is not None
               else cfg.tau_metres if group.kind == "coordinates" else cfg.tau_share * spread)
    started = time.perf_counter()
    loaded = loaded_numeric(snapshot)
    family = family_name(metric, group.dim)
    entry = loaded.families.get(family)
    results: list[dict] = []
    stats: dict = {}
    if entry is not None:
        ix, sets = entry
        own = 0 if q.table_id is None else int(pc.sum(pc.equal(sets["table_id"], q.table_id)).as_py() or 0)
        k = None if top_k is None else top_k + own
        allowed = allowed_sets(group.quantity, sets)
        if method == "exact":
            empty = np.zeros((0, values.shape[1]))
            found = brute_force([set_values(ix, s) if allowed is None or allowed[s] else empty
                                 for s in range(ix.n_sets)], values, tau, metric, T=T, k=k, similarity=similarity)
        else:
            found = ix.search(values, tau, T=T, k=k, similarity=similarity, method=method, exact_scores=True,
                              allowed=allowed)
        described = sets.select(["table_id", "names", "kind"]).take(found.set_ids).to_pylist()
        chosen = [(s, d) for s, d in zip(found.sets, described) if d["table_id"] != q.table_id]
        chosen = chosen if top_k is None else chosen[:top_k]
        paths, _ = result_names(snapshot, [d["table_id"] for _, d in chosen])
        for s, d in chosen:
            assert s.query_values is not None and s.lake_values is not None  # both searches give the pairs' values
            order = np.lexsort((s.pairs[:, 0], s.pairs[:, 2]))[:EVIDENCE_PAIRS]
            pairs = [[_shown(s.query_values[i]), _shown(s.lake_values[i]), float(s.pairs[i, 2])] for i in order]
            results.append({"rank": len(results) + 1, "table_id": d["table_id"], "path": paths.get(d["table_id"]),
                            "column": ",".join(d["names"]), "kind": d["kind"],
                            "joinability": s.score / values.shape[0], "matched": s.score, "matches": pairs})
        stats = {k_: v for k_, v in found.stats.items() if isinstance(v, (int, float, str))}
        stats["distance_computations"] = int(sum(found.stats["distances"].values()))
    stats.update(query_quantity=group.quantity, query_values=int(values.shape[0]), query_values_total=group.total,
                 query_values_capped=group.total > values.shape[0] and metric != "angular",
                 tau_distance=float(tau), units=group.units(metric), spread=float(spread),
                 seconds=time.perf_counter() - started)
    return {"snapshot_id": snapshot.snapshot_id, "query": q.label, "column": label, "join": "numeric",
            "kind": group.kind, "metric": metric, "method": method, "tau": float(tau), "tau_share": tau_share,
            "T": T, "top_k": top_k, "similarity": similarity, "results": results, "stats": stats}


__all__ = ["METHODS", "numeric_join_search", "set_values"]
