"""The query-time MATE index of a snapshot: ``xash_postings`` + the snapshot's XASH model, built once and cached.

The cache key is (warehouse root, snapshot id, hash size): a snapshot never changes, so an index built for it stays
valid; a few recent entries are kept because an index holds every posting in memory.  A size other than the stored
one is derived in memory from the same postings (:meth:`NaryIndex.resized`), which is what ``--bits`` asks for.
"""
from __future__ import annotations

import os
import threading
from collections import OrderedDict

import pyarrow.compute as pc

from discovery.nary.index import NaryIndex
from discovery.nary.stage import MODEL_NAME, model_from_stored
from discovery.store import Snapshot, WarehouseError, snapshot_model
from discovery.xash import SUPPORTED_BITS

_MAX_CACHED = 3
_cache: OrderedDict[tuple[str, int, int], NaryIndex] = OrderedDict()
_lock = threading.Lock()


def _root(snapshot: Snapshot) -> str:
    root = snapshot.warehouse.root
    return root if "://" in root else os.path.abspath(root)


def _cached(key: tuple[str, int, int]) -> NaryIndex | None:
    with _lock:
        index = _cache.get(key)
        if index is not None:
            _cache.move_to_end(key)
        return index


def _remember(key: tuple[str, int, int], index: NaryIndex) -> None:
    with _lock:
        _cache[key] = index
        _cache.move_to_end(key)
        while len(_cache) > _MAX_CACHED:
            _cache.popitem(last=False)


def _stored_index(snapshot: Snapshot) -> NaryIndex:
    stored = snapshot_model(snapshot, MODEL_NAME)
    model = model_from_stored(stored)
    key = (_root(snapshot), snapshot.snapshot_id, model.bits)
    index = _cached(key)
    if index is not None:
        return index
    dataset = snapshot.dataset("xash_postings")
    foreign = dataset.count_rows(filter=pc.field("model_version") != stored.version)
    if foreign:
        raise WarehouseError(f"snapshot {snapshot.snapshot_id}: {foreign} posting(s) were not built with XASH model "
                             f"{stored.version}; run `lakescout refresh --full`")
    postings = dataset.to_table(columns=["value", "table_id", "column", "row", "superkey"])
    index = NaryIndex.from_postings(postings, model)
    _remember(key, index)
    return index


def load_nary_index(snapshot: Snapshot, bits: int | None = None) -> NaryIndex:
    """The MATE index of ``snapshot``, with super keys of ``bits`` (default: the size the index was built with)."""
    if bits is not None and bits not in SUPPORTED_BITS:
        raise ValueError(f"--bits must be one of {', '.join(map(str, SUPPORTED_BITS))}, got {bits}")
    index = _stored_index(snapshot)
    if bits is None or bits == index.model.bits:
        return index
    key = (_root(snapshot), snapshot.snapshot_id, bits)
    resized = _cached(key)
    if resized is None:
        resized = index.resized(bits)
        _remember(key, resized)
    return resized
