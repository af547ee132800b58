"""Which rows and columns of a delimited file form the table: pandas' reading, plus stated repair rules.

The reference is ``pandas.read_csv(engine="python", on_bad_lines="skip", skipinitialspace=True)``: the first row is
the header, rows shorter than it are padded with empty cells, longer rows are skipped.  On top of that, shapes that
pandas drops or misreads are repaired by rule, each repair listed as a warning:

* **trailing delimiters** -- empty fields past the last column are dropped (``a | b |``).  pandas instead takes the
  first column as an index when the first row is one field longer, moving every cell one column left;
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

from ..config import Limits
from .delimited import Rows
from .table import LakeFileError

_RULE = re.compile(r":?-{3,}:?")
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


def _is_rule(cells: list[str]) -> bool:
    filled = [c for c in cells if c]
    return bool(filled) and all(_RULE.fullmatch(c) for c in filled)


def _stacked_runs(widths: np.ndarray, n_header: int) -> list[tuple[int, int]]:
    """Runs ``[a, b)`` of data rows that form a second, wider table below the first.

    A run of consecutive rows wider than the header, after at least one row that fits, whose rows all have one
    width -- or all but the first, the stacked table's own header, when the run has three rows or more.
    """
    longer = (widths > n_header).astype(np.int8)
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
    head, body = int(present[0]), present[1:]
    header = rows.row(head)
    n_header = len(header)
    warnings: list[str] = []
    hollow = np.flatnonzero((rows.widths == 0) & (rows.lengths > 1))
    if hollow.size:
        warnings.append(f"{hollow.size} row(s) of delimiters without any value ({_lines(rows.lines[hollow])}): "
                        f"skipped as blank lines")
    if body.size and _is_rule(rows.row(int(body[0]))):
        warnings.append(f"{_lines(rows.lines[body[:1]])} is a Markdown rule under the header: skipped")
        body = body[1:]
    if body.size == 0:
        raise LakeFileError("header only: no data rows")
    widths, lines = rows.widths[body], rows.lines[body]

    rest = np.ones(len(body), bool)
    for a, b in _stacked_runs(widths, n_header):
        rest[a:b] = False
        warnings.append(f"lines {lines[a]} to {lines[b - 1]}: {b - a} rows of {_fields(widths[a:b])} below the "
                        f"{n_header}-field header (a second table written under the first): not indexed")
    extra = rest & (widths > n_header)
    n_rest, n_extra = int(rest.sum()), int(extra.sum())
    width = n_header
    if n_extra and 2 * n_extra >= n_rest:
        width = int(widths[extra].max())
        warnings.append(f"the header is shorter than the body: {n_extra} of {n_rest} rows have more than its "
                        f"{n_header} fields ({_fields(widths[extra])}); the table is {width} columns wide, "
                        f"{_columns(list(range(n_header, width)))} unnamed")
    elif n_extra:
        bound = max(limits.max_skipped_rows, int(limits.max_ragged_fraction * n_rest))
        what = (f"{n_extra} of {n_rest} rows ({_lines(lines[extra])}) have {_fields(widths[extra])}, more than the "
                f"header's {n_header}, and no rule explains them")
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
    names = [header[p] if p < n_header else "" for p in positions]
    return Shape(keep, positions, names, warnings)
