"""Finding, reading and copy-on-write removal of some lake tables' rows in a table's data files (run by workers)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .files import DataFile, resolve, write_data_file
from .filters import among


def candidate_files(files: pa.Table, table_ids: np.ndarray) -> list[str]:
    """Data files whose ``table_id`` statistics range may hold one of ``table_ids`` (all files without stats).

    Vectorised over the files: a stage's tasks each call it with the whole table's file list, so a loop over the files
    would make the stage's total cost grow with (tasks x files), quadratically in the lake's size.
    """
    if len(table_ids) == 0 or files.num_rows == 0:
        return []
    ids = np.unique(np.asarray(table_ids, dtype=np.int64))
    paths = files.column("path").to_pylist()
    if "min.table_id" not in files.column_names:
        return paths
    lo_col, hi_col = files.column("min.table_id"), files.column("max.table_id")
    unknown = pc.or_(pc.is_null(lo_col, nan_is_null=True), pc.is_null(hi_col, nan_is_null=True)).to_numpy(
        zero_copy_only=False)
    lo = pc.fill_null(lo_col.cast(pa.float64()), 0).to_numpy(zero_copy_only=False)
    hi = pc.fill_null(hi_col.cast(pa.float64()), 0).to_numpy(zero_copy_only=False)
    lo, hi = np.nan_to_num(lo).astype(np.int64), np.nan_to_num(hi).astype(np.int64)
    first = np.searchsorted(ids, lo, side="left")  # the smallest id >= the file's minimum ...
    hit = (first < len(ids)) & (ids[np.minimum(first, len(ids) - 1)] <= hi)  # ... is within its maximum
    return [p for p, keep in zip(paths, hit | unknown) if keep]


def read_rows(table_uri: str, schema: pa.Schema, files: pa.Table, table_ids, columns: list[str]) -> pa.Table:
    """Rows of ``table_ids`` from the data files ``files`` (:meth:`Warehouse.files` of one table version), read
    straight from Parquet.

    A Spark task handed the file list by its driver this way neither replays the Delta log nor reads the whole table's
    file statistics through a dataset, so its cost follows its own tables, not the lake's size; and every task of a
    stage reads the same version.
    """
    ids = pa.array(np.unique(np.asarray(table_ids, dtype=np.int64)))
    fs, root = resolve(table_uri)
    flt = among("table_id", ids)
    parts = [pq.read_table(f"{root.rstrip('/')}/{p}", columns=columns, filters=flt, filesystem=fs)
             for p in candidate_files(files, ids.to_numpy())]
    want = pa.schema([schema.field(c) for c in columns])
    return pa.concat_tables([t.cast(want) for t in parts]) if parts else want.empty_table()


def drop_table_ids(table_uri: str, path: str, table_ids: np.ndarray, refresh_id: int, stage: str,
                   attempt: str) -> tuple[bool, DataFile | None]:
    """Remove the rows of ``table_ids`` from data file ``path`` of a table.

    Returns ``(touched, replacement)``: ``touched`` is False when the file holds none of the ids (it stays as it
    is); otherwise the file is to be removed and ``replacement`` is the new file with the remaining rows, or None
    when no row remains.  The file is read once, whole: its caller picked it by its ``table_id`` range
    (:func:`candidate_files`), and files hold narrow ranges of whole tables, so it nearly always holds one of the ids.
    """
    fs, root = resolve(table_uri)
    full = f"{root.rstrip('/')}/{path}"
    ids = pa.array(np.unique(np.asarray(table_ids, dtype=np.int64)))
    table = pq.read_table(full, filesystem=fs)
    hit = pc.is_in(table.column("table_id"), value_set=ids)
    if not pc.any(hit).as_py():
        return False, None
    keep = table.filter(pc.invert(hit))
    if keep.num_rows == 0:
        return True, None
    return True, write_data_file(table_uri, keep, refresh_id, stage, attempt)


def drop_keys(table_uri: str, path: str, columns: list[str], keys: set[tuple], refresh_id: int, stage: str,
              attempt: str) -> tuple[bool, DataFile | None]:
    """Remove the rows whose values of ``columns`` are one of ``keys`` from data file ``path``; returns
    ``(touched, replacement)`` as :func:`drop_table_ids` does.

    The key columns are read first and the whole file only when it keeps some rows and loses others, so a file that
    holds one large value (an encoder's payload in ``models``) is never read to be dropped or kept."""
    fs, root = resolve(table_uri)
    full = f"{root.rstrip('/')}/{path}"
    keyed = pq.read_table(full, columns=columns, filesystem=fs)
    hit = np.fromiter((row in keys for row in zip(*(keyed.column(c).to_pylist() for c in columns))), dtype=bool,
                      count=keyed.num_rows)
    if not hit.any():
        return False, None
    if hit.all():
        return True, None
    keep = pq.read_table(full, filesystem=fs).filter(pa.array(~hit))
    return True, write_data_file(table_uri, keep, refresh_id, stage, attempt)
