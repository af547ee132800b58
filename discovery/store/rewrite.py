"""Copy-on-write removal of the rows of some lake tables from one data file (run by a worker)."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

from .files import DataFile, resolve, write_data_file


def candidate_files(files: pa.Table, table_ids: np.ndarray) -> list[str]:
    """Data files whose ``table_id`` statistics range may hold one of ``table_ids`` (all files without stats)."""
    if len(table_ids) == 0 or files.num_rows == 0:
        return []
    ids = np.unique(np.asarray(table_ids, dtype=np.int64))
    paths = files.column("path").to_pylist()
    if "min.table_id" not in files.column_names:
        return paths
    lo = files.column("min.table_id").to_numpy(zero_copy_only=False)
    hi = files.column("max.table_id").to_numpy(zero_copy_only=False)
    out = []
    for path, a, b in zip(paths, lo, hi):
        if a is None or b is None or np.isnan(a) or np.isnan(b):
            out.append(path)
            continue
        i = np.searchsorted(ids, int(a), side="left")
        if i < len(ids) and ids[i] <= int(b):
            out.append(path)
    return out


def drop_table_ids(table_uri: str, path: str, table_ids: np.ndarray, refresh_id: int, stage: str,
                   attempt: str) -> tuple[bool, DataFile | None]:
    """Remove the rows of ``table_ids`` from data file ``path`` of a table.

    Returns ``(touched, replacement)``: ``touched`` is False when the file holds none of the ids (it stays as it
    is); otherwise the file is to be removed and ``replacement`` is the new file with the remaining rows, or None
    when no row remains.  Only the ``table_id`` column is read to decide, so untouched files cost little.
    """
    fs, root = resolve(table_uri)
    full = f"{root.rstrip('/')}/{path}"
    ids = pa.array(np.unique(np.asarray(table_ids, dtype=np.int64)))
    present = pq.read_table(full, columns=["table_id"], filesystem=fs).column("table_id")
    hit = pc.is_in(present, value_set=ids)
    if not pc.any(hit).as_py():
        return False, None
    table = pq.read_table(full, filesystem=fs)
    keep = table.filter(pc.invert(pc.is_in(table.column("table_id"), value_set=ids)))
    if keep.num_rows == 0:
        return True, None
    return True, write_data_file(table_uri, keep, refresh_id, stage, attempt)
