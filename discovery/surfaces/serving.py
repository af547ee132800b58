"""A warehouse served to many requests by one long-running process: the api-server behind the page and the JSON API.

A search over HTTP should cost what it costs inside one process (``discovery.open``: 10 to 16 ms on the sample lake).
Four things stood between them, and :class:`Served` removes each:

* **One pinned snapshot for every request.**  Requests answer from one :class:`~discovery.api.Lakescout` and its
  :class:`~discovery.data.store.Snapshot` (whose catalog and indexes are read once, into the process-wide index cache),
  not from a snapshot loaded per request.  The newest published snapshot is looked up at most every
  :data:`POLL_SECONDS`; a newer one is opened in a background thread, warmed by re-running on it the last searches
  served (one of each kind, lake tables only, so the indexes they need are built) and the name search's names, and
  swapped in when ready.  Until then requests answer from the one before, so a publication never pauses them; once
  swapped, the older snapshots' cache entries are dropped and none of theirs is kept again (a request still on the
  old one would put its indexes back), so the process holds one copy of each index however many requests share
  it.  The first snapshot a process serves is warmed the same way in the background, with the newest searches
  recorded in the warehouse (:data:`WARM_RECORDED` batches read), and the name search's lexicon and names: a
  server's first join would otherwise pay about 0.8 s loading its index and encoder.
* **Recording off the answer path.**  A search answers from the index.  One that records (the page's form, whose
  previews and downloads read the recorded rows; the JSON API's ``"record": true``) waits for a group commit
  (:class:`Recorder`): one writer thread commits everything queued since its last commit as one append to
  ``query_results`` and one to ``query_batches``, so sixteen searches recorded at once cost two commits, not
  thirty-two, and commit conflicts between them cannot arise.  The rule: a response says ``recorded`` only after the
  commit that holds its rows; a crash loses only searches whose responses were not yet sent.
* **One thread a request.**  A search's compiled passes (:mod:`discovery.ground.threads`) and numpy's BLAS calls run on
  every core by default, which one process answering one query wants.  A server answers many at once: its
  parallelism is its requests, and a request splitting its work over threads that other requests' threads also
  want (BLAS threads spin while they wait) served 87 searches/s to 16 clients on 2 cores where one thread a request
  served 117 (``benchmarks/serving.py --part load``).  So a served request runs on :func:`request_threads`.
* **What the page shows, memoised** (:meth:`Served.memo`): rebuilt when the served snapshot changes, and otherwise
  at most every ``seconds`` in the background (a refresh or another process may have written), so a status request
  reads memory; the searches this process recorded since are added from the recorder's memory
  (:meth:`Recorder.committed`), so the page lists each at once without reading the warehouse after every commit.

Served searches take a lake table (id or catalogued path) or an upload the server saved, never another file of the
server: they are checked and answered by the batch module's served rules (:mod:`discovery.surfaces.batch`), so a search
here answers exactly what a one-query ``query_batch`` run answers, with the same refusals.
"""
from __future__ import annotations

import ctypes
import gc
import logging
import os
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, UTC

import pyarrow as pa
from threadpoolctl import threadpool_limits

from ..api import Lakescout
from ..config import Config
from ..data.store import SCHEMAS, KeptOpenWarehouse, Session, Warehouse, load_snapshot, new_attempt_token
from ..data.store.cache import INDEXES
from ..ground.threads import threads_of_this_caller
from ..indexes.find import name_index
from ..orchestration.searches import SEARCHES
from .batch import BatchError, BatchQuery, answer_rows, batch_record, check_query_table, parse_spec, search_answer

log = logging.getLogger(__name__)

#: How often (seconds) a request may look for a newer published snapshot (one read of the ``snapshots`` log).
POLL_SECONDS = 1.0
#: Searches of each kind kept to warm a new snapshot with before it is swapped in.
WARM_SEARCHES = 1
#: Recorded batches read, newest first, for searches to warm the first snapshot a process serves with.
WARM_RECORDED = 20
#: The most searches one group commit records.
MAX_GROUP = 512
#: Searches the recorder keeps in memory once committed, newest last: what the page lists as recent searches without
#: reading the warehouse again after each commit.
KEPT_RECORDED = 20


def request_threads() -> int:
    """Threads one served request runs its compiled passes and BLAS calls on: ``LAKESCOUT_QUERY_THREADS`` when set
    (a machine with cores to spare for few users), else 1."""
    env = os.environ.get("LAKESCOUT_QUERY_THREADS", "")
    return max(1, int(env)) if env.strip().isdigit() else 1


@dataclass
class _Pending:
    rows: list[dict]
    record: dict
    refresh_id: int
    done: threading.Event = field(default_factory=threading.Event)
    error: BaseException | None = None


class Recorder:
    """Group commit of served searches to ``query_results`` and ``query_batches``: :meth:`record` returns once the
    commit holding its rows is in the log (or raises what the commit raised).

    Its writer thread keeps the two tables open between commits (:class:`~discovery.data.store.KeptOpenWarehouse`), and
    :meth:`committed` gives the last :data:`KEPT_RECORDED` searches it committed (their ``query_batches`` row and
    ``query_results`` rows), so the page lists a search it just recorded from memory."""

    def __init__(self, warehouse: Warehouse):
        self.warehouse = KeptOpenWarehouse(warehouse)
        self.commits = 0
        self._committed: deque[tuple[dict, list[dict]]] = deque(maxlen=KEPT_RECORDED)
        self._committed_lock = threading.Lock()
        self._queue: list[_Pending] = []
        self._ready = threading.Condition()
        self._writer: threading.Thread | None = None

    def record(self, rows: list[dict], record: dict, refresh_id: int) -> None:
        pending = _Pending(rows, record, refresh_id)
        with self._ready:
            self._queue.append(pending)
            if self._writer is None or not self._writer.is_alive():
                self._writer = threading.Thread(target=self._write, name="lakescout-recorder", daemon=True)
                self._writer.start()
            self._ready.notify()
        pending.done.wait()
        if pending.error is not None:
            raise pending.error

    def _write(self) -> None:
        while True:
            with self._ready:
                while not self._queue:
                    self._ready.wait()
                group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            try:
                self._commit(group)
            except BaseException as exc:  # noqa: BLE001 - handed to every waiting request, which reports it
                log.warning("recording %d searches failed: %s", len(group), exc)
                for p in group:
                    p.error = exc
            finally:
                for p in group:
                    p.done.set()

    def _commit(self, group: list[_Pending]) -> None:
        attempt, refresh_id = new_attempt_token(), max(p.refresh_id for p in group)
        rows = [r for p in group for r in p.rows]
        if rows:
            self.warehouse.append_rows("query_results", pa.Table.from_pylist(rows, schema=SCHEMAS["query_results"]),
                                       refresh_id=refresh_id, stage="query_batch", attempt=attempt, once=False)
        self.warehouse.append_rows("query_batches",
                                   pa.Table.from_pylist([p.record for p in group], schema=SCHEMAS["query_batches"]),
                                   refresh_id=refresh_id, stage="query_batch", attempt=attempt, once=False)
        with self._committed_lock:
            self._committed.extend((p.record, p.rows) for p in group)
        self.commits += 1

    def committed(self) -> list[tuple[dict, list[dict]]]:
        """The last :data:`KEPT_RECORDED` searches committed, oldest first: (``query_batches`` row, result rows)."""
        with self._committed_lock:
            return list(self._committed)


@dataclass
class _Memo:
    value: object
    built_at: float
    swaps: int
    building: bool = False


class Served:
    """One warehouse as a long-running server answers from it; see the module docstring.  Thread-safe."""

    def __init__(self, session: Session, poll_seconds: float = POLL_SECONDS):
        """``session``: the warehouse served and the configuration every search answers with."""
        self.session = session
        self.warehouse = session.warehouse
        self.poll_seconds = poll_seconds
        self.recorder = Recorder(self.warehouse)
        self.swaps = 0
        self._current: Lakescout | None = None
        self._checked_at = 0.0
        self._loading: threading.Thread | None = None
        self._lock = threading.Lock()
        self._recent: dict[str, deque] = {kind: deque(maxlen=WARM_SEARCHES) for kind in SEARCHES}
        self._memos: dict[str, _Memo] = {}
        self._memo_locks: dict[str, threading.Lock] = {}
        self.warming: threading.Thread | None = None

    # -- the snapshot requests answer from ------------------------------------------------------------------------
    def lakescout(self) -> Lakescout:
        """The :class:`Lakescout` pinned to the newest published snapshot that is ready to answer (raises
        :class:`~discovery.data.store.WarehouseError` when the warehouse has none)."""
        with self._lock:
            current, due = self._current, time.monotonic() - self._checked_at >= self.poll_seconds
            if due:
                self._checked_at = time.monotonic()
        if current is None:
            with self._lock:
                if self._current is None:
                    self._current = Lakescout(self.session)
                    self.swaps += 1
                    self.warming = threading.Thread(target=self._warm_first, args=(self._current,), daemon=True,
                                                    name="lakescout-warm")
                    self.warming.start()
                return self._current
        if due and (self._loading is None or not self._loading.is_alive()):
            try:
                latest = load_snapshot(self.warehouse).snapshot_id
            except Exception as exc:  # noqa: BLE001 - a failed look (storage unreachable) leaves the pinned one
                log.warning("could not look for a newer snapshot: %s", exc)
                return current
            with self._lock:
                if latest > current.snapshot_id and (self._loading is None or not self._loading.is_alive()):
                    self._loading = threading.Thread(target=self._swap_in, args=(latest,), daemon=True,
                                                     name=f"lakescout-load-{latest}")
                    self._loading.start()
        return current

    def _warm_first(self, ls: Lakescout) -> None:
        """Warm the first served snapshot with the newest recorded search of each kind on a lake table, and the
        name search's lexicon and names; a search that fails here (its table gone) is left out."""
        from .batch import recent_queries
        from ..transforms.lexicon import lexicon

        try:
            lexicon()
            name_index(ls.snapshot)
            queries = recent_queries(self.warehouse, WARM_RECORDED)
        except Exception as exc:  # noqa: BLE001 - warming is an optimisation: the searches still answer cold
            log.info("warming snapshot %d: %s", ls.snapshot_id, exc)
            return
        for q in queries:
            if q.kind in self._recent and not self._recent[q.kind]:
                try:
                    self._answer(ls, q, {})
                except (BatchError, ValueError) as exc:  # an upload, or a table gone since it was recorded
                    log.info("warming snapshot %d with a %s search: %s", ls.snapshot_id, q.kind, exc)
                    continue
                self._recent[q.kind].append(q)

    def _swap_in(self, snapshot_id: int) -> None:
        """Open ``snapshot_id``, warm it with the recent searches, then answer from it and forget the old one."""
        try:
            fresh = Lakescout(self.session, snapshot_id)
            name_index(fresh.snapshot)
            for recent in self._recent.values():
                for q in list(recent):
                    try:
                        self._answer(fresh, q, {})
                    except (BatchError, ValueError) as exc:  # the table may be gone in the new snapshot
                        log.info("warming snapshot %d with a %s search: %s", snapshot_id, q.kind, exc)
        except Exception as exc:  # noqa: BLE001 - the old snapshot keeps answering; the next poll tries again
            log.warning("could not open snapshot %d to serve it: %s", snapshot_id, exc)
            return
        if self.warming is not None:  # its late entries for the old snapshot would outlive the drop below
            self.warming.join()
        with self._lock:
            old, self._current = self._current, fresh
            self.swaps += 1
        if old is not None and old.snapshot_id != snapshot_id:
            INDEXES.retire(self.warehouse.root, snapshot_id)   # and what requests still on it would put back
            del old
            give_back_memory()

    # -- searches -----------------------------------------------------------------------------------------------
    def search(self, kind: str, query: str | int, params: dict, *, user: str, record: bool,
               uploads: Mapping[str, str] | None = None) -> dict:
        """One served search of ``kind`` on a lake table (or an upload named in ``uploads``), answered from the
        pinned snapshot and, when ``record``, recorded in one group commit before this returns.  Returns the
        batch id (None when not recorded), snapshot id, seconds, kind, query, the ``query_results`` rows and the
        answer as the Python API returns it; raises :class:`BatchError` naming what is wrong."""
        started = time.time()
        batch_id = f"ui-{uuid.uuid4().hex[:12]}" if record else None
        spec = parse_spec({"name": f"ui:{user}", "queries": [{"id": "search", "kind": kind, "query": query,
                                                               **params}]})
        q = spec.queries[0]
        ls = self.lakescout()
        now = datetime.now(UTC)
        answer = self._answer(ls, q, uploads or {})
        rows, entry = answer_rows(ls.snapshot, q, batch_id, answer, now)
        if not (uploads and q.query in uploads):
            self._recent[kind].append(q)
        seconds = time.time() - started
        if batch_id is not None:   # recorded
            _, row = batch_record(spec, ls.snapshot, batch_id, rows, [entry], seconds, now)
            self.recorder.record(rows, row, ls.snapshot.refresh_id)
        return {"batch_id": batch_id, "snapshot_id": ls.snapshot_id, "seconds": round(seconds, 3), "kind": kind,
                "query": entry["query"], "recorded": record, "rows": rows, "answer": answer}

    @staticmethod
    def _answer(ls: Lakescout, q: BatchQuery, uploads: Mapping[str, str]) -> dict:
        with threads_of_this_caller(request_threads()):
            table = check_query_table(ls.snapshot, q, True, uploads, ls.config)
            return search_answer(ls.snapshot, q, ls.config, True, uploads, table=table)

    # -- memoised reads -----------------------------------------------------------------------------------------
    def memo(self, name: str, build: Callable[[], object], seconds: float) -> object:
        """``build()``'s value, rebuilt (by the first request to ask, the others wait for it) when the served
        snapshot changed, and in the background once it is older than ``seconds`` (the stale value answers
        meanwhile)."""
        lock = self._memo_locks.setdefault(name, threading.Lock())
        memo = self._memos.get(name)
        if memo is None or memo.swaps != self.swaps:
            with lock:
                memo = self._memos.get(name)
                if memo is None or memo.swaps != self.swaps:
                    memo = self._build(name, build)
            return memo.value
        if time.monotonic() - memo.built_at > seconds and not memo.building:
            memo.building = True
            threading.Thread(target=self._rebuild, args=(name, build, lock), daemon=True).start()
        return memo.value

    def _build(self, name: str, build: Callable[[], object]) -> _Memo:
        swaps = self.swaps   # taken before the build starts
        memo = self._memos[name] = _Memo(build(), time.monotonic(), swaps)
        return memo

    def _rebuild(self, name: str, build: Callable[[], object], lock: threading.Lock) -> None:
        with lock:
            try:
                self._build(name, build)
            except Exception as exc:  # noqa: BLE001 - the stale value answers; the next request tries again
                log.warning("rebuilding %s failed: %s", name, exc)
                self._memos[name].building = False


def give_back_memory() -> None:
    """Collect what a dropped snapshot left and hand the freed pages back to the system: Arrow's pool, and on glibc
    malloc's heap, where numpy's arrays live.  Without it a server's size followed its peaks: twelve snapshots swapped
    in one process on the sample lake took it from 421 to 514 MB with the index cache at 116 MB throughout; with it,
    it stayed between 460 and 480 MB after the third."""
    gc.collect()
    pa.default_memory_pool().release_unused()
    try:
        ctypes.CDLL("libc.so.6").malloc_trim(0)
    except (OSError, AttributeError):  # not glibc
        pass


_SERVED: dict[str, Served] = {}
_SERVED_LOCK = threading.Lock()


def served(root: str, configure: Callable[[], Config]) -> Served:
    """The process's :class:`Served` of the warehouse at ``root`` (one per warehouse, shared by every request); the
    first request builds its session, with the configuration the surface resolves (``configure()``, called once)."""
    with _SERVED_LOCK:
        if root not in _SERVED:
            if not _SERVED:  # the process serves: BLAS (numpy's, loaded by now) answers each caller on its thread
                threadpool_limits(limits=request_threads(), user_api="blas")
            _SERVED[root] = Served(Session.at(root, configure()))
        return _SERVED[root]
