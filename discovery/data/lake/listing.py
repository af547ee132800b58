"""What a lake table is, decided by one listing of the lake.

The lake is listed once (locally a folder at a time with ``os.scandir``, on object storage one recursive LIST of the
prefix: about one request per 1,000 objects) and every folder is classified from the names it holds, top down:

* a folder holding ``_delta_log/`` is one Delta table;
* a folder holding ``metadata/*.metadata.json`` is one Iceberg table;
* a folder of ``key=value`` sub-folders (Hive partitioning, any depth) is one table, partition keys as columns;
* a folder of one layout's part files (``part-*`` next to ``_SUCCESS`` / ``.crc`` files, as Spark and Hadoop write
  them) is one table;
* anything else is walked into, and each file with a table ending (see :mod:`.formats`) is a table of its own.

A format's own metadata (``_delta_log``, Iceberg's ``metadata/``, ``_SUCCESS``, ``.crc``, ``_spark_metadata``,
``_committed_*`` / ``_started_*``) and every other name starting with ``_`` or ``.`` is never a table nor a table's
file.  Each table carries a *fingerprint* read off the listing alone -- size and mtime of a file, the newest log
version of a Delta table, the newest metadata file of an Iceberg table, a digest of the data files of a folder -- so
an unchanged lake is recognised without opening a single object; a changed fingerprint sends the table to the
scan, which reads the format's own version (:func:`discovery.data.lake.reader.table_version`).

The result is a :class:`Listing`: Arrow columns, not one Python object per table.  The refresh driver lists lakes
of hundreds of thousands of tables; holding a dataclass per table, and a dict entry per file of the whole walk,
cost it 30 MB at 100,000 tables (49 MB at the peak) and grew with the lake, while the columns cost 7.5 MB.  The walk
itself (:mod:`discovery.storage.walk`, the storage wing's) holds folders as Arrow too; this module only classifies.
"""
from __future__ import annotations

import hashlib
import re
from collections import defaultdict
from dataclasses import dataclass

import pyarrow as pa

from ... import storage
from ...storage.walk import BATCH, Batches, Entry, Folder, Tree, names_of, sub
from .formats import (DATASET_KINDS, DELTA_LOG_ENTRY, file_format, is_data_file, is_metadata_name as _hidden,
                      newest_iceberg_metadata)
from .patterns import TableFilter

_PART_FILE = re.compile(r"^part-")
_PARTITION = re.compile(r"^[^=/]+=[^/]*$")

#: Columns of a listing, one row per lake table.
LISTING_COLUMNS = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
                             ("format", pa.string()), ("fingerprint", pa.string())])

@dataclass(frozen=True)
class LakeTable:
    """One table of the lake: a file, or a dataset folder (Delta, Iceberg, partitioned, part files)."""

    path: str          # relative to the lake root, '/'-separated: the file, or the dataset's folder
    size: int          # bytes of its data files as listed
    mtime_ns: int      # newest modification time among them
    format: str        # reader key: csv, csv.gz, json, parquet, orc, ..., delta, iceberg, hive/<fmt>, parts/<fmt>
    fingerprint: str   # change signal read off the listing (see the module docstring)

    @property
    def is_dataset(self) -> bool:
        return self.format.split("/")[0] in DATASET_KINDS


class Listing:
    """The tables of one listing as Arrow columns (:data:`LISTING_COLUMNS`), sorted by path.

    Iterating yields :class:`LakeTable` objects one Arrow batch at a time, so a caller that walks the listing never
    holds them all; the refresh plan reads :attr:`table` directly.
    """

    def __init__(self, table: pa.Table):
        self.table = table

    def __len__(self) -> int:
        return self.table.num_rows

    def __iter__(self):
        for batch in self.table.to_batches(max_chunksize=BATCH):
            cols = batch.to_pydict()
            yield from (LakeTable(*row) for row in zip(*(cols[name] for name in LISTING_COLUMNS.names)))

    def __getitem__(self, index: int) -> LakeTable:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"listing index {index} out of range for {n} tables")
        return LakeTable(**self.table.slice(index % n, 1).to_pylist()[0])


class _Rows:
    """Sink of the walk: keeps the tables the patterns keep, as Arrow batches of :data:`BATCH` rows."""

    def __init__(self, keep=lambda path: True):
        self.keep = keep
        self.batches = Batches(LISTING_COLUMNS)

    def add(self, path: str, size: int, mtime_ns: int, fmt: str, fingerprint: str) -> None:
        if self.keep(path):
            self.batches.add(path, int(size), int(mtime_ns), fmt, fingerprint)

    def listing(self) -> Listing:
        return Listing(self.batches.table("path"))


def file_fingerprint(size: int, mtime_ns: int) -> str:
    return f"{int(size)}:{int(mtime_ns)}"


def _digest(items) -> str:
    h = hashlib.blake2b(digest_size=16)
    for item in items:
        h.update(repr(item).encode())
        h.update(b"\0")
    return h.hexdigest()


def _data_files(tree: Tree, folder: str, skip: tuple[str, ...] = ()):
    """Data files of a dataset folder: every file below it but metadata (hidden names, ``skip`` sub-folders)."""
    for current, name, entry in tree.below(folder):
        rel = current[len(folder):].lstrip("/")
        if rel and rel.split("/")[0] in skip:
            continue
        path = f"{rel}/{name}" if rel else name
        if is_data_file(path):
            yield path, entry


def _partition_format(files: list[tuple[str, Entry]]) -> str:
    """The table format most data files of a partitioned folder have (ties: the name sorting first)."""
    counts: dict[str, int] = defaultdict(int)
    for rel, _ in files:
        fmt = file_format(rel.rpartition("/")[2])
        if fmt:
            counts[fmt] += 1
    if not counts:
        return "parquet"
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _dataset(out: _Rows, tree: Tree, folder: str, fmt: str, fingerprint: str | None = None, skip=()) -> None:
    files = list(_data_files(tree, folder, skip))
    if fmt == "hive":
        fmt = f"hive/{_partition_format(files)}"
    size = sum(e.size for _, e in files)
    mtime = max((e.mtime_ns for _, e in files), default=0)
    if fingerprint is None:
        fingerprint = _digest((rel, e.size, e.mtime_ns) for rel, e in files)
    out.add(folder, size, mtime, fmt, fingerprint)


def _delta_version(tree: Tree, folder: str) -> int | None:
    names = names_of(tree.folder(sub(folder, "_delta_log")).names)
    versions = [int(m.group(1)) for m in map(DELTA_LOG_ENTRY.match, names) if m]
    return max(versions) if versions else None


def _iceberg_metadata(tree: Tree, folder: str) -> str | None:
    """Name of the newest metadata file (:func:`.formats.newest_iceberg_metadata`)."""
    return newest_iceberg_metadata((name, entry.mtime_ns)
                                   for name, entry in tree.folder(sub(folder, "metadata")).rows())


def _is_partitioned(node: Folder) -> bool:
    subs = (c for c in names_of(node.children) if not _hidden(c))
    first = next(subs, None)
    return first is not None and bool(_PARTITION.match(first)) and all(_PARTITION.match(c) for c in subs)


def _part_format(node: Folder) -> str | None:
    """The format of a part-file folder, or None: ``part-*`` files of one table format beside ``_SUCCESS`` or other
    part files, and no sub-folders but hidden ones."""
    parts = [name for name in names_of(node.names) if _PART_FILE.match(name)]
    if not parts or any(not _hidden(c) for c in names_of(node.children)):
        return None
    formats = {file_format(n) for n in parts}
    formats.discard(None)
    if len(formats) != 1:
        return None
    if not node.has_file("_SUCCESS") and len(parts) < 2:
        return None
    return formats.pop()


def _is_dataset(out: _Rows, tree: Tree, folder: str, node: Folder) -> bool:
    """Add ``folder`` to ``out`` as one table when it is a dataset folder (Delta, Iceberg, Hive, part files)."""
    if node.has_child("_delta_log"):
        _dataset(out, tree, folder, "delta", f"v{_delta_version(tree, folder)}", skip=("_delta_log",))
        return True
    metadata = _iceberg_metadata(tree, folder) if node.has_child("metadata") else None
    if metadata:
        _dataset(out, tree, folder, "iceberg", metadata, skip=("metadata",))
        return True
    if _is_partitioned(node):
        _dataset(out, tree, folder, "hive")
        return True
    parts = _part_format(node)
    if parts:
        _dataset(out, tree, folder, f"parts/{parts}")
        return True
    return False


def _classify(tree: Tree, folder: str, out: _Rows) -> None:
    """Add the tables at or below ``folder`` to ``out``, depth first, the folder's files before its sub-folders; a
    dataset folder is one table and is not walked into."""

    def visit(current: str, node: Folder) -> bool:
        if current and _is_dataset(out, tree, current, node):
            return False
        for name, entry in node.rows():
            fmt = file_format(name)
            if fmt is not None and not _hidden(name):
                out.add(sub(current, name), entry.size, entry.mtime_ns, fmt,
                        file_fingerprint(entry.size, entry.mtime_ns))
        return True

    tree.walk(folder, visit, keep=lambda name: not _hidden(name))


def list_lake(root: str, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> Listing:
    """Every table of the lake at ``root`` (a folder, an object-store URI, or ``iceberg://<catalog>/<namespace>``),
    sorted by path, kept by the ``include`` / ``exclude`` patterns (:mod:`.patterns`).

    Raises FileNotFoundError for a missing root, naming it.
    """
    out = _Rows(TableFilter(include, exclude))
    if storage.is_catalog(root):
        from .iceberg import list_catalog

        for path, fingerprint in list_catalog(root):
            out.add(path, 0, 0, "iceberg", fingerprint)
    else:
        root = storage.normalize(root)
        _classify(storage.backend(root).tree(root), "", out)
    return out.listing()


def locate(path: str) -> tuple[str, LakeTable]:
    """(root, table) for one table named by its own path: a file, a dataset folder, or an object-store URI.

    Used for query tables given outside the lake; raises FileNotFoundError (missing) or ValueError (a folder that is
    no dataset, a file of no table format).
    """
    store = storage.backend(path)
    path = storage.normalize(path)
    root, name = storage.split(path)
    fs, base = store.filesystem(path)
    if not fs.exists(base):
        raise FileNotFoundError(f"{path!r} does not exist")
    if not fs.isdir(base):
        fmt = file_format(name) or "csv"
        return root, LakeTable(name, int(fs.size(base) or 0), 0, fmt, "")
    found = _Rows()
    tree = store.subtree(root, name)
    _classify(tree, name, found)
    dataset = [t for t in found.listing() if t.path == name]
    if not dataset:
        raise ValueError(f"folder {path!r} is not a table: it holds no _delta_log/, Iceberg metadata/, key=value "
                         f"partitions or part files (name one of its files instead)")
    return root, dataset[0]
