"""Query-array folders: what an index lays out as files beside its Delta tables when a snapshot is published, so that
a query process maps files instead of building the index from Delta.

One protocol for every index that has such a folder (the union's compact index, :mod:`discovery.indexes.union.arrays`;
the numerical join's families, :mod:`discovery.indexes.numjoin.arrays`), each an :class:`ArrayFolder` that says what
goes in it:

* its name follows from the Delta versions its content is built from (``name(versions)``), so snapshots that pin the
  same versions share a folder and a folder never goes stale;
* it lives at ``<warehouse>/query_arrays/<name>/``, and its ``meta.json``, written last, marks it complete;
* :meth:`ArrayFolder.write` has the warehouse's storage backend put the folder in place
  (:meth:`~discovery.storage.Backend.write_folder`: filled locally, then renamed or uploaded, ``meta.json`` last); a
  folder already there is kept, since it holds the same content;
* :meth:`ArrayFolder.open` gives the local folder to map (:meth:`~discovery.storage.Backend.local_folder`: the
  folder itself, or for a remote warehouse a copy downloaded once into the local array cache,
  ``$LAKESCOUT_ARRAY_CACHE``, default ``~/.cache/lakescout/query_arrays``; the name pins the content, so the cache
  needs no invalidation), or None when there is none (the query then builds the index in memory);
* :func:`prune_folders` deletes the folders whose names maintenance does not pass to keep.
"""
from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass

from ...storage import backend, join

ARRAYS_DIR = "query_arrays"


def folder_uri(warehouse, name: str) -> str:
    """Where the folder ``name`` of ``warehouse`` lives: a local path, or a URI on object storage."""
    return join(join(warehouse.root, ARRAYS_DIR), name)


@dataclass(frozen=True)
class ArrayFolder:
    """One index's query-array folder: its ``name(versions)`` (None: the snapshot has no such index),
    ``fill(warehouse, versions, folder)``, which writes the files into an empty local folder, ``meta.json`` last, and
    ``applies(counts)``: whether a snapshot with these row counts (``rows_<table>``) can have it laid out."""

    name: Callable[[dict], str | None]
    fill: Callable[[object, dict, str], object]
    applies: Callable[[dict], bool] = lambda counts: True

    def write(self, warehouse, versions: dict) -> str | None:
        """Write the folder of the snapshot pinning ``versions`` unless it is there; returns where it is (None when
        the snapshot has no such index)."""
        name = self.name(versions)
        if name is None:
            return None
        target = folder_uri(warehouse, name)
        store = backend(warehouse.root)
        if not store.complete(target):
            store.write_folder(target, lambda folder: self.fill(warehouse, versions, folder))
        return target

    def open(self, warehouse, versions: dict) -> str | None:
        """The local folder of the snapshot pinning ``versions``, complete, or None when there is none (or it cannot
        be brought to a local folder)."""
        name = self.name(versions)
        if name is None:
            return None
        return backend(warehouse.root).local_folder(warehouse.root, folder_uri(warehouse, name), name)


def prune_folders(warehouse, keep: set[str]) -> list[str]:
    """Delete the folders under ``query_arrays`` whose names are not in ``keep`` (the folders of the retained
    snapshots); returns their names.

    Safe while queries run: a local process that maps a deleted file keeps its pages until it unmaps them, and a
    process reading a remote warehouse maps its own downloaded copy (a download cut short by the deletion leaves
    no copy, and the query builds the index in memory).  Maintenance holds the warehouse lease, so no refresh is
    writing a folder meanwhile; a remote folder without ``meta.json`` is one a killed refresh left half written.  A
    local writer's temporary folder (:meth:`~discovery.storage.Backend.temporary`) is its writer's to remove."""
    store, root = backend(warehouse.root), join(warehouse.root, ARRAYS_DIR)
    try:
        names = store.names(root)
    except FileNotFoundError:
        return []
    removed = []
    for name in names:
        if name in keep or store.temporary(name):
            continue
        with contextlib.suppress(FileNotFoundError):
            store.remove_folder(join(root, name))
            removed.append(name)
    return removed
