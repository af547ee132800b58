"""The state of a warehouse, as ``lakescout status`` and the UI show it."""
from __future__ import annotations

import json

import pyarrow as pa
import pyarrow.compute as pc

from ..data.store import Snapshot, Warehouse, list_snapshots, load_snapshot
from .refresh.watch import ahead, read_state


def warehouse_status(warehouse: Warehouse, snapshot: Snapshot | None = None, last_refreshes: int = 5) -> dict:
    """Latest (or given) snapshot, table counts by status and by format, failed and stale tables with reasons,
    recent stage timings, and how fresh the index is.  A stale table was indexed and cannot be read now: its last
    indexed rows still answer.  ``freshness``: when the snapshot was published and, from the lake watcher's last
    check (:mod:`discovery.orchestration.refresh.watch`, no listing here), when the lake last changed and which tables
    it holds that the snapshot does not (None when no watcher has checked this snapshot)."""
    warehouse.require()
    snaps = list_snapshots(warehouse)
    snap = snapshot or (load_snapshot(warehouse) if snaps else None)
    out: dict = {"warehouse": warehouse.root, "snapshots": len(snaps), "snapshot": None, "tables": {},
                 "errors": [], "warnings": [], "refreshes": []}
    if snap is not None:
        out["snapshot"] = {"snapshot_id": snap.snapshot_id, "created_at": snap.created_at.isoformat(),
                           "lake": snap.lake, "refresh_id": snap.refresh_id, "models": snap.models}
        catalog = snap.read("catalog", columns=["table_id", "path", "format", "status", "error", "warnings"])
        for status in ("ok", "stale", "error", "deleted"):
            out["tables"][status] = int(pc.sum(pc.equal(catalog["status"], status)).as_py() or 0)
        live = pc.value_counts(catalog.filter(pc.not_equal(catalog["status"], "deleted"))["format"]).to_pylist()
        out["formats"] = {v["values"]: v["counts"] for v in sorted(live, key=lambda v: v["values"])}
        # Only the rows shown become Python objects: a lake's catalog can hold hundreds of thousands of tables.
        failed = pc.is_in(catalog["status"], pa.array(["error", "stale"]))
        warned = pc.and_(pc.and_(pc.equal(catalog["status"], "ok"), pc.is_valid(catalog["warnings"])),
                         pc.invert(pc.is_in(catalog["warnings"], pa.array(["", "[]"]))))
        for row in catalog.filter(pc.or_(failed, warned)).sort_by("path").to_pylist():
            if row["status"] in ("error", "stale"):
                out["errors"].append({"table_id": row["table_id"], "path": row["path"], "format": row["format"],
                                      "status": row["status"], "reason": row["error"]})
            elif row["status"] == "ok" and row["warnings"] not in (None, "", "[]"):
                out["warnings"].append({"table_id": row["table_id"], "path": row["path"],
                                        "warnings": json.loads(row["warnings"])})
        out["index_rows"] = {k[5:]: v for k, v in snap.counts.items() if k.startswith("rows_")}
        out["freshness"] = {"indexed_at": snap.created_at.isoformat(),
                            "lake": ahead(read_state(warehouse.root), snap.snapshot_id)}
    runs = warehouse.read("refresh_runs")
    if runs.num_rows:
        ids = sorted(set(runs.column("refresh_id").to_pylist()), reverse=True)[:last_refreshes]
        published = {s.refresh_id: s.snapshot_id for s in snaps}
        for rid in ids:
            stages = runs.filter(pc.equal(runs["refresh_id"], rid)).sort_by("started_at").to_pylist()
            out["refreshes"].append({
                "refresh_id": rid,
                "snapshot_id": published.get(rid),
                "started_at": stages[0]["started_at"].isoformat(),
                "stages": [{k: s[k] for k in ("stage", "status", "seconds", "tables_added", "tables_changed",
                                              "tables_deleted", "tables_failed", "tables_processed", "rows_written",
                                              "message")} for s in stages],
            })
    return out
