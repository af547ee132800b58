"""The query-time MATE index of a snapshot: ``xash_postings`` + the snapshot's XASH model, built once and cached.

The cache key is (warehouse root, snapshot id, hash size): a snapshot never changes, so an index built for it stays
valid; indexes are kept in the process-wide cache bounded in bytes (:mod:`discovery.data.store.cache`), because an index
holds every posting in memory.  A size other than the stored one is derived in memory from the same postings
(:meth:`NaryIndex.resized`), which is what ``--bits`` asks for.
"""
from __future__ import annotations

import pyarrow.compute as pc

from discovery.data.store import Snapshot, WarehouseError, snapshot_model
from discovery.data.store.cache import INDEXES
from discovery.ground.xash import SUPPORTED_BITS
from discovery.indexes.nary.index import NaryIndex
from discovery.indexes.nary.stage import MODEL_NAME, model_from_stored


def _stored_index(snapshot: Snapshot) -> NaryIndex:
    stored = snapshot_model(snapshot, MODEL_NAME)
    model = model_from_stored(stored)
    key = ("nary", snapshot.warehouse.root, snapshot.snapshot_id, model.bits)
    return INDEXES.get(key, lambda: _build(snapshot, stored, model))


def _build(snapshot: Snapshot, stored, model) -> NaryIndex:
    dataset = snapshot.dataset("xash_postings")
    foreign = dataset.count_rows(filter=pc.field("model_version") != stored.version)
    if foreign:
        raise WarehouseError(f"snapshot {snapshot.snapshot_id}: {foreign} posting(s) were not built with XASH model "
                             f"{stored.version}; run `lakescout refresh --full`")
    postings = dataset.to_table(columns=["value", "table_id", "column", "row", "superkey"])
    return NaryIndex.from_postings(postings, model)


def load_nary_index(snapshot: Snapshot, bits: int | None = None) -> NaryIndex:
    """The MATE index of ``snapshot``, with super keys of ``bits`` (default: the size the index was built with)."""
    if bits is not None and bits not in SUPPORTED_BITS:
        raise ValueError(f"--bits must be one of {', '.join(map(str, SUPPORTED_BITS))}, got {bits}")
    index = _stored_index(snapshot)
    if bits is None or bits == index.model.bits:
        return index
    key = ("nary", snapshot.warehouse.root, snapshot.snapshot_id, bits)
    return INDEXES.get(key, lambda: index.resized(bits))
