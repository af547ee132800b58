"""Parquet and ORC files: read batch by batch up to the row bound, typed by the file's own schema."""
from __future__ import annotations

import pyarrow as pa
import pyarrow.orc as po
import pyarrow.parquet as pq

from ...config import Limits
from .arrow import parsed_from_arrow, take_rows
from .source import BoundedFile, open_lake_file
from .table import LakeFileError, ParsedTable, first_line

_BATCH_ROWS = 65_536
#: What pyarrow puts before its reason when it reads an open file; the message names the file itself.
_BUFFER_PREFIX = "Could not open Parquet input source '<Buffer>': "


def columnar_batches(fh, fmt: str):
    """(schema, batch iterator, total rows) of an open Parquet or ORC file; reads only the footer up front."""
    if fmt == "parquet":
        pf = pq.ParquetFile(fh)
        return pf.schema_arrow, pf.iter_batches(batch_size=_BATCH_ROWS), pf.metadata.num_rows
    orc = po.ORCFile(fh)
    return orc.schema, (orc.read_stripe(i) for i in range(orc.nstripes)), orc.nrows


def read_columnar(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    name = "Parquet" if fmt == "parquet" else "ORC"
    try:
        with open_lake_file(root, rel) as fh:
            schema, batches, total = columnar_batches(BoundedFile(fh, limits.max_file_bytes), fmt)
            table, more = take_rows(batches, limits.max_rows)
    except LakeFileError:
        raise
    except (pa.ArrowException, OSError, ValueError) as exc:
        if isinstance(exc, (FileNotFoundError, PermissionError)):
            raise
        raise LakeFileError(f"unreadable {name}: {first_line(exc).replace(_BUFFER_PREFIX, '')}") from None
    if len(schema) == 0:
        raise LakeFileError(f"{name} file has no columns")
    return parsed_from_arrow(table, schema, limits, truncated=more, total_rows=total)
