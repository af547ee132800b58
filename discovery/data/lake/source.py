"""Opening the objects of a lake: local files inside the lake root, or objects of a bucket, decompressed as a stream.

Every reader opens lake bytes through :func:`open_lake_file` and :func:`read_bounded`, so the rules hold for every
format: a local link that leads out of the lake is refused, compressed files are decompressed while they are read
(never unpacked to disk), and no read takes more than the byte limit, whatever size the listing reported.
"""
from __future__ import annotations

import bz2
import gzip
import hashlib
import lzma
import os
import zlib

from ... import storage
from .table import LakeFileError, first_line


def join_lake_path(root: str, rel: str) -> str:
    return storage.join(root, rel)


def inside_lake(root: str, full: str) -> bool:
    """Whether the real path of ``full`` (links resolved) lies under the real path of the local lake ``root``."""
    real_root = os.path.realpath(root)
    return os.path.realpath(full).startswith(real_root.rstrip(os.sep) + os.sep)


def open_lake_file(root: str, rel: str, mode: str = "rb"):
    """Open a lake file for reading, local or remote (raw bytes; see :func:`open_decompressed`).

    A local file that is a link leading out of the lake is refused (PermissionError, which the scan records as the
    table's error): the lake folder is what an operator exposes to the index, and a link must not widen it to any
    file the refresh can read.
    """
    full = join_lake_path(root, rel)
    if storage.on_disk(root) is None:
        fs, path = storage.filesystem(full)
        return fs.open(path, mode)
    if not inside_lake(root, full):
        raise PermissionError(f"{rel!r} is a link that leads out of the lake; files outside the lake are not read")
    return open(full, mode)


def _zstd_stream(raw):
    import pyarrow as pa

    return pa.CompressedInputStream(pa.PythonFile(raw, mode="r"), "zstd")


_OPENERS = {"gzip": lambda raw: gzip.GzipFile(fileobj=raw, mode="rb"), "bz2": lambda raw: bz2.BZ2File(raw, "rb"),
            "xz": lambda raw: lzma.LZMAFile(raw, "rb"), "zstd": _zstd_stream}


def open_decompressed(root: str, rel: str, codec: str | None):
    """A binary stream of the file's content, decompressed while it is read when ``codec`` names a compression."""
    raw = open_lake_file(root, rel)
    if codec is None:
        return raw
    try:
        return _OPENERS[codec](raw)
    except Exception:
        raw.close()
        raise


class BoundedFile:
    """A lake file opened for reading that refuses to be read past byte ``limit``.

    The size a listing recorded is a hint: a query of a catalogued table reads the file as it is now, and a file
    that grew since its scan must not be read whole into memory, nor a small compressed file that expands past the
    limit.  Every read checks the position it reached (the bytes read so far, for a stream that cannot tell its
    position) and raises :class:`LakeFileError` once that passes ``limit``; a read to the end asks for at most one
    byte more than is left.  Anything else (``seek``, ``tell``, ``closed``: pyarrow reads Parquet through them) is
    the file's own.
    """

    def __init__(self, fh, limit: int, what: str = "file"):
        self._fh = fh
        self._limit = limit
        self._what = what
        self._read = 0

    def _position(self) -> int:
        try:
            return self._fh.tell()
        except (OSError, ValueError, AttributeError):
            return self._read

    def read(self, size: int | None = -1) -> bytes:
        if size is None or size < 0:
            chunks = []
            while chunk := self.read(max(1, min(1 << 20, self._limit - self._position() + 1))):
                chunks.append(chunk)
            return b"".join(chunks)
        data = self._fh.read(size)
        self._read += len(data)
        if self._position() > self._limit:
            raise LakeFileError(f"{self._what} is larger than the limit of {self._limit} bytes")
        return data

    def __getattr__(self, name: str):
        return getattr(self._fh, name)


def read_bounded(stream, limit: int, what: str = "file", compressed: bool = False) -> bytes:
    """Every byte of ``stream`` through :class:`BoundedFile`; a damaged compressed stream (a truncated gzip, a
    corrupt block) is a LakeFileError that says so."""
    try:
        return BoundedFile(stream, limit, what).read()
    except (EOFError, zlib.error, OSError, lzma.LZMAError, ValueError) as exc:
        if not compressed or isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        raise LakeFileError(f"compressed content is damaged or cut short: {first_line(exc)}") from None


def file_digest(root: str, rel: str) -> str:
    """blake2b digest of a file's stored bytes, streamed."""
    h = hashlib.blake2b(digest_size=16)
    with open_lake_file(root, rel) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()
