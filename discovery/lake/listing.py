"""What a lake table is, decided by one listing of the lake.

The lake is listed once (``os.walk`` locally, one recursive LIST of the prefix on object storage: about one request
per 1,000 objects) and every folder is classified from the names it holds, top down:

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
"""
from __future__ import annotations

import hashlib
import os
import re
from collections import defaultdict
from dataclasses import dataclass

from .. import storage
from .formats import DATASET_KINDS, DELTA_LOG_ENTRY, ICEBERG_METADATA, file_format, is_metadata_name as _hidden
from .patterns import TableFilter

_PART_FILE = re.compile(r"^part-")
_PARTITION = re.compile(r"^[^=/]+=[^/]*$")


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


@dataclass(frozen=True)
class _Entry:
    size: int
    mtime_ns: int


def file_fingerprint(size: int, mtime_ns: int) -> str:
    return f"{int(size)}:{int(mtime_ns)}"


def _walk_local(root: str) -> dict[str, dict[str, _Entry]]:
    """{folder (relative, '' for the root): {file name: entry}} of every file under ``root``, links followed."""
    tree: dict[str, dict[str, _Entry]] = defaultdict(dict)
    for dirpath, dirnames, filenames in os.walk(root, followlinks=False):
        rel_dir = os.path.relpath(dirpath, root).replace(os.sep, "/")
        rel_dir = "" if rel_dir == "." else rel_dir
        dirnames.sort()
        tree[rel_dir]
        for name in filenames:
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:  # a dangling link: listed, so the scan records why it cannot be read
                st = os.lstat(full)
            tree[rel_dir][name] = _Entry(st.st_size, st.st_mtime_ns)
    return tree


def _mtime_ns(info: dict) -> int:
    mtime = info.get("mtime") or info.get("LastModified") or info.get("last_modified") or info.get("updated") or 0
    if hasattr(mtime, "timestamp"):
        return int(mtime.timestamp() * 1e9)
    try:
        return int(float(mtime) * 1e9)
    except (TypeError, ValueError):
        return 0


def _walk_remote(root: str) -> dict[str, dict[str, _Entry]]:
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


class _Tree:
    """Folders of one listing, with their sub-folders."""

    def __init__(self, files: dict[str, dict[str, _Entry]]):
        self.files = files
        self.children: dict[str, list[str]] = defaultdict(list)
        for folder in sorted(files):
            if folder:
                parent = folder.rpartition("/")[0]
                self.children[parent].append(folder.rpartition("/")[2])
        for folder in list(files):  # folders that hold only folders
            while folder:
                parent, _, name = folder.rpartition("/")
                if name not in self.children[parent]:
                    self.children[parent].append(name)
                folder = parent

    def sub(self, folder: str, name: str) -> str:
        return f"{folder}/{name}" if folder else name

    def below(self, folder: str):
        """(relative folder, name, entry) of every file at or below ``folder``, folders sorted."""
        stack = [folder]
        while stack:
            current = stack.pop()
            for name, entry in sorted(self.files.get(current, {}).items()):
                yield current, name, entry
            stack.extend(self.sub(current, c) for c in sorted(self.children.get(current, []), reverse=True))


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


def _dataset(tree: _Tree, folder: str, fmt: str, fingerprint: str | None = None, skip=()) -> LakeTable:
    files = list(_data_files(tree, folder, skip))
    size = sum(e.size for _, e in files)
    mtime = max((e.mtime_ns for _, e in files), default=0)
    if fingerprint is None:
        fingerprint = _digest((rel, e.size, e.mtime_ns) for rel, e in files)
    return LakeTable(folder, size, mtime, fmt, fingerprint)


def _delta_version(tree: _Tree, folder: str) -> int | None:
    names = tree.files.get(tree.sub(folder, "_delta_log"), {})
    versions = [int(m.group(1)) for m in map(DELTA_LOG_ENTRY.match, names) if m]
    return max(versions) if versions else None


def _iceberg_metadata(tree: _Tree, folder: str) -> str | None:
    """Name of the newest metadata file: the highest ``vN`` (Hadoop layout) or ``NNNNN-<uuid>`` (catalog layout)."""
    names = tree.files.get(tree.sub(folder, "metadata"), {})
    best, best_key = None, None
    for name in names:
        m = ICEBERG_METADATA.match(name)
        if m:
            key = (int(m.group(1) or m.group(2)), names[name].mtime_ns, name)
            if best_key is None or key > best_key:
                best, best_key = name, key
    return best


def _is_partitioned(tree: _Tree, folder: str) -> bool:
    subs = [c for c in tree.children.get(folder, []) if not _hidden(c)]
    return bool(subs) and all(_PARTITION.match(c) for c in subs)


def _part_format(tree: _Tree, folder: str) -> str | None:
    """The format of a part-file folder, or None: ``part-*`` files of one table format beside ``_SUCCESS`` or other
    part files, and no sub-folders but hidden ones."""
    files = tree.files.get(folder, {})
    parts = [n for n in files if _PART_FILE.match(n)]
    if not parts or [c for c in tree.children.get(folder, []) if not _hidden(c)]:
        return None
    formats = {file_format(n) for n in parts}
    formats.discard(None)
    if len(formats) != 1:
        return None
    if "_SUCCESS" not in files and len(parts) < 2:
        return None
    return formats.pop()


def _partition_format(tree: _Tree, folder: str) -> str:
    """The table format most data files of a partitioned folder have (ties: the name sorting first)."""
    counts: dict[str, int] = defaultdict(int)
    for rel, _ in _data_files(tree, folder):
        fmt = file_format(rel.rpartition("/")[2])
        if fmt:
            counts[fmt] += 1
    if not counts:
        return "parquet"
    return sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[0][0]


def _classify(tree: _Tree, folder: str, out: list[LakeTable]) -> None:
    children = tree.children.get(folder, [])
    if folder:
        if "_delta_log" in children:
            version = _delta_version(tree, folder)
            out.append(_dataset(tree, folder, "delta", f"v{version}", skip=("_delta_log",)))
            return
        if "metadata" in children and _iceberg_metadata(tree, folder):
            out.append(_dataset(tree, folder, "iceberg", _iceberg_metadata(tree, folder), skip=("metadata",)))
            return
        if _is_partitioned(tree, folder):
            out.append(_dataset(tree, folder, f"hive/{_partition_format(tree, folder)}"))
            return
        parts = _part_format(tree, folder)
        if parts:
            out.append(_dataset(tree, folder, f"parts/{parts}"))
            return
    for name, entry in sorted(tree.files.get(folder, {}).items()):
        fmt = file_format(name)
        if fmt is None or _hidden(name):
            continue
        out.append(LakeTable(tree.sub(folder, name), entry.size, entry.mtime_ns, fmt,
                             file_fingerprint(entry.size, entry.mtime_ns)))
    for name in sorted(children):
        if not _hidden(name):
            _classify(tree, tree.sub(folder, name), out)


def list_lake(root: str, include: tuple[str, ...] = (), exclude: tuple[str, ...] = ()) -> list[LakeTable]:
    """Every table of the lake at ``root`` (a folder, an object-store URI, or ``iceberg://<catalog>/<namespace>``),
    sorted by path, kept by the ``include`` / ``exclude`` patterns (:mod:`.patterns`).

    Raises FileNotFoundError for a missing root, naming it.
    """
    if storage.scheme(root) == "iceberg":
        from .iceberg import list_catalog

        tables = list_catalog(root)
    else:
        root = root if storage.is_remote(root) else storage.local_path(root)
        tables = []
        _classify(_Tree(_listing(root)), "", tables)
    keep = TableFilter(include, exclude)
    return sorted((t for t in tables if keep(t.path)), key=lambda t: t.path)


def _listing(root: str) -> dict[str, dict[str, _Entry]]:
    if storage.is_remote(root):
        storage.check(root, "lake")
        files = _walk_remote(root)
        if not files:
            fs, base = storage.filesystem(root)
            if not fs.exists(base):
                raise FileNotFoundError(f"lake {root!r} does not exist")
        return files
    if not os.path.isdir(root):
        raise FileNotFoundError(f"lake folder {root!r} does not exist or is not a folder")
    return _walk_local(root)


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
    found: list[LakeTable] = []
    sub = _Tree({(f"{name}/{k}" if k else name): v for k, v in
                 (_walk_remote(path) if remote else _walk_local(path)).items()})
    _classify(sub, name, found)
    dataset = [t for t in found if t.path == name]
    if not dataset:
        raise ValueError(f"folder {path!r} is not a table: it holds no _delta_log/, Iceberg metadata/, key=value "
                         f"partitions or part files (name one of its files instead)")
    return root, dataset[0]
