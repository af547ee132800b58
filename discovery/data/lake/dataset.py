"""Folder datasets: Hive-partitioned folders and folders of part files, each one table.

The data files are read in path order, one at a time, until the row bound is reached, so a large dataset costs the
footers and row groups of the first few files only.  Each file is read by its format's own reader (Parquet and ORC
batch by batch; text and JSON part files through the text and JSON readers), and a Hive folder's ``key=value``
path segments become columns (URL-escaped values decoded; ``__HIVE_DEFAULT_PARTITION__`` is null).

Unification rule for files whose schemas differ: columns are matched by name, a column a file lacks is null in its
rows, and a column's types widen as Arrow's permissive promotion allows (integers to floats, narrower to wider,
nulls to anything).  Any other difference -- the same column as a number in one file and as text in another -- is a
conflict that marks the table ``error``, naming the column.
"""
from __future__ import annotations

from urllib.parse import unquote

import pyarrow as pa

from ... import storage
from ...config import Limits
from .arrow import parsed_from_arrow, take_rows
from .columnar import columnar_batches
from .formats import file_format, is_data_file, split_format
from .jsonl import read_json
from .source import open_lake_file
from .table import LakeFileError, ParsedTable, first_line
from .text import read_text

HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"


def data_files(root: str, rel: str) -> list[str]:
    """Data files of the dataset folder ``rel`` (relative to it, sorted), metadata and hidden names left out."""
    fs, base = storage.filesystem(storage.join(root, rel))
    out = []
    for full in fs.find(base, withdirs=False):
        sub = full[len(base):].lstrip("/")
        if is_data_file(sub):
            out.append(sub)
    return sorted(out)


def _partition_values(sub: str) -> dict[str, str | None]:
    values = {}
    for segment in sub.split("/")[:-1]:
        key, sep, value = segment.partition("=")
        if sep:
            value = unquote(value)
            values[unquote(key)] = None if value == HIVE_NULL else value
    return values


def _file_batches(root: str, path: str, fmt: str, limits: Limits):
    base, _ = split_format(fmt)
    if base in ("parquet", "orc"):
        with open_lake_file(root, path) as fh:
            _, batches, _ = columnar_batches(fh, base)
            yield from batches
        return
    parsed = (read_json if base == "json" else read_text)(root, path, fmt, limits)
    yield pa.table(dict(zip(parsed.names, parsed.columns)))


def _with_partitions(batch, values: dict[str, str | None]):
    table = pa.Table.from_batches([batch]) if isinstance(batch, pa.RecordBatch) else batch
    for key, value in values.items():
        if key not in table.column_names:
            table = table.append_column(key, pa.repeat(pa.scalar(value, pa.string()), table.num_rows))
    return table


def dataset_file_tables(root: str, rel: str, sub: str, kind: str, inner: str, limits: Limits):
    """The rows of data file ``sub`` of dataset ``rel`` (a ``kind`` hive or parts folder of ``inner`` files), batch
    by batch as Arrow tables, with a Hive folder's partition values as columns."""
    values = _partition_values(sub) if kind == "hive" else {}
    try:
        for batch in _file_batches(root, f"{rel}/{sub}", inner, limits):
            yield _with_partitions(batch, values)
    except LakeFileError as exc:
        raise LakeFileError(f"data file {sub!r}: {exc.reason}") from None
    except (pa.ArrowException, OSError) as exc:
        if isinstance(exc, PermissionError):
            raise
        raise LakeFileError(f"data file {sub!r} cannot be read: {first_line(exc)}") from None


def read_dataset(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    kind, _, inner = fmt.partition("/")
    files = data_files(root, rel)
    wanted = [f for f in files if file_format(f.rpartition("/")[2]) == inner]
    if not wanted:
        raise LakeFileError("an empty dataset: no data files")
    skipped = len(files) - len(wanted)

    def batches():
        for sub in wanted:
            yield from dataset_file_tables(root, rel, sub, kind, inner, limits)

    table, more = take_rows(batches(), limits.max_rows)
    if table is None:
        raise LakeFileError("an empty dataset: its data files hold no rows")
    warnings = [f"{skipped} data file(s) of another format than {inner} left out"] if skipped else []
    return parsed_from_arrow(table, table.schema, limits, truncated=more, warnings=warnings)
