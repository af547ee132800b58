"""Double-ended priority queue with lazy deletion, as PGTUS++ (Alg. 5) needs it.

The pruning loop must read and remove both the minimum and the maximum of the same set of candidates.  The structure
follows the paper: a binary min-heap and a binary max-heap over the same items plus a hash table of live items.  An
item leaving through one end is popped from that heap in O(log n) and only marked dead (a tombstone) for the other
heap; a tombstone is discarded when it surfaces at the root of its heap.  Arbitrary removal by item id is a tombstone
on both heaps.  When dead entries outnumber live ones the heaps are rebuilt from the live items, so memory stays
O(live) and every operation stays O(log n) amortised.

Items are integers; keys are floats.  Ties between equal keys are broken by item id (smaller id = smaller), so every
sequence of operations has a single deterministic answer.
"""
from __future__ import annotations

import heapq


class DEPQ:
    """Double-ended priority queue of integer items keyed by floats (min and max in O(1), updates in O(log n))."""

    __slots__ = ("_min", "_max", "_live_entries", "_dead", "_stamp")

    def __init__(self) -> None:
        self._min: list[tuple[float, int, int]] = []
        self._max: list[tuple[float, int, int]] = []
        # item -> (key, stamp); the stamp tells a re-pushed item's entries from its tombstones
        self._live_entries: dict[int, tuple[float, int]] = {}
        self._dead = 0
        self._stamp = 0

    def __len__(self) -> int:
        return len(self._live_entries)

    def __contains__(self, item: int) -> bool:
        return item in self._live_entries

    def key(self, item: int) -> float:
        """The key the live ``item`` was pushed with."""
        return self._live_entries[item][0]

    def push(self, item: int, key: float) -> None:
        """Insert ``item`` with ``key``; an item may be present at most once."""
        if item in self._live_entries:
            raise KeyError(f"item {item} is already in the queue")
        key = float(key)
        self._stamp += 1
        self._live_entries[item] = (key, self._stamp)
        heapq.heappush(self._min, (key, item, self._stamp))
        heapq.heappush(self._max, (-key, -item, self._stamp))

    def _is_live(self, item: int, stamp: int) -> bool:
        entry = self._live_entries.get(item)
        return entry is not None and entry[1] == stamp

    def _clean_min(self) -> None:
        heap = self._min
        while heap and not self._is_live(heap[0][1], heap[0][2]):
            heapq.heappop(heap)
            self._dead -= 1

    def _clean_max(self) -> None:
        heap = self._max
        while heap and not self._is_live(-heap[0][1], heap[0][2]):
            heapq.heappop(heap)
            self._dead -= 1

    def peek_min(self) -> tuple[int, float]:
        """(item, key) with the smallest key."""
        self._clean_min()
        if not self._min:
            raise IndexError("peek on an empty queue")
        key, item, _ = self._min[0]
        return item, key

    def peek_max(self) -> tuple[int, float]:
        """(item, key) with the largest key."""
        self._clean_max()
        if not self._max:
            raise IndexError("peek on an empty queue")
        key, item, _ = self._max[0]
        return -item, -key

    def pop_min(self) -> tuple[int, float]:
        """Remove and return the (item, key) with the smallest key; its max-heap entry becomes a tombstone."""
        self._clean_min()
        if not self._min:
            raise IndexError("pop from an empty queue")
        key, item, _ = heapq.heappop(self._min)
        del self._live_entries[item]
        self._dead += 1
        self._compact()
        return item, key

    def pop_max(self) -> tuple[int, float]:
        """Remove and return the (item, key) with the largest key; its min-heap entry becomes a tombstone."""
        self._clean_max()
        if not self._max:
            raise IndexError("pop from an empty queue")
        key, item, _ = heapq.heappop(self._max)
        del self._live_entries[-item]
        self._dead += 1
        self._compact()
        return -item, -key

    def remove(self, item: int) -> None:
        """Remove ``item`` wherever it sits: both heap entries become tombstones (O(1), cleaned lazily)."""
        del self._live_entries[item]
        self._dead += 2
        self._compact()

    def _compact(self) -> None:
        if self._dead <= len(self._live_entries) + 16:
            return
        self._min = [(k, i, s) for i, (k, s) in self._live_entries.items()]
        self._max = [(-k, -i, s) for i, (k, s) in self._live_entries.items()]
        heapq.heapify(self._min)
        heapq.heapify(self._max)
        self._dead = 0
