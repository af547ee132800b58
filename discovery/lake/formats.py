"""Table formats by file ending, and the compressions a file may carry.

One registry the listing consults: a file is a table when its name ends in one of :data:`FILE_FORMATS`' endings,
optionally followed by a compression ending of :data:`COMPRESSIONS`; its format key is the base format, with the
compression appended (``csv.gz``).  Dataset folders have the keys of :data:`DATASET_KINDS`: ``delta``,
``iceberg``, and ``hive/<fmt>`` / ``parts/<fmt>`` for a partitioned or part-file folder of ``<fmt>`` files.
"""
from __future__ import annotations

import re

#: Names of a Delta log's commits and checkpoints; the number is the table version.
DELTA_LOG_ENTRY = re.compile(r"^(\d{20})\.(?:json|checkpoint(?:\.\d+\.\d+)?\.parquet)$")
#: Iceberg metadata files, Hadoop layout (``vN``) or catalog layout (``NNNNN-<uuid>``); the number grows per commit.
ICEBERG_METADATA = re.compile(r"^(?:v(\d+)|(\d+)-[0-9a-fA-F-]+)(?:\.gz)?\.metadata\.json$")

#: Ending -> base format of a file table.  ``.txt`` is read as delimited text, as pandas would; ``.json`` holds JSON
#: Lines or an array of records.
FILE_FORMATS = {
    ".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".txt": "csv",
    ".parquet": "parquet", ".pq": "parquet", ".orc": "orc",
    ".jsonl": "json", ".ndjson": "json", ".json": "json",
}

#: Compression ending -> codec name; such files are read as a stream and never unpacked to disk.
COMPRESSIONS = {".gz": "gzip", ".bz2": "bz2", ".zst": "zstd", ".xz": "xz"}

DATASET_KINDS = ("delta", "iceberg", "hive", "parts")

#: Every format key a reader exists for (for messages that list them).
TEXT_FORMATS = ("csv", "tsv")


def is_metadata_name(name: str) -> bool:
    """Names starting with ``_`` or ``.`` are metadata (``_delta_log``, ``_SUCCESS``, ``.crc``, ``_spark_metadata``,
    ``_committed_*``, checkpoints, ground truth), never a table or a table's data file."""
    return name.startswith(("_", "."))


def _split(name: str) -> tuple[str, str]:
    dot = name.rfind(".")
    return (name[:dot], name[dot:].lower()) if dot > 0 else (name, "")


def file_format(name: str) -> str | None:
    """Format key of a file name (``a.csv`` -> ``csv``, ``a.jsonl.gz`` -> ``json.gz``), None for a non-table."""
    stem, ext = _split(name.rpartition("/")[2])
    codec = ""
    if ext in COMPRESSIONS:
        codec = ext
        stem, ext = _split(stem)
    base = FILE_FORMATS.get(ext)
    if base is None:
        return None
    if codec and base in ("parquet", "orc"):
        return None  # columnar files compress inside; a gzip'd Parquet file is not a layout any writer produces
    return base + codec


def split_format(fmt: str) -> tuple[str, str | None]:
    """(base format, codec or None) of a file format key: ``csv.gz`` -> (``csv``, ``gzip``)."""
    base, _, codec = fmt.partition(".")
    return base, COMPRESSIONS.get("." + codec) if codec else None
