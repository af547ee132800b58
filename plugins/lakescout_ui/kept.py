"""Uploaded query files kept for their results' previews and downloads, bounded in count and age.

A search on an uploaded file records results that name ``upload:<file name>`` as their query; writing the joined or
unioned rows of such a result needs the file again.  The search copies it here under its batch id (a folder per
batch, in a private temporary folder of the server), and :func:`kept` hands it back to the batch's previews and
downloads.  Only the newest :data:`KEEP` uploads, each younger than :data:`MAX_AGE_SECONDS`, are kept: an older one
is deleted and its results can no longer be written (their searches can be run again).
"""
from __future__ import annotations

import os
import re
import shutil
import tempfile
import time

KEEP = 32
MAX_AGE_SECONDS = 6 * 3600
_BATCH = re.compile(r"^[A-Za-z0-9_.:+-]{1,128}$")


def _root() -> str:
    root = os.path.join(tempfile.gettempdir(), f"lakescout-kept-uploads-{os.getuid()}")
    os.makedirs(root, mode=0o700, exist_ok=True)
    return root


def _age(folder: str) -> float | None:
    """The folder's modification time, None when a concurrent prune (another request, another worker) removed it."""
    try:
        return os.path.getmtime(folder)
    except FileNotFoundError:
        return None


def _prune(root: str) -> None:
    ages = ((_age(os.path.join(root, f)), f) for f in os.listdir(root))
    folders = sorted((mtime, f) for mtime, f in ages if mtime is not None)
    now = time.time()
    for i, (mtime, name) in enumerate(folders):
        if i < len(folders) - KEEP or now - mtime > MAX_AGE_SECONDS:
            shutil.rmtree(os.path.join(root, name), ignore_errors=True)


def keep(batch_id: str, label: str, path: str) -> None:
    """Keep the upload at ``path`` (named ``label`` in the batch's spec) for batch ``batch_id``."""
    if not _BATCH.match(batch_id):
        return
    root = _root()
    folder = os.path.join(root, batch_id)
    os.makedirs(folder, exist_ok=True)
    shutil.copy2(path, os.path.join(folder, os.path.basename(path)))
    with open(os.path.join(folder, "label"), "w", encoding="utf-8") as fh:
        fh.write(label)
    _prune(root)


def kept(batch_id: str) -> dict[str, str]:
    """``{label: path}`` of the upload kept for ``batch_id`` (empty when none is)."""
    if not _BATCH.match(batch_id):
        return {}
    root = _root()
    _prune(root)
    folder = os.path.join(root, batch_id)
    if not os.path.isdir(folder):
        return {}
    try:
        with open(os.path.join(folder, "label"), encoding="utf-8") as fh:
            label = fh.read()
        files = [f for f in os.listdir(folder) if f != "label"]
    except FileNotFoundError:  # pruned meanwhile by another request
        return {}
    return {label: os.path.join(folder, files[0])} if files else {}
