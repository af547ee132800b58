"""Delimited text tables (CSV, TSV, TXT, possibly compressed), within reported bounds.

Text files are read as tolerantly as pandas reads them:
the encoding comes from the byte-order mark, then UTF-8, then cp1252; the delimiter is sniffed; :mod:`.delimited`
tokenizes with pandas' python-engine tokenizer and :mod:`.repair` decides which rows and columns form the table, by
stated rules.  Values are kept as strings (typing is the profiler's job); every repair and every bound hit is a
warning, and what cannot be indexed is a :class:`LakeFileError` with a reason naming lines and columns.
"""
from __future__ import annotations

import codecs
import csv

import pyarrow as pa

from ...config import Limits
from .delimited import split_rows
from .formats import split_format
from .repair import shape_table
from .source import open_decompressed, read_bounded
from .table import LakeFileError, ParsedTable, check_cell_lengths, dedupe_names

_DELIMITERS = ",\t;|"
_SNIFF_BYTES = 64 * 1024


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


def parse_text(raw: bytes, fmt: str, limits: Limits) -> ParsedTable:
    """Parse the bytes of a delimited text table (``fmt`` csv or tsv)."""
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


def read_text(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    """Read a delimited text file of the lake, decompressing it as a stream when its format names a codec."""
    base, codec = split_format(fmt)
    with open_decompressed(root, rel, codec) as fh:
        raw = read_bounded(fh, limits.max_file_bytes, "decompressed content" if codec else "file", codec is not None)
    if not raw:
        raise LakeFileError("empty file" if codec is None else "empty file (nothing after decompression)")
    return parse_text(raw, base, limits)
