"""Writing a table in the lakehouse layouts real lakes hold, with the formats' own writers.

The sample lake, the tests and ``benchmarks/lakehouse.py`` lay tables out through these functions, so what they
index is what Spark, delta-rs, pyiceberg and export jobs write: a Delta table with an older version, a
Hive-partitioned Parquet folder (``__HIVE_DEFAULT_PARTITION__`` for nulls), a folder of Spark part files beside
``_SUCCESS`` and ``.crc`` files, compressed CSV, JSON Lines and an Iceberg table in a SQL catalog on SQLite.
Every function takes the table as Arrow and the destination as a local folder or an ``s3://`` URI.
"""
from __future__ import annotations

import bz2
import gzip
import io
import json
import lzma
import uuid

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.dataset as pads
import pyarrow.parquet as pq

from ... import storage


def _put(uri: str, data: bytes) -> None:
    fs, path = storage.filesystem(uri)
    fs.makedirs(path.rpartition("/")[0], exist_ok=True)
    fs.pipe_file(path, data)


def csv_bytes(table: pa.Table) -> bytes:
    sink = io.BytesIO()
    pacsv.write_csv(table, sink)
    return sink.getvalue()


def write_compressed_csv(uri: str, table: pa.Table, codec: str = "gzip") -> None:
    """``table`` as CSV compressed with ``codec`` (gzip, bz2 or xz; gzip without a timestamp, so reproducible)."""
    raw = csv_bytes(table)
    data = {"gzip": lambda b: gzip.compress(b, mtime=0), "bz2": bz2.compress, "xz": lzma.compress}[codec](raw)
    _put(uri, data)


def write_json_lines(uri: str, table: pa.Table) -> None:
    """One JSON record per line; null cells are left out of their record, as most exporters do."""
    lines = [json.dumps({k: v for k, v in row.items() if v is not None}, ensure_ascii=False, default=str)
             for row in table.to_pylist()]
    _put(uri, ("\n".join(lines) + "\n").encode("utf-8"))


def write_delta(uri: str, table: pa.Table, older: pa.Table | None = None) -> int:
    """A Delta table whose latest version holds ``table``; with ``older``, version 0 holds that and version 1 is an
    overwrite, so the folder keeps the removed files of the old version.  Returns the latest version."""
    from deltalake import DeltaTable, write_deltalake

    target = storage.delta_uri(uri)
    options = storage.delta_options(target)
    if older is not None:
        write_deltalake(target, older, mode="overwrite", storage_options=options)
    write_deltalake(target, table, mode="overwrite", schema_mode="overwrite", storage_options=options)
    return DeltaTable(target, storage_options=options).version()


def write_hive(uri: str, table: pa.Table, keys: list[str], fmt: str = "parquet") -> None:
    """A Hive-partitioned folder: one ``key=value`` level per key, partition columns out of the files."""
    fs, path = storage.arrow_filesystem(uri)
    pads.write_dataset(table, path, filesystem=fs, format=fmt, partitioning=keys, partitioning_flavor="hive",
                       existing_data_behavior="overwrite_or_ignore", basename_template="part-{i}.parquet")


def write_spark_parts(uri: str, table: pa.Table, parts: int = 2, fmt: str = "parquet") -> None:
    """A folder of part files as a Spark job writes it: ``part-NNNNN-<uuid>-c000`` files, their ``.crc`` siblings
    and ``_SUCCESS``."""
    job = uuid.uuid4()
    step = max(1, -(-table.num_rows // parts))
    for i in range(parts):
        chunk = table.slice(i * step, step)
        if fmt == "parquet":
            sink = io.BytesIO()
            pq.write_table(chunk, sink, compression="snappy")
            data, name = sink.getvalue(), f"part-{i:05d}-{job}-c000.snappy.parquet"
        else:
            data, name = csv_bytes(chunk), f"part-{i:05d}-{job}-c000.csv"
        _put(f"{uri.rstrip('/')}/{name}", data)
        _put(f"{uri.rstrip('/')}/.{name}.crc", b"crc\0" + len(data).to_bytes(8, "big"))
    _put(f"{uri.rstrip('/')}/_SUCCESS", b"")


def write_iceberg(warehouse_uri: str, catalog_db: str, namespace: str, name: str, table: pa.Table,
                  older: pa.Table | None = None):
    """An Iceberg table ``namespace.name`` in a SQL catalog on SQLite (``catalog_db``, a local file), its files
    under ``warehouse_uri``; with ``older``, a first snapshot holds that and the current one ``table``."""
    from pyiceberg.catalog.sql import SqlCatalog

    catalog = SqlCatalog("lakescout", uri=f"sqlite:///{catalog_db}", warehouse=storage.file_uri(warehouse_uri),
                         **storage.credentials().iceberg_properties())
    catalog.create_namespace_if_not_exists(namespace)
    ident = f"{namespace}.{name}"
    if catalog.table_exists(ident):
        catalog.drop_table(ident)
    iceberg = catalog.create_table(ident, schema=table.schema)
    if older is not None:
        iceberg.append(older.cast(table.schema))
        iceberg.overwrite(table)
    else:
        iceberg.append(table)
    return iceberg


#: Layouts :func:`relayout` writes, and the path each gives a table ``stem`` in ``folder``.
LAYOUTS = {"delta": "{stem}", "hive": "{stem}", "parts": "{stem}", "iceberg": "{stem}", "csv.gz": "{stem}.csv.gz",
           "jsonl": "{stem}.jsonl"}


def partition_key(table: pa.Table, max_values: int = 40) -> str | None:
    """The column a lakehouse would partition ``table`` by: the string column with the fewest distinct values
    (2 to ``max_values``, and at most half the rows), the first such on ties; None when none fits."""
    best = None
    limit = min(max_values, table.num_rows // 2)
    for name in table.column_names:
        col = table.column(name)
        if not pa.types.is_string(col.type):
            continue
        n = len(col.unique().drop_null())
        if 2 <= n <= limit and (best is None or n < best[0]):
            best = (n, name)
    return best[1] if best else None


def relayout(root: str, rel: str, layout: str, table: pa.Table, older: pa.Table | None = None,
             catalog_db: str | None = None) -> str:
    """Write ``table`` (the rows of lake file ``rel``) under ``root`` in ``layout`` beside where ``rel`` was, remove
    ``rel``, and return the new table's lake path.  ``older`` is an earlier version for the layouts that keep one
    (Delta, Iceberg); ``catalog_db`` is the SQLite file of the Iceberg catalog."""
    folder, _, name = rel.rpartition("/")
    stem = name.split(".")[0]
    fs, taken = storage.filesystem(storage.join(root, (f"{folder}/" if folder else "") +
                                                LAYOUTS[layout].format(stem=stem)))
    if fs.exists(taken):  # another file of the same stem (a .csv beside a .tsv) was laid out here already
        stem = f"{stem}_{layout.split('.')[0]}"
    new_rel = (f"{folder}/" if folder else "") + LAYOUTS[layout].format(stem=stem)
    target = storage.join(root, new_rel)
    if layout == "delta":
        write_delta(target, table, older)
    elif layout == "hive":
        key = partition_key(table)
        if key is None:
            write_spark_parts(target, table)
        else:
            write_hive(target, table, [key])
    elif layout == "parts":
        write_spark_parts(target, table)
    elif layout == "iceberg":
        if catalog_db is None:
            raise ValueError("the iceberg layout needs catalog_db, the SQLite file of its catalog")
        write_iceberg(storage.join(root, folder), catalog_db, "lake", stem, table, older)
        new_rel = (f"{folder}/" if folder else "") + f"lake/{stem}"
    elif layout == "csv.gz":
        write_compressed_csv(target, table)
    else:
        write_json_lines(target, table)
    if new_rel != rel:
        fs, path = storage.filesystem(storage.join(root, rel))
        fs.rm_file(path)
    return new_rel
