"""Column profiles: inferred type, distinct and null counts, key-candidate flag.

A column's type is the one its format's schema declares (Parquet, ORC, Delta, Iceberg, JSON numbers and booleans);
otherwise it is inferred from the string cells with vectorised regular expressions.
A type is chosen when at least ``type_agreement`` of the non-null cells match it, tolerating the odd
stray cell that real CSVs carry; the most specific type wins (bool, int, float, date, datetime, string).
"""
from __future__ import annotations

from dataclasses import replace

import pyarrow as pa
import pyarrow.compute as pc

from ...config import Limits, ProfileConfig
from ...ground.normalize import normalize_array
from .table import ParsedTable

_PATTERNS = (
    ("bool", r"^(?i:true|false|yes|no|t|f|y|n)$"),
    ("int", r"^[+-]?(\d{1,3}(,\d{3})+|\d+)$"),
    ("float", r"^[+-]?((\d{1,3}(,\d{3})+|\d+)(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?$"),
    ("date", r"^(\d{4}-\d{1,2}-\d{1,2}|\d{1,2}/\d{1,2}/\d{2,4}|\d{4}/\d{1,2}/\d{1,2})$"),
    ("datetime", r"^\d{4}-\d{1,2}-\d{1,2}[ T]\d{1,2}:\d{2}(:\d{2}(\.\d+)?)?(Z|[+-]\d{2}:?\d{2})?$"),
)

NUMERIC_TYPES = ("int", "float")


def infer_type(values: pa.Array, agreement: float) -> str:
    present = pc.drop_null(values)
    n = len(present)
    if n == 0:
        return "empty"
    for name, pattern in _PATTERNS:
        hits = pc.sum(pc.match_substring_regex(present, pattern)).as_py() or 0
        if hits >= agreement * n:
            return name
    return "string"


def profile_limits(limits: Limits, config: ProfileConfig) -> Limits:
    """The bounds a profile reads a table within: the row bound cut to ``[profile] sample_rows``."""
    return replace(limits, max_rows=max(1, min(limits.max_rows, config.sample_rows)))


def profile_table(parsed: ParsedTable, config: ProfileConfig) -> list[dict]:
    """One profile row per column (without table id and content hash, which the caller adds)."""
    rows = []
    n = parsed.num_rows
    declared = parsed.types or [None] * len(parsed.names)
    for ordinal, (name, col) in enumerate(zip(parsed.names, parsed.columns)):
        norm = normalize_array(col)
        non_null = len(norm) - norm.null_count
        distinct = len(pc.unique(pc.drop_null(norm))) if non_null else 0
        kind = declared[ordinal] or infer_type(col, config.type_agreement)
        max_len = pc.max(pc.utf8_length(col)).as_py() if non_null else 0
        rows.append({
            "ordinal": ordinal,
            "name": name,
            "type": kind,
            "non_null": non_null,
            "distinct_count": distinct,
            "null_fraction": (n - non_null) / n if n else 1.0,
            "key_candidate": bool(non_null >= config.key_min_rows and non_null == n and distinct == non_null
                                  and kind not in ("bool", "float", "empty")),
            "max_length": int(max_len or 0),
        })
    return rows
