"""One writer at a time per warehouse: a lease kept in the warehouse itself.

A refresh (CLI, DAG run, another machine) and maintenance (compaction, vacuum, orphan cleanup) each take the lease
before they write; a second one is refused with a one-line message naming the holder.  Airflow's
``max_active_runs=1`` only protects one DAG from itself, while the lease also covers a CLI refresh beside the DAG
and maintenance beside either, on any machine that reaches the warehouse.

The lease is a sequence of small JSON records ``<warehouse>/lease/<generation>.json``; the highest generation is the
lease.  Taking it means *creating* the next generation's record, and creation is atomic and exclusive: ``O_EXCL`` on
a local disk, a conditional put (``If-None-Match: *``, s3fs mode ``xb``) on S3.  Of two takers that read the same
generation only one can create the next, so a lease is never held twice, also when two processes race to take over
the same expired one.  Nobody deletes or rewrites another owner's record: the holder renews its heartbeat by
overwriting its own record, and marks it released at the end.  A record whose heartbeat is older than its ``ttl``
belongs to a killed holder and is taken over; the taker keeps who it took over from (:attr:`Lease.took_over`) so the
refresh can record it.  A holder that finds a newer generation on renewal has lost the lease (it stalled past its
ttl and someone took over) and must stop writing: :meth:`Lease.check` raises.

A holder known dead is taken over at once, without waiting out the ttl.  A lease whose ``scope`` is ``process``
(a CLI refresh, which runs every stage in its own driver, and maintenance) lives no longer than the process that took
it, so when that process is gone the lease is vacant.  Gone is judged only where it can be: on the same machine
(:func:`machine`: the kernel's boot and pid namespace, so neither a second host of the same name nor a container
beside it is judged from here) and for the same process (its pid *and* start time, so a reused pid is not mistaken for
the holder).  A DAG run's lease (``scope`` ``run``) outlives the task that took it, since its stage tasks join it, so
its holder is never judged by a pid: a failed task's teardown (``release`` in ``lake_refresh``) frees it at once, and
an unknown holder keeps the ttl.
"""
from __future__ import annotations

import contextlib
import functools
import json
import os
import socket
import threading
import time
from dataclasses import asdict, dataclass, replace
from datetime import datetime, UTC
from collections.abc import Callable
from typing import TypedDict

from ...storage import backend, filesystem, join
from .warehouse import WarehouseError

#: A lease whose heartbeat is older than this belongs to a holder that died.  Long enough to bridge what renews
#: nothing: the scheduling gap between two DAG tasks (and an Airflow retry delay of 30 s) and a spark-submit starting
#: its JVM before the stage's heartbeat thread runs; short enough that a killed refresh blocks the next for minutes.
LEASE_SECONDS = 600.0
#: How often a holder renews its heartbeat: many renewals fit in one ``LEASE_SECONDS``, so a slow store or a long
#: garbage collection pause does not let the lease expire under a living holder.
HEARTBEAT_SECONDS = 30.0
FOLDER = "lease"


class LeaseHeld(WarehouseError):
    """Another refresh or maintenance run holds the warehouse's lease."""


class LeaseLost(WarehouseError):
    """This holder's lease expired and was taken over, or it never held it."""


@dataclass(frozen=True)
class LeaseRecord:
    generation: int
    purpose: str                 # refresh | maintenance
    run: str                     # DAG run id, or "cli"
    host: str
    pid: int
    started: float               # epoch seconds
    heartbeat: float
    ttl: float
    state: str = "held"          # held | released
    refresh_id: int | None = None
    took_over: str | None = None  # description of the expired or dead holder this one replaced
    scope: str = "run"           # process | run (see the module docstring); records of old versions: run
    machine: str | None = None   # :func:`machine` of the holder, when its scope is process
    process_started: float | None = None  # the holding process's start time (epoch seconds), to tell a reused pid

    def expired(self, now: float) -> bool:
        return now - self.heartbeat > self.ttl

    def gone(self) -> bool:
        """Whether the holder is known dead: a process-scoped lease of this machine whose process no longer runs."""
        if self.scope != "process" or self.process_started is None or self.machine != machine():
            return False
        started = process_start(self.pid)
        return started is None or abs(started - self.process_started) > 1.0

    def vacancy(self, now: float) -> str | None:
        """Why a held lease can be taken now (its heartbeat expired, its process is gone), or None while it lives."""
        if self.expired(now):
            return "its heartbeat expired"
        return "its process is gone" if self.gone() else None

    def owner(self) -> tuple:
        return self.purpose, self.run, self.host, self.pid

    def describe(self) -> str:
        what = f"refresh {self.refresh_id}" if self.purpose == "refresh" and self.refresh_id else self.purpose
        return (f"{what} ({self.run} on {self.host} pid {self.pid}, started "
                f"{datetime.fromtimestamp(self.started, UTC).isoformat(timespec='seconds')})")


class _Owner(TypedDict):
    """Who takes a lease: the :meth:`LeaseRecord.owner` fields of a record, in that order."""

    purpose: str
    run: str
    host: str
    pid: int


class _Scope(TypedDict, total=False):
    """How long a lease taken lives (:attr:`LeaseRecord.scope`), and for a process-scoped one, which process."""

    scope: str
    machine: str
    process_started: float | None


@functools.lru_cache(maxsize=1)
def machine() -> str:
    """Where a process id means one process: the kernel's boot id and this process's pid namespace on Linux (a
    container beside this one shares the boot but not the namespace), else the host name and boot time."""
    try:
        with open("/proc/sys/kernel/random/boot_id") as fh:
            return f"{fh.read().strip()} {os.readlink('/proc/self/ns/pid')}"
    except OSError:
        import psutil

        return f"{socket.gethostname()} {psutil.boot_time():.0f}"


def process_start(pid: int) -> float | None:
    """The start time of process ``pid`` (epoch seconds), or None when none runs (an exited, unreaped zombie has
    ended too)."""
    import psutil

    try:
        proc = psutil.Process(pid)
        return None if proc.status() == psutil.STATUS_ZOMBIE else proc.create_time()
    except psutil.Error:
        return None


def _folder(root: str) -> tuple:
    """(filesystem, lease folder path, the lease folder's location) of the warehouse at ``root``."""
    fs, path = filesystem(root)
    return fs, f"{path.rstrip('/')}/{FOLDER}", join(root, FOLDER)


def _name(generation: int) -> str:
    return f"{generation:012d}.json"


def _generations(fs, folder: str) -> list[int]:
    try:
        names = [os.path.basename(p) for p in fs.ls(folder, detail=False)]
    except FileNotFoundError:
        return []
    return sorted(int(n[:-5]) for n in names if n.endswith(".json") and n[:-5].isdigit())


def _read(fs, folder: str, generation: int) -> LeaseRecord | None:
    try:
        with fs.open(f"{folder}/{_name(generation)}", "rb") as fh:
            return LeaseRecord(**json.loads(fh.read()))
    except FileNotFoundError:
        return None


def refusal(held: LeaseRecord, now: float) -> str:
    """The one line that refuses a run while ``held`` is alive."""
    return (f"another {held.purpose} is running on this warehouse: {held.describe()}, last heartbeat "
            f"{max(now - held.heartbeat, 0):.0f} s ago")


def holder(root: str, now: float | None = None) -> str | None:
    """Why a run would be refused now (a living holder, named), or None when the lease is free, expired or its
    holder known dead."""
    held = current(root)
    now = time.time() if now is None else now
    if held is not None and held.state == "held" and held.vacancy(now) is None:
        return refusal(held, now)
    return None


def current(root: str) -> LeaseRecord | None:
    """The lease record of the warehouse at ``root`` (its highest generation), or None before the first lease."""
    fs, folder, _ = _folder(root)
    gens = _generations(fs, folder)
    return _read(fs, folder, gens[-1]) if gens else None


def _create(location: str, record: LeaseRecord) -> None:
    """Create ``record``'s file, failing with FileExistsError when its generation exists (the atomic step: an
    exclusive create locally, a conditional put on object storage)."""
    path = join(location, _name(record.generation))
    backend(path).create_exclusive(path, json.dumps(asdict(record)).encode())


def _overwrite(location: str, record: LeaseRecord) -> None:
    """Replace the holder's own record whole (a put on S3, a rename locally: a reader never sees half of it)."""
    path = join(location, _name(record.generation))
    backend(path).replace(path, json.dumps(asdict(record)).encode())


class Lease:
    """The lease of one warehouse as held by this process (see the module docstring)."""

    def __init__(self, root: str, record: LeaseRecord, clock: Callable[[], float] = time.time):
        self.root, self.record, self.clock = root, record, clock
        self._fs, self._folder, self._location = _folder(root)
        self._lock = threading.Lock()
        self.lost: LeaseLost | None = None
        self.previous: LeaseRecord | None = None  # the expired record this holder took over, if it did

    @property
    def took_over(self) -> str | None:
        return self.record.took_over

    @classmethod
    def acquire(cls, root: str, purpose: str, run: str = "cli", *, ttl: float = LEASE_SECONDS,
                clock: Callable[[], float] = time.time, host: str | None = None, pid: int | None = None,
                scope: str = "process") -> Lease:
        """Take the lease for ``purpose`` or raise :class:`LeaseHeld` naming its living holder.

        A lease held by this very owner (purpose, run, host and process) is taken again, as a process that starts
        its refresh over does; one whose heartbeat expired, or whose holder is known dead, is taken over.
        ``scope``: ``process`` when the lease ends with this process, ``run`` when later processes of the run join
        it (a DAG run).  ``host`` and ``pid`` name another holder than this process (tests): its liveness is then
        unknown and only the ttl frees it."""
        if scope not in ("process", "run"):
            raise ValueError(f"lease scope must be 'process' or 'run', not {scope!r}")
        fs, folder, location = _folder(root)
        me = _Owner(purpose=purpose, run=run, host=host or socket.gethostname(),
                    pid=os.getpid() if pid is None else pid)
        mine = _Scope(scope=scope)
        if scope == "process" and pid is None and host is None:
            mine["machine"] = machine()
            mine["process_started"] = process_start(os.getpid())
        for _ in range(8):
            now = clock()
            gens = _generations(fs, folder)
            held = _read(fs, folder, gens[-1]) if gens else None
            if gens and held is None:
                continue  # its holder is replacing the file this instant; read again
            why = held.vacancy(now) if held is not None and held.state == "held" else None
            if held is not None and held.state == "held" and why is None:
                if held.owner() != tuple(me.values()):
                    raise LeaseHeld(refusal(held, now))
                lease = cls(root, replace(held, started=now, heartbeat=now, refresh_id=None, took_over=None, **mine),
                            clock)
                lease._write()
                return lease
            took_over = None
            if why is not None:
                assert held is not None  # a vacancy is only ever found in a record
                took_over = (f"{held.describe()}, last heartbeat "
                             f"{datetime.fromtimestamp(held.heartbeat, UTC).isoformat(timespec='seconds')}"
                             f" ({why})")
            record = LeaseRecord(generation=(gens[-1] if gens else 0) + 1, started=now, heartbeat=now, ttl=ttl,
                                 took_over=took_over, **me, **mine)
            try:
                _create(location, record)
            except FileExistsError:
                continue  # another taker created this generation first: read who
            for old in gens[:-1]:  # the previous generation stays as the takeover's evidence until the next one
                with contextlib.suppress(FileNotFoundError):
                    fs.rm(f"{folder}/{_name(old)}")
            lease = cls(root, record, clock)
            lease.previous = held if took_over else None
            return lease
        raise LeaseHeld(f"could not take the lease of {root!r}: it changed hands on every attempt")

    @classmethod
    def join(cls, root: str, refresh_id: int, clock: Callable[[], float] = time.time) -> Lease:
        """The lease of refresh ``refresh_id``, for a later step of it in another process (a DAG's stage task)."""
        held = current(root)
        if held is None or held.state != "held" or held.purpose != "refresh" or held.refresh_id != refresh_id:
            holder = held.describe() if held is not None and held.state == "held" else "nobody"
            raise LeaseLost(f"refresh {refresh_id} does not hold the lease of this warehouse (held by {holder}); "
                            f"start a new refresh")
        return cls(root, held, clock)

    def _write(self) -> None:
        _overwrite(self._location, self.record)

    def check(self) -> None:
        """Raise :class:`LeaseLost` when a newer generation exists: this holder's lease was taken over."""
        if self.lost is not None:
            raise self.lost
        gens = _generations(self._fs, self._folder)
        if gens and gens[-1] > self.record.generation:
            newer = _read(self._fs, self._folder, gens[-1])
            self.lost = LeaseLost(f"the lease of this warehouse was taken over by "
                                  f"{newer.describe() if newer else 'another run'}; this run must stop writing")
            raise self.lost

    def renew(self) -> None:
        with self._lock:
            self.check()
            self.record = replace(self.record, heartbeat=self.clock())
            self._write()

    def update(self, **fields) -> None:
        """Record more about the holder (the refresh id once it is allocated)."""
        with self._lock:
            self.check()
            self.record = replace(self.record, heartbeat=self.clock(), **fields)
            self._write()

    def release(self) -> None:
        """Mark the lease released, unless it was taken over meanwhile (then it is not ours to release)."""
        with self._lock:
            with contextlib.suppress(LeaseLost):
                self.check()
                self.record = replace(self.record, state="released", heartbeat=self.clock())
                self._write()

    @contextlib.contextmanager
    def kept_alive(self, every: float = HEARTBEAT_SECONDS):
        """Renew the heartbeat from a background thread while the block runs; a lost lease is raised at the end."""
        stop = threading.Event()

        def beat():
            while not stop.wait(every):
                try:
                    self.renew()
                except LeaseLost:
                    return
                except OSError:  # a store hiccup: the next beat tries again, well within the ttl
                    continue

        thread = threading.Thread(target=beat, name="lakescout-lease", daemon=True)
        thread.start()
        try:
            yield self
        finally:
            stop.set()
            thread.join()
        self.check()


def release_refresh(root: str, refresh_id: int) -> bool:
    """Release the lease when refresh ``refresh_id`` holds it (publish, or the DAG's teardown after a failure)."""
    try:
        lease = Lease.join(root, refresh_id)
    except LeaseLost:
        return False
    lease.release()
    return True
