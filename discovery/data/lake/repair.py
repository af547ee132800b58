"""Which rows and columns of a delimited file form the table: pandas' reading, plus stated repair rules.

The reference is ``pandas.read_csv(engine="python", on_bad_lines="skip", skipinitialspace=True)``: the first row is
the header, rows shorter than it are padded with empty cells, longer rows are skipped.  On top of that, shapes that
pandas drops or misreads are repaired by rule, each repair listed as a warning:

* **trailing delimiters** -- empty fields past the last column are dropped (``a | b |``).  pandas instead takes the
  first column as an index when the first row is one field longer, moving every cell one column left;
* **a first data row longer than the header** -- pandas then reads every row of up to that row's number of fields
  (the extra leading fields become its index), so the reader keeps those rows too: the table is as wide as the
  widest of them, the columns past the header unnamed, and they are never taken for a stacked table nor skipped;
* **a header of bare delimiters** (``,,``) -- pandas' header, with every column unnamed, when the first line with
  values is data: it has a number, and numbers where the line below has them (a header names a numeric column with
  text).  Above a line of names, bare-delimiter lines are blank lines, as anywhere else (an export's empty top rows);
* **unnamed empty columns** -- a header field with no name whose column has no value in any row is dropped (the
  header's own trailing delimiter; Markdown's ``| a | b |``), and a Markdown rule line (``|---|---|``) under the
  header is skipped;
* **a stacked table** -- a run of rows wider than the header, all of one width (after an optional header row of its
  own), below rows that fit: another table written under the first, not indexed;
* **a header shorter than the body** -- when at least half of the rows are longer than the header, the table is as
  wide as its longest row, and the columns past the header are unnamed;
* **a header longer than the body, short rows** -- missing cells at the end of a row are empty (as in pandas).

No rule moves a cell: each keeps the column of its position on the line, and a repair only drops whole rows, whole
empty columns, or empty fields.  Rows longer than the header that no rule explains are skipped and counted, as
pandas' ``on_bad_lines="skip"`` does, up to ``max(Limits.max_skipped_rows, Limits.max_ragged_fraction * rows)``;
more is an error naming their lines, and so is a file with no data row left.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np

from ...config import Limits
from .delimited import Rows
from .table import LakeFileError

_RULE = re.compile(r":?-{3,}:?")
#: a number as the profiler reads one (its pattern; :mod:`.profile` imports the reader, so not from there)
_NUMBER = re.compile(r"[+-]?((\d{1,3}(,\d{3})+|\d+)(\.\d*)?|\.\d+)([eE][+-]?\d+)?%?")
_SHOWN_LINES = 5


@dataclass
class Shape:
    rows: np.ndarray        # indices (into Rows) of the data rows kept, in file order
    positions: list[int]    # field positions (0-based) kept as columns, in order
    names: list[str]        # header text of each kept column ("" where unnamed)
    warnings: list[str]


def _lines(lines: np.ndarray) -> str:
    shown = [str(n) for n in lines[:_SHOWN_LINES]]
    if len(lines) == 1:
        return f"line {shown[0]}"
    if len(lines) <= _SHOWN_LINES:
        return f"lines {', '.join(shown[:-1])} and {shown[-1]}"
    return f"lines {', '.join(shown)}, ..."


def _columns(positions: list[int]) -> str:
    numbers = [str(p + 1) for p in positions]
    return f"column {numbers[0]}" if len(numbers) == 1 else f"columns {', '.join(numbers[:-1])} and {numbers[-1]}"


def _fields(widths: np.ndarray) -> str:
    low, high = int(widths.min()), int(widths.max())
    return f"{low} fields" if low == high else f"{low} to {high} fields"


def _is_rule(cells: list[str | None]) -> bool:
    filled = [c for c in cells if c]
    return bool(filled) and all(_RULE.fullmatch(c) for c in filled)


def _is_data(cells: list[str | None], below: list[str | None] | None) -> bool:
    """Whether a line of ``cells`` reads as data rather than names: it has a number, and no cell where the line
    ``below`` has a value differs from it in being a number."""
    kinds = [None if c is None else bool(_NUMBER.fullmatch(c)) for c in cells]
    if not any(kinds):
        return False
    under = [None if c is None else bool(_NUMBER.fullmatch(c)) for c in below or ()]
    return all(a == b for a, b in zip(kinds, under) if a is not None and b is not None)


def _header_row(rows: Rows, present: np.ndarray) -> int:
    """The header: the first line with a value, or the first line of bare delimiters above it when that line is
    data (see the module docstring)."""
    first = int(present[0])
    bare = np.flatnonzero(rows.lengths[:first] > 1)
    below = rows.row(int(present[1])) if present.size > 1 else None
    return int(bare[0]) if bare.size and _is_data(rows.row(first), below) else first


def _stacked_runs(widths: np.ndarray, lengths: np.ndarray, n_header: int, read: int) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of data rows that form a second, wider table below the first.

    A run of consecutive rows wider than the header and than the ``read`` fields pandas reads, after at least one
    row that fits, whose rows all have one width -- or all but the first, the stacked table's own header, when the
    run has three rows or more.
    """
    longer = ((widths > n_header) & (lengths > read)).astype(np.int8)
    edges = np.flatnonzero(np.diff(np.r_[0, longer, 0]))
    runs = []
    for a, b in zip(edges[::2].tolist(), edges[1::2].tolist()):
        w = widths[a:b]
        if a > 0 and ((b - a >= 2 and (w == w[0]).all()) or (b - a >= 3 and (w[1:] == w[1]).all())):
            runs.append((a, b))
    return runs


def _has_value(rows: Rows, keep: np.ndarray, position: int) -> bool:
    if not (rows.widths[keep] > position).any():
        return False
    return rows.cell_column(keep, position).null_count < len(keep)


def shape_table(rows: Rows, limits: Limits) -> Shape:
    """The header, the data rows kept and the columns of a tokenized file, with a warning per repair."""
    present = np.flatnonzero(rows.widths > 0)       # lines without any value are blank
    if present.size == 0:
        raise LakeFileError("no header row: no line has a value")
    head = _header_row(rows, present)
    body = present[present > head]
    header = rows.row(head)
    n_header = len(header)
    warnings: list[str] = []
    if rows.widths[head] == 0:
        warnings.append(f"{_lines(rows.lines[head:head + 1])} has delimiters and no names over rows of data: it is "
                        f"the header, its columns unnamed")
    hollow = np.flatnonzero((rows.widths == 0) & (rows.lengths > 1))
    hollow = hollow[hollow != head]
    if hollow.size:
        warnings.append(f"{hollow.size} row(s) of delimiters without any value ({_lines(rows.lines[hollow])}): "
                        f"skipped as blank lines")
    if body.size and _is_rule(rows.row(int(body[0]))):
        warnings.append(f"{_lines(rows.lines[body[:1]])} is a Markdown rule under the header: skipped")
        body = body[1:]
    if body.size == 0:
        raise LakeFileError("header only: no data rows")
    widths, lengths, lines = rows.widths[body], rows.lengths[body], rows.lines[body]
    read = max(n_header, int(lengths[0]))       # pandas reads rows of up to this many fields

    rest = np.ones(len(body), bool)
    for a, b in _stacked_runs(widths, lengths, n_header, read):
        rest[a:b] = False
        warnings.append(f"lines {lines[a]} to {lines[b - 1]}: {b - a} rows of {_fields(widths[a:b])} below the "
                        f"{n_header}-field header (a second table written under the first): not indexed")
    longer = rest & (widths > n_header)
    n_rest, n_longer = int(rest.sum()), int(longer.sum())
    width = n_header
    if n_longer and 2 * n_longer >= n_rest:
        width = int(widths[longer].max())
        warnings.append(f"the header is shorter than the body: {n_longer} of {n_rest} rows have more than its "
                        f"{n_header} fields ({_fields(widths[longer])}); the table is {width} columns wide, "
                        f"{_columns(list(range(n_header, width)))} unnamed")
    elif (by_pandas := longer & (lengths <= read)).any():
        width = int(widths[by_pandas].max())
        warnings.append(f"the first data row ({_lines(lines[:1])}) has {read} fields, more than the header's "
                        f"{n_header}, and pandas reads every row of up to {read} fields: {int(by_pandas.sum())} of "
                        f"{n_rest} rows have more than {n_header} fields; the table is {width} columns wide, "
                        f"{_columns(list(range(n_header, width)))} unnamed")
    extra = rest & (widths > width)
    n_extra = int(extra.sum())
    if n_extra:
        bound = max(limits.max_skipped_rows, int(limits.max_ragged_fraction * n_rest))
        than = f"the header's {n_header}" if width == n_header else f"the table's {width}"
        what = (f"{n_extra} of {n_rest} rows ({_lines(lines[extra])}) have {_fields(widths[extra])}, more than "
                f"{than}, and no rule explains them")
        if n_extra > bound:
            raise LakeFileError(f"ragged rows: {what}; at most {bound} may be skipped",
                                [rows.excerpt(i) for i in body[extra][:3]])
        warnings.append(f"{what}: skipped")
        rest &= ~extra
    keep = body[rest]

    named = [p < n_header and bool(header[p]) for p in range(width)]
    if sum(named) > limits.max_columns:
        raise LakeFileError(f"{sum(named)} columns, more than the limit of {limits.max_columns}")
    positions, dropped = [], []
    for p in range(width):
        if named[p] or _has_value(rows, keep, p):
            positions.append(p)
            if len(positions) > limits.max_columns:   # stop before looking at every unnamed column
                raise LakeFileError(f"over {limits.max_columns} columns, more than the limit of {limits.max_columns}")
        else:
            dropped.append(p)
    if dropped:
        warnings.append(f"{_columns(dropped)}: no header name and no value in any row (an extra delimiter on every "
                        f"line): dropped")
    last = positions[-1] + 1
    lengths = rows.lengths[keep]
    trailing = lengths > last
    if trailing.any():
        warnings.append(f"{int(trailing.sum())} of {len(keep)} rows ({_lines(rows.lines[keep][trailing])}) end "
                        f"with a delimiter after the last column: the empty fields are dropped")
    short = lengths < last
    if short.all():
        longest = int(lengths.max())
        warnings.append(f"the header is longer than the body: no row has more than {longest} of its {last} fields; "
                        f"{_columns([p for p in positions if p >= longest])} empty")
    elif short.any():
        warnings.append(f"{int(short.sum())} of {len(keep)} rows ({_lines(rows.lines[keep][short])}) have fewer "
                        f"than {last} fields: their missing cells at the end are empty")
    names = [(header[p] or "") if p < n_header else "" for p in positions]
    return Shape(keep, positions, names, warnings)
