"""Parsing lake files into tables of string columns, within reported bounds.

Every index stage and every query reads lake tables through :func:`read_lake_table`, so a file parses the same way
in the scan, the profile, every later stage and a search.  Text files are read as tolerantly as pandas reads them:
the encoding comes from the byte-order mark, then UTF-8, then cp1252; the delimiter is sniffed; :mod:`.delimited`
tokenizes with pandas' python-engine tokenizer and :mod:`.repair` decides which rows and columns form the table, by
stated rules.  Values are kept as strings (typing is the profiler's job); every repair and every bound hit is a
warning, and what cannot be indexed is a :class:`LakeFileError` with a reason naming lines and columns.
"""
from __future__ import annotations

import codecs
import csv
import hashlib

import pyarrow as pa
import pyarrow.parquet as pq

from ..config import Limits
from .delimited import split_rows
from .listing import open_lake_file
from .repair import shape_table
from .table import BoundedFile, LakeFileError, ParsedTable, check_cell_lengths, dedupe_names, text_cells

_DELIMITERS = ",\t;|"
_SNIFF_BYTES = 64 * 1024


def content_hash(root: str, rel: str) -> str:
    """blake2b digest of the file bytes, streamed."""
    h = hashlib.blake2b(digest_size=16)
    with open_lake_file(root, rel) as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()


def _decode(raw: bytes) -> tuple[str, str]:
    for bom, enc in ((codecs.BOM_UTF8, "utf-8-sig"), (codecs.BOM_UTF16_LE, "utf-16"), (codecs.BOM_UTF16_BE, "utf-16"),
                     (codecs.BOM_UTF32_LE, "utf-32"), (codecs.BOM_UTF32_BE, "utf-32")):
        if raw.startswith(bom):
            try:
                return raw.decode(enc), enc
            except UnicodeDecodeError as exc:
                raise LakeFileError(f"starts with a {enc} byte-order mark but is not valid {enc}: {exc}") from None
    if b"\x00" in raw[:_SNIFF_BYTES]:
        raise LakeFileError("binary content (NUL bytes), not a text table")
    try:
        return raw.decode("utf-8"), "utf-8"
    except UnicodeDecodeError:
        text = raw.decode("cp1252", errors="replace")
        return text, "cp1252"


def _looks_binary(text: str) -> bool:
    sample = text[:_SNIFF_BYTES]
    if not sample:
        return False
    control = sum(1 for ch in sample if (ord(ch) < 32 and ch not in "\r\n\t") or ch == "\ufffd")
    return control / len(sample) > 0.05


def _sniff_delimiter(text: str, fmt: str) -> str:
    if fmt == "tsv":
        return "\t"
    sample = text[:_SNIFF_BYTES]
    lines = [ln for ln in sample.splitlines()[:50] if ln.strip()]
    if len(lines) > 1 and not sample.endswith("\n"):
        lines = lines[:-1]  # the last line of the sample may be cut in half
    # The header separates its names with the delimiter: "a | b" rows whose cells hold "x, y" are '|'-separated.
    candidates = "".join(d for d in _DELIMITERS if lines and d in lines[0]) or _DELIMITERS
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=candidates).delimiter
    except csv.Error:
        pass
    # Fall back to the delimiter whose per-line count is most consistent and non-zero.
    best, best_score = ",", -1.0
    for d in candidates:
        counts = [ln.count(d) for ln in lines]
        if not counts or max(counts) == 0:
            continue
        mode = max(set(counts), key=counts.count)
        score = counts.count(mode) / len(counts) + (0.001 * mode if mode else 0)
        if mode and score > best_score:
            best, best_score = d, score
    return best


def _read_delimited(text: str, delimiter: str, limits: Limits) -> tuple[list[str], list[pa.Array], list[str]]:
    rows = split_rows(text, delimiter, limits)
    shape = shape_table(rows, limits)
    warnings = rows.notes + shape.warnings
    keep = shape.rows
    if len(keep) > limits.max_rows:
        warnings.append(f"{len(keep)} rows, only the first {limits.max_rows} indexed")
        keep = keep[:limits.max_rows]
    names, notes = dedupe_names(shape.names, [p + 1 for p in shape.positions])
    warnings += notes
    lines = rows.lines[keep]
    cols = [check_cell_lengths(rows.cell_column(keep, p), limits, p + 1, lines) for p in shape.positions]
    return names, cols, warnings


def _read_parquet(root: str, rel: str, limits: Limits) -> ParsedTable:
    try:
        with open_lake_file(root, rel) as fh:
            table = pq.read_table(BoundedFile(fh, limits.max_file_bytes))
    except LakeFileError:
        raise
    except Exception as exc:  # pyarrow raises several types for corrupt files
        reason = str(exc).splitlines()[0].replace("Could not open Parquet input source '<Buffer>': ", "")
        raise LakeFileError(f"unreadable Parquet: {reason}") from None
    if table.num_columns == 0:
        raise LakeFileError("Parquet file has no columns")
    if table.num_columns > limits.max_columns:
        raise LakeFileError(f"{table.num_columns} columns, more than the limit of {limits.max_columns}")
    warnings: list[str] = []
    if table.num_rows > limits.max_rows:
        warnings.append(f"{table.num_rows} rows, only the first {limits.max_rows} indexed")
        table = table.slice(0, limits.max_rows)
    names, notes = dedupe_names(table.column_names)
    warnings += notes
    cols = []
    for col in table.columns:
        col = col.combine_chunks()
        try:
            as_text = col.cast(pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            # Nested Parquet types (lists, structs, maps) have no cast to string: index their Python rendering.
            as_text = pa.array([None if v is None else str(v) for v in col.to_pylist()], type=pa.string())
        cols.append(check_cell_lengths(text_cells(as_text), limits, len(cols) + 1))
    return ParsedTable(names, cols, None, None, warnings)


def read_lake_table(root: str, rel: str, fmt: str, size: int, limits: Limits) -> ParsedTable:
    """Parse one lake file, raising :class:`LakeFileError` with a readable reason when it cannot be indexed."""
    if size > limits.max_file_bytes:
        raise LakeFileError(f"file of {size} bytes is larger than the limit of {limits.max_file_bytes} bytes")
    if size == 0:
        raise LakeFileError("empty file")
    if fmt == "parquet":
        return _read_parquet(root, rel, limits)
    with open_lake_file(root, rel) as fh:
        raw = BoundedFile(fh, limits.max_file_bytes).read()
    text, encoding = _decode(raw)
    if not text.strip():
        raise LakeFileError("empty file (only whitespace)")
    if _looks_binary(text):
        raise LakeFileError("binary content (control characters), not a text table")
    delimiter = _sniff_delimiter(text, fmt)
    names, cols, warnings = _read_delimited(text, delimiter, limits)
    if encoding == "cp1252":
        warnings.append("not valid UTF-8; decoded as cp1252")
    return ParsedTable(names, cols, encoding, delimiter, warnings)
