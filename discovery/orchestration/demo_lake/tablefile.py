"""Writing and reading the lake's table files, byte for byte reproducible.

Text tables go through :mod:`csv` into memory and are written as bytes (fixed line terminator, fixed encoding), and
Parquet through pyarrow with fixed options, so a seed always yields the same bytes.  Semicolon files follow the
European spreadsheet convention of a decimal comma.  :func:`read_table_file` is the reference reader the ground truth
is computed with: every cell as text, null tokens kept as written (normalisation is the consumer's business).
"""
from __future__ import annotations

import csv
import datetime as dt
import io
import re
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

#: format name -> (file extension, delimiter)
FORMATS = {"csv": (".csv", ","), "tsv": (".tsv", "\t"), "semicolon": (".csv", ";"), "parquet": (".parquet", "")}


def header_key(header: str) -> str:
    """A header reduced to its lower-case letters and digits, so styles ("City Name", "city_name") compare equal."""
    return "".join(c for c in header.lower() if c.isalnum())


def style_header(header: str, style: int) -> str:
    """The header as a source system would spell it: as is, snake_case, UPPER, Title Case or camelCase."""
    words = [w for w in re.split(r"[^0-9A-Za-z°²%$]+", header) if w]
    if style == 1:
        return "_".join(w.lower() for w in words) or header
    if style == 2:
        return header.upper()
    if style == 3:
        return " ".join(w[:1].upper() + w[1:] for w in header.split(" "))
    if style == 4 and words:
        return words[0].lower() + "".join(w[:1].upper() + w[1:].lower() for w in words[1:])
    return header


def encode_text_table(header: list[str], rows: list[list[str]], delimiter: str = ",", line_end: str = "\n") -> str:
    """The CSV text of a table (minimal quoting, as spreadsheet exports do)."""
    buf = io.StringIO()
    writer = csv.writer(buf, delimiter=delimiter, lineterminator=line_end, quoting=csv.QUOTE_MINIMAL)
    writer.writerow(header)
    writer.writerows(rows)
    return buf.getvalue()


def _typed_array(values: list[str | None], kind: str) -> pa.Array:
    if kind == "int":
        return pa.array([int(v) if v else None for v in values], type=pa.int64())
    if kind == "float":
        return pa.array([float(v) if v else None for v in values], type=pa.float64())
    if kind == "date":
        return pa.array([dt.date.fromisoformat(v) if v else None for v in values], type=pa.date32())
    return pa.array(values, type=pa.string())


def parquet_bytes(header: list[str], columns: list[list[str | None]], kinds: list[str]) -> bytes:
    """A Parquet file with typed columns; cells that are null tokens become nulls."""
    table = pa.table([_typed_array(col, k) for col, k in zip(columns, kinds)], names=header)
    sink = io.BytesIO()
    pq.write_table(table, sink, compression="snappy", write_statistics=True)
    return sink.getvalue()


def table_bytes(fmt: str, header: list[str], columns: list[list[str]], kinds: list[str],
                null_tokens: frozenset[str]) -> bytes:
    """The file content of a table in ``fmt`` (see :data:`FORMATS`)."""
    if fmt == "parquet":
        cleaned = [[None if v in null_tokens else v for v in col] for col in columns]
        return parquet_bytes(header, cleaned, kinds)
    delimiter = FORMATS[fmt][1]
    if fmt == "semicolon":
        columns = [[v.replace(".", ",") for v in col] if k == "float" else col for col, k in zip(columns, kinds)]
    rows = [list(r) for r in zip(*columns)]
    return encode_text_table(header, rows, delimiter).encode("utf-8")


def read_table_file(path: str | Path, fmt: str, encoding: str = "utf-8") -> tuple[list[str], list[list[str | None]]]:
    """Header and columns of a good table file, every cell as text (Parquet nulls as None)."""
    path = Path(path)
    if fmt == "parquet":
        table = pq.read_table(path)
        cols = [pc.cast(c, pa.string()).to_pylist() for c in table.columns]
        return list(table.column_names), cols
    text = path.read_bytes().decode(encoding)
    if text.startswith("\ufeff"):
        text = text[1:]
    delimiter = {"csv": ",", "tsv": "\t", "semicolon": ";"}[fmt]
    rows = list(csv.reader(io.StringIO(text, newline=""), delimiter=delimiter))
    header, body = rows[0], rows[1:]
    return header, [[r[i] for r in body] for i in range(len(header))]
