"""Splitting delimited text into rows of cells, with the tokenizer pandas' python engine uses.

The tokenizer is :mod:`csv` with ``skipinitialspace``, as in ``pandas.read_csv(engine="python",
skipinitialspace=True)``: a quote that opens a cell after a padded delimiter (``a | "b | c"``) still quotes it, so a
delimiter inside quotes never splits a cell, and ``\\r\\n``, ``\\n`` and a lone ``\\r`` all end a line.  Cells are kept
flat in one Arrow string array (row ``i`` is ``cells[starts[i] : starts[i] + lengths[i]]``), so the repair rules of
:mod:`.repair` work on numpy arrays of row lengths and widths, and columns are gathered with one ``take`` each.
"""
from __future__ import annotations

import csv
import io
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa

from ...config import Limits
from .table import LakeFileError, text_cells

_CHUNK_CELLS = 1 << 18      # cells converted to Arrow at a time: bounds the Python objects alive while tokenizing
_EXCERPT_CHARS = 60


@dataclass
class Rows:
    """Every row of a delimited text, flattened; blank lines are left out."""

    cells: pa.StringArray       # all cells, trimmed of surrounding whitespace, empty ones null
    lengths: np.ndarray         # fields of each row
    widths: np.ndarray          # position of each row's last non-empty cell + 1 (0: no value at all)
    lines: np.ndarray           # file line each row starts on (1-based)
    delimiter: str
    notes: list[str] = field(default_factory=list)     # dialect repairs seen while splitting
    starts: np.ndarray = field(init=False)                # offset of each row's first cell in ``cells``

    def __post_init__(self):
        self.starts = np.cumsum(self.lengths) - self.lengths

    def row(self, i: int) -> list[str | None]:
        start = int(self.starts[i])
        return self.cells.slice(start, int(self.lengths[i])).to_pylist()

    def cell_column(self, rows: np.ndarray, position: int) -> pa.Array:
        """Cell ``position`` (0-based) of each of ``rows``: null where the row is shorter or the cell empty."""
        present = self.lengths[rows] > position
        return self.cells.take(pa.array(self.starts[rows] + position, mask=~present))

    def excerpt(self, i: int) -> str:
        """``line N: 'first cells...'``, cut short: an example for a lake owner, never part of a reason."""
        text = self.delimiter.join(cell or "" for cell in self.row(i))
        cut = text[:_EXCERPT_CHARS] + ("..." if len(text) > _EXCERPT_CHARS else "")
        return f"line {self.lines[i]}: {cut!r}"


def _widths(nonempty: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """For each row, the position of its last non-empty cell + 1 (0 when every cell is empty)."""
    ends = np.cumsum(lengths)
    filled = np.flatnonzero(nonempty)
    row = np.searchsorted(ends, filled, side="right")
    last = np.r_[row[1:] != row[:-1], True] if filled.size else np.zeros(0, bool)
    widths = np.zeros(len(lengths), np.int64)
    widths[row[last]] = filled[last] - (ends - lengths)[row[last]] + 1
    return widths


def _chunk(cells: list[str], lengths: list[int]) -> tuple[pa.Array, np.ndarray]:
    values = text_cells(pa.array(cells, pa.string()))
    return values, _widths(values.is_valid().to_numpy(zero_copy_only=False), np.asarray(lengths, np.int64))


def _line_of(text: str, pos: int) -> int:
    """1-based line of character ``pos``, counting ``\\r\\n``, ``\\n`` and ``\\r`` as line ends (as the tokenizer)."""
    return text.count("\n", 0, pos) + text.count("\r", 0, pos) - text.count("\r\n", 0, pos) + 1


def _offset_of_line(text: str, line: int) -> int:
    pos = 0
    for number, chunk in enumerate(io.StringIO(text, newline=""), start=1):
        if number == line:
            break
        pos += len(chunk)
    return pos


def _reader(text: str, delimiter: str):
    return csv.reader(io.StringIO(text, newline=""), delimiter=delimiter, skipinitialspace=True)


def _cell_too_long(text: str, delimiter: str, line: int, limits: Limits) -> LakeFileError:
    """The error for a cell the tokenizer refused; re-reads the start of its row to name the column."""
    limit = csv.field_size_limit()
    start = _offset_of_line(text, line)
    fields: list[str] = next(_reader(text[start:start + limit - 1], delimiter), [])
    return LakeFileError(f"cell on line {line}, column {max(len(fields), 1)} has more than {limit - 1} characters; "
                         f"the limit is {limits.max_cell_chars} (broken quoting, or a document stored in a cell)")


def _dialect_notes(text: str, delimiter: str) -> list[str]:
    notes = []
    crlf = text.count("\r\n")
    ends = {"CRLF": crlf, "LF": text.count("\n") - crlf, "CR": text.count("\r") - crlf}
    if sum(1 for n in ends.values() if n) > 1:
        mix = ", ".join(f"{n} {kind}" for kind, n in ends.items() if n)
        notes.append(f"mixed line endings ({mix}): each read as the end of a line")
    # Cells are always trimmed; padding is a repair only where a quote follows it, which still opens a quoted cell
    # (pandas' default tokenizer would split ``a | "b | c"`` at the inner delimiter).
    used = text.count(delimiter)
    if used and 2 * text.count(delimiter + " ") > used and delimiter + ' "' in text:
        notes.append(f"delimiter padded with spaces ({' ' + delimiter + ' '!r}): a quote after the padding opens a "
                     f"quoted cell")
    return notes


def split_rows(text: str, delimiter: str, limits: Limits) -> Rows:
    """Tokenize ``text``; an unclosed quote that swallows the rest of the file is an error naming its line."""
    if csv.field_size_limit() < 2 * limits.max_cell_chars:
        # Only ever raised, never lowered: other readers in the process keep working.  Longer cells stop the
        # tokenizer (a runaway quote cannot build a cell of the whole file); shorter ones are checked exactly later.
        csv.field_size_limit(2 * limits.max_cell_chars)
    values, widths, lengths, lines = [], [], [], []
    cells: list[str] = []
    counts: list[int] = []

    def flush():
        v, w = _chunk(cells, counts)
        values.append(v)
        widths.append(w)
        lengths.extend(counts)
        cells.clear()
        counts.clear()

    reader = _reader(text, delimiter)
    last_row: list[str] = []
    read = 0
    try:
        for row in reader:
            if row:
                cells.extend(row)
                counts.append(len(row))
                lines.append(read + 1)
                last_row = row
                if len(cells) >= _CHUNK_CELLS:
                    flush()
            read = reader.line_num
    except csv.Error as exc:
        if "field larger than field limit" in str(exc):
            raise _cell_too_long(text, delimiter, read + 1, limits) from None
        raise LakeFileError(f"line {read + 1}: {exc}") from None
    if cells:
        flush()
    if last_row and ("\n" in last_row[-1] or "\r" in last_row[-1]):
        raw = '"' + last_row[-1].replace('"', '""')
        if text.endswith(raw):
            raise LakeFileError(f"malformed quoting: the quoted field opened on line "
                                f"{_line_of(text, len(text) - len(raw))} is never closed")
    return Rows(pa.chunked_array(values, pa.string()).combine_chunks(),
                np.asarray(lengths, np.int64), np.concatenate(widths) if widths else np.zeros(0, np.int64),
                np.asarray(lines, np.int64), delimiter, _dialect_notes(text, delimiter))
