"""Typed output columns from the text cells the lake reader gives, and one type per column of a union.

The lake reader returns every column as trimmed strings (empty cells null) beside the type the format declares or
the profile infers (:func:`discovery.data.lake.infer_type`); the index compares values as text.  A written table should
carry numbers, dates and booleans as such, so each column is cast back to its type by these rules:

* **Null tokens first.**  A cell that is a null token of :data:`discovery.ground.normalize.NULL_TOKENS` (``N/A``,
  ``null``, ``-``, ``?``, in any case) is null in a column typed other than text: it says there is no value.
* **Lossless or text.**  A column keeps its type only when every other non-null cell parses as that type; a single
  cell that does not (the profile tolerates 5% strays, and profiles only its first rows) keeps the whole column as
  text, as written, and a warning names the column and the table.  No other cell is ever turned into a null.
* ``int``: thousands separators dropped (``1,234`` -> 1234), int64.  ``float``: thousands separators and one
  trailing ``%`` dropped (``12.5%`` -> 12.5, the number as written), float64; a decimal of the format is read as
  float64.  ``bool``: true/false, yes/no, t/f, y/n in any case.
* ``date``: one spelling for the whole column, the first of ISO ``YYYY-MM-DD``, ``YYYY/MM/DD``, ``MM/DD/YYYY``,
  ``DD/MM/YYYY``, ``MM/DD/YY``, ``DD/MM/YY`` under which every cell parses (month first before day first, as
  the US spelling is the common one where both fit), date32.
* ``datetime``: ISO 8601 with ``T`` or a space; cells without a zone give a naive timestamp[us], cells that all
  carry a zone (``Z``, ``+02:00``) a UTC timestamp[us, UTC]; a column mixing both is text.

A union gives each output column one type (:func:`common_type`): numbers widen (int with float: float64), a date
with a timestamp becomes a timestamp (the date at midnight), an empty column takes any type, and any other mix --
text with numbers, a boolean with numbers, naive with zoned times -- is text, with a warning that names the column
and the tables whose types disagree.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

import pyarrow as pa
import pyarrow.compute as pc

if TYPE_CHECKING:
    from ...query.resolve import QueryTable

_TRUE = ("true", "yes", "t", "y")
_FALSE = ("false", "no", "f", "n")
_DATE_FORMATS = ("%Y/%m/%d", "%m/%d/%Y", "%d/%m/%Y", "%m/%d/%y", "%d/%m/%y")
TEXT = pa.string()
NAIVE = pa.timestamp("us")
ZONED = pa.timestamp("us", tz="UTC")


@dataclass(frozen=True)
class Typed:
    """A column cast to its type; ``note`` says why it stayed text when its type was not (None otherwise)."""

    array: pa.Array
    note: str | None = None


def _all_parsed(cells: pa.Array, parsed: pa.Array) -> bool:
    return parsed.null_count == cells.null_count


def _numbers(cells: pa.Array, percent: bool) -> pa.Array:
    cleaned = pc.replace_substring(cells, ",", "")
    return pc.replace_substring_regex(cleaned, r"%$", "") if percent else cleaned


def _cast(cells: pa.Array, to: pa.DataType) -> pa.Array | None:
    try:
        return cells.cast(to)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return None


def _bool(cells: pa.Array) -> pa.Array | None:
    folded = pc.utf8_lower(cells)
    true = pc.is_in(folded, value_set=pa.array(_TRUE))
    known = pc.or_(true, pc.is_in(folded, value_set=pa.array(_FALSE)))
    if (pc.sum(known).as_py() or 0) != len(cells) - cells.null_count:
        return None
    return pc.if_else(cells.is_null(), pa.scalar(None, pa.bool_()), true)


def _date(cells: pa.Array) -> pa.Array | None:
    iso = _cast(cells, pa.date32())
    if iso is not None:
        return iso
    for fmt in _DATE_FORMATS:
        try:
            parsed = pc.strptime(cells, format=fmt, unit="s", error_is_null=True)
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            continue
        if _all_parsed(cells, parsed):
            return parsed.cast(pa.date32())
    return None


def _datetime(cells: pa.Array) -> pa.Array | None:
    naive = _cast(cells, NAIVE)
    return naive if naive is not None else _cast(cells, ZONED)


#: Arrow type of each column kind (``datetime_zoned``: a datetime column whose cells carry zones).
ARROW_TYPES = {"int": pa.int64(), "float": pa.float64(), "bool": pa.bool_(), "date": pa.date32(), "datetime": NAIVE,
               "datetime_zoned": ZONED, "string": TEXT, "empty": pa.null()}


def arrow_type(kind: str | None) -> pa.DataType:
    """The Arrow type a column of ``kind`` is written as (text for a kind without one)."""
    return ARROW_TYPES.get(kind or "string", TEXT)


def kind_of(observed: pa.DataType) -> str:
    """The column kind whose type is ``observed`` (what a chunk's cells turned out to be)."""
    return next((k for k, t in ARROW_TYPES.items() if t == observed), "string")


def _parse(cells: pa.Array, kind: str) -> pa.Array | None:
    """``cells`` (strings) as ``kind``, or None when a non-null cell does not parse."""
    if kind == "int":
        return _cast(_numbers(cells, percent=False), pa.int64())
    if kind == "float":
        return _cast(_numbers(cells, percent=True), pa.float64())
    if kind == "bool":
        return _bool(cells)
    if kind == "date":
        return _date(cells)
    if kind == "datetime":
        return _datetime(cells)
    if kind == "datetime_zoned":
        return _cast(cells, ZONED)
    return None


def typed_column(cells: pa.Array, kind: str | None, name: str, source: str) -> Typed:
    """``cells`` (trimmed strings, empty cells null) as type ``kind`` (int, float, bool, date, datetime; anything
    else is text) by the module's rules; ``name`` and ``source`` name the column and table in the note."""
    if isinstance(cells, pa.ChunkedArray):
        cells = cells.combine_chunks()
    if cells.null_count == len(cells):
        return Typed(pa.nulls(len(cells), arrow_type(kind)))
    if kind in (None, "string", "empty"):
        return Typed(cells.cast(TEXT))
    cells = _null_tokens(cells.cast(TEXT))
    if cells.null_count == len(cells):
        return Typed(pa.nulls(len(cells), arrow_type(kind)))
    parsed = _parse(cells, kind)
    if parsed is None or not _all_parsed(cells, parsed):
        return Typed(cells.cast(TEXT), f"column {name!r} of {source} is mostly {kind} but has cells that are not: "
                                       "written as text")
    return Typed(parsed)


def _null_tokens(cells: pa.Array) -> pa.Array:
    """``cells`` with the null tokens of :data:`discovery.ground.normalize.NULL_TOKENS` (``N/A``, ``null``, ``-``, in
    any case) as nulls: they mean no value, not a value that fails to parse."""
    from ...ground.normalize import NULL_TOKENS

    folded = pc.utf8_lower(pc.utf8_trim_whitespace(cells))
    return pc.if_else(pc.fill_null(pc.is_in(folded, value_set=pa.array(NULL_TOKENS, TEXT)), False),
                      pa.scalar(None, TEXT), cells)


_NUMBER = r"^[+-]?((\d{1,3}(,\d{3})+|\d+)(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?$"


def parse_cells(cells: pa.Array, kind: str = "float") -> tuple[pa.Array, pa.Array]:
    """Each cell as a float64 by the ``float`` rule (null where empty, a null token or not a number), and whether it
    was a non-empty cell that is not a number: for aggregates over a column, where one bad cell must not hide."""
    if isinstance(cells, pa.ChunkedArray):
        cells = cells.combine_chunks()
    cells = _null_tokens(cells.cast(TEXT))
    ok = pc.fill_null(pc.match_substring_regex(cells, _NUMBER), False)
    values = _numbers(pc.if_else(ok, cells, pa.scalar(None, TEXT)), percent=True).cast(pa.float64())
    return values, pc.and_(pc.is_valid(cells), pc.invert(ok))


def common_type(types: list[tuple[str, pa.DataType]], column: str) -> tuple[pa.DataType, str | None]:
    """The one type of an output column fed by ``types`` ((table, type) per contributing column), and the warning a
    conflict gives (None without one)."""
    present = [(src, t) for src, t in types if not pa.types.is_null(t)]
    kinds = {t for _, t in present}
    if not kinds:
        return pa.null(), None
    if len(kinds) == 1:
        return kinds.pop(), None
    if all(pa.types.is_integer(t) or pa.types.is_floating(t) for t in kinds):
        return (pa.int64() if all(pa.types.is_integer(t) for t in kinds) else pa.float64()), None
    if kinds <= {pa.date32(), NAIVE}:
        return NAIVE, None
    if kinds <= {pa.date32(), ZONED}:
        return ZONED, None
    shown = "; ".join(f"{src}: {_kind_name(t)}" for src, t in present)
    return TEXT, f"column {column!r} has disagreeing types ({shown}): written as text"


def _kind_name(t: pa.DataType) -> str:
    if pa.types.is_string(t):
        return "text"
    if pa.types.is_timestamp(t):
        return "datetime with zone" if t.tz else "datetime"
    return str(t)


def to_type(array: pa.Array, to: pa.DataType) -> pa.Array:
    """``array`` (a :func:`typed_column` result) in the output type ``to`` that :func:`common_type` chose: numbers
    widened, a date at midnight, anything as its text otherwise (Arrow's rendering: ``2024-01-31``, ``1.5``,
    ``true``)."""
    if array.type == to:
        return array
    if pa.types.is_null(array.type):
        return pa.nulls(len(array), to)
    if pa.types.is_timestamp(to) and pa.types.is_date(array.type):
        return array.cast(pa.timestamp("us")).cast(to) if to.tz is None else pc.assume_timezone(
            array.cast(pa.timestamp("us")), "UTC")
    return array.cast(to)


def _normalised(array: pa.Array) -> pa.Array:
    """A column given as data in one of the written types (integers int64, floats and decimals float64, times in
    microseconds, dictionaries decoded); what has no such type is written as its text."""
    t = array.type
    if pa.types.is_dictionary(t):
        return _normalised(array.dictionary_decode())
    for check, to in ((pa.types.is_integer, pa.int64()), (pa.types.is_floating, pa.float64()),
                      (pa.types.is_decimal, pa.float64()), (pa.types.is_date, pa.date32()),
                      (pa.types.is_boolean, pa.bool_()), (pa.types.is_null, pa.null())):
        if check(t):
            return array.cast(to)
    if pa.types.is_timestamp(t):
        return array.cast(pa.timestamp("us", tz="UTC" if t.tz else None))
    try:
        return array.cast(TEXT)
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        return pa.array([None if v is None else str(v) for v in array.to_pylist()], TEXT)


def query_columns(query: QueryTable) -> tuple[list[pa.Array], list[str]]:
    """The query's columns typed for writing, with the notes typing gave: a query given as data keeps its columns
    (in the written types, :func:`_normalised`), a file's columns are typed as a lake table's are."""
    if query.arrow is not None:
        return [_normalised(c.combine_chunks()) for c in query.arrow.columns], []
    out, notes = [], []
    for name, cells, kind in zip(query.names, query.columns, query.kinds()):
        typed = typed_column(cells, kind if kind in ARROW_TYPES else "string", name, f"query {query.label!r}")
        out.append(typed.array)
        notes += [typed.note] if typed.note else []
    return out, notes
