"""Python API: ``discovery.open(warehouse)`` returns a :class:`Lakescout` pinned to one snapshot.

Methods mirror the CLI.  The object keeps answering from the snapshot it was opened on until :meth:`refresh` moves
it to the latest one, so a long-running service sees a consistent index between refreshes.
"""
from __future__ import annotations

from .status import warehouse_status
from .store import Snapshot, Warehouse, load_snapshot


class Lakescout:
    def __init__(self, warehouse: str, snapshot_id: int | None = None):
        self.warehouse = Warehouse(warehouse)
        self.snapshot: Snapshot = load_snapshot(self.warehouse, snapshot_id)

    @property
    def snapshot_id(self) -> int:
        return self.snapshot.snapshot_id

    def refresh(self) -> Snapshot:
        """Move to the latest published snapshot."""
        self.snapshot = load_snapshot(self.warehouse)
        return self.snapshot

    def status(self) -> dict:
        return warehouse_status(self.warehouse, self.snapshot)


def open_warehouse(warehouse: str, snapshot_id: int | None = None) -> Lakescout:
    return Lakescout(warehouse, snapshot_id)
