"""Iceberg tables, read at their current snapshot with pyiceberg.

Two ways in.  A lake folder holding ``metadata/*.metadata.json`` is read at its newest metadata file, in either
layout -- Hadoop's ``vN.metadata.json`` (``version-hint.text`` beside it) or the ``NNNNN-<uuid>.metadata.json``
catalogs write -- since a lake folder often holds tables whose catalog is out of reach; the newest is the highest
number, which both layouts increase with every commit.  A lake root ``iceberg://<catalog>/<namespace>`` names the
tables of a catalog that pyiceberg's own configuration (``.pyiceberg.yaml`` or ``PYICEBERG_CATALOG__*``
variables) describes, SQL and REST catalogs among them.

A table's content version is its current snapshot id: a commit that adds or removes data makes a new snapshot,
while a metadata-only change (a property, a schema comment) keeps the id, so it causes no re-indexing.
"""
from __future__ import annotations

import os

from ... import storage
from ...config import Limits
from ...storage.walk import mtime_ns_of
from .arrow import parsed_from_arrow, take_rows
from .formats import newest_iceberg_metadata
from .table import LakeFileError, ParsedTable, first_line


def _newest_metadata(root: str, rel: str) -> str:
    fs, path = storage.filesystem(storage.join(root, rel))
    entries = fs.ls(f"{path}/metadata", detail=True)
    best = newest_iceberg_metadata((e["name"].rpartition("/")[2], mtime_ns_of(e.get("mtime") or e.get("LastModified")
                                                                            or e.get("last_modified")))
                                   for e in entries)
    if best is None:
        raise LakeFileError("Iceberg table folder without a metadata file")
    return storage.join(storage.join(root, rel), f"metadata/{best}")


def _catalog(name: str):
    """The catalog ``name`` of pyiceberg's configuration; ``PYICEBERG_CATALOG__<NAME>__<KEY>`` variables are read
    now (pyiceberg reads them once, at import, and a DAG task may set them later)."""
    from pyiceberg.catalog import load_catalog

    prefix = f"PYICEBERG_CATALOG__{name.upper()}__"
    props = {k[len(prefix):].lower().replace("__", "."): v for k, v in os.environ.items() if k.startswith(prefix)}
    return load_catalog(name, **props)


def _catalog_table(root: str, rel: str):
    name, _, namespace = root.split("://", 1)[1].partition("/")
    return _catalog(name).load_table(f"{namespace.strip('/')}.{rel}" if namespace else rel)


def open_table(root: str, rel: str):
    """The pyiceberg table at ``rel`` of the lake ``root`` (a folder's newest metadata, or a catalog's table)."""
    from pyiceberg.table import StaticTable

    try:
        if storage.is_catalog(root):
            return _catalog_table(root, rel)
        return StaticTable.from_metadata(storage.file_uri(_newest_metadata(root, rel)),
                                         properties=storage.credentials().iceberg_properties())
    except LakeFileError:
        raise
    except Exception as exc:
        raise LakeFileError(f"unreadable Iceberg metadata: {first_line(exc)}") from None


def iceberg_version(root: str, rel: str) -> str:
    """The current snapshot id (``empty`` for a table with no snapshot yet)."""
    snapshot = open_table(root, rel).current_snapshot()
    return str(snapshot.snapshot_id) if snapshot else "empty"


def read_iceberg(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    table = open_table(root, rel)
    try:
        schema = table.schema().as_arrow()
        batches = table.scan(limit=limits.max_rows + 1).to_arrow_batch_reader()
        rows, more = take_rows(batches, limits.max_rows)
    except Exception as exc:  # a manifest or data file the metadata names is missing or corrupt
        raise LakeFileError(f"Iceberg table cannot be read: {first_line(exc)}") from None
    return parsed_from_arrow(rows, schema, limits, truncated=more)


#: Catalog tables whose metadata location is asked for at once: each ask is a round trip (a REST call, or a read
#: of the table's metadata file), so a thread pool of this size overlaps them while bounding what is held.
_LOADS = 16


def list_catalog(root: str):
    """(table name, metadata location) of every table of ``iceberg://<catalog>/<namespace>``, in the catalog's
    order, as a generator: the listing turns them into Arrow rows as they come.

    The location is the listing's fingerprint (a commit writes a new metadata file); a table whose metadata cannot
    be loaded is listed with ``unreadable: <cause>`` so the scan records why.  pyiceberg returns the namespace's
    identifiers as one list (a tuple of names per table); nothing else per table is held.
    """
    from concurrent.futures import ThreadPoolExecutor

    name, _, namespace = root.split("://", 1)[1].partition("/")
    if not namespace.strip("/"):
        raise ValueError(f"lake {root!r}: name a namespace, as iceberg://<catalog>/<namespace>")
    try:
        catalog = _catalog(name)
        identifiers = catalog.list_tables(namespace.strip("/"))
    except Exception as exc:
        raise FileNotFoundError(f"lake {root!r}: Iceberg catalog {name!r} cannot list namespace "
                                f"{namespace!r}: {first_line(exc)}") from None

    def location(ident) -> str:
        try:
            return catalog.load_table(ident).metadata_location
        except Exception as exc:  # listed now, read by the scan, which records why it fails
            return f"unreadable: {first_line(exc)}"

    with ThreadPoolExecutor(_LOADS) as pool:
        for start in range(0, len(identifiers), _LOADS * 8):
            chunk = identifiers[start:start + _LOADS * 8]
            yield from zip((ident[-1] for ident in chunk), pool.map(location, chunk))
