"""The lake watcher's check: what changed in the lake since the index's latest snapshot, and whether to start a refresh.

A refresh already knows, from one listing, which tables changed (:func:`discovery.stages.plan.plan_scan`: a file's
size and mtime, a Delta table's log version, an Iceberg table's metadata file, a folder's data files).  The watcher
asks the same question between refreshes, cheaply: one listing of the lake (one LIST request per 1,000 objects on
object storage) against the catalog of the latest snapshot, read once per snapshot.  A stale table (indexed, unreadable
now) is retried by every refresh but is no change: only added, changed and deleted tables count.

When to start a refresh (:meth:`Watch.check`):

* the lake differs from the index, and the difference is the same at two checks in a row (a file still being
  written changes size between them; a burst of landings settles into one change, one run); the second check comes
  :data:`SETTLE_SECONDS` after the first sees it, not a whole poll later (:attr:`Watch.settling`);
* no refresh or maintenance holds the warehouse lease (a refresh in progress picks the change up, or the next check
  after it publishes sees what it missed);
* the same difference was not fired already: unless a run has taken and released the warehouse lease since (it ran
  and did not index the change: it failed), or :data:`REFIRE_SECONDS` passed (the run never started), so a lost
  run is retried.

What the last check saw is kept in ``<warehouse>/watch/state.json`` (:func:`read_state`): ``status``, the page and the
JSON API show from it when the lake last changed and whether it is ahead of the index, without listing the lake.
"""
from __future__ import annotations

import hashlib
import json
import os
import time
from dataclasses import dataclass, field
from collections.abc import Callable

import pyarrow.compute as pc

from ... import storage
from ...data.lake import list_lake
from ...data.store import SCHEMAS, Warehouse, load_snapshot
from ...data.store.lease import current, holder
from ...stages.plan import plan_scan

#: A difference fired this recently is not fired again (its run may be queued behind a running one).
REFIRE_SECONDS = 600.0
#: How soon a change first seen is checked again to see whether it held still: long enough for a writer to be seen
#: writing (a file grows between two listings), short beside a poll, so a landing waits seconds, not a poll.
SETTLE_SECONDS = 2.0
#: Paths named in the state file and the event, per kind of change (the counts are complete).
SHOWN = 20
STATE = "watch/state.json"


@dataclass(frozen=True)
class LakeChanges:
    """Tables added, changed and deleted since the snapshot ``snapshot_id`` (paths sorted); ``listed`` tables in the
    lake now; ``newest_mtime_ns`` the newest modification among the listed tables (0 when none is known)."""

    added: list[str]
    changed: list[str]
    deleted: list[str]
    listed: int
    snapshot_id: int | None
    newest_mtime_ns: int = 0

    def __bool__(self) -> bool:
        return bool(self.added or self.changed or self.deleted)

    @property
    def digest(self) -> str:
        """Names this difference: equal digests at two checks mean the lake held still between them."""
        text = json.dumps([self.added, self.changed, self.deleted, self.newest_mtime_ns])
        return hashlib.sha256(text.encode()).hexdigest()[:16]

    def summary(self) -> dict:
        return {"added": len(self.added), "changed": len(self.changed), "deleted": len(self.deleted),
                "listed": self.listed, "snapshot_id": self.snapshot_id, "newest_mtime_ns": self.newest_mtime_ns,
                "paths": {k: getattr(self, k)[:SHOWN] for k in ("added", "changed", "deleted")}}

    def describe(self) -> str:
        parts = [f"{len(v)} {k}" for k, v in (("added", self.added), ("changed", self.changed),
                                              ("deleted", self.deleted)) if v]
        return ", ".join(parts) or "no change"


def lake_changes(lake: str, catalog, snapshot_id: int | None, include: tuple = (), exclude: tuple = ()
                 ) -> LakeChanges:
    """The difference between the lake now and ``catalog`` (the catalog rows of snapshot ``snapshot_id``; an empty
    table before the first snapshot), by the refresh's own plan."""
    listing = list_lake(lake, tuple(include), tuple(exclude))
    work = plan_scan(listing, catalog, full=False).work
    action = work["action"]
    olds = pc.struct_field(work["old_row"], "fingerprint")
    moved = pc.fill_null(pc.not_equal(olds, work["fingerprint"]), True)
    changed = pc.and_(pc.equal(action, "check"), moved)     # a stale table's retry keeps its fingerprint
    paths = lambda mask: sorted(work["path"].filter(mask).to_pylist())  # noqa: E731
    mtimes = listing.table["mtime_ns"]
    newest = int(pc.max(mtimes).as_py() or 0) if len(mtimes) else 0
    return LakeChanges(paths(pc.equal(action, "new")), paths(changed), paths(pc.equal(action, "deleted")),
                       len(listing), snapshot_id, newest)


def read_state(warehouse: str) -> dict | None:
    """What the watcher's last check saw (:meth:`Watch.check`), or None when no watcher has run."""
    fs, path = storage.filesystem(storage.join(warehouse, STATE))
    try:
        with fs.open(path, "rb") as fh:
            return json.loads(fh.read())
    except FileNotFoundError:
        return None


def _write_state(warehouse: str, state: dict) -> None:
    uri = storage.join(warehouse, STATE)
    local = storage.on_disk(uri)
    if local is not None:
        os.makedirs(os.path.dirname(local), exist_ok=True)
    storage.backend(uri).replace(uri, json.dumps(state).encode())


@dataclass
class Watch:
    """The watcher of one lake and warehouse; :meth:`check` is one poll.  Keeps the catalog of the latest snapshot
    between checks (read again when a new snapshot is published) and the previous check's digest."""

    lake: str
    #: Opened by the surface that runs the watcher (the trigger, a test, the freshness benchmark).
    store: Warehouse
    include: tuple = ()
    exclude: tuple = ()
    clock: Callable[[], float] = time.time
    _catalog: tuple = field(default=(None, None), repr=False)
    _previous: str | None = field(default=None, repr=False)
    #: The last check saw a change it may fire for once it holds still: check again after SETTLE_SECONDS.
    settling: bool = field(default=False, repr=False)

    def _latest(self):
        wh = self.store
        if not wh.exists() or wh.read("snapshots", columns=["snapshot_id"]).num_rows == 0:
            return None, SCHEMAS["catalog"].empty_table()
        snap = load_snapshot(wh)
        if self._catalog[0] != snap.snapshot_id:
            self._catalog = (snap.snapshot_id, snap.read("catalog"))
        return self._catalog

    def check(self) -> LakeChanges | None:
        """One poll: the changes to fire a refresh for now, or None (module docstring).  Records what it saw."""
        started, cpu = self.clock(), time.process_time()
        snapshot_id, catalog = self._latest()
        changes = lake_changes(self.lake, catalog, snapshot_id, self.include, self.exclude)
        state = read_state(self.store.root) or {}
        busy = holder(self.store.root)
        settled = bool(changes) and changes.digest == self._previous
        fired = state.get("fired") or {}
        held = current(self.store.root)
        generation = held.generation if held is not None else 0
        pending = (fired.get("digest") == changes.digest and generation <= fired.get("lease_generation", 0)
                   and started - fired.get("at", 0.0) < REFIRE_SECONDS)
        fire = settled and busy is None and not pending
        self._previous = changes.digest if changes else None
        self.settling = bool(changes) and not settled and busy is None and not pending
        state.update(checked_at=started, check_cpu_seconds=round(time.process_time() - cpu, 4),
                     lake=self.lake, changes=changes.summary(), waiting_for=busy if changes and busy else None)
        if fire:
            state["fired"] = {"digest": changes.digest, "at": started, "changes": changes.describe(),
                              "lease_generation": generation}
        _write_state(self.store.root, state)
        return changes if fire else None


def ahead(state: dict | None, snapshot_id: int | None) -> dict | None:
    """The watcher's last word on the lake against snapshot ``snapshot_id``: what changed and when it was checked,
    or None when no watcher has run or it checked an older snapshot than this one."""
    if not state or state.get("changes", {}).get("snapshot_id") != snapshot_id:
        return None
    c = state["changes"]
    return {"tables": c["added"] + c["changed"] + c["deleted"], "added": c["added"], "changed": c["changed"],
            "deleted": c["deleted"], "checked_at": state["checked_at"], "paths": c["paths"],
            "lake_changed_at": c["newest_mtime_ns"] / 1e9 if c["newest_mtime_ns"] else None}

