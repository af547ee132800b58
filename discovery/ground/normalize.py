"""Value normalisation shared by every index stage and every query.

One implementation, vectorised with pyarrow compute, so that a value indexed by a Spark task and the same value typed
into a query normalise to the same string byte for byte.  Normalisation is deliberately conservative (Unicode NFKC,
case folding to lower case, whitespace trimmed and collapsed): equi-join style matching (MATE) must not merge values
that a user would consider different, and the fuzzier variations (abbreviations, typos, word order) are the job of the
encoders, not of this step.
"""
from __future__ import annotations

from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc

#: Cell contents that mean "no value" in real-world CSVs (compared after normalisation).
NULL_TOKENS = ("", "na", "n/a", "nan", "null", "none", "nil", "-", "--", "?", "#n/a")


def normalize_array(values: pa.Array | pa.ChunkedArray) -> pa.Array | pa.ChunkedArray:
    """Normalise an array of strings; nulls and null tokens become null."""
    if not pa.types.is_string(values.type) and not pa.types.is_large_string(values.type):
        values = pc.cast(values, pa.string())
    out = pc.utf8_normalize(values, form="NFKC")
    out = pc.utf8_lower(out)
    out = pc.replace_substring_regex(out, pattern=r"\s+", replacement=" ")
    out = pc.utf8_trim_whitespace(out)
    is_null_token = pc.is_in(out, value_set=pa.array(NULL_TOKENS, type=out.type))
    return pc.if_else(is_null_token, pa.scalar(None, type=out.type), out)


def normalize_value(value: str | None) -> str | None:
    """Normalise one value exactly as :func:`normalize_array` does."""
    if value is None:
        return None
    return normalize_array(pa.array([str(value)], type=pa.string()))[0].as_py()


def normalize_values(values: Iterable[str | None]) -> list[str | None]:
    """Normalise a Python sequence of values (convenience for queries typed by hand)."""
    return normalize_array(pa.array([None if v is None else str(v) for v in values], type=pa.string())).to_pylist()
