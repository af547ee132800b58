"""One refresh at a time per warehouse: refreshes, maintenance, the CLI and the DAG under the warehouse lease.

Reproduction (issue 24): refresh A has written a data file for a stage and not committed it when refresh B starts;
B used to clean orphans of every table and delete A's file.  Now B is refused by A's lease, naming A, and nothing of
A's is touched.  A holder killed without releasing (its heartbeat stops) is taken over once its lease expired, and
the takeover is recorded in ``refresh_runs`` and listed by the page.  Time is injected, never waited for.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from discovery.surfaces import cli
from discovery.data.store import SCHEMAS, Warehouse, WarehouseError, write_data_file
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from sessions import session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _catalog_rows(refresh_id: int) -> pa.Table:
    return pa.Table.from_pylist([{"table_id": 1, "path": "a.csv", "format": "csv", "bytes": 1, "mtime_ns": 1,
                                  "content_hash": "h", "rows": 1, "cols": 1, "status": "ok", "error": None,
                                  "warnings": "[]", "encoding": "utf-8", "delimiter": ",",
                                  "refresh_id": refresh_id, "indexed_at": None}], schema=SCHEMAS["catalog"])


def _stale_lease(root: str, heartbeat: float, generation: int = 1, **fields) -> None:
    """The lease file a killed holder leaves behind: held, its heartbeat stopped at ``heartbeat``."""
    record = {"generation": generation, "purpose": "refresh", "run": "lake_refresh scheduled__1", "host": "worker-7",
              "pid": 4242, "started": heartbeat - 60, "heartbeat": heartbeat, "ttl": 600.0, "state": "held",
              "refresh_id": 17, "took_over": None, **fields}
    os.makedirs(os.path.join(root, "lease"), exist_ok=True)
    with open(os.path.join(root, "lease", f"{generation:012d}.json"), "w") as fh:
        json.dump(record, fh)


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


# -- the reproduction ------------------------------------------------------------------------------------------------
def _begin_elsewhere(root: str) -> subprocess.CompletedProcess:
    """``begin_refresh`` in another process, as a second ``lakescout refresh`` or DAG run would call it."""
    code = ("import sys; from discovery.config import load_config; "
            "from discovery.orchestration.refresh import begin_refresh; from discovery.data.store import Session; "
            "print(begin_refresh(Session.at(sys.argv[1], load_config())))")
    return subprocess.run([sys.executable, "-c", code, root], capture_output=True, text=True, timeout=300)


def test_a_second_refresh_is_refused_and_deletes_nothing_of_the_running_one(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    a = begin_refresh(session(wh.root))
    written = write_data_file(wh.table_uri("catalog"), _catalog_rows(a), a, "scan", "attempta")   # not committed
    b = _begin_elsewhere(wh.root)
    assert os.path.exists(os.path.join(wh.table_uri("catalog"), written.path))
    assert b.returncode != 0
    refusal = b.stderr.strip().splitlines()[-1]
    assert f"another refresh is running on this warehouse: refresh {a} (cli on " in refusal
    assert f"pid {os.getpid()}" in refusal
    wh.commit("catalog", [written], [], refresh_id=a, stage="scan", attempt="attempta")      # A goes on
    publish_snapshot(wh, a, str(tmp_path / "lake"))                                    # ... and releases
    assert wh.read("catalog").num_rows == 1
    b = _begin_elsewhere(wh.root)
    assert b.returncode == 0 and int(b.stdout) > a


# -- a killed holder is taken over, recorded and shown ---------------------------------------------------------------
def test_a_killed_refresh_is_taken_over_recorded_and_shown_on_the_page(tmp_path):
    from discovery.data.store.lease import LEASE_SECONDS, Lease, LeaseLost

    sys.path.insert(0, os.path.join(ROOT, "plugins"))
    from lakescout_ui.data import lease_takeovers, stage_timings

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    clock = Clock(1_800_000_000.0)
    _stale_lease(wh.root, heartbeat=clock.now - LEASE_SECONDS - 5)          # SIGKILLed: the file stays behind
    rid = begin_refresh(session(wh.root), run="cli", clock=clock)
    rows = [r for r in wh.read("refresh_runs").to_pylist() if r["took_over"]]
    assert len(rows) == 1 and rows[0]["refresh_id"] == rid and rows[0]["stage"] == "lease"
    assert "refresh 17" in rows[0]["took_over"] and "worker-7 pid 4242" in rows[0]["took_over"]
    with pytest.raises(LeaseLost):                                          # the killed run's later stages stop
        Lease.join(wh.root, 17)
    shown = lease_takeovers(wh)
    assert [t["refresh_id"] for t in shown] == [rid] and "refresh 17" in shown[0]["took_over"]
    assert "lease" not in stage_timings(wh)["stages"]


def test_maintenance_takes_the_same_lease(tmp_path):
    from discovery.surfaces.maintenance import run_maintenance
    from discovery.data.store.lease import LEASE_SECONDS, Lease, current

    wh = Warehouse(str(tmp_path / "wh"))
    publish_snapshot(Warehouse(wh.root), begin_refresh(session(wh.root)), "/lake")
    running = begin_refresh(session(wh.root), run="lake_refresh manual__9")
    report = run_maintenance(Warehouse(wh))
    assert report["status"] == "skipped" and f"refresh {running}" in report["reason"]
    publish_snapshot(Warehouse(wh.root), running, "/lake")
    assert run_maintenance(Warehouse(wh))["status"] == "ok"
    maintenance = Lease.acquire(wh.root, "maintenance", "lakescout_maintenance manual__3", pid=1)
    with pytest.raises(WarehouseError, match="another maintenance is running.*lakescout_maintenance manual__3"):
        begin_refresh(session(wh.root), run="cli")
    maintenance.release()
    clock = Clock(current(wh.root).heartbeat + 10)
    killed = begin_refresh(session(wh.root), run="cli", clock=clock)                 # ... and then killed
    clock.now += LEASE_SECONDS + 1
    report = run_maintenance(Warehouse(wh), clock=clock)
    assert report["status"] == "ok" and f"refresh {killed}" in report["took_over"]
    recorded = [r for r in wh.read("refresh_runs").to_pylist() if r["took_over"]]
    assert [r["refresh_id"] for r in recorded] == [killed] and "maintenance took over" in recorded[0]["message"]


# -- surfaces: CLI exit code 2, the DAG task fails without retrying --------------------------------------------------
def test_cli_refresh_is_refused_with_one_line_and_exit_code_2(tmp_path, capsys):
    import time

    lake = tmp_path / "lake"
    lake.mkdir()
    wh = str(tmp_path / "wh")
    _stale_lease(wh, heartbeat=time.time())                                 # alive: its heartbeat is fresh
    code = cli.main(["refresh", "--lake", str(lake), "--warehouse", wh])
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and "Traceback" not in err
    assert "lakescout refresh: another refresh is running" in err and "worker-7 pid 4242" in err


@pytest.mark.airflow
def test_dag_begin_fails_without_retry_while_another_run_holds_the_lease(tmp_path, monkeypatch):
    from airflow.exceptions import AirflowFailException
    from airflow.models.dagbag import DagBag

    lake, wh = tmp_path / "lake", str(tmp_path / "wh")
    lake.mkdir()
    monkeypatch.setenv("LAKESCOUT_LAKE", str(lake))
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", wh)
    bag = DagBag(os.path.join(ROOT, "dags", "lake_refresh.py"), include_examples=False)
    assert not bag.import_errors, bag.import_errors
    dag = bag.dags["lake_refresh"]
    assert dag.max_active_runs == 1
    held = begin_refresh(session(wh), run="cli")
    begin = dag.get_task("begin")
    with pytest.raises(AirflowFailException, match=f"refresh {held}"):
        begin.python_callable(params={"lake": str(lake), "warehouse": wh}, run_id="manual__2")
    assert dag.get_task("release").is_teardown
