"""Dates, years and numeric spans written inside text cells, rewritten to one canonical form before join encoding.

Web tables write one term of office as ``Jul 1 1801; Jul 1 1804``, ``July 1 1801; –; June 30 1804`` or
``(1801 - 1804)``: the same facts, different characters, so the join encoder puts them apart.  PEXESO (§II-A)
canonicalises values before embedding; :func:`.canonical.canonicalize_text` already turns single dates into
``yyyy-mm-dd``.  This step runs after it, on the join encoder's input only (its config's ``spans``; encoders stored
before the rule existed encode without it, so stored vectors and query vectors always come from the same rules).

The rules, applied in this order to each normalised, canonicalised value:

1. **Month and year** (no day): ``july 1801`` -> ``1801-07``.
2. **Date and year spans**: two endpoints, each a date ``yyyy-mm-dd``, a month ``yyyy-mm`` or a year ``yyyy``,
   joined by a dash (``-`` ``‐`` ``‒`` ``–`` ``—`` ``―`` ``−``, spaced or not, with an optional ``;`` on either side,
   as in ``1801-07-01; –; 1804-06-30``), by ``to`` / ``until`` / ``through`` / ``till``, or - between two full
   dates only - by a bare ``;`` (``1801-07-01; 1804-07-01``, a term written as two cells).  The span becomes
   ``<start> - <end>``.  An end of two digits after a typographic dash (``1861–65``, ``2000—15``) is the start's
   century plus those digits when that lies after the start (``1861 - 1865``); after an ASCII hyphen it is left
   alone, since ``2010-12`` is more often a month than a span.  An open end (``2015 – present``, ``incumbent``,
   ``today``, ``now``) becomes ``<start> - present``.
3. **Numeric spans**: two numbers joined by a typographic dash, a spaced hyphen or ``to`` (``10–20``,
   ``1.5 - 2``, ``10 to 20``) become ``<a> - <b>``; ``10-20`` with a bare hyphen is left alone (scores, codes).

Everything outside a recognised span is kept as it is, and the output is a fixed point of the rules (applying them
again changes nothing), so a value is encoded the same whether it was canonicalised once or twice.  The canonical
separator `` - `` is also a segment delimiter (:mod:`discovery.indexes.join.segments`), so a span's endpoints are
matched as segments of their own too.
"""
from __future__ import annotations

import re
from collections.abc import Sequence

from .canonical import MONTH_NAMES, MONTH_NUMBER

_TYPOGRAPHIC = "\u2010\u2011\u2012\u2013\u2014\u2015\u2212"
_DASH = "\\-" + _TYPOGRAPHIC  # a character-class body: the hyphen escaped, then the typographic dashes
_WORDS = r"to|until|through|till"
_OPEN = r"present|incumbent|today|now"
_MONTH_YEAR = re.compile(rf"\b({MONTH_NAMES}),? (\d{{4}})(?![\d-])")
_POINT = r"\d{4}(?:-(?:0[1-9]|1[0-2])(?:-(?:0[1-9]|[12]\d|3[01]))?)?"
_SEP = rf"(?P<sep>[ \t]*;?[ \t]*[{_DASH}][ \t]*;?[ \t]*|[ \t]+(?:{_WORDS})[ \t]+|[ \t]*;[ \t]*)"
_DATE_SPAN = re.compile(rf"(?<![\w.{_DASH}])(?P<a>{_POINT}){_SEP}(?P<b>{_POINT}|\d{{2}}|{_OPEN})(?![\w{_DASH}])")
_NUMBER = r"\d+(?:\.\d+)?"
_NUMBER_SPAN = re.compile(rf"(?<![\w.,{_DASH}])(?P<a>{_NUMBER})(?P<sep>[ \t]*[{_TYPOGRAPHIC}][ \t]*"
                          rf"|[ \t]+-[ \t]+|[ \t]+to[ \t]+)(?P<b>{_NUMBER})(?![\w.,{_DASH}])")


def _date_span(m: re.Match) -> str:
    a, sep, b = m.group("a"), m.group("sep"), m.group("b")
    dash = [c for c in sep if c == "-" or c in _TYPOGRAPHIC]
    if not dash and ";" in sep and not (len(a) == 10 and len(b) == 10):
        return m.group()  # a bare ";" joins two full dates only
    if b.isalpha():
        return f"{a} - present" if dash or sep.strip() in ("to", "until", "through", "till") else m.group()
    if len(b) == 2:
        end = int(a[:4]) // 100 * 100 + int(b)
        if not dash or dash[0] not in _TYPOGRAPHIC or len(a) != 4 or end <= int(a):
            return m.group()
        b = str(end)
    return f"{a} - {b}"


def canonicalize_spans(text: str) -> str:
    """Rewrite the spans of newline-separated canonicalised values (rules in the module docstring)."""
    text = _MONTH_YEAR.sub(lambda m: f"{m.group(2)}-{MONTH_NUMBER[m.group(1)]:02d}", text)
    text = _DATE_SPAN.sub(_date_span, text)
    return _NUMBER_SPAN.sub(lambda m: f"{m.group('a')} - {m.group('b')}", text)


def canonicalize_span_values(values: Sequence[str | None]) -> list[str | None]:
    """:func:`canonicalize_spans` of each value; ``None`` stays ``None``."""
    present = [v.replace("\n", " ") for v in values if v is not None]
    out = iter(canonicalize_spans("\n".join(present)).split("\n") if present else [])
    return [None if v is None else next(out) for v in values]
