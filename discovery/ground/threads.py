"""The threads one query runs its compiled passes on, and the pool that runs them.

A union query's bound pass (:mod:`discovery.indexes.union.quantised`) and a semantic join's verification
(:mod:`discovery.indexes.join.verification`) are compiled loops that release the GIL, so a query cuts them into parts of
about equal work and runs the parts on threads of one process-wide pool.  Threads, not numba's ``parallel=True``:
numba's default workqueue threading layer aborts the process when two Python threads (the API server's) enter a parallel
kernel at once, while plain ``nogil`` kernels on a shared pool serve concurrent queries side by side.  Each part writes
only its own outputs, and the callers merge them so that the answer does not depend on the thread count.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from collections.abc import Callable, Iterable, Iterator

_threads: list[int] = []
_calling = threading.local()
_pools: dict[int, ThreadPoolExecutor] = {}
_pools_lock = threading.Lock()


def query_threads() -> int:
    """Threads one query's compiled pass runs on: :func:`threads_of_this_caller`, else :func:`set_query_threads`, else
    ``LAKESCOUT_QUERY_THREADS``, else every CPU this process may run on.  The passes are compute-bound on data in
    memory or the page cache, so a served query on an idle machine answers about as many times faster as it has
    cores."""
    if getattr(_calling, "threads", None):
        return _calling.threads
    if _threads:
        return _threads[-1]
    env = os.environ.get("LAKESCOUT_QUERY_THREADS", "")
    return max(1, int(env)) if env.strip().isdigit() else max(1, len(os.sched_getaffinity(0)))


def set_query_threads(threads: int) -> None:
    """Run the compiled passes of queries on ``threads`` threads in this process (a Spark task: its
    ``spark.task.cpus``)."""
    _threads[:] = [max(1, int(threads))]


@contextmanager
def threads_of_this_caller(threads: int) -> Iterator[None]:
    """Run the queries this thread makes inside the block on ``threads`` threads, whatever the process's setting.
    The answers never depend on the count, but the work counters of a semantic join do (a thread of several does not
    see the others' columns): PEXESO's cost model counts on one thread so that the same sample always makes the same
    choice."""
    before = getattr(_calling, "threads", None)
    _calling.threads = max(1, int(threads))
    try:
        yield
    finally:
        _calling.threads = before


def run_parts(work: Callable, parts: Iterable) -> list:
    """``work(part)`` for every part, in order: on the calling thread when there is at most one part, else on the
    pool."""
    parts = list(parts)
    if len(parts) <= 1:
        return [work(part) for part in parts]
    return list(_pool().map(work, parts))


def _pool() -> ThreadPoolExecutor:
    """The process's pool, one per thread count (shared by concurrent queries; a part never waits on another part,
    so queries queued behind each other cannot deadlock it)."""
    threads = query_threads()
    with _pools_lock:
        if threads not in _pools:
            _pools[threads] = ThreadPoolExecutor(threads, thread_name_prefix="lakescout-query")
        return _pools[threads]
