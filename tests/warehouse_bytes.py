"""Where a warehouse's bytes are: per top-level folder, and per Delta table and query-array folder by what keeps them.

Used by the soak (``soak_run.py``) after every maintenance, on the faulted warehouse and on a fresh build of
the same lake, to tell waste from data that retained snapshots legitimately need.  A data file of a Delta table is
counted once, in the first of these categories that holds it:

* ``latest``: the current version lists it;
* ``snapshots``: a version a retained snapshot pins lists it;
* ``window``: a version committed within the retention window lists it (maintenance keeps those versions' files);
* ``range``: only a version between those lists it, neither pinned nor in the window, which the orphan cleanup
  counts as live because it takes every file added from the oldest retained version on;
* ``unreferenced``: no version from the oldest retained one on lists it: garbage waiting for the grace period.

A table's ``_delta_log`` is ``log_json`` (commit files), ``log_checkpoint`` (checkpoints) and ``log_other``.  A folder
under ``query_arrays/`` is ``arrays_latest`` (the latest snapshot's), ``arrays_snapshots`` (another retained
snapshot's), ``arrays_unpinned`` (no retained snapshot's) or ``arrays_temp`` (a writer's temporary ``.name.*``
folder).  Everything else is ``other``.
"""
from __future__ import annotations

import os
import time

CATEGORIES = ("latest", "snapshots", "window", "range", "unreferenced", "log_json", "log_checkpoint", "log_other",
              "arrays_latest", "arrays_snapshots", "arrays_unpinned", "arrays_temp", "other")


def _size(path: str) -> int:
    if os.path.isfile(path):
        return os.path.getsize(path)
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(path) for f in fs)


def _table(wh, name: str, pins: set[int], window_seconds: float, now: float) -> dict[str, int]:
    from discovery.data.store.orphans import commit_log, first_retained, referenced_files

    folder = wh.table_uri(name)
    out = dict.fromkeys(("latest", "snapshots", "window", "range", "unreferenced", "log_json", "log_checkpoint",
                         "log_other"), 0)
    log = os.path.join(folder, "_delta_log")
    for f in os.listdir(log):
        key = ("log_json" if f.endswith(".json") and f[:20].isdigit() and len(f) == 25
               else "log_checkpoint" if ".checkpoint" in f else "log_other")
        out[key] += os.path.getsize(os.path.join(log, f))
    _, _, commits = commit_log(wh, name)
    current = wh.version(name)
    first = first_retained(commits, current, pins, now - window_seconds)

    def listed(v):
        return set(wh.files(name, v).column("path").to_pylist())

    latest = listed(current)
    pinned = set().union(*(listed(v) for v in pins if first <= v < current)) - latest
    window = set().union(*(listed(v) for v, m in commits.items()
                           if m >= now - window_seconds and v < current and v not in pins)) - latest - pinned
    ranged = (referenced_files(wh, name, pins, now - window_seconds) or set()) - latest - pinned - window
    for d, _, fs in os.walk(folder):
        if os.path.basename(d) == "_delta_log" or "/_delta_log" in d:
            continue
        for f in fs:
            rel = os.path.relpath(os.path.join(d, f), folder)
            key = ("latest" if rel in latest else "snapshots" if rel in pinned else "window" if rel in window
                   else "range" if rel in ranged else "unreferenced")
            out[key] += os.path.getsize(os.path.join(d, f))
    return out


def breakdown(wh_root: str, window_seconds: float, now: float | None = None) -> dict:
    """``{"total", "categories": {category: bytes}, "folders": {top-level name: bytes}, "tables": {table:
    {category: bytes}}, "arrays": {folder: (category, bytes)}}`` of the warehouse at ``wh_root`` (see module doc)."""
    from discovery.orchestration.refresh.runs import query_array_folders
    from discovery.data.store import SCHEMAS, Warehouse, list_snapshots
    from discovery.data.store.arrays import ARRAYS_DIR
    from discovery.data.store.orphans import pinned_versions

    now = time.time() if now is None else now
    wh = Warehouse(wh_root)
    snaps = list_snapshots(wh)
    pins = pinned_versions(wh)
    cats = dict.fromkeys(CATEGORIES, 0)
    folders = {n: _size(os.path.join(wh_root, n)) for n in sorted(os.listdir(wh_root))}
    tables = {}
    for name in SCHEMAS:
        if os.path.isdir(wh.table_uri(name)):
            tables[name] = _table(wh, name, pins.get(name, set()), window_seconds, now)
            for k, v in tables[name].items():
                cats[k] += v
    arrays = {}
    names = lambda s: {folder.name(s.versions) for folder in query_array_folders()}  # noqa: E731
    latest = names(snaps[-1]) if snaps else set()
    retained = set().union(*(names(s) for s in snaps))
    root = os.path.join(wh_root, ARRAYS_DIR)
    for n in sorted(os.listdir(root)) if os.path.isdir(root) else []:
        key = ("arrays_temp" if n.startswith(".") else "arrays_latest" if n in latest
               else "arrays_snapshots" if n in retained else "arrays_unpinned")
        arrays[n] = (key, _size(os.path.join(root, n)))
        cats[key] += arrays[n][1]
    cats["other"] = sum(folders.values()) - sum(cats.values())
    return {"total": sum(folders.values()), "categories": cats, "folders": folders, "tables": tables,
            "arrays": arrays}


def compare(faulted: dict, fresh: dict) -> str:
    """One paragraph: the faulted warehouse's bytes against the fresh build's, by category, top-level folder and the
    tables that differ most."""
    f, g = faulted, fresh
    lines = [f"total {f['total']:,} vs {g['total']:,} ({f['total'] / max(g['total'], 1):.3f}x)"]
    lines.append("  categories: " + ", ".join(f"{k} {f['categories'][k]:,}/{g['categories'][k]:,}"
                                              for k in CATEGORIES if f["categories"][k] or g["categories"][k]))
    lines.append("  folders (excess): " + ", ".join(
        f"{k} +{f['folders'].get(k, 0) - g['folders'].get(k, 0):,}"
        for k in sorted(set(f["folders"]) | set(g["folders"]),
                        key=lambda k: -(f["folders"].get(k, 0) - g["folders"].get(k, 0)))[:8]))
    return "\n".join(lines)
