"""Standing queries: a saved batch re-run on every new snapshot, and what changed in its answers since the last run.

A standing query is a batch spec (:mod:`discovery.surfaces.batch`) saved under a name as
``<warehouse>/standing/<name>.json``; the ``standing_queries`` DAG re-runs each one when a refresh publishes a snapshot.
The batch's own record says what the query answers now; a standing query exists to say what moved: each run compares its
results with those of the query's previous run and records the new, dropped and rescored results in
``standing_changes``.  That comparison needs the previous run's snapshot, so maintenance keeps the last snapshot each
standing query ran on (:func:`pinned_snapshots`).  These are served batches, run on behalf of users who do not own the
worker, so their queries name lake tables only.
"""
from __future__ import annotations

import json
import re
from datetime import datetime, UTC

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs

from ..data.store import SCHEMAS, Session, Warehouse, load_snapshot, new_attempt_token
from ..data.store.files import resolve
from .batch import (BatchError, BatchSpec, batch_results, first_run, has_rows, parse_spec, recorded_batch, run_batch,
                    validate_batch)

_STANDING_NAME = re.compile(r"^[a-z0-9][a-z0-9_-]{0,63}$")


def _standing_dir(wh: Warehouse) -> tuple[pafs.FileSystem, str]:
    fs, root = resolve(wh.root)
    return fs, f"{root.rstrip('/')}/standing"


def save_standing(session: Session, name: str, spec: dict | list | str) -> BatchSpec:
    """Save a standing query (a batch re-run on every new snapshot) as ``<warehouse>/standing/<name>.json``.

    The spec is validated against the latest snapshot first, so a standing query that could never run is refused
    when it is saved rather than on the next refresh.  A ``snapshot_id`` in it is refused: a standing query always
    follows the newest snapshot.  Standing queries run in the ``standing_queries`` DAG, so they are served batches:
    their queries name lake tables.  Validated under the ``session``'s configuration.
    """
    wh = session.warehouse
    if not _STANDING_NAME.match(name):
        raise BatchError(f"standing query name {name!r} must be lower-case letters, digits, '-' or '_'")
    batch = parse_spec(spec, name)
    if batch.snapshot_id is not None:
        raise BatchError("field 'snapshot_id': a standing query follows the newest snapshot; leave it out")
    validate_batch(session, batch, served=True)
    batch = BatchSpec(name, batch.queries)
    fs, folder = _standing_dir(wh)
    fs.create_dir(folder, recursive=True)
    with fs.open_output_stream(f"{folder}/{name}.json") as out:
        out.write(json.dumps(batch.to_dict(), indent=2, sort_keys=True).encode())
    return batch


def standing_queries(wh: Warehouse) -> dict[str, BatchSpec]:
    """Every saved standing query by name."""
    fs, folder = _standing_dir(wh)
    if fs.get_file_info(folder).type == pafs.FileType.NotFound:
        return {}
    out = {}
    for info in sorted(fs.get_file_info(pafs.FileSelector(folder)), key=lambda i: i.base_name):
        if info.base_name.endswith(".json"):
            with fs.open_input_stream(info.path) as fh:
                name = info.base_name[:-5]
                out[name] = parse_spec(fh.read().decode(), name)
    return out


def standing_batch_id(name: str, snapshot_id: int) -> str:
    return f"standing-{name}-s{snapshot_id}"


def standing_runs(wh: Warehouse, name: str | None = None) -> pa.Table:
    """Recorded runs of standing queries (``query_batches`` rows): name, batch id, snapshot id."""
    # the boolean is filtered in Arrow: delta-rs' dataset prunes every file on a predicate over a column that has
    # no file statistics (booleans get none), which would hide every run
    t = wh.read("query_batches", columns=["name", "batch_id", "snapshot_id", "standing", "created_at"],
                filter=None if name is None else pc.field("name") == name)
    t = first_run(t.filter(pc.fill_null(t["standing"], False)), ["batch_id"])
    return t.select(["name", "batch_id", "snapshot_id"])


def _keyed(results: pa.Table) -> dict[tuple, dict]:
    return {(r["query_id"], r["table_id"], r["column"]): r for r in results.to_pylist()}


def run_standing(session: Session, name: str, snapshot_id: int | None = None) -> dict:
    """Re-run standing query ``name`` on a snapshot (default the latest) and record what changed since its last run.

    Results are compared per query id and result (lake table, column): ``new`` results, ``dropped`` ones, and
    ``rescored`` ones whose score moved.  The first run has no previous snapshot, so all its results are new.  The
    changes go to ``standing_changes`` in one commit; running again on the same snapshot changes nothing.  The
    queries answer with the ``session``'s configuration.
    """
    wh = session.warehouse
    specs = standing_queries(wh)
    if name not in specs:
        raise BatchError(f"no standing query {name!r} (saved: {', '.join(specs) or 'none'})")
    snap = load_snapshot(wh, snapshot_id)
    batch_id = standing_batch_id(name, snap.snapshot_id)
    already = recorded_batch(wh, batch_id) is not None
    runs = standing_runs(wh, name)
    earlier = runs.filter(pc.less(runs["snapshot_id"], snap.snapshot_id))
    previous = None
    if earlier.num_rows:
        last = earlier.sort_by([("snapshot_id", "descending")]).slice(0, 1).to_pylist()[0]
        previous = (last["batch_id"], last["snapshot_id"])
    summary = run_batch(session, specs[name], batch_id=batch_id, snapshot_id=snap.snapshot_id, standing=True,
                        served=True)
    now_rows = _keyed(batch_results(wh, batch_id))
    before = _keyed(batch_results(wh, previous[0])) if previous else {}
    ids = {q.id for q in specs[name].queries}
    before = {k: v for k, v in before.items() if k[0] in ids}
    changes = []
    stamp = datetime.now(UTC)
    for key in sorted(set(now_rows) | set(before), key=lambda k: (k[0], k[1] or 0, k[2] or "")):
        cur, old = now_rows.get(key), before.get(key)
        if cur is not None and old is not None and cur["score"] == old["score"]:
            continue
        change = "new" if old is None else "dropped" if cur is None else "rescored"
        ref = cur if cur is not None else old
        assert ref is not None  # the key came from one of the two
        changes.append({"name": name, "batch_id": batch_id, "query_id": key[0], "snapshot_id": snap.snapshot_id,
                        "previous_snapshot_id": previous[1] if previous else None, "change": change,
                        "table_id": ref["table_id"], "path": ref["path"], "column": ref["column"],
                        "score": cur["score"] if cur else None, "previous_score": old["score"] if old else None,
                        "created_at": stamp})
    recorded = has_rows(wh, "standing_changes", "batch_id", batch_id)
    if changes and not recorded:
        wh.append_rows("standing_changes", pa.Table.from_pylist(changes, schema=SCHEMAS["standing_changes"]),
                       refresh_id=snap.refresh_id, stage="standing", attempt=new_attempt_token(), once=False)
    counts = {c: sum(1 for x in changes if x["change"] == c) for c in ("new", "dropped", "rescored")}
    return {"name": name, "batch_id": batch_id, "snapshot_id": snap.snapshot_id,
            "previous_snapshot_id": previous[1] if previous else None, "results": summary["results"],
            "changes": counts, "rerun": already}


def standing_changes(wh: Warehouse, name: str | None = None) -> pa.Table:
    """Recorded changes of standing queries, newest snapshot first."""
    t = wh.read("standing_changes", filter=None if name is None else pc.field("name") == name)
    t = first_run(t, ["batch_id", "query_id", "change", "table_id", "column"])
    return t.sort_by([("snapshot_id", "descending"), ("query_id", "ascending"), ("change", "ascending")])


def pinned_snapshots(wh: Warehouse) -> set[int]:
    """Snapshots a standing query still compares against: the last one each saved standing query ran on."""
    names = set(standing_queries(wh))
    runs = standing_runs(wh)
    last: dict[str, int] = {}
    for r in runs.to_pylist():
        if r["name"] in names:
            last[r["name"]] = max(last.get(r["name"], r["snapshot_id"]), r["snapshot_id"])
    return set(last.values())
