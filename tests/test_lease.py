"""The warehouse lease on a local disk and on S3: exclusive, renewed, released, taken over once expired, and at once
when its holder's process is known gone.

Taking a lease creates the next generation's record exclusively (``O_EXCL``, or a conditional put on the S3 server of
the ``s3_server`` fixture), so of two takers only one wins.  Time is injected, never waited for; a dead holder is a
real process killed with SIGKILL and reaped before the next taker looks.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import uuid
from dataclasses import asdict, replace

import pytest

from discovery import storage
from discovery.data.store.lease import (FOLDER, LEASE_SECONDS, Lease, LeaseHeld, LeaseLost, LeaseRecord, _overwrite,
                                        current, holder, machine, process_start)


@pytest.fixture(params=["local", "s3"])
def root(request, tmp_path):
    if request.param == "local":
        return str(tmp_path / "wh")
    server = request.getfixturevalue("s3_server")
    return server.create_bucket(f"lease-{uuid.uuid4().hex[:12]}") + "/wh"


class Clock:
    def __init__(self, now: float = 1_000_000.0):
        self.now = now

    def __call__(self) -> float:
        return self.now


def test_lease_is_exclusive_renewed_released_and_taken_over_when_expired(root):
    clock = Clock()
    a = Lease.acquire(root, "refresh", "cli", clock=clock, pid=101)
    a.update(refresh_id=5)
    with pytest.raises(LeaseHeld, match=r"refresh 5 \(cli on .* pid 101"):
        Lease.acquire(root, "refresh", "lake_refresh manual__1", clock=clock, pid=202)
    with pytest.raises(LeaseHeld, match="another refresh"):
        Lease.acquire(root, "maintenance", "cli", clock=clock, pid=101)      # same process, other purpose
    clock.now += LEASE_SECONDS - 1
    a.renew()                                                               # the heartbeat moves on ...
    clock.now += LEASE_SECONDS - 1
    with pytest.raises(LeaseHeld):                                          # ... so it is still alive
        Lease.acquire(root, "refresh", "other", clock=clock, pid=202)
    clock.now += LEASE_SECONDS + 1                                          # killed: no heartbeat past the ttl
    b = Lease.acquire(root, "refresh", "other", clock=clock, pid=202)
    assert b.took_over is not None and "refresh 5" in b.took_over and b.previous.refresh_id == 5
    assert current(root).generation == b.record.generation == a.record.generation + 1
    with pytest.raises(LeaseLost):                                          # the old holder learns it lost
        a.renew()
    a.release()                                                             # and cannot release b's lease
    assert current(root).state == "held" and current(root).pid == 202
    b.release()
    c = Lease.acquire(root, "maintenance", "cli", clock=clock, pid=303)     # a released lease is free
    assert c.took_over is None


def test_of_two_takers_of_one_expired_lease_only_one_wins(root):
    """Taking over is creating the next generation exclusively (O_EXCL, or a conditional put on S3)."""
    clock = Clock()
    Lease.acquire(root, "refresh", "killed", clock=clock, pid=1)
    clock.now += 10_000
    rival = LeaseRecord(generation=2, purpose="refresh", run="rival", host="h", pid=2, started=clock.now,
                        heartbeat=clock.now, ttl=600.0)
    path = storage.join(root, f"{FOLDER}/{rival.generation:012d}.json")
    data = json.dumps(asdict(rival)).encode()
    storage.backend(path).create_exclusive(path, data)  # the rival created generation 2 a moment before us
    with pytest.raises(FileExistsError):
        storage.backend(path).create_exclusive(path, data)
    with pytest.raises(LeaseHeld, match="rival"):
        Lease.acquire(root, "refresh", "late", clock=clock, pid=3)


def test_the_heartbeat_thread_renews_until_the_block_ends(tmp_path):
    ticks = iter(range(1_000_000, 2_000_000))
    lease = Lease.acquire(str(tmp_path / "wh"), "refresh", "cli", clock=lambda: float(next(ticks)))
    first = lease.record.heartbeat
    renewed = threading.Event()
    with lease.kept_alive(every=0.001):
        while not renewed.wait(0.01):
            if current(str(tmp_path / "wh")).heartbeat > first:
                renewed.set()
    assert current(str(tmp_path / "wh")).heartbeat > first


# -- a holder known dead -----------------------------------------------------------------------------------------------
HOLD = """
import sys, time
from discovery.data.store.lease import Lease
lease = Lease.acquire(sys.argv[1], "refresh", "cli", scope=sys.argv[2])
lease.update(refresh_id=41)
print(lease.record.pid, flush=True)
time.sleep(600)
"""


def _held_by_a_killed_process(root: str, scope: str) -> int:
    """Take the lease in another process, SIGKILL it and reap it, as a ``lakescout refresh`` killed mid-run; returns
    its pid."""
    proc = subprocess.Popen([sys.executable, "-c", HOLD, root, scope], stdout=subprocess.PIPE, text=True)
    pid = int(proc.stdout.readline())
    assert holder(root) is not None and f"pid {pid}" in holder(root)      # alive: refused
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    proc.stdout.close()
    return pid


def test_a_killed_process_holder_is_taken_over_at_once_and_the_takeover_says_why(root):
    pid = _held_by_a_killed_process(root, "process")
    assert holder(root) is None                                             # the CLI's pre-check lets it start
    lease = Lease.acquire(root, "refresh", "cli")                           # no clock moved: within the ttl
    assert lease.previous.pid == pid and lease.previous.refresh_id == 41
    assert "refresh 41" in lease.took_over and lease.took_over.endswith("(its process is gone)")
    assert lease.record.scope == "process" and lease.record.process_started == process_start(os.getpid())


def test_a_dag_runs_lease_outlives_the_task_that_took_it(root):
    """Scope ``run``: the stage tasks join it after the taking task ended, so a pid says nothing and the ttl holds."""
    _held_by_a_killed_process(root, "run")
    with pytest.raises(LeaseHeld, match="refresh 41"):
        Lease.acquire(root, "refresh", "cli")


def test_a_holder_of_another_machine_or_a_reused_pid_is_judged_right(root):
    clock = Clock()
    current_time = clock.now
    mine = Lease.acquire(root, "refresh", "cli", clock=clock)
    record = mine.record
    assert record.machine == machine() and not record.gone()
    elsewhere = replace(record, machine="another-boot pid:[1]")             # same host name, another kernel
    assert not elsewhere.gone() and elsewhere.vacancy(current_time) is None
    reused = replace(record, process_started=record.process_started - 3600)  # our pid, an earlier process
    assert reused.gone() and reused.vacancy(current_time) == "its process is gone"
    unknown = replace(record, process_started=None)                        # taken on someone's behalf: ttl only
    assert not unknown.gone()
    _overwrite(mine._location, reused)                                     # the record a recycled pid would leave
    taker = Lease.acquire(root, "maintenance", "cli", clock=clock)
    assert taker.took_over.endswith("(its process is gone)")
    with pytest.raises(ValueError, match="scope"):
        Lease.acquire(root, "refresh", "cli", scope="forever")
