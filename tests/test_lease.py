"""The warehouse lease on a local disk and on S3: exclusive, renewed, released, taken over once expired.

Taking a lease creates the next generation's record exclusively (``O_EXCL``, or a conditional put on the S3 server of
the ``s3_server`` fixture), so of two takers only one wins.  Time is injected, never waited for.
"""
from __future__ import annotations

import json
import threading
import uuid
from dataclasses import asdict

import pytest

from discovery import storage
from discovery.store.lease import FOLDER, LEASE_SECONDS, Lease, LeaseHeld, LeaseLost, LeaseRecord, current


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
