"""The lake watcher (``discovery.orchestration.refresh.watch``, and its Airflow trigger): it fires for a lake that
changed since the latest snapshot, once the change has settled, not while a run holds the warehouse lease, not twice for
one change, and never for a lake that did not change.  A copy of the indexed sample lake and its warehouse; files land,
grow, change and go as a writer would make them."""
from __future__ import annotations

import asyncio
import os
import shutil

import pytest

from discovery.surfaces import cli
from discovery.data.store import Warehouse, load_snapshot
from discovery.data.store.lease import Lease
from discovery.orchestration.refresh.trigger import LakeWatchTrigger
from discovery.orchestration.refresh.watch import Watch, ahead, read_state
from discovery.orchestration.status import warehouse_status

CSV = "city,population\nOslo,709000\nBergen,291000\nTrondheim,212000\n"


@pytest.fixture
def copied(indexed_lake, tmp_path):
    lake, warehouse = indexed_lake
    shutil.copytree(lake, tmp_path / "lake")      # copy2: mtimes kept, so fingerprints equal the catalog's
    shutil.copytree(warehouse, tmp_path / "wh")
    return str(tmp_path / "lake"), str(tmp_path / "wh")


def _land(lake: str, name: str, text: str = CSV) -> None:
    path = os.path.join(lake, name)
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as fh:
        fh.write(text)


def test_an_unchanged_lake_fires_nothing_and_the_state_says_so(copied):
    lake, wh = copied
    watch = Watch(lake, Warehouse(wh))
    assert watch.check() is None and watch.check() is None
    state = read_state(wh)
    snapshot = load_snapshot(Warehouse(wh)).snapshot_id
    assert state["changes"]["snapshot_id"] == snapshot and state["changes"]["listed"] > 100
    assert ahead(state, snapshot)["tables"] == 0 and "fired" not in state
    assert ahead(state, snapshot + 1) is None                         # what it saw is about another snapshot


def test_a_landing_fires_once_it_settled_and_not_twice(copied, capsys):
    lake, wh = copied
    watch = Watch(lake, Warehouse(wh))
    assert watch.check() is None and not watch.settling
    _land(lake, "landed/towns.csv", CSV[:40])                         # half written
    assert watch.check() is None and watch.settling                  # first sight: look again soon
    _land(lake, "landed/towns.csv")                                  # the writer finished
    assert watch.check() is None and watch.settling                  # it moved since: wait again
    fired = watch.check()
    assert not watch.settling
    assert fired is not None and fired.added == ["landed/towns.csv"] and not fired.changed and not fired.deleted
    assert read_state(wh)["fired"]["digest"] == fired.digest
    restarted = Watch(lake, Warehouse(wh))  # fired already: a restarted trigger too
    assert watch.check() is None and restarted.check() is None
    state = read_state(wh)
    assert ahead(state, fired.snapshot_id)["added"] == 1 and state["changes"]["paths"]["added"] == ["landed/towns.csv"]
    # status, the page's data and the JSON API's, show it without listing the lake
    fresh = warehouse_status(Warehouse(wh))["freshness"]
    assert fresh["lake"]["added"] == 1 and fresh["lake"]["paths"]["added"] == ["landed/towns.csv"]
    assert cli.main(["status", "--warehouse", wh]) == 0
    assert "the lake is ahead: 1 added, 0 changed, 0 deleted tables" in capsys.readouterr().out


def test_changed_and_deleted_tables_are_told_apart(copied):
    lake, wh = copied
    catalog = load_snapshot(Warehouse(wh)).read("catalog", columns=["path", "format", "status"]).to_pylist()
    csvs = sorted(r["path"] for r in catalog if r["format"] == "csv" and r["status"] == "ok")
    os.remove(os.path.join(lake, csvs[0]))
    with open(os.path.join(lake, csvs[1]), "a") as fh:
        fh.write("\n")
    watch = Watch(lake, Warehouse(wh))
    assert watch.check() is None
    fired = watch.check()
    assert fired.deleted == [csvs[0]] and fired.changed == [csvs[1]] and not fired.added


def test_a_run_holding_the_lease_defers_the_watcher(copied):
    lake, wh = copied
    _land(lake, "landed/towns.csv")
    watch = Watch(lake, Warehouse(wh))
    lease = Lease.acquire(Warehouse(wh).root, "maintenance", "lakescout_maintenance manual__1")
    assert watch.check() is None and watch.check() is None
    assert "another maintenance is running" in read_state(wh)["waiting_for"]
    lease.release()
    assert watch.check().added == ["landed/towns.csv"]               # settled meanwhile: fires at once


def test_the_trigger_yields_one_event_naming_the_change(copied):
    lake, wh = copied
    trigger = LakeWatchTrigger(lake, wh, poll_seconds=0.01)
    classpath, kwargs = trigger.serialize()
    assert classpath == "discovery.orchestration.refresh.trigger.LakeWatchTrigger"
    assert LakeWatchTrigger(**kwargs).serialize() == (classpath, kwargs)
    _land(lake, "landed/towns.csv")

    async def first():
        events = [e async for e in trigger.run()]
        return events

    events = asyncio.run(asyncio.wait_for(first(), timeout=120))
    assert len(events) == 1 and events[0].payload["changes"]["paths"]["added"] == ["landed/towns.csv"]
    assert events[0].payload["lake"] == lake


def test_a_run_that_came_and_went_without_indexing_the_change_is_started_again(copied):
    """The fired run failed (its lease taken and released, the change still there): the watcher fires again at
    once, rather than after REFIRE_SECONDS."""
    lake, wh = copied
    _land(lake, "landed/towns.csv")
    watch = Watch(lake, Warehouse(wh))
    assert watch.check() is None and watch.check() is not None
    assert watch.check() is None                                     # its run is queued: not again
    Lease.acquire(Warehouse(wh).root, "refresh", "lake_refresh manual__2").release()   # ran and failed
    assert watch.check().added == ["landed/towns.csv"]
