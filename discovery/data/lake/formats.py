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


def is_data_file(rel: str) -> bool:
    """Whether the file at ``rel`` (``/``-separated, relative to its dataset folder) is one of the dataset's data
    files: no metadata name on its path, no ``.crc``, a table format.  The one rule the listing's fingerprint and the
    readers share, so a dataset's fingerprint covers exactly the files a read takes."""
    parts = rel.split("/")
    return (not any(is_metadata_name(p) for p in parts) and not rel.endswith(".crc")
            and file_format(parts[-1]) is not None)


def newest_iceberg_metadata(entries) -> str | None:
    """The newest of an Iceberg ``metadata/`` folder's files, given as (name, mtime_ns): the highest ``vN`` (Hadoop
    layout) or ``NNNNN-<uuid>`` (catalog layout), then the latest written, then the name; None when there is none.
    The listing (the table's fingerprint) and the reader take the same file."""
    best, best_key = None, None
    for name, mtime_ns in entries:
        m = ICEBERG_METADATA.match(name)
        if m:
            key = (int(m.group(1) or m.group(2)), int(mtime_ns or 0), name)
            if best_key is None or key > best_key:
                best, best_key = name, key
    return best
