"""What the "Lake discovery" page shows, read from the warehouse: one function per panel, plain JSON-able values.

:func:`served_page` is what the routes call: the panels memoised by the server's
:class:`~discovery.surfaces.serving.Served` (rebuilt when it serves a new snapshot, else every :data:`PAGE_SECONDS` in
the background; the searches the server recorded since are added from its memory), with
the parts that move during a refresh (its progress, the lease, the lake watcher's word) read on every call: each is
one small file.
"""
from __future__ import annotations

import json
import os
import time
from datetime import datetime, UTC
from functools import lru_cache

import psutil
import pyarrow as pa
import pyarrow.compute as pc

from discovery.data.store import SCHEMAS, Warehouse, WarehouseError, list_snapshots
from discovery.data.store.cache import INDEXES
from discovery.data.store.lease import holder as lease_holder
from discovery.orchestration.refresh.watch import ahead, read_state
from discovery.orchestration.searches import SEARCHES
from discovery.orchestration.status import warehouse_status
from discovery.stages.progress import clock, read_progress
from discovery.surfaces.batch import batch_results, recent_batches
from discovery.surfaces.serving import Served
from discovery.surfaces.standing import standing_changes


def snapshot_history(wh: Warehouse) -> list[dict]:
    """Every retained snapshot, oldest first, with its table counts by status."""
    return [{"snapshot_id": s.snapshot_id, "created_at": s.created_at.isoformat(timespec="seconds"),
             "refresh_id": s.refresh_id, "ok": s.counts.get("tables_ok", 0), "error": s.counts.get("tables_error", 0),
             "deleted": s.counts.get("tables_deleted", 0)} for s in list_snapshots(wh)]


def stage_timings(wh: Warehouse, last: int = 20) -> dict:
    """Seconds per stage of the last ``last`` refreshes (successful attempts), for a stacked bar chart."""
    runs = wh.read("refresh_runs", columns=["refresh_id", "stage", "status", "seconds", "started_at", "took_over"])
    runs = runs.filter(pc.and_(pc.equal(runs["status"], "ok"), pc.is_null(runs["took_over"])))  # stages only
    if runs.num_rows == 0:
        return {"refreshes": [], "stages": {}}
    ids = sorted(set(runs.column("refresh_id").to_pylist()))[-last:]
    order: list[str] = []
    seconds: dict[tuple[int, str], float] = {}
    for r in runs.sort_by("started_at").to_pylist():
        if r["refresh_id"] in ids:
            if r["stage"] not in order:
                order.append(r["stage"])
            seconds[(r["refresh_id"], r["stage"])] = round(r["seconds"], 2)
    return {"refreshes": [str(i) for i in ids],
            "stages": {s: [seconds.get((i, s), 0.0) for i in ids] for s in order}}


def index_sizes(wh: Warehouse) -> list[dict]:
    """Files, rows and bytes of the current version of every Delta table."""
    out = []
    for name in SCHEMAS:
        files = wh.files(name)
        size = int(pc.sum(files["size_bytes"]).as_py() or 0) if files.num_rows else 0
        rows = int(pc.sum(files["num_records"]).as_py() or 0) if files.num_rows else 0
        out.append({"table": name, "version": wh.version(name), "files": files.num_rows, "rows": rows,
                    "bytes": size})
    return out


def newest_batches(wh: Warehouse, limit: int = 10) -> list[tuple[dict, list[dict]]]:
    """The ``limit`` most recent recorded batches, newest first, each with its ``query_results`` rows."""
    recent = recent_batches(wh, limit)
    results = batch_results(wh, [b["batch_id"] for b in recent], min((b["created_at"] for b in recent), default=None))
    by_batch: dict[str, list[dict]] = {b["batch_id"]: [] for b in recent}
    for r in results.to_pylist():
        by_batch[r["batch_id"]].append(r)
    return [(b, by_batch[b["batch_id"]]) for b in recent]


def batch_panel(batches: list[tuple[dict, list[dict]]], per_query: int = 5) -> list[dict]:
    """The recent-searches panel: each batch (a ``query_batches`` row) with the top ``per_query`` results of each of
    its queries."""
    return [{**{k: b[k] for k in ("batch_id", "name", "standing", "snapshot_id", "queries", "results")},
             "created_at": b["created_at"].isoformat(timespec="seconds"),
             "rows": [{**{k: r[k] for k in ("query_id", "kind", "rank", "table_id", "path", "column", "score")},
                       "evidence": r["evidence"]} for r in rows if r["rank"] <= per_query]}
            for b, rows in batches]


def with_recorded(read: list[tuple[dict, list[dict]]], recorded: list[tuple[dict, list[dict]]],
                  limit: int = 10) -> list[tuple[dict, list[dict]]]:
    """The ``limit`` newest of the batches ``read`` from the warehouse and those this process ``recorded`` since
    (a batch in both once): the newest batches in the warehouse, but for what other processes recorded after the
    read."""
    seen: dict[str, tuple[dict, list[dict]]] = {}
    for entry in (*recorded, *read):
        seen.setdefault(entry[0]["batch_id"], entry)
    return sorted(seen.values(), key=lambda e: e[0]["created_at"], reverse=True)[:limit]


def recent_changes(wh: Warehouse, limit: int = 50) -> list[dict]:
    return [{k: r[k] for k in ("name", "query_id", "snapshot_id", "previous_snapshot_id", "change", "table_id",
                               "path", "column", "score", "previous_score")}
            for r in standing_changes(wh).slice(0, limit).to_pylist()]


def lake_tables(wh: Warehouse) -> list[dict]:
    """Indexed lake tables of the latest snapshot (the search form's picker)."""
    snaps = list_snapshots(wh)
    if not snaps:
        return []
    cat = snaps[-1].read("catalog", columns=["table_id", "path", "format", "status"])
    cat = cat.filter(pc.is_in(cat["status"], pa.array(["ok", "stale"]))).sort_by("path")
    return [{"table_id": r["table_id"], "path": r["path"], "format": r["format"]} for r in cat.to_pylist()]


def lease_takeovers(wh: Warehouse, last: int = 10) -> list[dict]:
    """The last ``last`` times a run took over the warehouse lease of a killed one (``refresh_runs.took_over``; a
    table written before that column existed reads it as null, so it lists none)."""
    runs = wh.read("refresh_runs", columns=["refresh_id", "started_at", "message", "took_over"])
    runs = runs.filter(pc.is_valid(runs["took_over"])).sort_by([("started_at", "descending")]).slice(0, last)
    return [{"refresh_id": r["refresh_id"], "at": r["started_at"].isoformat(timespec="seconds"),
             "took_over": r["took_over"], "message": r["message"]} for r in runs.to_pylist()]


def refresh_progress(wh: Warehouse, now: float | None = None) -> dict | None:
    """The refresh that is running (or stopped reporting, or failed) with its stage and task counts; None when the
    latest refresh published its snapshot or none has reported progress."""
    p = read_progress(wh.root)
    if p is None or p.state == "published":
        return None
    now = time.time() if now is None else now
    state = "stalled" if p.stalled(now) else ("failed" if p.state == "failed" else "running")
    return {"refresh_id": p.refresh_id, "stage": p.stage, "step": p.step, "steps": p.steps, "state": state,
            "done": p.done, "total": p.total, "unit": p.unit,
            "percent": round(100 * p.done / p.total) if p.total else None,
            "elapsed": clock(p.elapsed), "eta": clock(p.eta) if p.eta is not None else None,
            "updated": datetime.fromtimestamp(p.updated, UTC).isoformat(timespec="seconds"),
            "updated_ago": max(int(now - p.updated), 0)}


def page_data(wh: Warehouse, recent: bool = True) -> dict:
    """Everything the page renders, or ``{"ready": False}`` (with a first refresh's progress) before the first
    published snapshot.  ``recent``: with the panel of recent searches (a server adds its own, :func:`served_page`)."""
    if not wh.exists() or not list_snapshots(wh):
        return {"ready": False, "warehouse": wh.root, "progress": refresh_progress(wh)}
    if not recent:
        return {**index_panels(wh), "changes": recent_changes(wh)}
    return {**index_panels(wh), **search_panels(wh)}


def index_panels(wh: Warehouse) -> dict:
    """The panels of the index: status, snapshots, stage timings, sizes, lease takeovers, lake tables, search kinds."""
    return {"ready": True, "warehouse": wh.root, "progress": refresh_progress(wh), "status": warehouse_status(wh),
            "snapshots": snapshot_history(wh), "timings": stage_timings(wh), "sizes": index_sizes(wh),
            "takeovers": lease_takeovers(wh), "lease": lease_holder(wh.root), "tables": lake_tables(wh),
            "kinds": list(SEARCHES), "methods": {name: list(kind.methods) for name, kind in SEARCHES.items()}}


def search_panels(wh: Warehouse) -> dict:
    """The panels of recorded searches: recent batches with their results, standing queries' changes."""
    return {"batches": batch_panel(newest_batches(wh)), "changes": recent_changes(wh)}


#: Seconds the memoised page may be older than what other processes wrote (a refresh's runs, their batches).
PAGE_SECONDS = 2.0


def served_page(serving: Served) -> dict:
    """:func:`page_data` as the server has it memoised, with the refresh's progress, the lease and the lake's
    freshness read now."""
    wh = serving.warehouse
    try:
        serving.lakescout()  # moves to a newer snapshot once it is warm, which rebuilds the memo
    except WarehouseError:
        return page_data(wh)
    data = serving.memo("page", lambda: page_data(wh, recent=False), PAGE_SECONDS)
    if not data["ready"]:
        return page_data(wh)
    # the searches this process recorded show at once, from the recorder's memory: reading the warehouse after each
    # commit cost a page search more than its answer
    read = serving.memo("batches", lambda: newest_batches(wh), PAGE_SECONDS)
    data = {**data, "batches": batch_panel(with_recorded(read, serving.recorder.committed()))}
    status = data["status"]
    freshness = {**status["freshness"], "lake": ahead(read_state(wh.root), status["snapshot"]["snapshot_id"])}
    return {**data, "progress": refresh_progress(wh), "lease": lease_holder(wh.root),
            "status": {**status, "freshness": freshness}, "serving": serving_process(serving)}


def serving_process(serving: Served) -> dict:
    """What the answering process holds: the snapshot it serves, its swaps and group commits, its index cache
    (bytes of the entries it keeps, by kind, and the budget) and its resident memory.  Each api-server worker is
    its own process; a request reports the one that answered it."""
    by_kind: dict[str, int] = {}
    for key in INDEXES.keys():
        kind = key[0] if isinstance(key, tuple) else str(key)
        by_kind[kind] = by_kind.get(kind, 0) + 1
    return {"pid": os.getpid(), "snapshot_id": serving.lakescout().snapshot_id, "swaps": serving.swaps,
            "recorded_commits": serving.recorder.commits, "rss_bytes": _process(os.getpid()).memory_info().rss,
            "index_cache": {"bytes": INDEXES.nbytes, "budget_bytes": INDEXES.budget_bytes, "entries": by_kind}}


@lru_cache(maxsize=1)
def _process(pid: int) -> psutil.Process:
    """The answering process, made once (each ``psutil.Process`` reads its ``/proc`` entry to know it again); by pid,
    since a forked worker is another process."""
    return psutil.Process(pid)


def evidence_text(evidence: str, limit: int = 160) -> str:
    """A short one-line rendering of a result's evidence JSON."""
    try:
        value = json.loads(evidence or "{}")
    except json.JSONDecodeError:
        return evidence[:limit]
    # a semantic-join result ordered by context leads with what lifted it (discovery.indexes.join.context), then its
    # matches
    context, score = value.pop("context", None), value.pop("context_score", None)
    lead = [f"context {score:.2f}: {context}"] if context and score is not None else []
    text = "; ".join(lead + [f"{k}: {json.dumps(v, separators=(',', ':'))}" for k, v in value.items()])
    return text if len(text) <= limit else text[: limit - 1] + "…"
