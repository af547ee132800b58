"""Listing the files of a lake: a local folder, or any fsspec URI when fsspec knows the scheme."""
from __future__ import annotations

import os
from dataclasses import dataclass

#: File endings the scanner treats as tables, and the format each one is parsed as.
FORMATS = {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "csv", ".parquet": "parquet", ".pq": "parquet"}


@dataclass(frozen=True)
class LakeFile:
    path: str        # relative to the lake root, '/'-separated
    size: int
    mtime_ns: int
    format: str


def table_format(path: str) -> str | None:
    return FORMATS.get(os.path.splitext(path)[1].lower())


def _hidden(part: str) -> bool:
    # Folders and files starting with '_' or '.' are metadata (ground truth, checkpoints, _SUCCESS), not tables.
    return part.startswith(("_", "."))


def list_lake(root: str) -> list[LakeFile]:
    """Every table file under ``root``, sorted by path.  Raises FileNotFoundError for a missing root."""
    if "://" in root:
        return _list_fsspec(root)
    if not os.path.isdir(root):
        raise FileNotFoundError(f"lake folder {root!r} does not exist or is not a folder")
    out = []
    for dirpath, dirnames, filenames in os.walk(root):
        dirnames[:] = sorted(d for d in dirnames if not _hidden(d))
        for name in filenames:
            fmt = table_format(name)
            if fmt is None or _hidden(name):
                continue
            full = os.path.join(dirpath, name)
            try:
                st = os.stat(full)
            except OSError:  # a dangling link: listed, so the scan records why it cannot be read
                st = os.lstat(full)
            rel = os.path.relpath(full, root).replace(os.sep, "/")
            out.append(LakeFile(rel, st.st_size, st.st_mtime_ns, fmt))
    return sorted(out, key=lambda f: f.path)


def _list_fsspec(root: str) -> list[LakeFile]:
    import fsspec

    fs, base = fsspec.core.url_to_fs(root)
    out = []
    for full, info in fs.find(base, detail=True).items():
        rel = full[len(base):].lstrip("/")
        fmt = table_format(rel)
        if fmt is None or any(_hidden(p) for p in rel.split("/")):
            continue
        mtime = info.get("mtime") or info.get("LastModified") or info.get("updated") or 0
        mtime_ns = int(mtime.timestamp() * 1e9) if hasattr(mtime, "timestamp") else int(float(mtime) * 1e9)
        out.append(LakeFile(rel, int(info.get("size") or 0), mtime_ns, fmt))
    return sorted(out, key=lambda f: f.path)


def join_lake_path(root: str, rel: str) -> str:
    if "://" in root:
        return root.rstrip("/") + "/" + rel
    return os.path.join(root, *rel.split("/"))


def inside_lake(root: str, full: str) -> bool:
    """Whether the real path of ``full`` (links resolved) lies under the real path of the local lake ``root``."""
    real_root = os.path.realpath(root)
    return os.path.realpath(full).startswith(real_root.rstrip(os.sep) + os.sep)


def open_lake_file(root: str, rel: str, mode: str = "rb"):
    """Open a lake file for reading, local or remote.

    A local file that is a link leading out of the lake is refused (PermissionError, which the scan records as the
    table's error): the lake folder is what an operator exposes to the index, and a link must not widen it to any
    file the refresh can read.
    """
    full = join_lake_path(root, rel)
    if "://" in root:
        import fsspec

        return fsspec.open(full, mode).open()
    if not inside_lake(root, full):
        raise PermissionError(f"{rel!r} is a link that leads out of the lake; files outside the lake are not read")
    return open(full, mode)
