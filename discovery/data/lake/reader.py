"""Reading a lake table, whatever its format: one registry of readers, one entry point.

Every index stage and every query reads lake tables through :func:`read_lake_table`, so a table parses the same way
in the scan, the profile, every later stage and a search, and the stages never see a format.  Each format has its
own module behind one small interface (:class:`Reader`): ``read`` parses a table into string columns within the
bounds of :class:`~discovery.config.Limits`; ``version`` names the content the rows come from -- a digest of a
file's bytes, a Delta table's file set, an Iceberg snapshot id, a digest of a folder's data files -- which the
stages compare to decide what to rebuild.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from ...config import Limits
from .columnar import read_columnar
from .dataset import read_dataset
from .delta import delta_version, read_delta
from .iceberg import iceberg_version, read_iceberg
from .jsonl import read_json
from .source import file_digest
from .table import LakeFileError, ParsedTable
from .text import read_text


class TableVersion(NamedTuple):
    content: str           # what the index rows are derived from; equal content, no re-indexing
    label: str | None      # the format's own version shown to users: Delta version, Iceberg snapshot id


@dataclass(frozen=True)
class Reader:
    read: Callable[[str, str, str, Limits], ParsedTable]          # (root, rel, format, limits) -> table
    version: Callable[[str, str, str], TableVersion]               # (root, rel, listing fingerprint) -> version
    is_file: bool = True                                           # a single file, bounded by its listed size


def _file_version(root: str, rel: str, fingerprint: str) -> TableVersion:
    return TableVersion(file_digest(root, rel), None)


def _listed_version(root: str, rel: str, fingerprint: str) -> TableVersion:
    # A folder dataset's listing fingerprint is already a digest of its data files' names, sizes and mtimes.
    return TableVersion(f"files:{fingerprint}", None)


def _delta(root: str, rel: str, fingerprint: str) -> TableVersion:
    return TableVersion(*delta_version(root, rel))


def _iceberg(root: str, rel: str, fingerprint: str) -> TableVersion:
    snapshot = iceberg_version(root, rel)
    return TableVersion(f"iceberg:{snapshot}", snapshot)


READERS: dict[str, Reader] = {
    "csv": Reader(read_text, _file_version),
    "tsv": Reader(read_text, _file_version),
    "json": Reader(read_json, _file_version),
    "parquet": Reader(read_columnar, _file_version),
    "orc": Reader(read_columnar, _file_version),
    "delta": Reader(read_delta, _delta, is_file=False),
    "iceberg": Reader(read_iceberg, _iceberg, is_file=False),
    "hive": Reader(read_dataset, _listed_version, is_file=False),
    "parts": Reader(read_dataset, _listed_version, is_file=False),
}


def reader_for(fmt: str) -> Reader:
    kind = fmt.split("/")[0].split(".")[0]
    try:
        return READERS[kind]
    except KeyError:
        raise LakeFileError(f"no reader for format {fmt!r} (formats: {', '.join(READERS)})") from None


def read_lake_table(root: str, rel: str, fmt: str, size: int, limits: Limits) -> ParsedTable:
    """Parse one lake table, raising :class:`LakeFileError` with a readable reason when it cannot be indexed.

    ``size`` is the listed size of a file table: a file listed larger than the limit is refused unread (the readers
    still enforce the limit on the bytes they actually read).
    """
    reader = reader_for(fmt)
    if reader.is_file:
        if size > limits.max_file_bytes:
            raise LakeFileError(f"file of {size} bytes is larger than the limit of {limits.max_file_bytes} bytes")
        if size == 0:
            raise LakeFileError("empty file")
    return reader.read(root, rel, fmt, limits)


def table_version(root: str, rel: str, fmt: str, fingerprint: str) -> TableVersion:
    """The content version of a lake table (see the module docstring)."""
    return reader_for(fmt).version(root, rel, fingerprint)
