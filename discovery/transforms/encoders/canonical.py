"""Encoder-side canonicalisation of already normalised values (PEXESO §II-A).

PEXESO converts the abbreviations that dates and addresses are full of to their full forms before embedding ("Mar" to
"March", "St" to "Street"), so that two spellings of one value land on the same n-grams.  The project-wide
:func:`discovery.ground.normalize.normalize_array` is deliberately conservative (it also feeds exact matching), so this
fuzzier step belongs to the encoders only and runs after it.

A batch is joined with newlines (normalised values contain no newline) and each rule is one compiled ``re.sub`` over
the joined text, so the cost is a handful of regex passes per batch whatever its size.  The rules are fixed and
ordered, so the output is a pure function of the input string.  Choices the paper leaves open:

* ``st`` expands to ``street`` (the paper's own example), also in "St Peter": both spellings of a name are mapped
  identically, which is all that matching needs.
* Numeric dates with two small fields (``03/05/2021``) are read month first (the US convention of most open-data
  portals), day first when the first field exceeds 12; ``yyyy-mm-dd`` is the canonical form and day/month are zero
  padded, so ``2021-3-5``, ``3/5/2021``,
  ``march 5, 2021`` and ``5 mar 2021`` all become ``2021-03-05``.
"""
from __future__ import annotations

import re

import pyarrow as pa

#: Month names (full form, abbreviation alternatives): expanded here, and read by the date spans
#: (:mod:`.spans`) and the segment rules (:mod:`discovery.transforms.segments`), which must know the same months.
MONTHS = (
    ("january", "jan"), ("february", "feb"), ("march", "mar"), ("april", "apr"), ("may", "may"), ("june", "jun"),
    ("july", "jul"), ("august", "aug"), ("september", "sept|sep"), ("october", "oct"), ("november", "nov"),
    ("december", "dec"),
)

#: Address and organisation abbreviations (full form, abbreviation alternatives).  Only multi-letter abbreviations:
#: single letters ("n", "e") are too ambiguous outside address columns.
_ABBREVIATIONS = (
    ("street", "st|str"), ("avenue", "ave|av"), ("road", "rd"), ("boulevard", "blvd"), ("drive", "dr"),
    ("lane", "ln"), ("court", "ct"), ("place", "pl"), ("square", "sq"), ("terrace", "terr"), ("highway", "hwy"),
    ("parkway", "pkwy"), ("expressway", "expy"), ("freeway", "fwy"), ("circle", "cir"), ("crescent", "cres"),
    ("apartment", "apt"), ("suite", "ste"), ("building", "bldg"), ("floor", "fl"), ("mount", "mt"), ("fort", "ft"),
    ("north", "nth"), ("south", "sth"), ("northeast", "ne"), ("northwest", "nw"), ("southeast", "se"),
    ("southwest", "sw"), ("company", "co"), ("corporation", "corp"), ("incorporated", "inc"), ("limited", "ltd"),
    ("international", "intl|int'l"), ("national", "natl|nat'l|nat"), ("university", "univ"),
    ("department", "dept"), ("association", "assn|assoc"), ("manufacturing", "mfg"), ("brothers", "bros"),
    ("government", "govt"), ("district", "dist"), ("county", "cnty"), ("township", "twp"), ("junior", "jr"),
    ("senior", "sr"), ("doctor", "dr\\."), ("professor", "prof"), ("number", "no\\.|nr"), ("versus", "vs|v\\."),
    ("center", "ctr|centre"), ("and", "&"),
)



def _lookup() -> dict[str, str]:
    table = {}
    for full, abbr in _ABBREVIATIONS + MONTHS:
        for alt in abbr.split("|"):
            table[alt.replace("\\", "")] = full
    return table


_FULL = _lookup()
_DOTTED = sorted((a for a in _FULL if a.endswith(".")), key=len, reverse=True)
_PLAIN = sorted((a for a in _FULL if not a.endswith(".") and a != "&"), key=len, reverse=True)
_ABBREVIATION = re.compile(
    r"(?<![\w'])(?:" + "|".join(re.escape(a) for a in _DOTTED) + r")|\b(?:" + "|".join(re.escape(a) for a in _PLAIN)
    + r")\b\.?")
_AMPERSAND = re.compile(r" ?& ?")
#: A full month name's number, and the alternation of the full names, as the date rules here and in :mod:`.spans`
#: match them (after expansion, so only full names).
MONTH_NUMBER = {full: number for number, (full, _) in enumerate(MONTHS, start=1)}
MONTH_NAMES = "|".join(full for full, _ in MONTHS)
_MONTH_DAY_YEAR = re.compile(rf"\b({MONTH_NAMES}) (\d{{1,2}})(?:st|nd|rd|th)?,? (\d{{4}})\b")
_DAY_MONTH_YEAR = re.compile(rf"\b(\d{{1,2}})(?:st|nd|rd|th)? (?:of )?({MONTH_NAMES}),? (\d{{4}})\b")
_YEAR_FIRST = re.compile(r"\b(\d{4})[/.-](\d{1,2})[/.-](\d{1,2})\b")
_YEAR_LAST = re.compile(r"\b(\d{1,2})[/.-](\d{1,2})[/.-](\d{4})\b")
_NAME_WORD = r"[^\W\d_]+(?:[-'][^\W\d_]+)*\.?"
_SUFFIX = r"(?:junior|senior|ii|iii|iv)"
_SUFFIX_COMMA = re.compile(rf",? ({_SUFFIX})$", re.MULTILINE)
#: "Last, First [Middle] [suffix]" on one line of the joined batch: reordered here, and recognised as a name (not a
#: list of two segments) by :mod:`discovery.transforms.segments`.
LAST_FIRST = re.compile(rf"^({_NAME_WORD}), ({_NAME_WORD}(?: {_NAME_WORD}){{0,2}}?)((?: {_SUFFIX})?)$", re.MULTILINE)
_SPACES = re.compile(r"[ \t]{2,}")
_EDGES = re.compile(r"^ +| +$", re.MULTILINE)


def _expand(match: re.Match) -> str:
    text = match.group()
    return _FULL.get(text) or _FULL[text.rstrip(".")]


def _iso(year: str, month: int, day: int, original: str) -> str:
    if not (1 <= month <= 12 and 1 <= day <= 31):
        return original
    return f"{year}-{month:02d}-{day:02d}"


def _year_last(m: re.Match) -> str:
    first, second = int(m.group(1)), int(m.group(2))
    month, day = (second, first) if first > 12 else (first, second)
    return _iso(m.group(3), month, day, m.group())


def canonicalize_text(text: str) -> str:
    """Canonicalise newline-separated normalised values (see the module docstring)."""
    text = _AMPERSAND.sub(" and ", text)
    text = _ABBREVIATION.sub(_expand, text)
    text = _MONTH_DAY_YEAR.sub(lambda m: _iso(m.group(3), MONTH_NUMBER[m.group(1)], int(m.group(2)), m.group()), text)
    text = _DAY_MONTH_YEAR.sub(lambda m: _iso(m.group(3), MONTH_NUMBER[m.group(2)], int(m.group(1)), m.group()), text)
    text = _YEAR_FIRST.sub(lambda m: _iso(m.group(1), int(m.group(2)), int(m.group(3)), m.group()), text)
    text = _YEAR_LAST.sub(_year_last, text)
    text = _SPACES.sub(" ", text)
    return _EDGES.sub("", text)


def reorder_names(text: str) -> str:
    """Newline-separated canonicalised values with "last, first" names turned into "first last".

    Directories and citations write people "Obama, Barack" or "King, Martin Luther, Jr." where other tables write
    "Barack Obama" and "Martin Luther King Jr.": a one-word head, a comma and one to three name words (initials
    allowed, an optional generational suffix, expanded by :func:`canonicalize_text` first, kept at the end).  A comma
    before a suffix goes too ("lizmark, jr." -> "lizmark junior").  Values with digits, parentheses or a longer head
    ("manor ground, plumstead") keep their order: there the part after the comma is a qualifier, which the join
    encoder hashes in its own namespace.  One word of that shape cannot be told from a place ("paris, france"
    becomes "france paris"); both spellings of such a value then still meet, since the rule is applied to every
    value alike, and the join encoder learns token order (:func:`.variations.token_order`).
    """
    text = _SUFFIX_COMMA.sub(r" \1", text)
    return LAST_FIRST.sub(lambda m: f"{m.group(2)} {m.group(1)}{m.group(3)}", text)


def canonicalize_values(values: list[str | None]) -> list[str | None]:
    """Canonicalise normalised values; ``None`` stays ``None``."""
    present = [v.replace("\n", " ") for v in values if v is not None]
    out = iter(canonicalize_text("\n".join(present)).split("\n") if present else [])
    return [None if v is None else next(out) for v in values]


def canonicalize_array(values: pa.Array | pa.ChunkedArray) -> pa.Array:
    """Arrow form of :func:`canonicalize_values`."""
    return pa.array(canonicalize_values(values.to_pylist()), type=pa.string())
