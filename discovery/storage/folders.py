"""Folders written whole: put in place by a rename (local) or an upload with the completion marker last (object
storage), and brought back from object storage into a local cache that a process can map.

The query arrays (the union's and the numerical join's ``.npy`` folders, :mod:`discovery.data.store.arrays`) are mapped
from local files: on object storage the refresh uploads a folder and a query process maps its local copy.
"""
from __future__ import annotations

import hashlib
import os
import shutil
import tempfile
import uuid

#: The file whose presence marks a folder complete (written last).
MARKER = "meta.json"


def publish_folder(tmp: str, path: str) -> None:
    """Rename a complete local folder (its :data:`MARKER` written last) into place at ``path``; a folder another
    writer put there first is as good, since both were built from the same pinned versions."""
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, path)
    except OSError:
        if not os.path.exists(os.path.join(path, MARKER)):
            raise


def upload_folder(handle: tuple, local: str) -> None:
    """Copy a complete local folder (subfolders too) to the remote folder ``handle`` (fsspec filesystem, path),
    :data:`MARKER` last: it marks the remote folder complete, so a reader that finds it finds every other file."""
    fs, path = handle
    rels = sorted(os.path.relpath(os.path.join(d, f), local).replace(os.sep, "/")
                  for d, _, files in os.walk(local) for f in files)
    for rel in sorted(rels, key=lambda r: r == MARKER):
        fs.put_file(os.path.join(local, *rel.split("/")), f"{path}/{rel}")


def cache_root() -> str:
    """Local folder holding downloaded folders of remote warehouses (``$LAKESCOUT_ARRAY_CACHE``, default
    ``~/.cache/lakescout/query_arrays``)."""
    return os.environ.get("LAKESCOUT_ARRAY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lakescout",
                                                                    "query_arrays")


def _written(info: dict) -> str:
    """What tells one upload of a file from another at the same path: its ETag and modification time (whatever of
    them the store reports)."""
    keys = ("etag", "lastmodified", "last_modified", "mtime", "updated", "generation", "versionid")
    return repr(sorted((k.lower(), str(v)) for k, v in info.items() if k.lower() in keys))


def download_folder(handle: tuple, root: str, name: str) -> str | None:
    """A local copy of the remote folder ``handle`` (fsspec filesystem, path; named ``name``, of the warehouse at
    ``root``), downloaded once into :func:`cache_root`.

    The name pins the content within one warehouse, but a warehouse deleted and written again at the same URI reuses
    names for other content, so the copy is keyed by the warehouse, the name and the upload of the remote marker (one
    HEAD per call, no GET once copied).  None when the remote folder is not complete (no marker) or no local copy can
    be written; the caller then builds what the folder holds in memory."""
    fs, path = handle
    try:
        info = fs.info(f"{path}/{MARKER}")
    except FileNotFoundError:
        return None
    stamp = hashlib.blake2b(_written(info).encode(), digest_size=6).hexdigest()
    local = os.path.join(cache_root(), hashlib.blake2b(root.encode(), digest_size=8).hexdigest(), f"{name}-{stamp}")
    if os.path.exists(os.path.join(local, MARKER)):
        return local
    try:
        os.makedirs(os.path.dirname(local), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{name}.{uuid.uuid4().hex[:8]}.", dir=os.path.dirname(local))
    except OSError:  # no local cache here
        return None
    try:
        rels = sorted(f[len(path) + 1:] for f in fs.find(path))
        for rel in sorted(rels, key=lambda r: r == MARKER):  # the marker last: it marks the copy complete
            dest = os.path.join(tmp, *rel.split("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            fs.get_file(f"{path}/{rel}", dest)
        publish_folder(tmp, local)
    except OSError:
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return local
