"""Plain-text tables of the human output, fitted to the terminal.

A table wider than the terminal has its widest columns cut to an equal width (water-filling: narrow columns such as
ranks and scores keep theirs), each cut cell ending in an ellipsis; ``--json`` always carries every value in full.
The width is ``$COLUMNS`` when set, else the terminal's when standard output is one.  Output that goes to a pipe or
a file is not cut: there is no width to fit, and what reads it (``grep``, ``less -S``, a file) wants whole values.
"""
from __future__ import annotations

import os
import sys
import textwrap

#: Narrowest a cut column becomes (a few characters and the ellipsis).
MIN_WIDTH = 6


def terminal_width() -> int | None:
    """The width to fit tables to, or None (no limit): ``$COLUMNS``, else the terminal's when stdout is one."""
    columns = os.environ.get("COLUMNS", "")
    if columns.isdigit() and int(columns) > 0:
        return int(columns)
    try:
        return os.get_terminal_size(sys.stdout.fileno()).columns if sys.stdout.isatty() else None
    except (OSError, ValueError, AttributeError):
        return None


def ellipsis() -> str:
    encoding = getattr(sys.stdout, "encoding", None) or "ascii"
    try:
        "…".encode(encoding)
        return "…"
    except (UnicodeEncodeError, LookupError):
        return "."


def fitted(widths: list[int], room: int, flexible: list[bool] | None = None) -> list[int]:
    """Column widths whose sum is at most ``room``: the widest columns cut to one common cap, none below
    :data:`MIN_WIDTH` (nor below its own width); the natural widths when they fit.  ``flexible`` columns (the
    evidence, say) are cut first; the others only when cutting those to the floor is not enough."""
    if sum(widths) <= room:
        return widths
    if flexible is not None and any(flexible) and not all(flexible):
        fixed = sum(w for w, f in zip(widths, flexible) if not f)
        cut_first = fitted([w for w, f in zip(widths, flexible) if f], room - fixed)
        if sum(cut_first) + fixed <= room:
            it = iter(cut_first)
            return [next(it) if f else w for w, f in zip(widths, flexible)]
    floor = [min(w, MIN_WIDTH) for w in widths]
    lo, hi = 0, max(widths)
    while lo < hi:                        # the largest cap c with sum(min(w, max(c, floor))) <= room
        c = (lo + hi + 1) // 2
        if sum(min(w, max(c, f)) for w, f in zip(widths, floor)) <= room:
            lo = c
        else:
            hi = c - 1
    return [min(w, max(lo, f)) for w, f in zip(widths, floor)]


def cut(text: str, width: int, mark: str) -> str:
    return text if len(text) <= width else text[: max(width - len(mark), 0)] + mark


def table(rows: list[dict], columns: list[str], indent: int = 2, width: int | None = None,
          flexible: tuple[str, ...] = ()) -> str:
    """``rows`` as aligned columns under a header, each line starting with ``indent`` spaces, fitted to ``width``
    (default :func:`terminal_width`), cutting the ``flexible`` columns first."""
    pad = " " * indent
    if not rows:
        return pad + "(none)"
    cells = [[str(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    width = terminal_width() if width is None else width
    if width is not None:
        widths = fitted(widths, width - indent - 2 * (len(columns) - 1), [c in flexible for c in columns])
        mark = ellipsis()
        cells = [[cut(v, w, mark) for v, w in zip(row, widths)] for row in cells]
        columns = [cut(c, w, mark) for c, w in zip(columns, widths)]
    line = lambda vals: (pad + "  ".join(v.ljust(w) for v, w in zip(vals, widths))).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


def wrapped(text: str, indent: int) -> str:
    """A long line wrapped to the terminal's width, continuation lines indented by ``indent`` spaces."""
    width = terminal_width()
    return text if width is None else textwrap.fill(text, width, subsequent_indent=" " * indent)
