"""Plain-text tables of the human output."""
from __future__ import annotations


def table(rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return "  (none)"
    cells = [[str(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = lambda vals: ("  " + "  ".join(v.ljust(w) for v, w in zip(vals, widths))).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])
