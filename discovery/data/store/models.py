"""Versioned global models (encoders, XASH parameters, centroids, pivots) kept in the ``models`` table.

A model row is written once per version by the stage that trains or fits it; a snapshot records which version of each
model it was built with (``Snapshot.models``), and queries load exactly that version, so a query is always answered
with the encoders and parameters its index was built with.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime, UTC

import pyarrow as pa
import pyarrow.compute as pc

from .cache import INDEXES
from .schema import SCHEMAS
from .snapshot import Snapshot
from .warehouse import Warehouse, WarehouseError


@dataclass(frozen=True)
class StoredModel:
    name: str
    version: str
    params: dict
    payload: bytes
    created_at: datetime
    refresh_id: int


def _rows(table: pa.Table) -> list[StoredModel]:
    return [StoredModel(r["name"], r["version"], json.loads(r["params"] or "{}"), r["payload"] or b"",
                        r["created_at"], r["refresh_id"]) for r in table.to_pylist()]


def latest_model(warehouse: Warehouse, name: str) -> StoredModel | None:
    """The most recently written version of ``name`` at the table's current version (what a refresh builds on).

    The name is pushed down to the files (a stage writes each model row as a file of its own),
    so the encoders' payloads, about
    100 MB per join-encoder version and one more version at every retraining, stay unread: reading the whole table
    cost every stage that looks up its model a read that grew with the warehouse's history."""
    t = warehouse.read("models", filter=pc.field("name") == name)
    t = t.filter(pc.equal(t["name"], name))
    if t.num_rows == 0:
        return None
    return _rows(t.sort_by([("created_at", "descending")]).slice(0, 1))[0]


def snapshot_model(snapshot: Snapshot, name: str) -> StoredModel:
    """The version of ``name`` the snapshot was built with (what a query must use), kept in the byte-bounded index
    cache: versions are immutable, and a long-running process should not re-read it for every query."""
    version = snapshot.models.get(name)
    if version is None:
        raise WarehouseError(f"snapshot {snapshot.snapshot_id} has no model {name!r}; run a refresh that builds it")
    return INDEXES.get(("model", snapshot.warehouse.root, name, version), lambda: _stored(snapshot, name, version))


def _stored(snapshot: Snapshot, name: str, version: str) -> StoredModel:
    """One model row, read with the name pushed down to the files (so the encoders' large payloads stay unread).

    The version is matched in memory: delta-rs keeps no statistics for strings longer than 32 characters (versions
    such as ``xash-<hash>-r<refresh id>``), and the dataset it hands to Arrow turns missing statistics into null
    bounds, which a pushed-down equality reads as "no row can match" and so skips the file.
    """
    t = snapshot.read("models", filter=pc.field("name") == name)
    t = t.filter(pc.equal(t["version"], version))
    if t.num_rows == 0:
        raise WarehouseError(f"model {name!r} version {version} is missing from the warehouse")
    return _rows(t.slice(0, 1))[0]


def save_model(warehouse: Warehouse, name: str, version: str, params: dict, payload: bytes, *, refresh_id: int,
               attempt: str) -> bool:
    """Record a model version (once: a version already stored is not written again).  Returns True if written."""
    t = warehouse.read("models", columns=["name", "version"])
    if pc.any(pc.and_(pc.equal(t["name"], name), pc.equal(t["version"], version))).as_py():
        return False
    row = {"name": name, "version": version, "created_at": datetime.now(UTC), "refresh_id": refresh_id,
           "params": json.dumps(params, sort_keys=True), "payload": payload}
    warehouse.append_rows("models", pa.Table.from_pylist([row], schema=SCHEMAS["models"]), refresh_id=refresh_id,
                          stage=f"model_{name.replace('.', '_')}", attempt=attempt, once=False)
    return True
