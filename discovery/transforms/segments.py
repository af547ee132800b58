"""The segments of a cell: the parts web tables and spreadsheets glue into one cell, matched on their own.

``George Washington; February 22 1732 – December 14 1799; (aged 67);`` holds a name that other tables write alone,
``Maine; 44°21′N 68°13′W`` a state with its coordinates.  A whole-cell vector puts those cells far from ``George
Washington`` and ``Maine``; the semantic join therefore also encodes each cell's segments, and a query value matches a
lake value when any vector of one lies within tau of any vector of the other
(:meth:`discovery.indexes.join.JoinIndex.search` with ``value_ids``).  The embed stage and the query path both call
:func:`value_segments` on the same normalised values (:func:`discovery.ground.normalize.normalize_array`), so a query
cell is cut exactly as the lake cell was.

The rule, applied to one normalised value:

1. A parenthesised part is a qualifier and is no segment: ``(1777 - 1795)``, ``(aged 67)``, ``(politician)``
   narrow the name before them and, alone, name a class of rows rather than one (every "(politician)" would match
   every other).  It still cuts the cell: ``george clinton (1777 - 1795)`` has the segment ``george clinton``.
2. Cut at ``;``, ``|``, at `` / `` and at a spaced dash (`` - ``, `` – ``, `` — ``); strip each part.
3. A part with a comma gives its head, the words before the first ``, ``: what follows qualifies it as a
   parenthesis does (``manor ground, plumstead``, ``maine, usa``).  A "Last, First" name is kept whole instead
   (:func:`.encoders.canonical.reorder_names` turns it into "First Last", so it meets that spelling), unless the
   words after the comma name a region (:data:`discovery.ground.regions.REGIONS`): ``augusta, maine`` is a place and
   gives ``augusta``, ``washington, george`` stays whole.
4. Keep a part only if it holds at least :data:`MIN_LETTERS` letters besides month names: years, dates,
   coordinates and spans are shared by unrelated rows (the term of one office holder is the term of many), so a
   match through them alone would be noise; names and words are what a join key is made of.
5. Drop parts equal to the whole value or to an earlier part; keep the first ``max_segments`` in cell order.

Glued words are split first, on the cell as written, since case folding removes the case change that explains the
split (:func:`unglue`): a run of letters made only of two or more capitalised words, each an upper-case letter and at
least one lower-case letter (the first word at least two), gets a space at each lower-to-upper change (``NewJersey``
-> ``New Jersey``, ``SanFrancisco`` -> ``San Francisco``, ``NewJerseyCity`` -> ``New Jersey City``, ``SantaFe`` ->
``Santa Fe``).  Runs with an all-caps part (``USA``, ``USAToday``), a one- or two-letter capitalised first word
(``McDonald``, ``DeSoto``, ``LaSalle``, ``StLouis``), a lower-case start (``iPhone``) or the surname prefix ``Mac``
(``MacArthur``) are left whole: there the case change is part of the name, a prefix glued to the name it qualifies.  A
short word after the first is no such prefix (``Fe``, ``Ex`` of ``FedEx``), so it is split.  Letters are those of
Latin-1 (Western European names: ``SãoPaulo`` splits).  The split text is then normalised
(:func:`discovery.ground.normalize.normalize_array`, which folds case) and cut by the rule above, and a part equal to
the whole value is dropped as before, so ``newjersey`` gets the segment ``new jersey`` and meets the tables that write
``New Jersey``.  A value is stored once, normalised, however its cells spell it: it is split when one of its spellings
in the column has a glued word, with the smallest split text when several do (:func:`glued_spellings`), so the
segments are a function of the column's set of cells, whatever their order.

A value with no delimiter and no glued word has no segments: its one vector is its whole-cell vector, as before.

``max_segments`` bounds the index: a value adds at most that many vectors.  The default :data:`MAX_SEGMENTS` = 3
covers the shapes above (a name beside a place, a party, a role) while bounding the worst case to 4 vectors a value;
on real lakes most values have no delimiter at all, so the growth is far smaller (``benchmarks/join.py`` reports it).

Measured with one join encoder before glued words were split, the AutoFJ lake re-embedded with segments
(``benchmarks/join.py --autofj``, tau 4 %,
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
import pyarrow as pa
import pyarrow.compute as pc

from ..ground.normalize import normalize_values
from ..ground.regions import REGIONS
from .encoders.canonical import LAST_FIRST, MONTHS

#: Segments kept per value (besides the whole value), the first in cell order.
MAX_SEGMENTS = 3
#: Version of the rule, part of the value vectors' encoder version (:class:`discovery.query.vectors.EncoderRefs`), so
#: that rows cut by an older rule are re-encoded.  2: glued words are split.  3: a "Last, First" shape whose tail names
#: a region gives its head; a glued word after the first may have two letters.
RULE = 3
#: Letters a segment needs to be kept (see rule 3).
MIN_LETTERS = 3

_QUALIFIER = re.compile(r"\([^()]*\)?")
_CUT = re.compile(r"[;|()]| / | [-\u2013\u2014] ")
_COMMA = re.compile(r", ")
_LETTER = re.compile(r"[^\W\d_]")
_MONTH_WORD = re.compile(r"\b(?:" + "|".join(f"{full}|{abbr}" for full, abbr in MONTHS) + r")\b\.?")
_UPPER, _LOWER = "A-Z\u00c0-\u00d6\u00d8-\u00de", "a-z\u00df-\u00f6\u00f8-\u00ff"
_GLUED = re.compile(
    rf"(?<![^\W\d_])(?!Mac[{_UPPER}])[{_UPPER}][{_LOWER}]{{2,}}(?:[{_UPPER}][{_LOWER}]+)+(?![^\W\d_])")
_GLUE_POINT = re.compile(rf"(?<=[{_LOWER}])(?=[{_UPPER}])")


def unglue(cell: str) -> str:
    """``cell`` as written, with a space between the glued words of each run of letters the module docstring's rule
    splits."""
    return _GLUED.sub(lambda m: _GLUE_POINT.sub(" ", m.group()), cell)


def glued_spellings(cells: pa.Array | pa.ChunkedArray, values: list[str]) -> list[str | None]:
    """Per normalised value of ``values``: the normalised text of its spelling among ``cells`` with glued words split
    (the smallest when several spellings have glued words), or ``None`` when no spelling has one."""
    if isinstance(cells, pa.ChunkedArray):
        cells = cells.combine_chunks()
    if not pa.types.is_string(cells.type) and not pa.types.is_large_string(cells.type):
        cells = pc.cast(cells, pa.string())
    glued = [(cell, split) for cell in pc.unique(cells.drop_null()).to_pylist() if (split := unglue(cell)) != cell]
    best: dict[str, str] = {}
    if glued:
        for value, text in zip(normalize_values([c for c, _ in glued]), normalize_values([t for _, t in glued])):
            if value is not None and text is not None and (value not in best or text < best[value]):
                best[value] = text
    return [best.get(v) for v in values]


def _parts(value: str) -> list[str]:
    out = []
    for part in _CUT.split(_QUALIFIER.sub(";", value)):
        part = part.strip(" ,.:")
        if not part:
            continue
        name = LAST_FIRST.fullmatch(part) if ", " in part else None
        if ", " in part and (name is None or name.group(2) in REGIONS):
            out.append(_COMMA.split(part, maxsplit=1)[0].strip(" ,.:"))
        else:
            out.append(part)
    return out


def segments_of(value: str, max_segments: int = MAX_SEGMENTS, split: str | None = None) -> list[str]:
    """The segments of one normalised value (the rule of the module docstring), in cell order; ``split`` is its
    normalised text with glued words split (:func:`glued_spellings`), when a spelling of it has any."""
    if max_segments <= 0 or not value:
        return []
    kept: list[str] = []
    for part in _parts(split or value):
        if part == value or part in kept or len(_LETTER.findall(_MONTH_WORD.sub("", part))) < MIN_LETTERS:
            continue
        kept.append(part)
        if len(kept) == max_segments:
            break
    return kept


def value_segments(values: list[str], max_segments: int = MAX_SEGMENTS,
                   splits: list[str | None] | None = None) -> tuple[np.ndarray, np.ndarray, list[str]]:
    """(owner value index, segment number from 1, segment string) of every segment of ``values``, value by value;
    ``splits`` holds each value's text with glued words split, or ``None`` (:func:`glued_spellings`)."""
    owner, number, strings = [], [], []
    for i, value in enumerate(values):
        for k, seg in enumerate(segments_of(value, max_segments, splits[i] if splits else None), start=1):
            owner.append(i)
            number.append(k)
            strings.append(seg)
    return np.asarray(owner, dtype=np.int64), np.asarray(number, dtype=np.int32), strings
