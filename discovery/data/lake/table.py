"""The parsed form of a lake table, and the error that says why a file has none.

Reasons and warnings name lines, rows and columns by number and never quote the file: they are shown wherever the
catalog is (the page, the CLI, query errors), and a served message must not echo cells of a file it should not
reveal.  The few excerpts that help a lake owner find a broken row travel separately in
:attr:`LakeFileError.examples`.
"""
from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...config import Limits

class LakeFileError(ValueError):
    """A lake file that cannot be indexed.

    ``reason`` names lines and columns by number only; ``examples`` are short excerpts of the offending rows.
    ``str(exc)`` -- the error text stored in the catalog -- is the reason followed by the examples, so
    ``LakeFileError("...")`` reads as a plain message.
    """

    def __init__(self, reason: str, examples: Sequence[str] = ()):
        self.reason = reason
        self.examples = tuple(examples)
        super().__init__(f"{reason}, e.g. {'; '.join(self.examples)}" if self.examples else reason)

    def __reduce__(self):
        return type(self), (self.reason, self.examples)


def first_line(exc: BaseException) -> str:
    """The first line of ``exc``'s message (its type's name when it has none), as a reason a lake table is refused.

    The libraries that read lake tables (pyarrow, delta-rs, pyiceberg) add lines of context to their errors -- a
    backtrace, a list of paths, at times the bytes they stopped at -- that belong in no catalog row or served
    message."""
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


@dataclass
class ParsedTable:
    names: list[str]
    columns: list[pa.Array]          # one string array per column, cells trimmed, empty cells null
    encoding: str | None = None
    delimiter: str | None = None
    warnings: list[str] = field(default_factory=list)   # every repair and bound hit, by line/column number
    types: list[str | None] | None = None  # per column, the type the format's schema gives (None: inferred)

    @property
    def num_rows(self) -> int:
        return len(self.columns[0]) if self.columns else 0

    def to_arrow(self) -> pa.Table:
        return pa.Table.from_arrays(self.columns, names=[f"c{i}" for i in range(len(self.names))])


def dedupe_names(raw: list[str], numbers: Sequence[int] | None = None) -> tuple[list[str], list[str]]:
    """Header names made unique and non-empty; returns the names and the repairs made.

    Names are compared exactly, as pandas, Arrow and Parquet compare them: ``id`` and ``ID`` are two columns a user
    tells apart and asks for by name, so both keep their names, and :meth:`discovery.query.resolve.QueryTable.ordinal`
    falls back to a case-insensitive match only when no name matches exactly and one column alone folds to it.
    Nothing needs names unique regardless of case: they are stored as values of the ``columns`` table and parsed
    tables name their Arrow columns ``c0, c1, ...``, so no Delta, Spark or Arrow schema ever carries them.

    A generated name -- ``column_<number>`` for an empty one, ``<name>_<n>`` for a repeat -- never takes a name the
    header gives any column, before or after it, nor one generated earlier: asking for a name must find the column
    the file gives it (``a, a, a_2`` becomes ``a, a_3, a_2``).  ``numbers`` are the column numbers used in notes
    and generated names (default 1, 2, ...): a text file's columns are numbered by their field on the line, which
    differs from their place when empty columns were dropped.
    """
    numbers = list(numbers) if numbers is not None else list(range(1, len(raw) + 1))
    stripped = [(name or "").strip() for name in raw]
    taken = set(stripped) - {""}          # names no generated name may take
    names: list[str] = []
    first: dict[str, int] = {}
    notes, unnamed = [], []

    def free(base: str) -> tuple[str, int]:
        n = 2
        while f"{base}_{n}" in taken:
            n += 1
        return f"{base}_{n}", n

    for number, name in zip(numbers, stripped):
        if not name:
            unnamed.append(str(number))
            name = f"column_{number}"
            if name in taken:
                name, n = free(name)
                notes.append(f"column {number} has no header name, and column_{number} names another column: "
                             f"suffix _{n} added")
        elif name in first:
            original, (name, n) = name, free(name)
            notes.append(f"column {number} repeats the header name of column {first[original]}: suffix _{n} added")
        taken.add(name)
        first[name] = number
        names.append(name)
    if unnamed:
        which = f"column {unnamed[0]} has" if len(unnamed) == 1 else f"columns {', '.join(unnamed)} have"
        notes.insert(0, f"{which} no header name: named column_<number>")
    return names, notes


def text_cells(col: pa.Array) -> pa.Array:
    """Cells as strings trimmed of surrounding whitespace, empty ones null."""
    col = pc.utf8_trim_whitespace(col.cast(pa.string()))
    return pc.if_else(pc.equal(col, ""), pa.scalar(None, pa.string()), col)


def check_cell_lengths(col: pa.Array, limits: Limits, column: int, lines: np.ndarray | None = None) -> pa.Array:
    """``col`` itself, once no cell is longer than ``max_cell_chars``.

    ``column`` is the 1-based column named in the error; ``lines`` the file line of each row (text files), else
    rows are named by their 1-based position.
    """
    too_long = pc.greater(pc.utf8_length(col), limits.max_cell_chars)
    if pc.any(too_long).as_py():
        i = pc.index(too_long, True).as_py()
        length = pc.utf8_length(col[i]).as_py()
        where = f"line {lines[i]}" if lines is not None else f"row {i + 1}"
        raise LakeFileError(f"cell on {where}, column {column} has {length} characters, more than the limit of "
                            f"{limits.max_cell_chars} (broken quoting, or a document stored in a cell)")
    return col
