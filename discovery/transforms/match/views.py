"""Views of a column's values: the part of each cell that names the entity, when a column writes more around it.

Web tables and spreadsheets put an entity inside a longer cell in the same way down a whole column: ``John Adams;
1797 – 1801``, ``Abraham Lincoln (1861 - 1865)``, ``Augusta, Maine``, ``Washington, George``.  When *both* columns
do it, each in its own way (``John Adams; 1789 – 1797`` against ``John Adams (Federalist)``), no measure of the whole
cells can join them: each side keeps words the other lacks, which is what tells two entities apart (:mod:`.align`).
The string programs of Auto-Join (Zhu et al., VLDB 2017) turn one column's values into the other's; a program that
turns *both* into a common key covers this case too, and one that turns only the query's is the one-sided program.

A :class:`View` is such a program, from a small, closed family a reader can check in the written description: the
whole value; the first or last part of a split on one delimiter (brackets and quotes around the part removed); or
the two parts around a comma swapped (``adams, john quincy`` -> ``john quincy adams``).  A value without the
delimiter is its own view, so a column where most but not all cells carry a qualifier keeps the bare ones.

Which views to use is learned from the two columns, without labels, as Auto-Join learns its programs from the rows
they make joinable: a pair of views is a candidate when a delimiter occurs in at least :data:`SHARE` of a column's
values (a column-wide shape, not the ``(film)`` of a few titles), and the candidate whose views make the most
distinct query values *equal* to a lake value wins, when that is more than the whole values make equal.  The matcher
then runs on the winning views and is kept when its estimated true positives exceed the whole values' (see
:func:`discovery.transforms.match.matcher.match_values`).  Two lake values with one view (``X (film)``, ``X (novel)``)
stay two: a query value landing on that view joins neither.

Left out, and why: programs over several query columns (a first and a last name into a user name) need the
rows of both tables, where the matcher sees one column's values; deeper programs (a split inside a split) multiply
the candidates for shapes the measures already cover (a qualifier on one side only is the ``contain`` measure's).
"""
from __future__ import annotations

from dataclasses import dataclass

#: Delimiters a column-wide shape splits on (normalised values: lower case, single spaces).
DELIMITERS = ("; ", " (", ", ", " - ", " \u2013 ", " | ", ": ", " / ")
#: Share of a column's values that must hold a delimiter for it to shape the column.
SHARE = 0.5
#: Fewer distinct query values made equal than this is no evidence for a view.
MIN_EQUAL = 3
_STRIP = " ()[]\"'\u201c\u201d;,:"


@dataclass(frozen=True)
class View:
    """``delimiter`` None: the whole value; else the first part of the split (``part`` 0) or the two parts around it
    swapped (``"swap"``)."""

    delimiter: str | None = None
    part: int | str = 0

    def apply(self, value: str) -> str:
        if self.delimiter is None or self.delimiter not in value:
            return value
        parts = value.split(self.delimiter)
        if self.part == "swap":
            if len(parts) != 2:
                return value
            out = f"{parts[1].strip(_STRIP)} {parts[0].strip(_STRIP)}"
        else:
            out = parts[0].strip(_STRIP)
        return out or value

    def describe(self) -> str:
        d = self.delimiter.strip() if self.delimiter else None
        if d is None:
            return "whole value"
        if self.part == "swap":
            return f"parts around {d!r} swapped"
        return f"part before the first {d!r}"


WHOLE = View()


def candidates(values: list[str]) -> list[View]:
    """The views of a column: the whole value, and the parts of every delimiter that shapes it (module docstring)."""
    return shaped({d: sum(d in v for v in values) for d in DELIMITERS}, len(values))


def shaped(holding: dict[str, int], n: int) -> list[View]:
    """:func:`candidates` from how many of the column's ``n`` values hold each delimiter."""
    out = [WHOLE]
    if not n:
        return out
    for d in DELIMITERS:
        if holding.get(d, 0) / n >= SHARE:
            out.append(View(d, 0))
            if d == ", ":
                out.append(View(d, "swap"))
    return out


def unique_keys(values: list[str], view: View) -> set[str]:
    """The views of ``values`` that exactly one of them has."""
    seen: dict[str, int] = {}
    for v in values:
        k = view.apply(v)
        seen[k] = seen.get(k, 0) + 1
    return {k for k, n in seen.items() if n == 1}


def best(query: list[str], lake) -> tuple[View, View] | None:
    """The pair of views (query's, lake's) under which the most query values equal a lake value one to one (a view
    that several values of a column share, as a surname, counts for none), when that beats the whole values by at
    least :data:`MIN_EQUAL`; None otherwise.  ``query`` are distinct values, ``lake`` a
    :class:`~discovery.transforms.match.matcher.LakeSide` (its :meth:`shapes`, :meth:`unique_views` and
    :meth:`holding`)."""
    q_views, l_views = candidates(query), lake.shapes()
    if len(q_views) == 1 and len(l_views) == 1:
        return None
    query_keys = {v: unique_keys(query, v) for v in q_views}
    wanted = set().union(*query_keys.values())
    lake_keys = {v: lake.unique_views(v, wanted) for v in l_views}
    base = len(lake.holding(query))
    scored = []
    for qv in q_views:
        for lv in l_views:
            if qv == WHOLE and lv == WHOLE:
                continue
            equal = len(query_keys[qv] & lake_keys[lv])
            scored.append((equal, qv == WHOLE, lv == WHOLE, qv, lv))
    if not scored:
        return None
    equal, *_, qv, lv = max(scored, key=lambda s: s[:3])
    return (qv, lv) if equal >= base + MIN_EQUAL else None


def grouped(values: list[str], view: View) -> tuple[list[str], dict[str, list[str]]]:
    """The distinct views of ``values`` in first-seen order, and the values behind each."""
    behind: dict[str, list[str]] = {}
    for v in values:
        behind.setdefault(view.apply(v), []).append(v)
    return list(behind), behind


def ambiguous(behind: dict[str, list[str]]) -> set[str]:
    """Views that several distinct values share: two entities a view cannot tell apart."""
    return {k for k, vs in behind.items() if len(vs) > 1}
