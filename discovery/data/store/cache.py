"""One least-recently-used cache of query-time indexes, bounded in bytes, shared by union, join and n-ary search.

A snapshot never changes, so an index built for it stays valid for as long as it is kept; what bounds a long-running
process (the api-server behind the "Lake discovery" page, a query-batch worker) is memory, not staleness.  Every
search kind puts its loaded indexes in this one cache, so the budget holds for the process as a whole rather than
per kind, and a new snapshot's indexes push out the old ones as soon as they no longer fit.

The budget is ``$LAKESCOUT_CACHE_MB`` (default 2048).  An index larger than the whole budget is still returned to the
query that built it but not kept: a query may need it, a process need not hold it.  Each key is built once even
when several threads ask for it at the same time (the others wait for that build instead of repeating it).
"""
from __future__ import annotations

import os
import sys
import threading
from collections import OrderedDict
from typing import TypeVar, cast
from collections.abc import Callable, Hashable

import numpy as np
import pyarrow as pa

T = TypeVar("T")

#: Default budget of the process-wide index cache, in MiB.
DEFAULT_CACHE_MB = 2048


def deep_nbytes(obj, _seen: set[int] | None = None) -> int:
    """Bytes held by ``obj``: numpy and Arrow buffers, strings, and the containers and attributes that hold them.

    Object arrays count their elements (value strings are most of a join index), and objects that know their own
    size through an ``nbytes`` attribute (Arrow, numpy, hnswlib wrappers of this package) are asked for it.
    """
    seen = _seen if _seen is not None else set()
    if id(obj) in seen or obj is None:
        return 0
    seen.add(id(obj))
    if isinstance(obj, np.ndarray):
        if obj.dtype == object:
            return obj.nbytes + sum(deep_nbytes(v, seen) for v in obj.ravel())
        return obj.nbytes if obj.base is None or id(obj.base) not in seen else 0
    if isinstance(obj, (pa.Array, pa.ChunkedArray, pa.Table, pa.RecordBatch)):
        return obj.nbytes
    if isinstance(obj, (str, bytes, int, float, bool)):
        return sys.getsizeof(obj)
    if isinstance(obj, dict):
        return sys.getsizeof(obj) + sum(deep_nbytes(k, seen) + deep_nbytes(v, seen) for k, v in obj.items())
    if isinstance(obj, (list, tuple, set, frozenset)):
        return sys.getsizeof(obj) + sum(deep_nbytes(v, seen) for v in obj)
    if type(obj).__module__ == "hnswlib":
        # level-0 links (2M ids), the vector and a label per element; upper levels add about 1/M of that
        return int(obj.max_elements * (obj.dim * 4 + 2 * obj.M * 4 + 16) * (1 + 1 / max(obj.M, 1)))
    own = getattr(type(obj), "nbytes", None)
    if isinstance(own, property):
        return int(obj.nbytes)
    fields = getattr(obj, "__dict__", None)
    if fields is None and hasattr(obj, "__slots__"):
        fields = {name: getattr(obj, name, None) for name in obj.__slots__}
    return sys.getsizeof(obj) + (deep_nbytes(fields, seen) if fields else 0)


class IndexCache:
    """LRU of built indexes keyed by anything hashable (kind, warehouse root, snapshot id, ...), bounded in bytes."""

    def __init__(self, budget_bytes: int, size_of: Callable[[object], int] = deep_nbytes):
        self.budget_bytes = int(budget_bytes)
        self._size_of = size_of
        self._entries: OrderedDict[Hashable, tuple[object, int]] = OrderedDict()
        self._total = 0   # bytes of the entries, kept as they come and go: a put is O(1), not O(entries)
        self._building: dict[Hashable, threading.Event] = {}
        self._floors: dict[object, int] = {}   # warehouse root -> the oldest snapshot id still kept (see retire)
        self._lock = threading.Lock()

    @property
    def nbytes(self) -> int:
        with self._lock:
            return self._total

    def keys(self) -> list:
        """Cached keys, least recently used first."""
        with self._lock:
            return list(self._entries)

    def __contains__(self, key: Hashable) -> bool:
        with self._lock:
            return key in self._entries

    def find(self, key: Hashable):
        """The value cached under ``key`` (now the most recently used), or None."""
        with self._lock:
            if key not in self._entries:
                return None
            self._entries.move_to_end(key)
            return self._entries[key][0]

    def get(self, key: Hashable, build: Callable[[], T]) -> T:
        """The value cached under ``key``, built with ``build()`` (once, whatever the number of threads asking)."""
        while True:
            with self._lock:
                if key in self._entries:
                    self._entries.move_to_end(key)
                    return cast(T, self._entries[key][0])
                pending = self._building.get(key)
                if pending is None:
                    pending = self._building[key] = threading.Event()
                    break
            pending.wait()  # another thread builds it; take its result (or build anew if that build failed)
        try:
            value = build()
            self.put(key, value)
            return value
        finally:
            with self._lock:
                self._building.pop(key).set()

    def put(self, key: Hashable, value) -> None:
        """Keep ``value`` (or re-measure it, when an index grew after use), evicting least recently used entries;
        an entry of a retired snapshot (:meth:`retire`) is not kept."""
        size = self._size_of(value)
        with self._lock:
            _, old = self._entries.pop(key, (None, 0))
            self._total -= old
            if size > self.budget_bytes or self._retired(key):
                return
            self._entries[key] = (value, size)
            self._total += size
            while self._total > self.budget_bytes:
                _, (_, evicted) = self._entries.popitem(last=False)
                self._total -= evicted

    def drop(self, which: Callable[[Hashable], bool]) -> int:
        """Forget the entries whose key ``which`` accepts (a snapshot no longer served); returns how many."""
        with self._lock:
            keys = [key for key in self._entries if which(key)]
            for key in keys:
                self._total -= self._entries.pop(key)[1]
        return len(keys)

    def retire(self, root: object, below: int) -> int:
        """Forget every entry of the snapshots of warehouse ``root`` older than ``below``, and keep none of theirs
        from now on (returns how many were dropped).

        A server swapping in snapshot ``below`` calls it: a request that began on the old snapshot and ends after
        the swap would otherwise put that snapshot's indexes back (a whole join index at a time), to stay for the
        life of the process; under 64 clients that was a few MB a swap.  Snapshot-scoped keys are
        ``(kind, root, snapshot_id, ...)``."""
        with self._lock:
            self._floors[root] = max(below, self._floors.get(root, below))
            keys = [key for key in self._entries if self._retired(key)]
            for key in keys:
                self._total -= self._entries.pop(key)[1]
        return len(keys)

    def _retired(self, key: Hashable) -> bool:
        if not (isinstance(key, tuple) and len(key) > 2 and isinstance(key[2], int) and not isinstance(key[2], bool)):
            return False
        floor = self._floors.get(key[1])
        return floor is not None and key[2] < floor

    def clear(self) -> None:
        with self._lock:
            self._entries.clear()
            self._floors.clear()
            self._total = 0


def _budget_from_env() -> int:
    raw = os.environ.get("LAKESCOUT_CACHE_MB", "")
    try:
        mb = float(raw) if raw.strip() else DEFAULT_CACHE_MB
    except ValueError:
        raise ValueError(f"LAKESCOUT_CACHE_MB must be a number of MiB, got {raw!r}") from None
    if not mb >= 0:
        raise ValueError(f"LAKESCOUT_CACHE_MB must be a number of MiB >= 0, got {raw!r}")
    return int(mb * 1024 * 1024)


#: The process-wide cache every search kind keeps its loaded snapshot indexes in.
INDEXES = IndexCache(_budget_from_env())
