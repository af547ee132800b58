"""Which data files are live, and deleting the others: from table state, never from commit metadata.

A data file is live when a retained version of its table references it: the current version, every version committed
within the retention window (``[maintenance] snapshot_retention_days``, the longest a snapshot is kept), and every
version a retained snapshot pins.  A bookkeeping table (``query_results``, ``snapshots``, ...) retains its current
version only, as vacuum treats it: no snapshot pins it, its readers read the latest version and list it again when a
file vanishes, and its log is kept an hour (:data:`~.warehouse.BOOKKEEPING_LOG_RETENTION`), too short for a
window's first version to load.  Retained versions form one range, from the oldest of them to the current one, and
the files that range references are those of its first version (delta-rs' file list of that version) plus every file
a later version adds (the ``add`` actions of each later version's log entry).  Commit metadata is no guide: delta-rs
checkpoints and then deletes log entries older than the log retention, and with them the history a token could be
looked up in.  The log entries of the range itself always exist, because the log retention is at least the snapshot
retention (:class:`discovery.config.MaintenanceConfig` refuses a config that breaks this); where one is missing
anyway, or the first version does not load, nothing of that table is deleted.

A file no retained version references is an orphan: an attempt's output that never committed (a killed refresh, a
lost race), or a file whose version left the window.  It is deleted only when it is older than a grace period
longer than a refresh can run, since a writer may still be about to commit it, and only by a run that holds the
warehouse lease (:mod:`.lease`), so no refresh is writing meanwhile.
"""
from __future__ import annotations

import json
import re
import time
from concurrent.futures import ThreadPoolExecutor
from collections.abc import Iterable
from urllib.parse import unquote

import pyarrow.fs as pafs
from deltalake.exceptions import DeltaError

from .files import resolve
from .schema import BOOKKEEPING_TABLES, INDEX_TABLES, SCHEMAS
from .snapshot import list_snapshots
from .warehouse import Warehouse, WarehouseError

_COMMIT = re.compile(r"^(\d{20})\.json$")
#: Log entries read at once (see :func:`referenced_files`).
READERS = 16


def commit_log(wh: Warehouse, name: str) -> tuple[pafs.FileSystem, str, dict[int, float]]:
    """(filesystem, log folder, {version: mtime of its commit file}) of ``name``."""
    fs, root = resolve(wh.table_uri(name))
    folder = f"{root.rstrip('/')}/_delta_log"
    commits = {}
    for info in fs.get_file_info(pafs.FileSelector(folder, allow_not_found=True)):
        m = _COMMIT.match(info.base_name)
        if m:
            commits[int(m[1])] = info.mtime.timestamp() if info.mtime is not None else 0.0
    return fs, folder, commits


def first_retained(commits: dict[int, float], current: int, pinned: Iterable[int], since: float) -> int:
    """The oldest retained version: of the current one, those committed at or after ``since``, the ``pinned``."""
    recent = [v for v, mtime in commits.items() if mtime >= since and v <= current]
    return min([current, *recent, *(v for v in pinned if 0 <= v <= current)])


def _added(fs: pafs.FileSystem, folder: str, version: int) -> list[str]:
    """Paths the log entry of ``version`` adds (its ``add`` actions: table state, not commit metadata)."""
    with fs.open_input_stream(f"{folder}/{version:020d}.json") as fh:
        actions = [json.loads(line) for line in fh.read().decode().splitlines() if line.strip()]
    return [unquote(a["add"]["path"]) for a in actions if "add" in a]


def referenced_files(wh: Warehouse, name: str, pinned: Iterable[int] = (), since: float = 0.0) -> set[str] | None:
    """Table-relative paths of every file a retained version of ``name`` references; None when the retained range
    cannot be read in full (then no file of the table may be called an orphan)."""
    fs, folder, commits = commit_log(wh, name)
    current = wh.version(name)
    first = first_retained(commits, current, pinned, since)
    try:
        live = set(wh.files(name, first).column("path").to_pylist())
        # A busy query_results gathers thousands of commits in the window: on object storage each is a GET, so they
        # are read concurrently.
        with ThreadPoolExecutor(max_workers=READERS) as pool:
            for added in pool.map(lambda v: _added(fs, folder, v), range(first + 1, current + 1)):
                live.update(added)
    except (OSError, ValueError, KeyError, DeltaError, WarehouseError):
        return None
    return live


def cleanup_orphans(wh: Warehouse, name: str, *, pinned: Iterable[int] = (), window_seconds: float,
                    grace_seconds: float, now: float | None = None) -> list[str]:
    """Delete the data files of ``name`` that no retained version references and that are older than
    ``grace_seconds``; returns their names.  The caller holds the warehouse lease.

    The folder is listed before the table state is read, so a file committed in between counts as referenced."""
    now = time.time() if now is None else now
    fs, root = resolve(wh.table_uri(name))
    listing = [info for info in fs.get_file_info(pafs.FileSelector(root, recursive=False))
               if info.type == pafs.FileType.File and info.base_name.endswith(".parquet")
               and not info.base_name.startswith(("_", "."))]
    live = referenced_files(wh, name, pinned, now - window_seconds)
    if live is None:
        return []
    removed = []
    for info in listing:
        if info.base_name in live or info.mtime is None or info.mtime.timestamp() > now - grace_seconds:
            continue
        fs.delete_file(info.path)
        removed.append(info.base_name)
    return sorted(removed)


def pinned_versions(wh: Warehouse) -> dict[str, set[int]]:
    """The versions of every index table that the retained snapshots pin."""
    pins: dict[str, set[int]] = {name: set() for name in INDEX_TABLES}
    for snap in list_snapshots(wh):
        for name, version in snap.versions.items():
            pins.setdefault(name, set()).add(int(version))
    return pins


def cleanup_warehouse(wh: Warehouse, *, window_seconds: float, grace_seconds: float,
                      now: float | None = None) -> dict[str, list[str]]:
    """:func:`cleanup_orphans` of every table, each with the versions the retained snapshots pin (a bookkeeping
    table with its current version only)."""
    pins = pinned_versions(wh)
    return {name: cleanup_orphans(wh, name, pinned=pins.get(name, ()),
                                  window_seconds=0.0 if name in BOOKKEEPING_TABLES else window_seconds,
                                  grace_seconds=grace_seconds, now=now) for name in SCHEMAS}
