"""The lake watcher as an Airflow event trigger: it runs in the triggerer, holds no worker slot, and fires the asset
``lake_refresh`` is scheduled on when the lake changed (:mod:`.watch` decides when).

An :class:`~airflow.sdk.AssetWatcher` of the ``lakescout_lake`` asset
(:func:`discovery.surfaces.connections.lake_asset`) runs it; the event it yields becomes an asset event, and
``lake_refresh``'s schedule is its time table *or* that asset (Airflow's ``AssetOrTimeSchedule``), so an upstream DAG
that writes lake tables can emit the same asset as its outlet and start the refresh without waiting for a poll.  A check
is blocking I/O (a listing, a small Delta read), so it runs in a thread, never on the triggerer's event loop; a failed
check (the lake unreachable for a moment) is logged and the next one tries again.
"""
from __future__ import annotations

import asyncio
from typing import Any
from collections.abc import AsyncIterator

from airflow.triggers.base import BaseEventTrigger, TriggerEvent

from ...data.store import Warehouse
from .watch import SETTLE_SECONDS, Watch


class LakeWatchTrigger(BaseEventTrigger):
    """Poll ``lake`` against ``warehouse``'s latest snapshot every ``poll_seconds`` (a change first seen: again after
    ``SETTLE_SECONDS``, to see it hold still); fire once with what changed."""

    def __init__(self, lake: str, warehouse: str, poll_seconds: float = 10.0, include: list | tuple = (),
                 exclude: list | tuple = ()):
        super().__init__()
        self.lake, self.warehouse, self.poll_seconds = lake, warehouse, float(poll_seconds)
        self.include, self.exclude = list(include), list(exclude)

    def serialize(self) -> tuple[str, dict[str, Any]]:
        return (f"{__name__}.LakeWatchTrigger",
                {"lake": self.lake, "warehouse": self.warehouse, "poll_seconds": self.poll_seconds,
                 "include": self.include, "exclude": self.exclude})

    async def run(self) -> AsyncIterator[TriggerEvent]:
        watch = Watch(self.lake, Warehouse(self.warehouse), tuple(self.include), tuple(self.exclude))
        while True:
            try:
                changes = await asyncio.to_thread(watch.check)
            except Exception as exc:  # noqa: BLE001 - a watcher outlives a lake or store that is briefly unreachable
                self.log.warning("lake watcher: the check of %s failed: %s", self.lake, exc)
                changes = None
            if changes is not None:
                self.log.info("lake watcher: %s in %s since snapshot %s", changes.describe(), self.lake,
                              changes.snapshot_id)
                yield TriggerEvent({"lake": self.lake, "changes": changes.summary()})
                return
            await asyncio.sleep(min(SETTLE_SECONDS, self.poll_seconds) if watch.settling else self.poll_seconds)
