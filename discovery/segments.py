"""The segments of a cell: the parts web tables and spreadsheets glue into one cell, matched on their own.

``George Washington; February 22 1732 – December 14 1799; (aged 67);`` holds a name that other tables write alone,
``Maine; 44°21′N 68°13′W`` a state with its coordinates.  A whole-cell vector puts those cells far from ``George
Washington`` and ``Maine``; the semantic join therefore also encodes each cell's segments, and a query value matches a
lake value when any vector of one lies within tau of any vector of the other (:meth:`discovery.join.JoinIndex.search`
with ``value_ids``).  The embed stage and the query path both call :func:`value_segments` on the same normalised
values (:func:`discovery.normalize.normalize_array`), so a query cell is cut exactly as the lake cell was.

The rule, applied to one normalised value:

1. A parenthesised part is a qualifier and is no segment: ``(1777 - 1795)``, ``(aged 67)``, ``(politician)``
   narrow the name before them and, alone, name a class of rows rather than one (every "(politician)" would match
   every other).  It still cuts the cell: ``george clinton (1777 - 1795)`` has the segment ``george clinton``.
2. Cut at ``;``, ``|``, at `` / `` and at a spaced dash (`` - ``, `` – ``, `` — ``); strip each part.
3. A part with a comma gives its head, the words before the first ``, ``: what follows qualifies it as a
   parenthesis does (``manor ground, plumstead``, ``maine, usa``).  A "Last, First" name is kept whole instead
   (:func:`.encoders.canonical.reorder_names` turns it into "First Last", so it meets that spelling).
4. Keep a part only if it holds at least :data:`MIN_LETTERS` letters besides month names: years, dates,
   coordinates and spans are shared by unrelated rows (the term of one office holder is the term of many), so a
   match through them alone would be noise; names and words are what a join key is made of.
5. Drop parts equal to the whole value or to an earlier part; keep the first ``max_segments`` in cell order.

A value with no delimiter has no segments: its one vector is its whole-cell vector, as before.  Glued words
(``NewJersey``) are not split here: the stored values are case-folded, so the case change that would explain the
split is gone by the time a value reaches this step.

``max_segments`` bounds the index: a value adds at most that many vectors.  The default :data:`MAX_SEGMENTS` = 3
covers the shapes above (a name beside a place, a party, a role) while bounding the worst case to 4 vectors a value;
on real lakes most values have no delimiter at all, so the growth is far smaller (``benchmarks/join.py`` reports it).

Measured with one join encoder, the AutoFJ lake re-embedded with segments (``benchmarks/join.py --autofj``, tau 4 %,
on a loaded machine whose training budget had cut the encoder to 187 steps): 182,570 -> 217,396 vectors (+19 %,
34,826 segments); best-match pair F1 0.558 -> 0.572 (precision 0.898 -> 0.824, recall 0.404 -> 0.438); own left
table first 39 of 50 both ways (45 of 50 among left tables); every-pair F1 0.479 -> 0.340, as segments shared by
different entities ("tom elliott" of two qualifiers) now match.  Search over the 50 title columns: PEXESO's distance
computations 2.2M -> 7.8M, exact's 1.34G -> 2.04G; PEXESO 4.6x-6.0x exact in CPU time over the two passes of the
run (7.3x-7.5x before), identical answers.  Across tau, best-match F1 rises at 2 % (0.333 -> 0.445) and 4 %, and
falls slightly at 6 % (0.631 -> 0.619).  The sample lake grows by 1.4 % (24,877 -> 25,224 vectors) and its planted
joins rank as before.
"""
from __future__ import annotations

import re

import numpy as np

from .encoders.canonical import _LAST_FIRST, _MONTHS

#: Segments kept per value (besides the whole value), the first in cell order.
MAX_SEGMENTS = 3
#: Letters a segment needs to be kept (see rule 3).
MIN_LETTERS = 3

_QUALIFIER = re.compile(r"\([^()]*\)?")
_CUT = re.compile(r"[;|()]| / | [-\u2013\u2014] ")
_COMMA = re.compile(r", ")
_LETTER = re.compile(r"[^\W\d_]")
_MONTH_WORD = re.compile(r"\b(?:" + "|".join(f"{full}|{abbr}" for full, abbr in _MONTHS) + r")\b\.?")


def _parts(value: str) -> list[str]:
    out = []
    for part in _CUT.split(_QUALIFIER.sub(";", value)):
        part = part.strip(" ,.:")
        if not part:
            continue
        if ", " in part and not _LAST_FIRST.fullmatch(part):
            out.append(_COMMA.split(part, maxsplit=1)[0].strip(" ,.:"))
        else:
            out.append(part)
    return out


def segments_of(value: str, max_segments: int = MAX_SEGMENTS) -> list[str]:
    """The segments of one normalised value (the rule of the module docstring), in cell order."""
    if max_segments <= 0 or not value:
        return []
    kept: list[str] = []
    for part in _parts(value):
        if part == value or part in kept or len(_LETTER.findall(_MONTH_WORD.sub("", part))) < MIN_LETTERS:
            continue
        kept.append(part)
        if len(kept) == max_segments:
            break
    return kept


def value_segments(values: list[str], max_segments: int = MAX_SEGMENTS) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(owner value index, segment number from 1, segment string) of every segment of ``values``, value by value."""
    owner, number, strings = [], [], []
    for i, value in enumerate(values):
        for k, seg in enumerate(segments_of(value, max_segments), start=1):
            owner.append(i)
            number.append(k)
            strings.append(seg)
    return np.asarray(owner, dtype=np.int64), np.asarray(number, dtype=np.int32), strings
