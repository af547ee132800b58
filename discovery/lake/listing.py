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
cost it 30 MB at 100,000 tables (49 MB at the peak) and grew with the lake, while the columns cost 7.5 MB and the
walk holds only the folders it is classifying (``_KEPT`` of them at most, locally).
"""
from __future__ import annotations

import hashlib
import os
import re
from abc import ABC, abstractmethod
from collections import OrderedDict, defaultdict
from dataclasses import dataclass

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


class _Rows:
    """Sink of the walk: keeps the tables the patterns keep, as Arrow batches of :data:`_BATCH` rows."""

    def __init__(self, keep=lambda path: True):
        self.keep = keep
        self.rows: list[tuple] = []
        self.batches: list[pa.RecordBatch] = []

    def add(self, path: str, size: int, mtime_ns: int, fmt: str, fingerprint: str) -> None:
        if self.keep(path):
            self.rows.append((path, int(size), int(mtime_ns), fmt, fingerprint))
            if len(self.rows) >= _BATCH:
                self._flush()

    def _flush(self) -> None:
        if self.rows:
            self.batches.append(pa.RecordBatch.from_arrays(
                [pa.array(col, field.type) for col, field in zip(zip(*self.rows), LISTING_COLUMNS)],
                schema=LISTING_COLUMNS))
            self.rows = []

    def listing(self) -> Listing:
        self._flush()
        table = pa.Table.from_batches(self.batches, schema=LISTING_COLUMNS)
        if table.num_rows:
            table = table.take(pc.sort_indices(table, [("path", "ascending")])).combine_chunks()
        return Listing(table)


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime_ns: int


def file_fingerprint(size: int, mtime_ns: int) -> str:
    return f"{int(size)}:{int(mtime_ns)}"


def _mtime_ns(info: dict) -> int:
    mtime = info.get("mtime") or info.get("LastModified") or info.get("last_modified") or info.get("updated") or 0
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1e9)
    try:
        return int(float(mtime) * 1e9)
    except (TypeError, ValueError):
        return 0


def _walk_remote(root: str) -> dict[str, dict[str, _Entry]]:
    """{folder (relative, '' for the root): {file name: entry}} of every object under ``root``."""
    fs, base = storage.filesystem(root)
    tree: dict[str, dict[str, _Entry]] = defaultdict(dict)
    for full, info in fs.find(base, detail=True, withdirs=False).items():
        rel = full[len(base):].lstrip("/")
        if not rel or info.get("type") == "directory":
            continue
        folder, _, name = rel.rpartition("/")
        tree[folder][name] = _Entry(int(info.get("size") or 0), _mtime_ns(info))
        while folder:
            folder = folder.rpartition("/")[0]
            tree[folder]
    return tree


def _sub(folder: str, name: str) -> str:
    return f"{folder}/{name}" if folder else name


class _Tree(ABC):
    """Folders of a lake, however they were listed: one listing of every object, or a local walk a folder at a time."""

    @abstractmethod
    def files(self, folder: str) -> dict[str, _Entry]:
        """{name: entry} of the files directly in ``folder``."""

    @abstractmethod
    def children(self, folder: str) -> list[str]:
        """Names of the sub-folders of ``folder``, sorted."""

    def below(self, folder: str):
        """(relative folder, name, entry) of every file at or below ``folder``, folders sorted."""
        stack = [folder]
        while stack:
            current = stack.pop()
            for name, entry in sorted(self.files(current).items()):
                yield current, name, entry
            stack.extend(_sub(current, c) for c in reversed(self.children(current)))


class _ListedTree(_Tree):
    """A tree from one listing of every object (object storage answers a recursive LIST as one flat result)."""

    def __init__(self, files: dict[str, dict[str, _Entry]]):
        self._files = files
        self._children: dict[str, set[str]] = defaultdict(set)
        for folder in files:
            while folder:
                parent, _, name = folder.rpartition("/")
                self._children[parent].add(name)
                folder = parent

    def files(self, folder: str) -> dict[str, _Entry]:
        return self._files.get(folder, {})

    def children(self, folder: str) -> list[str]:
        return sorted(self._children.get(folder, ()))


class _LocalTree(_Tree):
    """A local folder read one sub-folder at a time, the last :data:`_KEPT` folders cached.

    Links to folders are not walked (they may lead out of the lake, or round in a cycle); a link to a file is listed
    with its target's size and mtime, and a dangling one with its own, so the scan records why it cannot be read.
    """

    def __init__(self, root: str):
        self.root = root
        self._kept: OrderedDict[str, tuple[dict[str, _Entry], list[str]]] = OrderedDict()

    def _read(self, folder: str) -> tuple[dict[str, _Entry], list[str]]:
        if folder in self._kept:
            self._kept.move_to_end(folder)
            return self._kept[folder]
        files: dict[str, _Entry] = {}
        children: list[str] = []
        try:
            with os.scandir(os.path.join(self.root, folder) if folder else self.root) as entries:
                for entry in entries:
                    if entry.is_dir(follow_symlinks=False):
                        children.append(entry.name)
                    elif entry.is_symlink() and entry.is_dir():
                        continue
                    else:
                        try:
                            st = entry.stat()
                        except OSError:  # a dangling link: listed, so the scan records why it cannot be read
                            st = entry.stat(follow_symlinks=False)
                        files[entry.name] = _Entry(st.st_size, st.st_mtime_ns)
        except OSError:  # gone or unreadable since its parent was read: as os.walk, nothing listed
            pass
        self._kept[folder] = (files, sorted(children))
        if len(self._kept) > _KEPT:
            self._kept.popitem(last=False)
        return self._kept[folder]

    def files(self, folder: str) -> dict[str, _Entry]:
        return self._read(folder)[0]

    def children(self, folder: str) -> list[str]:
        return self._read(folder)[1]


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
    names = tree.files(_sub(folder, "_delta_log"))
    versions = [int(m.group(1)) for m in map(DELTA_LOG_ENTRY.match, names) if m]
    return max(versions) if versions else None


def _iceberg_metadata(tree: _Tree, folder: str) -> str | None:
    """Name of the newest metadata file: the highest ``vN`` (Hadoop layout) or ``NNNNN-<uuid>`` (catalog layout)."""
    names = tree.files(_sub(folder, "metadata"))
    best, best_key = None, None
    for name in names:
        m = ICEBERG_METADATA.match(name)
        if m:
            key = (int(m.group(1) or m.group(2)), names[name].mtime_ns, name)
            if best_key is None or key > best_key:
                best, best_key = name, key
    return best


def _is_partitioned(tree: _Tree, folder: str) -> bool:
    subs = [c for c in tree.children(folder) if not _hidden(c)]
    return bool(subs) and all(_PARTITION.match(c) for c in subs)


def _part_format(tree: _Tree, folder: str) -> str | None:
    """The format of a part-file folder, or None: ``part-*`` files of one table format beside ``_SUCCESS`` or other
    part files, and no sub-folders but hidden ones."""
    files = tree.files(folder)
    parts = [n for n in files if _PART_FILE.match(n)]
    if not parts or [c for c in tree.children(folder) if not _hidden(c)]:
        return None
    formats = {file_format(n) for n in parts}
    formats.discard(None)
    if len(formats) != 1:
        return None
    if "_SUCCESS" not in files and len(parts) < 2:
        return None
    return formats.pop()


def _classify(tree: _Tree, folder: str, out: _Rows) -> None:
    """Add the tables at or below ``folder`` to ``out``, depth first, the folder's files before its sub-folders."""
    stack = [folder]
    while stack:
        folder = stack.pop()
        children = tree.children(folder)
        if folder:
            if "_delta_log" in children:
                _dataset(out, tree, folder, "delta", f"v{_delta_version(tree, folder)}", skip=("_delta_log",))
                continue
            metadata = _iceberg_metadata(tree, folder) if "metadata" in children else None
            if metadata:
                _dataset(out, tree, folder, "iceberg", metadata, skip=("metadata",))
                continue
            if _is_partitioned(tree, folder):
                _dataset(out, tree, folder, "hive")
                continue
            parts = _part_format(tree, folder)
            if parts:
                _dataset(out, tree, folder, f"parts/{parts}")
                continue
        for name, entry in sorted(tree.files(folder).items()):
            fmt = file_format(name)
            if fmt is not None and not _hidden(name):
                out.add(_sub(folder, name), entry.size, entry.mtime_ns, fmt,
                        file_fingerprint(entry.size, entry.mtime_ns))
        stack.extend(_sub(folder, name) for name in reversed(children) if not _hidden(name))


def list_lake(root: str, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> Listing:
    """Every table of the lake at ``root`` (a folder, an object-store URI, or ``iceberg://<catalog>/<namespace>``),
    sorted by path, kept by the ``include`` / ``exclude`` patterns (:mod:`.patterns`).

    Raises FileNotFoundError for a missing root, naming it.
    """
    out = _Rows(TableFilter(include, exclude))
    if storage.scheme(root) == "iceberg":
        from .iceberg import list_catalog

        for table in list_catalog(root):
            out.add(table.path, table.size, table.mtime_ns, table.format, table.fingerprint)
    else:
        root = root if storage.is_remote(root) else storage.local_path(root)
        _classify(_tree(root), "", out)
    return out.listing()


def _tree(root: str) -> _Tree:
    if storage.is_remote(root):
        storage.check(root, "lake")
        files = _walk_remote(root)
        if not files:
            fs, base = storage.filesystem(root)
            if not fs.exists(base):
                raise FileNotFoundError(f"lake {root!r} does not exist")
        return _ListedTree(files)
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
    tree = (_ListedTree({(f"{name}/{k}" if k else name): v for k, v in _walk_remote(path).items()}) if remote
            else _LocalTree(root))
    _classify(tree, name, found)
    dataset = [t for t in found.listing() if t.path == name]
    if not dataset:
        raise ValueError(f"folder {path!r} is not a table: it holds no _delta_log/, Iceberg metadata/, key=value "
                         f"partitions or part files (name one of its files instead)")
    return root, dataset[0]
