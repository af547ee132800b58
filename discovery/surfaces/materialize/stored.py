"""Plans from recorded answers: a ``query_results`` answer (batch id, query id, ranks) as the table it describes.

A query batch records each result with its evidence (a union's alignment, a join's lake column, an n-ary join's key
mapping) and the batch's validated spec (the query and the search's parameters) in ``query_batches``.  That is all a
plan needs: the snapshot is the one the batch answered from, the results are the recorded ones, and the value
mapping is computed again from that snapshot by the functions that gave the evidence (:mod:`.sources`), so what is
written is what the batch showed, whenever it is written.

Served: the ``materialize`` DAG and the page act for users who do not own the worker, so the query must be a lake
table (or an upload the page still holds, ``uploads``); an upload the server no longer has is refused.
"""
from __future__ import annotations

import json

import pyarrow.compute as pc

from ...data.store import Session, Warehouse, load_snapshot
from ...query.resolve import QueryTable, read_query_file, resolve_query
from ..batch import batch_results
from .augment import FanOut
from .execute import join_plan, join_source, union_plan
from .sources import Matching, PlanError


def _spec(wh: Warehouse, batch_id: str, query_id: str) -> dict:
    batches = wh.read("query_batches", columns=["batch_id", "spec"], filter=pc.field("batch_id") == batch_id)
    if batches.num_rows == 0:
        raise PlanError(f"no recorded batch {batch_id!r}")
    spec = json.loads(batches.column("spec")[0].as_py())
    found = [q for q in spec["queries"] if q.get("id") == query_id]
    if not found:
        ids = ", ".join(str(q.get("id")) for q in spec["queries"])
        raise PlanError(f"batch {batch_id!r} has no query {query_id!r} (queries: {ids})")
    return found[0]


def stored_answer(wh: Warehouse, batch_id: str, query_id: str) -> tuple[dict, list[dict]]:
    """The recorded query (its spec: kind, query, parameters) and its result rows, by rank (evidence decoded)."""
    query = _spec(wh, batch_id, query_id)
    rows = batch_results(wh, batch_id)
    rows = rows.filter(pc.equal(rows["query_id"], query_id)).to_pylist()
    out = []
    for r in rows:
        evidence = json.loads(r.pop("evidence") or "{}")
        out.append({**evidence, **r, "joinability": r["score"]})
    return query, out


def _query(snapshot, spec: dict, served: bool, uploads: dict | None) -> QueryTable:
    label = spec["query"]
    if isinstance(label, str) and label.startswith("upload:"):
        path = (uploads or {}).get(label)
        if path is None:
            raise PlanError(f"query {label!r} was an uploaded file, which is not kept: run the search again with it")
        return read_query_file(path, label, served=True)
    return resolve_query(snapshot, label, allow_files=not served)


def stored_plans(session: Session, batch_id: str, query_id: str, ranks: list[int] | None = None, *,
                 fan_out: str = "nearest", max_matches: int | None = None,
                 columns: list[str] | None = None, query_rows: bool = True, dedupe: bool = False, strict: bool = False,
                 served: bool = True, uploads: dict | None = None, matcher: str | None = None,
                 precision: float | None = None, master: str | None = None) -> tuple[object, list]:
    """``(snapshot, plans)`` writing the recorded answer: a union of the results at ``ranks`` (default all) in one
    plan; for a join, one plan per rank (default the first), to run in that order, each on the previous one's rows
    (:func:`.execute.compose`: augmentations compose).  The ``session``'s configuration (the DAG's, the page's)
    fills, from ``[materialize]``, ``[join] tau`` and ``[numjoin]``, what the parameters and the recorded spec leave
    out; given a Spark ``master``, a text join's values are paired there when its lake table is large
    (:class:`.sources.Matching`)."""
    wh, config = session.warehouse, session.config
    spec, rows = stored_answer(wh, batch_id, query_id)
    if not rows:
        raise PlanError(f"query {query_id!r} of batch {batch_id!r} has no results to write")
    snapshot = load_snapshot(wh, rows[0]["snapshot_id"])
    by_rank = {r["rank"]: r for r in rows}
    wanted = ranks or (sorted(by_rank) if spec["kind"] == "union" else [1])
    missing = [r for r in wanted if r not in by_rank]
    if missing:
        raise PlanError(f"query {query_id!r} of batch {batch_id!r} has no rank {missing[0]} (ranks 1 to "
                        f"{max(by_rank)})")
    query = _query(snapshot, spec, served, uploads)
    params = {k: v for k, v in (spec.get("params") or spec).items() if k not in ("id", "kind", "query")}
    if spec["kind"] == "union":
        return snapshot, [union_plan(snapshot, query, [by_rank[r] for r in wanted], include_query=query_rows,
                                     dedupe=dedupe, strict=strict)]
    fan = FanOut(fan_out, config.materialize.max_matches if max_matches is None else max_matches)
    matching = Matching(matcher or config.materialize.matcher,
                        config.materialize.precision if precision is None else precision, config.limits, master,
                        config.materialize.spark_min_bytes)
    plans = []
    for rank in wanted:
        result = by_rank[rank]
        if spec["kind"] == "nary":
            key = params["key"] if isinstance(params["key"], list) else [k.strip() for k in params["key"].split(",")]
            ordinals, kind, used = [query.ordinal(c) for c in key], "nary", {}
        else:
            from ...orchestration.searches.join import route, text_tau

            target = route(params, query)
            ordinals, kind = target.ordinals, "numeric" if target.numeric else "text"
            used = {k: params.get(k) for k in ("tau", "tau_share", "metric") if params.get(k) is not None}
            if kind == "text":
                used["tau"] = text_tau(used, config)
        source = join_source(snapshot, query, kind, ordinals, result, used, columns, matching, config.numjoin)
        plans.append(join_plan(snapshot, query, source, ordinals, fan_out=fan, strict=strict, result=result))
    return snapshot, plans
