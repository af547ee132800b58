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
scan, which reads the format's own version (:func:`discovery.lake.reader.table_version`).

The result is a :class:`Listing`: Arrow columns, not one Python object per table.  The refresh driver lists lakes
of hundreds of thousands of tables; holding a dataclass per table, and a dict entry per file of the whole walk,
cost it 30 MB at 100,000 tables (49 MB at the peak) and grew with the lake, while the columns cost 7.5 MB.  The walk
itself holds folders as Arrow too (:class:`_Folder`): a local walk the last ``_KEPT`` folders it read, an
object-store walk the sorted keys of one listing (:class:`_SortedTree`), paged in as Arrow (:func:`_remote_pages`).
"""
from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections import OrderedDict, defaultdict
from bisect import bisect_left
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .. import storage
from .formats import DATASET_KINDS, DELTA_LOG_ENTRY, ICEBERG_METADATA, file_format, is_metadata_name as _hidden
from .patterns import TableFilter

_PART_FILE = re.compile(r"^part-")
_PARTITION = re.compile(r"^[^=/]+=[^/]*$")

#: Columns of a listing, one row per lake table.
LISTING_COLUMNS = pa.schema([("path", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64()),
                             ("format", pa.string()), ("fingerprint", pa.string())])

#: Rows gathered in Python before they become one Arrow batch.
_BATCH = 8192
#: Keys of a folder below which an object-store walk reads the folder in Python rather than with Arrow kernels
#: (a dozen kernel calls cost more than a few hundred strings).
_SMALL = 256
#: A folder's files and sub-folders, as a walk reads them.
_FILES = pa.schema([("name", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64())])
_NAMES = pa.schema([("name", pa.string())])

#: Keys asked for per LIST request of an S3 listing (the most S3 returns).
_PAGE = 1000

#: Local folders whose entries stay cached while the walk classifies: a dataset folder is read for its
#: classification and again for its data files, and a parent's entries are needed while its children are walked.
_KEPT = 64


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
        for batch in self.table.to_batches(max_chunksize=_BATCH):
            cols = batch.to_pydict()
            yield from (LakeTable(*row) for row in zip(*(cols[name] for name in LISTING_COLUMNS.names)))

    def __getitem__(self, index: int) -> LakeTable:
        n = len(self)
        if not -n <= index < n:
            raise IndexError(f"listing index {index} out of range for {n} tables")
        return LakeTable(**self.table.slice(index % n, 1).to_pylist()[0])


class _Batches:
    """Rows gathered :data:`_BATCH` at a time, each full batch made Arrow at once: what the walk collects (tables,
    a folder's entries) is never more than a batch of Python tuples."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows: list[tuple] = []
        self.batches: list[pa.RecordBatch] = []

    def add(self, *row) -> None:
        self.rows.append(row)
        if len(self.rows) >= _BATCH:
            self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.batches.append(pa.RecordBatch.from_arrays(
                [pa.array(col, field.type) for col, field in zip(zip(*self.rows), self.schema)], schema=self.schema))
            self.rows = []

    def columns(self, sort_by: str) -> list:
        """The columns sorted by ``sort_by``: Python lists when the rows never filled a batch (most folders: a list
        costs a fraction of an Arrow array to build), else Arrow arrays (the same order: Python compares code
        points, Arrow UTF-8 bytes)."""
        if not self.batches:
            self.rows.sort(key=itemgetter(self.schema.names.index(sort_by)))
            return [list(col) for col in zip(*self.rows)] if self.rows else [[] for _ in self.schema]
        self._flush()
        table = pa.Table.from_batches(self.batches, schema=self.schema)
        table = table.take(pc.sort_indices(table, [(sort_by, "ascending")]))
        return [table.column(name).combine_chunks() for name in self.schema.names]

    def table(self, sort_by: str) -> pa.Table:
        return pa.table([col if isinstance(col, pa.Array) else pa.array(col, field.type)
                         for col, field in zip(self.columns(sort_by), self.schema)], schema=self.schema)


class _Rows:
    """Sink of the walk: keeps the tables the patterns keep, as Arrow batches of :data:`_BATCH` rows."""

    def __init__(self, keep=lambda path: True):
        self.keep = keep
        self.batches = _Batches(LISTING_COLUMNS)

    def add(self, path: str, size: int, mtime_ns: int, fmt: str, fingerprint: str) -> None:
        if self.keep(path):
            self.batches.add(path, int(size), int(mtime_ns), fmt, fingerprint)

    def listing(self) -> Listing:
        return Listing(self.batches.table("path"))


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime_ns: int


def file_fingerprint(size: int, mtime_ns: int) -> str:
    return f"{int(size)}:{int(mtime_ns)}"


def _mtime_ns(mtime) -> int:
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1e9)
    try:
        return int(float(mtime) * 1e9)
    except (TypeError, ValueError):
        return 0


def _sub(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def _names(names):
    """The strings of ``names`` (a list, or an Arrow array converted :data:`_BATCH` at a time)."""
    if isinstance(names, list):
        yield from names
        return
    for start in range(0, len(names), _BATCH):
        yield from names.slice(start, _BATCH).to_pylist()


def _subfolders(folder: str, names, hidden: bool = False):
    """Paths of the sub-folders ``names`` of ``folder``, hidden ones too if ``hidden`` (a generator, so each is
    bound to its own folder)."""
    for name in _names(names):
        if hidden or not _hidden(name):
            yield _sub(folder, name)


@dataclass(frozen=True)
class _Folder:
    """What one folder directly holds: its files (sorted names, sizes, mtimes) and sub-folder names (sorted), as
    Python lists for a folder of a few thousand entries and as Arrow (names) and numpy (numbers) beyond: a folder of
    a million tables is a few buffers, not a million Python objects."""

    names: list | pa.Array
    sizes: list | np.ndarray
    mtimes: list | np.ndarray
    children: list | pa.Array

    @classmethod
    def of(cls, files: _Batches, children: _Batches) -> _Folder:
        """From the (name, size, mtime_ns) rows of the files and the (name,) rows of the sub-folders."""
        names, sizes, mtimes = (c if isinstance(c, list) or i == 0 else c.to_numpy()
                                for i, c in enumerate(files.columns("name")))
        return cls(names, sizes, mtimes, children.columns("name")[0])

    def has_child(self, name: str) -> bool:
        return _holds(self.children, name)

    def has_file(self, name: str) -> bool:
        return _holds(self.names, name)

    def rows(self):
        """(name, entry) of every file, sorted by name."""
        for i, name in enumerate(_names(self.names)):
            yield name, _Entry(int(self.sizes[i]), int(self.mtimes[i]))


def _bisect(sorted_strings, value: str, lo: int, hi: int) -> int:
    """First index in [lo, hi) whose string is >= ``value``, in a sorted list or Arrow array (Arrow sorts UTF-8
    bytes, Python code points: the same order)."""
    if isinstance(sorted_strings, list):
        return bisect_left(sorted_strings, value, lo, hi)
    while lo < hi:
        mid = (lo + hi) // 2
        if sorted_strings[mid].as_py() < value:
            lo = mid + 1
        else:
            hi = mid
    return lo


def _holds(sorted_strings, value: str) -> bool:
    i = _bisect(sorted_strings, value, 0, len(sorted_strings))
    if i == len(sorted_strings):
        return False
    return (sorted_strings[i] if isinstance(sorted_strings, list) else sorted_strings[i].as_py()) == value


class _Tree(ABC):
    """Folders of a lake, however they were listed: one listing of every object, or a local walk a folder at a
    time.  The last :data:`_KEPT` folders read stay cached."""

    def __init__(self):
        self._kept: OrderedDict[str, _Folder] = OrderedDict()

    def folder(self, folder: str) -> _Folder:
        if folder in self._kept:
            self._kept.move_to_end(folder)
            return self._kept[folder]
        self._kept[folder] = node = self._read(folder)
        if len(self._kept) > _KEPT:
            self._kept.popitem(last=False)
        return node

    @abstractmethod
    def _read(self, folder: str) -> _Folder:
        """What ``folder`` ('' for the root) directly holds."""

    def below(self, folder: str):
        """(relative folder, name, entry) of every file at or below ``folder``, folders sorted."""
        stack = [iter((folder,))]
        while stack:
            current = next(stack[-1], None)
            if current is None:
                stack.pop()
                continue
            node = self.folder(current)
            for name, entry in node.rows():
                yield current, name, entry
            stack.append(_subfolders(current, node.children, hidden=True))


class _SortedTree(_Tree):
    """A tree over one listing of every object (object storage answers a recursive LIST as one flat result), held
    as Arrow columns sorted by key: a folder is the range of keys under its prefix, found by bisection."""

    def __init__(self, keys: pa.Array, sizes: np.ndarray, mtimes: np.ndarray):
        super().__init__()
        order = pc.sort_indices(keys).to_numpy()
        self.keys = keys.take(pa.array(order))
        self.sizes, self.mtimes = np.asarray(sizes, np.int64)[order], np.asarray(mtimes, np.int64)[order]

    @classmethod
    def of(cls, pages) -> _SortedTree:
        """From pages of (key, size, mtime_ns) rows, each page made Arrow as it arrives."""
        keys, sizes, mtimes = [pa.array([], pa.string())], [np.zeros(0, np.int64)], [np.zeros(0, np.int64)]
        for page in pages:
            if page:
                keys.append(pa.array([p[0] for p in page], pa.string()))
                sizes.append(np.array([p[1] for p in page], np.int64))
                mtimes.append(np.array([p[2] for p in page], np.int64))
        return cls(pa.concat_arrays(keys), np.concatenate(sizes), np.concatenate(mtimes))

    def __len__(self) -> int:
        return len(self.keys)

    def _read(self, folder: str) -> _Folder:
        prefix = f"{folder}/" if folder else ""
        lo = _bisect(self.keys, prefix, 0, len(self.keys)) if folder else 0
        hi = _bisect(self.keys, f"{folder}0", lo, len(self.keys)) if folder else len(self.keys)  # '0' follows '/'
        if hi - lo <= _SMALL:
            files, children, last = _Batches(_FILES), _Batches(_NAMES), None
            for i, key in enumerate(self.keys.slice(lo, hi - lo).to_pylist(), lo):
                name, slash, _ = key[len(prefix):].partition("/")
                if slash:
                    if name != last:  # a sub-folder's keys are contiguous in key order
                        children.add(name)
                        last = name
                else:
                    files.add(name, int(self.sizes[i]), int(self.mtimes[i]))
            return _Folder.of(files, children)
        rest = pc.utf8_slice_codeunits(self.keys.slice(lo, hi - lo), len(prefix))
        deep = pc.match_substring(rest, "/").to_numpy(zero_copy_only=False)
        flat = np.flatnonzero(~deep)
        children = pc.unique(pc.list_element(pc.split_pattern(rest.filter(pa.array(deep)), "/", max_splits=1), 0))
        return _Folder(rest.take(pa.array(flat)), self.sizes[lo + flat], self.mtimes[lo + flat],
                       children.take(pc.sort_indices(children)))


class _LocalTree(_Tree):
    """A local folder read one sub-folder at a time.

    Links to folders are not walked (they may lead out of the lake, or round in a cycle); a link to a file is listed
    with its target's size and mtime, and a dangling one with its own, so the scan records why it cannot be read.
    """

    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def _read(self, folder: str) -> _Folder:
        files, children = _Batches(_FILES), _Batches(_NAMES)
        try:
            with os.scandir(os.path.join(self.root, folder) if folder else self.root) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        children.add(entry.name)
                    elif entry.is_symlink() and entry.is_dir():
                        continue
                    else:
                        try:
                            st = entry.stat()
                        except OSError:  # a dangling link: listed, so the scan records why it cannot be read
                            st = entry.stat(follow_symlinks=False)
                        files.add(entry.name, st.st_size, st.st_mtime_ns)
        except OSError:  # gone or unreadable since its parent was read: as os.walk, nothing listed
            pass
        return _Folder.of(files, children)


def _remote_pages(uri: str):
    """Pages of (key relative to ``uri``, size, mtime_ns) of every object under ``uri``.

    S3 is paged with boto3's ``list_objects_v2`` paginator, :data:`_PAGE` keys a request, so the listing holds at
    most a page as Python objects; fsspec's ``find`` returns the whole listing as one dict of dicts (about 1 KB an
    object).  Other object stores go through ``find``, one page.  Folder markers (keys ending in ``/``) are not
    objects of the lake.
    """
    fs, base = storage.filesystem(uri)
    if storage.scheme(uri) in ("s3", "s3a"):
        bucket, _, key = base.partition("/")
        prefix = f"{key.strip('/')}/" if key.strip("/") else ""
        try:
            for page in storage.s3_client().get_paginator("list_objects_v2").paginate(
                    Bucket=bucket, Prefix=prefix, PaginationConfig={"PageSize": _PAGE}):
                yield [(o["Key"][len(prefix):], int(o.get("Size") or 0), _mtime_ns(o.get("LastModified")))
                       for o in page.get("Contents", ()) if not o["Key"].endswith("/")]
        except Exception as exc:  # botocore raises a dozen types for a missing bucket, refused keys, no endpoint
            raise storage.explain(exc, uri, "lake") from None
        return
    page = []
    for full, info in fs.find(base, detail=True, withdirs=False).items():
        rel = full[len(base):].lstrip("/")
        if rel and info.get("type") != "directory":
            mtime = info.get("mtime") or info.get("LastModified") or info.get("last_modified") or info.get("updated")
            page.append((rel, int(info.get("size") or 0), _mtime_ns(mtime)))
    yield page


def _digest(items) -> str:
    h = hashlib.blake2b(digest_size=16)
    for item in items:
        h.update(repr(item).encode())
        h.update(b"\0")
    return h.hexdigest()


def _data_files(tree: _Tree, folder: str, skip: tuple[str, ...] = ()):
    """Data files of a dataset folder: every file below it but metadata (hidden names, ``skip`` sub-folders)."""
    for current, name, entry in tree.below(folder):
        rel = current[len(folder):].lstrip("/")
        parts = rel.split("/") if rel else []
        if parts and parts[0] in skip:
            continue
        if _hidden(name) or any(_hidden(p) for p in parts) or name.endswith(".crc"):
            continue
        yield (f"{rel}/{name}" if rel else name), entry


def _partition_format(files: list[tuple[str, _Entry]]) -> str:
    """The table format most data files of a partitioned folder have (ties: the name sorting first)."""
    counts: dict[str, int] = defaultdict(int)
    for rel, _ in files:
        fmt = file_format(rel.rpartition("/")[2])
        if fmt:
            counts[fmt] += 1
    if not counts:
        return "parquet"
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _dataset(out: _Rows, tree: _Tree, folder: str, fmt: str, fingerprint: str | None = None, skip=()) -> None:
    files = list(_data_files(tree, folder, skip))
    if fmt == "hive":
        fmt = f"hive/{_partition_format(files)}"
    size = sum(e.size for _, e in files)
    mtime = max((e.mtime_ns for _, e in files), default=0)
    if fingerprint is None:
        fingerprint = _digest((rel, e.size, e.mtime_ns) for rel, e in files)
    out.add(folder, size, mtime, fmt, fingerprint)


def _delta_version(tree: _Tree, folder: str) -> int | None:
    names = _names(tree.folder(_sub(folder, "_delta_log")).names)
    versions = [int(m.group(1)) for m in map(DELTA_LOG_ENTRY.match, names) if m]
    return max(versions) if versions else None


def _iceberg_metadata(tree: _Tree, folder: str) -> str | None:
    """Name of the newest metadata file: the highest ``vN`` (Hadoop layout) or ``NNNNN-<uuid>`` (catalog layout)."""
    best, best_key = None, None
    for name, entry in tree.folder(_sub(folder, "metadata")).rows():
        m = ICEBERG_METADATA.match(name)
        if m:
            key = (int(m.group(1) or m.group(2)), entry.mtime_ns, name)
            if best_key is None or key > best_key:
                best, best_key = name, key
    return best


def _is_partitioned(node: _Folder) -> bool:
    subs = (c for c in _names(node.children) if not _hidden(c))
    first = next(subs, None)
    return first is not None and bool(_PARTITION.match(first)) and all(_PARTITION.match(c) for c in subs)


def _part_format(node: _Folder) -> str | None:
    """The format of a part-file folder, or None: ``part-*`` files of one table format beside ``_SUCCESS`` or other
    part files, and no sub-folders but hidden ones."""
    parts = [name for name in _names(node.names) if _PART_FILE.match(name)]
    if not parts or any(not _hidden(c) for c in _names(node.children)):
        return None
    formats = {file_format(n) for n in parts}
    formats.discard(None)
    if len(formats) != 1:
        return None
    if not node.has_file("_SUCCESS") and len(parts) < 2:
        return None
    return formats.pop()


def _classify(tree: _Tree, folder: str, out: _Rows) -> None:
    """Add the tables at or below ``folder`` to ``out``, depth first, the folder's files before its sub-folders.

    The walk holds an iterator of names per level, not a list of paths: a folder of a million tables is walked from
    its Arrow column of names.
    """
    stack = [iter((folder,))]
    while stack:
        folder = next(stack[-1], None)
        if folder is None:
            stack.pop()
            continue
        node = tree.folder(folder)
        if folder:
            if node.has_child("_delta_log"):
                _dataset(out, tree, folder, "delta", f"v{_delta_version(tree, folder)}", skip=("_delta_log",))
                continue
            metadata = _iceberg_metadata(tree, folder) if node.has_child("metadata") else None
            if metadata:
                _dataset(out, tree, folder, "iceberg", metadata, skip=("metadata",))
                continue
            if _is_partitioned(node):
                _dataset(out, tree, folder, "hive")
                continue
            parts = _part_format(node)
            if parts:
                _dataset(out, tree, folder, f"parts/{parts}")
                continue
        for name, entry in node.rows():
            fmt = file_format(name)
            if fmt is not None and not _hidden(name):
                out.add(_sub(folder, name), entry.size, entry.mtime_ns, fmt,
                        file_fingerprint(entry.size, entry.mtime_ns))
        stack.append(_subfolders(folder, node.children))


def list_lake(root: str, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> Listing:
    """Every table of the lake at ``root`` (a folder, an object-store URI, or ``iceberg://<catalog>/<namespace>``),
    sorted by path, kept by the ``include`` / ``exclude`` patterns (:mod:`.patterns`).

    Raises FileNotFoundError for a missing root, naming it.
    """
    out = _Rows(TableFilter(include, exclude))
    if storage.scheme(root) == "iceberg":
        from .iceberg import list_catalog

        for path, fingerprint in list_catalog(root):
            out.add(path, 0, 0, "iceberg", fingerprint)
    else:
        root = root if storage.is_remote(root) else storage.local_path(root)
        _classify(_tree(root), "", out)
    return out.listing()


def _tree(root: str) -> _Tree:
    if storage.is_remote(root):
        storage.check(root, "lake")
        tree = _SortedTree.of(_remote_pages(root))
        if not len(tree):
            fs, base = storage.filesystem(root)
            if not fs.exists(base):
                raise FileNotFoundError(f"lake {root!r} does not exist")
        return tree
    if not os.path.isdir(root):
        raise FileNotFoundError(f"lake folder {root!r} does not exist or is not a folder")
    return _LocalTree(root)


def locate(path: str) -> tuple[str, LakeTable]:
    """(root, table) for one table named by its own path: a file, a dataset folder, or an object-store URI.

    Used for query tables given outside the lake; raises FileNotFoundError (missing) or ValueError (a folder that is
    no dataset, a file of no table format).
    """
    remote = storage.is_remote(path)
    path = path.rstrip("/") if remote else os.path.abspath(path)
    root, _, name = path.rpartition("/") if remote else (os.path.dirname(path), None, os.path.basename(path))
    if remote:
        fs, base = storage.filesystem(path)
        if not fs.exists(base):
            raise FileNotFoundError(f"{path!r} does not exist")
        is_dir = fs.isdir(base)
    else:
        if not os.path.exists(path):
            raise FileNotFoundError(f"{path!r} does not exist")
        is_dir = os.path.isdir(path)
    if not is_dir:
        fmt = file_format(name) or "csv"
        size = fs.size(base) if remote else os.path.getsize(path)
        return root, LakeTable(name, int(size or 0), 0, fmt, "")
    found = _Rows()
    tree = (_SortedTree.of([(f"{name}/{key}", size, mtime) for key, size, mtime in page]
                           for page in _remote_pages(path)) if remote else _LocalTree(root))
    _classify(tree, name, found)
    dataset = [t for t in found.listing() if t.path == name]
    if not dataset:
        raise ValueError(f"folder {path!r} is not a table: it holds no _delta_log/, Iceberg metadata/, key=value "
                         f"partitions or part files (name one of its files instead)")
    return root, dataset[0]
