"""Ways the same entity gets written differently in two tables (the semantic-join ground truth).

Each variation is one realistic editing habit: abbreviations from registers ("Intl." for "International"), a change
of case, a keyboard typo, another word order ("Smith, John", "Silent Harbor, The") and qualifiers that a source adds
or drops ("(film)", a legal suffix).  A lake value is its query value with one or two of these applied, so every
planted pair is explainable by the ``variation`` label written next to it.
"""
from __future__ import annotations

import re
from collections.abc import Callable

import numpy as np

from . import vocab
from .entities import pick

_WORD = re.compile(r"[A-Za-z]{5,}")
_KEYBOARD_ROWS = ("qwertyuiop", "asdfghjkl", "zxcvbnm")
_NEIGHBOURS = {c: (row[i - 1] if i else "") + (row[i + 1] if i + 1 < len(row) else "")
               for row in _KEYBOARD_ROWS for i, c in enumerate(row)}
_LEGAL = ("Inc.", "Ltd.", "Corporation", "Company", "Holdings", "International", "Group", "LLC", "GmbH", "S.A.")


def abbreviate(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """Replace every abbreviable word by one of its register abbreviations."""
    words = value.split(" ")
    hits = [i for i, w in enumerate(words) if w in vocab.ABBREVIATIONS]
    if not hits:
        return None
    for i in hits:
        words[i] = pick(rng, vocab.ABBREVIATIONS[words[i]])
    return " ".join(words)


def change_case(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """Upper or lower case, as exports from mainframes and web forms produce."""
    out = value.upper() if rng.random() < 0.6 else value.lower()
    return out if out != value else None


def typo(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """One keyboard slip in one longer word: swapped, dropped, doubled or neighbouring letter."""
    spans = [m.span() for m in _WORD.finditer(value)]
    if not spans:
        return None
    start, end = pick(rng, spans)
    pos = int(rng.integers(start + 1, end - 1))
    c = value[pos]
    how = int(rng.integers(4))
    if how == 0:
        out = value[:pos] + value[pos + 1] + c + value[pos + 2:]
    elif how == 1:
        out = value[:pos] + value[pos + 1:]
    elif how == 2:
        out = value[:pos] + c + value[pos:]
    else:
        near = _NEIGHBOURS.get(c.lower(), "")
        if not near:
            return None
        sub = pick(rng, near)
        out = value[:pos] + (sub.upper() if c.isupper() else sub) + value[pos + 1:]
    return out if out.lower() != value.lower() else None


def reorder(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """Another word order: surname first, trailing article, "X University", "Mascot (City)"."""
    words = value.split(" ")
    if kind == "person" and len(words) == 2:
        return f"{words[1]}, {words[0]}"
    if kind == "title" and words[0] in ("The", "A") and len(words) > 1:
        return f"{' '.join(words[1:])}, {words[0]}"
    if kind == "university" and value.startswith("University of "):
        return f"{value[len('University of '):]} University"
    if kind == "team" and len(words) >= 2:
        return f"{words[-1]} ({' '.join(words[:-1])})"
    if kind == "hospital" and value.startswith("Saint "):
        return f"{' '.join(words[2:])} of Saint {words[1]}"
    return None


def qualify(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """A qualifier added or dropped: legal suffix, "(film)", a middle initial, "Airport" left out."""
    words = value.split(" ")
    if kind == "company":
        if words[-1] in _LEGAL:
            return " ".join(words[:-1]) if rng.random() < 0.6 else " ".join(words[:-1]) + ", " + words[-1]
        return None
    if kind == "title":
        return value + pick(rng, (" (film)", " (novel)", " (album)"))
    if kind == "person" and len(words) == 2:
        return f"{words[0]} {chr(65 + int(rng.integers(26)))}. {words[1]}"
    if kind == "airport" and words[-1] == "Airport":
        return " ".join(words[:-1])
    if kind == "university":
        return value + pick(rng, (" (main campus)", ", The"))
    if kind == "team":
        return value + pick(rng, (" FC", " SC", " (club)"))
    if kind == "hospital":
        return value + pick(rng, (" - Main Campus", " (NHS)", " Inc."))
    return None


def initials(value: str, kind: str, rng: np.random.Generator) -> str | None:
    """First name cut to its initial ("J. Smith")."""
    words = value.split(" ")
    if kind == "person" and len(words) == 2:
        return f"{words[0][0]}. {words[1]}"
    return None


VARIATIONS: dict[str, Callable[[str, str, np.random.Generator], str | None]] = {
    "abbreviation": abbreviate, "case": change_case, "typo": typo, "word_order": reorder, "qualifier": qualify,
    "initials": initials,
}


def vary(value: str, kind: str, rng: np.random.Generator) -> tuple[str, str] | None:
    """``value`` written differently by one or two variations; returns (variant, "+"-joined variation names).

    Case-only variants are allowed but never alone more often than other single variations, so that most planted
    pairs stay non-trivial after the project's case-folding normalisation.
    """
    names = list(VARIATIONS)
    order = rng.permutation(len(names))
    steps = 1 if rng.random() < 0.55 else 2
    out, used = value, list[str]()
    for i in order:
        if len(used) == steps:
            break
        nxt = VARIATIONS[names[i]](out, kind, rng)
        if nxt is not None and nxt != out:
            out, used = nxt, used + [names[i]]
    if not used:
        return None
    return out, "+".join(used)
