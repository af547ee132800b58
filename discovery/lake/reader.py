"""Parsing lake files into tables of string columns, within reported bounds.

Every index stage reads lake tables through :func:`read_lake_table`, so a file parses the same way in the scan, the
profile and every later stage.  CSV dialects are detected per file (encoding from the byte-order mark, then UTF-8,
then cp1252; delimiter by sniffing; the first row is the header), values are kept as strings (typing is the
profiler's job), and every bound that is hit is recorded as a warning or turned into a readable error.
"""
from __future__ import annotations

import codecs
import csv
import hashlib
import io
from dataclasses import dataclass, field

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

from ..config import Limits
from .listing import open_lake_file

_DELIMITERS = ",\t;|"
_SNIFF_BYTES = 64 * 1024


class LakeFileError(ValueError):
    """A lake file that cannot be indexed; the message is the readable reason stored in the catalog."""


@dataclass
class ParsedTable:
    names: list[str]
    columns: list[pa.Array]          # one string array per column, cells trimmed, empty cells null
    encoding: str | None = None
    delimiter: str | None = None
    warnings: list[str] = field(default_factory=list)

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_arrays(self.columns, names=[f"c{i}" for i in range(len(self.names))])


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
    try:
        return csv.Sniffer().sniff("\n".join(lines), delimiters=_DELIMITERS).delimiter
    except csv.Error:
        pass
    # Fall back to the delimiter whose per-line count is most consistent and non-zero.
    best, best_score = ",", -1.0
    for d in _DELIMITERS:
        counts = [ln.count(d) for ln in lines]
        if not counts or max(counts) == 0:
            continue
        mode = max(set(counts), key=counts.count)
        score = counts.count(mode) / len(counts) + (0.001 * mode if mode else 0)
        if mode and score > best_score:
            best, best_score = d, score
    return best


def dedupe_names(raw: list[str]) -> tuple[list[str], list[str]]:
    """Header names made unique and non-empty; returns the names and the repairs made."""
    names, seen, notes = [], {}, []
    for i, name in enumerate(raw):
        name = (name or "").strip()
        if not name:
            name = f"column_{i + 1}"
            notes.append(f"empty header of column {i + 1} named {name!r}")
        base, n = name, seen.get(name.lower(), 0)
        while name.lower() in seen:
            n += 1
            name = f"{base}_{n + 1}"
        if name != base:
            notes.append(f"duplicate header {base!r} renamed to {name!r}")
        seen[base.lower()] = n
        seen[name.lower()] = 0
        names.append(name)
    return names, notes


def _clean(col: pa.Array, limits: Limits, name: str) -> pa.Array:
    col = pc.utf8_trim_whitespace(col.cast(pa.string()))
    col = pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)
    too_long = pc.greater(pc.utf8_length(col), limits.max_cell_chars)
    if pc.any(too_long).as_py():
        row = pc.index(too_long, True).as_py()
        length = pc.utf8_length(col[row]).as_py()
        raise LakeFileError(f"cell in data row {row + 1}, column {name!r} has {length} characters, more than the "
                            f"limit of {limits.max_cell_chars} (broken quoting, or a document stored in a cell)")
    return col


def _read_delimited(text: str, delimiter: str, limits: Limits) -> tuple[list[str], list[pa.Array], list[str]]:
    warnings: list[str] = []
    ragged: list[str] = []

    def on_invalid(row) -> str:
        text = (row.text or "").strip()
        where = f"line {row.number}: " if row.number is not None else ""
        ragged.append(where + repr(text[:60] + ("..." if len(text) > 60 else "")))
        if text.count('"') % 2:
            unbalanced.append(ragged[-1])
        return "skip"

    unbalanced: list[str] = []

    data = text.encode("utf-8")
    try:
        table = pacsv.read_csv(
            io.BytesIO(data),
            read_options=pacsv.ReadOptions(autogenerate_column_names=True, block_size=max(1 << 20, len(data) + 1)),
            parse_options=pacsv.ParseOptions(delimiter=delimiter, newlines_in_values=True,
                                              invalid_row_handler=on_invalid),
            convert_options=pacsv.ConvertOptions(column_types={}, strings_can_be_null=False,
                                                 auto_dict_encode=False, quoted_strings_can_be_null=False,
                                                 check_utf8=False),
        )
    except pa.ArrowInvalid as exc:
        raise LakeFileError(f"malformed delimited text: {str(exc).splitlines()[0]}") from None
    if table.num_rows == 0:
        raise LakeFileError("no header row")
    if table.num_rows == 1:
        raise LakeFileError("header only: no data rows")
    if table.num_columns > limits.max_columns:
        raise LakeFileError(f"{table.num_columns} columns, more than the limit of {limits.max_columns}")
    header = [None if v is None else str(v) for v in table.slice(0, 1).to_pylist()[0].values()]
    body = table.slice(1)
    n_rows = body.num_rows
    if ragged:
        total = n_rows + len(ragged)
        examples = "; ".join(ragged[:3]) + (" ..." if len(ragged) > 3 else "")
        if len(ragged) > limits.max_ragged_fraction * total:
            if unbalanced:
                raise LakeFileError(f"malformed quoting: a quoted field is never closed, near {unbalanced[0]}")
            raise LakeFileError(f"ragged rows: {len(ragged)} of {total} rows have a different number of fields than "
                                f"the header ({table.num_columns}), e.g. {examples}")
        warnings.append(f"{len(ragged)} row(s) with a wrong number of fields skipped, e.g. {examples}")
    if n_rows > limits.max_rows:
        warnings.append(f"{n_rows} rows, only the first {limits.max_rows} indexed")
        body = body.slice(0, limits.max_rows)
    names, notes = dedupe_names(header)
    warnings += notes
    cols = [_clean(body.column(i).combine_chunks(), limits, names[i]) for i in range(body.num_columns)]
    return names, cols, warnings


def _check_quotes(text: str) -> None:
    """Reject text whose double quotes do not pair up (escaped quotes are doubled, so a valid file has an even count).

    An unclosed quote would otherwise swallow the rest of the file into one cell.
    """
    if text.count('"') % 2 == 0:
        return
    pos, inside, opened = text.find('"'), False, -1
    while pos != -1:
        inside = not inside
        opened = pos if inside else opened
        pos = text.find('"', pos + 1)
    line = text.count("\n", 0, opened) + 1
    snippet = text[opened:opened + 40].split("\n")[0]
    raise LakeFileError(f"malformed quoting: the quoted field opened on line {line} ({snippet!r}) is never closed")


def _read_parquet(root: str, rel: str, limits: Limits) -> ParsedTable:
    try:
        with open_lake_file(root, rel) as fh:
            table = pq.read_table(fh)
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
    for name, col in zip(names, table.columns):
        col = col.combine_chunks()
        try:
            as_text = col.cast(pa.string())
        except (pa.ArrowNotImplementedError, pa.ArrowInvalid):
            # Nested Parquet types (lists, structs, maps) have no cast to string: index their Python rendering.
            as_text = pa.array([None if v is None else str(v) for v in col.to_pylist()], type=pa.string())
        cols.append(_clean(as_text, limits, name))
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
        raw = fh.read()
    text, encoding = _decode(raw)
    if not text.strip():
        raise LakeFileError("empty file (only whitespace)")
    if _looks_binary(text):
        raise LakeFileError("binary content (control characters), not a text table")
    _check_quotes(text)
    delimiter = _sniff_delimiter(text, fmt)
    names, cols, warnings = _read_delimited(text, delimiter, limits)
    if encoding == "cp1252":
        warnings.append("not valid UTF-8; decoded as cp1252")
    return ParsedTable(names, cols, encoding, delimiter, warnings)
