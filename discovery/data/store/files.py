"""Data files of index tables: written by workers, described by small metadata records.

A Spark task (or any worker) calls :func:`write_data_file` with the rows it produced; the file lands directly in the
table folder and only the returned :class:`DataFile` record (path, size, row count, min/max statistics) travels back
to the driver, which commits the records in one Delta transaction.  File names carry the refresh id, the stage and
the attempt token, so a file found in a table folder tells which run wrote it (whether it is live is decided by the
table's versions, :mod:`.orphans`).
"""
from __future__ import annotations

import json
import os
import re
import uuid
from dataclasses import asdict, dataclass

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.fs as pafs
import pyarrow.parquet as pq

from ...storage import arrow_filesystem

_NAME = re.compile(r"^part-r(?P<refresh>\d+)-(?P<stage>[a-z0-9_]+)-(?P<attempt>[0-9a-z]+)-[0-9a-f]+\.parquet$")

#: Column types whose min/max are recorded in Delta file statistics (used to skip files when replacing rows).
_STAT_TYPES = (pa.types.is_integer, pa.types.is_floating, pa.types.is_string, pa.types.is_timestamp)


@dataclass(frozen=True)
class DataFile:
    """Metadata of one written data file, all the driver needs to commit it."""

    path: str  # relative to the table root
    size: int
    mtime_ms: int
    rows: int
    stats: str  # Delta statistics JSON

    def to_dict(self) -> dict:
        return asdict(self)


def new_attempt_token() -> str:
    """A fresh token that identifies one attempt of one stage."""
    return uuid.uuid4().hex[:12]


def data_file_name(refresh_id: int, stage: str, attempt: str) -> str:
    """The file name :func:`parse_data_file_name` reads back; a stage name it could not read back is refused, since
    such a file could not be traced to the run that wrote it."""
    if not re.fullmatch(r"[a-z0-9_]+", stage):
        raise ValueError(f"stage name {stage!r}: use lower-case letters, digits and '_' only")
    return f"part-r{refresh_id}-{stage}-{attempt}-{uuid.uuid4().hex[:16]}.parquet"


def parse_data_file_name(name: str) -> tuple[int, str, str] | None:
    """(refresh id, stage, attempt) of a file written by :func:`write_data_file`, else None."""
    m = _NAME.match(os.path.basename(name))
    if not m:
        return None
    return int(m["refresh"]), m["stage"], m["attempt"]


def _json_scalar(value):
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return value.isoformat().replace("+00:00", "Z")


#: Longest string kept in file statistics, as Delta writers truncate theirs.
STRING_STAT_CHARS = 32


def _string_bounds(lo: str, hi: str) -> tuple[str | None, str | None]:
    """Bounds of at most :data:`STRING_STAT_CHARS` characters around [lo, hi]: a prefix of ``lo`` (no greater
    than it) and a prefix of ``hi`` whose last character is raised by one (greater than every string it begins).

    A column must not go without bounds: delta-rs' dataset prunes every file that lacks statistics for a column a
    filter names, so the rows of a long value (a DAG run's batch id) would vanish from every filtered read.
    (None, None) when no short upper bound exists (the prefix is all U+10FFFF)."""
    n = STRING_STAT_CHARS
    if len(hi) > n:
        prefix = hi[:n]
        while prefix and ord(prefix[-1]) == 0x10FFFF:
            prefix = prefix[:-1]
        if not prefix:
            return None, None
        code = ord(prefix[-1]) + 1
        hi = prefix[:-1] + chr(0xE000 if 0xD800 <= code <= 0xDFFF else code)
    return lo[:n], hi


def file_stats(table: pa.Table) -> str:
    """Delta ``stats`` JSON (numRecords, minValues, maxValues, nullCount) for the primitive columns."""
    mins, maxs, nulls = {}, {}, {}
    for name, col in zip(table.column_names, table.columns):
        if not any(check(col.type) for check in _STAT_TYPES):
            continue
        nulls[name] = col.null_count
        if col.null_count < len(col) and len(col):
            mm = pc.min_max(col)
            lo, hi = mm["min"].as_py(), mm["max"].as_py()
            if pa.types.is_string(col.type):
                lo, hi = _string_bounds(lo, hi)
                if lo is None:
                    continue
            if isinstance(lo, float) and (lo != lo or hi != hi):
                continue
            mins[name], maxs[name] = _json_scalar(lo), _json_scalar(hi)
    return json.dumps({"numRecords": table.num_rows, "minValues": mins, "maxValues": maxs, "nullCount": nulls})


def resolve(uri: str) -> tuple[pafs.FileSystem, str]:
    """Filesystem and path of a local folder or an object-store URI (s3://, gs://, abfs://, ...)."""
    return arrow_filesystem(uri)


#: Columns written as they are, neither compressed nor dictionary-encoded, and with no Parquet statistics: a
#: ``models`` payload is mostly float weights (a join encoder's 100 MB), which zstd shrank by 7% for 2 to 3 s of a
#: training task and about a second of every process that read it back, whose one value per row no dictionary can
#: share, and whose minimum and maximum (computed over the whole value, then left out of the footer as too long)
#: cost 0.25 to 1 s of the write.
RAW_COLUMNS = frozenset({"payload"})


def write_data_file(table_uri: str, table: pa.Table, refresh_id: int, stage: str, attempt: str) -> DataFile:
    """Write ``table`` as one Parquet file into the table folder and describe it."""
    fs, root = resolve(table_uri)
    name = data_file_name(refresh_id, stage, attempt)
    full = f"{root.rstrip('/')}/{name}"
    fs.create_dir(root, recursive=True)
    plain = [c for c in table.column_names if c in RAW_COLUMNS]
    coded = [c for c in table.column_names if c not in plain]
    pq.write_table(table, full, compression={c: "none" if c in plain else "zstd" for c in table.column_names},
                   use_dictionary=coded, write_statistics=coded, filesystem=fs)
    info = fs.get_file_info(full)
    mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
    return DataFile(path=name, size=info.size, mtime_ms=int(mtime * 1000), rows=table.num_rows,
                    stats=file_stats(table))
