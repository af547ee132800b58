"""JSON tables: JSON Lines (``.jsonl``, ``.ndjson``) or a ``.json`` file holding records, possibly compressed.

A ``.json`` file is JSON Lines when its first non-blank character opens an object on a line of its own, and an
array of records when it opens ``[``; anything else (a single object of settings, a scalar) is not a table and is
said so.  Nested objects become dotted leaf columns, through the one Arrow conversion every typed format shares.
Lines that are not valid JSON are skipped and reported by line number, within the same bound on skipped rows the
text reader applies; rows that are not objects are skipped likewise.
"""
from __future__ import annotations

import json

import pyarrow as pa

from ...config import Limits
from .arrow import parsed_from_arrow, take_rows
from .formats import split_format
from .source import open_decompressed, read_bounded
from .table import LakeFileError, ParsedTable

_BATCH_ROWS = 65_536


def _records(text: str, limits: Limits) -> tuple[list, list[str], int]:
    """(records, warnings, total record count) of JSON Lines or a JSON array of records."""
    stripped = text.lstrip()
    if not stripped:
        raise LakeFileError("empty file (only whitespace)")
    if stripped[0] == "[":
        try:
            data = json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise LakeFileError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
        if not all(isinstance(r, dict) for r in data):
            raise LakeFileError("a JSON array whose items are not all records (objects); not a table")
        return data[:limits.max_rows], [], len(data)
    if stripped[0] != "{":
        raise LakeFileError("JSON that is neither records (JSON Lines) nor an array of records; not a table")
    first = next(line for line in text.splitlines() if line.strip())
    try:
        json.loads(first)
    except json.JSONDecodeError:
        # The first line is no JSON value of its own: one document spread over lines, which is not JSON Lines.
        try:
            json.loads(stripped)
        except json.JSONDecodeError as exc:
            raise LakeFileError(f"not valid JSON: {exc.msg} at line {exc.lineno}") from None
        raise LakeFileError("a single JSON object, not records; not a table") from None
    records: list[dict] = []
    bad: list[int] = []
    total = 0
    for number, line in enumerate(text.splitlines(), 1):
        if not line.strip():
            continue
        try:
            value = json.loads(line)
        except json.JSONDecodeError:
            bad.append(number)
            continue
        if not isinstance(value, dict):
            bad.append(number)
            continue
        total += 1
        if len(records) < limits.max_rows:
            records.append(value)
    allowed = max(limits.max_skipped_rows, int(limits.max_ragged_fraction * (total + len(bad))))
    if len(bad) > allowed:
        raise LakeFileError(f"{len(bad)} lines are not JSON records (lines {', '.join(map(str, bad[:5]))}"
                            f"{', ...' if len(bad) > 5 else ''})")
    warnings = [f"{len(bad)} line(s) that are not JSON records skipped (lines {', '.join(map(str, bad[:5]))})"] \
        if bad else []
    return records, warnings, total


def parse_json(raw: bytes, limits: Limits) -> ParsedTable:
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise LakeFileError(f"JSON that is not valid UTF-8 (byte {exc.start})") from None
    records, warnings, total = _records(text, limits)
    if not records:
        raise LakeFileError("no records")
    try:
        table = pa.Table.from_pylist(records)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        # Values of one key with mixed types (a number here, a string there): kept as text, as pandas would show them.
        keys = list(dict.fromkeys(k for r in records for k in r))
        table = pa.table({k: pa.array([None if r.get(k) is None else
                                       (r[k] if isinstance(r[k], str) else json.dumps(r[k], ensure_ascii=False))
                                       for r in records], pa.string()) for k in keys})
        warnings.append("keys with values of mixed types kept as text")
    batches = table.to_batches(max_chunksize=_BATCH_ROWS)
    cut, more = take_rows(batches, limits.max_rows)
    return parsed_from_arrow(cut, cut.schema if cut is not None else table.schema, limits,
                             truncated=more or total > limits.max_rows, total_rows=total, warnings=warnings)


def read_json(root: str, rel: str, fmt: str, limits: Limits) -> ParsedTable:
    _, codec = split_format(fmt)
    with open_decompressed(root, rel, codec) as fh:
        raw = read_bounded(fh, limits.max_file_bytes, "decompressed content" if codec else "file", codec is not None)
    if not raw.strip():
        raise LakeFileError("empty file")
    return parse_json(raw, limits)
