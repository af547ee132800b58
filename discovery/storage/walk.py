"""Walking a storage tree: what each folder directly holds, read a folder at a time (locally) or from one listing of
every object (object storage answers a recursive LIST as one flat result).

The walk holds folders as Arrow, not one Python object per entry: a local walk the last :data:`KEPT` folders it read,
an object-store walk the sorted keys of one listing (:class:`SortedTree`), paged in as Arrow by the backend
(:meth:`discovery.storage.backends.Backend.pages`).  What the folders mean (a Delta table, a partitioned dataset, a
file table) is the lake's business (:mod:`discovery.data.lake.listing`); this module knows names, sizes and times.
"""
from __future__ import annotations

import os
from abc import ABC, abstractmethod
from bisect import bisect_left
from collections import OrderedDict
from dataclasses import dataclass
from operator import itemgetter

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

#: Rows gathered in Python before they become one Arrow batch.
BATCH = 8192
#: Keys of a folder below which an object-store walk reads the folder in Python rather than with Arrow kernels
#: (a dozen kernel calls cost more than a few hundred strings).
SMALL = 256
#: A folder's files and sub-folders, as a walk reads them.
FILES = pa.schema([("name", pa.string()), ("size", pa.int64()), ("mtime_ns", pa.int64())])
NAMES = pa.schema([("name", pa.string())])
#: Local folders whose entries stay cached while a walk reads them: a dataset folder is read for its
#: classification and again for its data files, and a parent's entries are needed while its children are walked.
KEPT = 64


class Batches:
    """Rows gathered :data:`BATCH` at a time, each full batch made Arrow at once: what the walk collects (tables,
    a folder's entries) is never more than a batch of Python tuples."""

    def __init__(self, schema: pa.Schema):
        self.schema = schema
        self.rows: list[tuple] = []
        self.batches: list[pa.RecordBatch] = []

    def add(self, *row) -> None:
        self.rows.append(row)
        if len(self.rows) >= BATCH:
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


@dataclass(frozen=True)
class Entry:
    size: int
    mtime_ns: int


def mtime_ns_of(mtime) -> int:
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1e9)
    try:
        return int(float(mtime) * 1e9)
    except (TypeError, ValueError):
        return 0


def sub(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


def names_of(names):
    """The strings of ``names`` (a list, or an Arrow array converted :data:`BATCH` at a time)."""
    if isinstance(names, list):
        yield from names
        return
    for start in range(0, len(names), BATCH):
        yield from names.slice(start, BATCH).to_pylist()


def subfolders(folder: str, names, keep=lambda name: True):
    """Paths of the sub-folders ``names`` of ``folder`` that ``keep`` keeps (a generator, so each is bound to its own
    folder)."""
    for name in names_of(names):
        if keep(name):
            yield sub(folder, name)


@dataclass(frozen=True)
class Folder:
    """What one folder directly holds: its files (sorted names, sizes, mtimes) and sub-folder names (sorted), as
    Python lists for a folder of a few thousand entries and as Arrow (names) and numpy (numbers) beyond: a folder of
    a million tables is a few buffers, not a million Python objects."""

    names: list | pa.Array
    sizes: list | np.ndarray
    mtimes: list | np.ndarray
    children: list | pa.Array

    @classmethod
    def of(cls, files: Batches, children: Batches) -> Folder:
        """From the (name, size, mtime_ns) rows of the files and the (name,) rows of the sub-folders."""
        names, sizes, mtimes = (c if isinstance(c, list) or i == 0 else c.to_numpy()
                                for i, c in enumerate(files.columns("name")))
        return cls(names, sizes, mtimes, children.columns("name")[0])

    def has_child(self, name: str) -> bool:
        return holds(self.children, name)

    def has_file(self, name: str) -> bool:
        return holds(self.names, name)

    def rows(self):
        """(name, entry) of every file, sorted by name."""
        for i, name in enumerate(names_of(self.names)):
            yield name, Entry(int(self.sizes[i]), int(self.mtimes[i]))


def bisect(sorted_strings, value: str, lo: int, hi: int) -> int:
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


def holds(sorted_strings, value: str) -> bool:
    i = bisect(sorted_strings, value, 0, len(sorted_strings))
    if i == len(sorted_strings):
        return False
    return (sorted_strings[i] if isinstance(sorted_strings, list) else sorted_strings[i].as_py()) == value


class Tree(ABC):
    """Folders of a lake, however they were listed: one listing of every object, or a local walk a folder at a
    time.  The last :data:`KEPT` folders read stay cached."""

    def __init__(self):
        self._kept: OrderedDict[str, Folder] = OrderedDict()

    def folder(self, folder: str) -> Folder:
        if folder in self._kept:
            self._kept.move_to_end(folder)
            return self._kept[folder]
        self._kept[folder] = node = self._read(folder)
        if len(self._kept) > KEPT:
            self._kept.popitem(last=False)
        return node

    @abstractmethod
    def _read(self, folder: str) -> Folder:
        """What ``folder`` ('' for the root) directly holds."""

    def walk(self, folder: str, visit, keep=lambda name: True) -> None:
        """Depth first from ``folder``, sub-folders sorted: ``visit(folder, node)`` for each folder, whose
        sub-folders that ``keep`` keeps are walked when it returns True.  The walk holds an iterator of names per
        level, not a list of paths: a folder of a million entries is walked from its Arrow column of names."""
        stack = [iter((folder,))]
        while stack:
            current = next(stack[-1], None)
            if current is None:
                stack.pop()
                continue
            node = self.folder(current)
            if visit(current, node):
                stack.append(subfolders(current, node.children, keep))

    def below(self, folder: str) -> list:
        """(relative folder, name, entry) of every file at or below ``folder``, folders sorted."""
        found: list = []

        def visit(current: str, node) -> bool:
            found.extend((current, n, e) for n, e in node.rows())
            return True

        self.walk(folder, visit)
        return found


class SortedTree(Tree):
    """A tree over one listing of every object (object storage answers a recursive LIST as one flat result), held
    as Arrow columns sorted by key: a folder is the range of keys under its prefix, found by bisection."""

    def __init__(self, keys: pa.Array, sizes: np.ndarray, mtimes: np.ndarray):
        super().__init__()
        order = pc.sort_indices(keys).to_numpy()
        self.keys = keys.take(pa.array(order))
        self.sizes, self.mtimes = np.asarray(sizes, np.int64)[order], np.asarray(mtimes, np.int64)[order]

    @classmethod
    def of(cls, pages) -> SortedTree:
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

    def _read(self, folder: str) -> Folder:
        prefix = f"{folder}/" if folder else ""
        lo = bisect(self.keys, prefix, 0, len(self.keys)) if folder else 0
        hi = bisect(self.keys, f"{folder}0", lo, len(self.keys)) if folder else len(self.keys)  # '0' follows '/'
        if hi - lo <= SMALL:
            files, children, last = Batches(FILES), Batches(NAMES), None
            for i, key in enumerate(self.keys.slice(lo, hi - lo).to_pylist(), lo):
                name, slash, _ = key[len(prefix):].partition("/")
                if slash:
                    if name != last:  # a sub-folder's keys are contiguous in key order
                        children.add(name)
                        last = name
                else:
                    files.add(name, int(self.sizes[i]), int(self.mtimes[i]))
            return Folder.of(files, children)
        rest = pc.utf8_slice_codeunits(self.keys.slice(lo, hi - lo), len(prefix))
        deep = pc.match_substring(rest, "/").to_numpy(zero_copy_only=False)
        flat = np.flatnonzero(~deep)
        children = pc.unique(pc.list_element(pc.split_pattern(rest.filter(pa.array(deep)), "/", max_splits=1), 0))
        return Folder(rest.take(pa.array(flat)), self.sizes[lo + flat], self.mtimes[lo + flat],
                       children.take(pc.sort_indices(children)))


class LocalTree(Tree):
    """A local folder read one sub-folder at a time.

    Links to folders are not walked (they may lead out of the lake, or round in a cycle); a link to a file is listed
    with its target's size and mtime, and a dangling one with its own, so the scan records why it cannot be read.
    """

    def __init__(self, root: str):
        super().__init__()
        self.root = root

    def _read(self, folder: str) -> Folder:
        files, children = Batches(FILES), Batches(NAMES)
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
        return Folder.of(files, children)
