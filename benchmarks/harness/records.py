"""What a built warehouse recorded about its build: a refresh's stages (``refresh_runs``) and the semantic join's
models, as the benchmarks report them beside their figures."""
from __future__ import annotations

import json


def refresh_record(warehouse: str, refresh_id: int | None = None, first: bool = False) -> dict:
    """One refresh of ``warehouse`` from ``refresh_runs`` (the last one unless ``refresh_id`` or ``first`` picks
    another): ``{"refresh_id", "stages": {stage: {"seconds", "message"}}}``, the stages that finished, seconds summed
    over their attempts; the lease's own row (a takeover) is not a stage."""
    from discovery.data.store import Warehouse

    runs = Warehouse(str(warehouse)).read("refresh_runs").to_pylist()
    if refresh_id is None:
        refresh_id = (min if first else max)(r["refresh_id"] for r in runs)
    stages: dict[str, dict] = {}
    for r in runs:
        if r["refresh_id"] == refresh_id and r["status"] == "ok" and r["stage"] != "lease":
            seen = stages.setdefault(r["stage"], {"seconds": 0.0, "message": None})
            seen["seconds"] += r["seconds"]
            seen["message"] = r["message"]
    return {"refresh_id": refresh_id, "stages": stages}


def stage_seconds(warehouse: str, refresh_id: int | None = None, first: bool = False) -> dict[str, float]:
    """Seconds of each stage of one refresh (see :func:`refresh_record`)."""
    return {s: r["seconds"] for s, r in refresh_record(warehouse, refresh_id, first)["stages"].items()}


def join_model(warehouse: str):
    """The latest snapshot's pivot model (:class:`discovery.indexes.join.stage.PivotModel`) and its value vectors'
    count."""
    import discovery
    from discovery.indexes.join.stage import MODEL, PivotModel
    from discovery.data.store import snapshot_model

    snap = discovery.open(warehouse).snapshot
    vectors = snap.read("value_vectors", columns=["table_id"]).num_rows
    return PivotModel.from_stored(snapshot_model(snap, MODEL)), vectors


def join_build(warehouse: str) -> dict:
    """What the refresh built for the semantic join: the join encoder's steps (trained, planned, seconds), the pivot
    model (|P|, m, partitions, how chosen) and the seconds of each stage of the last refresh."""
    import pyarrow.compute as pc

    import discovery
    from discovery.transforms.encoders.stored import JOIN_MODEL

    snap = discovery.open(warehouse).snapshot
    version = snap.models[JOIN_MODEL]
    enc = [r for r in snap.read("models", columns=["name", "version", "params"],
                                filter=pc.field("name") == JOIN_MODEL).to_pylist() if r["version"] == version]
    params = json.loads(enc[0]["params"])
    model, n_vectors = join_model(warehouse)
    keys = ("steps", "planned_steps", "seconds", "step_seconds", "values")
    return {"join_encoder": {k: params.get(k) for k in keys}, "value_vectors": n_vectors,
            "n_pivots": len(model.pivots), "levels": model.grid.levels, "partitions": model.n_partitions,
            "chosen_by": model.choice.get("by"), "stage_seconds": stage_seconds(warehouse)}
