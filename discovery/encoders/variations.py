"""Realistic spelling variations of a value: the positive pairs of the join encoder's contrastive training.

Real lakes spell one entity many ways ("Hollister v. Benedict & Burnham Mfg. Co." / "hollister v. benedict and
burnham manufacturing company", "Tom Elliott" / "Tom Elliott (politician)", "2008 Cyprus ... tournament" /
"Cyprus ... tournament 2008").  Each function below produces one such kind of variation from a normalised value; a
training positive applies one or two of them.  Case and Unicode variants need no generator: normalisation removes
them before encoding.  Every choice draws from the ``random.Random`` passed in, so training is reproducible.
"""
from __future__ import annotations

import random
import re

_PUNCT = re.compile(r"[^\w\s]")
_VOWELS = set("aeiou")


def _words(value: str) -> list[str]:
    return value.split(" ")


def punctuation(rng: random.Random, value: str, _: list[str]) -> str:
    """Drop punctuation, turn hyphens into spaces (or back), or add a full stop after a word."""
    choice = rng.randrange(3)
    if choice == 0 and _PUNCT.search(value):
        return re.sub(r"\s+", " ", _PUNCT.sub(" " if rng.random() < 0.5 else "", value)).strip()
    if choice == 1 and ("-" in value or " " in value):
        return value.replace("-", " ") if "-" in value else value.replace(" ", "-", 1)
    words = _words(value)
    i = rng.randrange(len(words))
    words[i] = words[i] + "."
    return " ".join(words)


def typo(rng: random.Random, value: str, _: list[str]) -> str:
    """One deleted, inserted, substituted or transposed letter inside a word of four or more letters."""
    spots = [m.start() + 1 + rng.randrange(len(m.group()) - 2) for m in re.finditer(r"[^\W\d]{4,}", value)]
    if not spots:
        return value
    i = rng.choice(spots)
    letter = chr(ord("a") + rng.randrange(26))
    op = rng.randrange(4)
    if op == 0:
        return value[:i] + value[i + 1:]
    if op == 1:
        return value[:i] + letter + value[i:]
    if op == 2:
        return value[:i] + letter + value[i + 1:]
    return value[:i] + value[i + 1] + value[i] + value[i + 2:]


def token_order(rng: random.Random, value: str, _: list[str]) -> str:
    """Move the first or last token to the other end (years, titles), or swap two adjacent tokens."""
    words = _words(value)
    if len(words) < 2:
        return value
    if rng.random() < 0.6:
        return " ".join(words[1:] + words[:1]) if rng.random() < 0.5 else " ".join(words[-1:] + words[:-1])
    i = rng.randrange(len(words) - 1)
    words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def truncation(rng: random.Random, value: str, _: list[str]) -> str:
    """Drop the last token or a middle token (middle names, generic suffixes) of a value with three or more tokens."""
    words = _words(value)
    if len(words) < 3:
        return value
    i = len(words) - 1 if rng.random() < 0.5 else 1 + rng.randrange(len(words) - 2)
    return " ".join(words[:i] + words[i + 1:])


def qualifier(rng: random.Random, value: str, vocabulary: list[str]) -> str:
    """Remove an existing qualifier, or add one such as "(region)" or ", region" drawn from the lake's words."""
    stripped = re.sub(r"\s*\([^)]*\)\s*$", "", value)
    if stripped != value:
        return stripped
    if ", " in value and rng.random() < 0.5:
        return value.split(", ")[0]
    extra = " ".join(rng.choice(vocabulary) for _ in range(1 + (rng.random() < 0.3)))
    return f"{value} ({extra})" if rng.random() < 0.7 else f"{value}, {extra}"


def abbreviation(rng: random.Random, value: str, _: list[str]) -> str:
    """Shorten a word to its first letters and a full stop ("national" -> "nat."), or a first name to an initial."""
    words = _words(value)
    long_words = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_words:
        return value
    i = rng.choice(long_words)
    if i == 0 and len(words) >= 2 and rng.random() < 0.5:
        words[0] = words[0][0] + "."
    else:
        cut = 3 + rng.randrange(2)
        if words[i][cut - 1] in _VOWELS:
            cut += 1
        words[i] = words[i][:cut] + "."
    return " ".join(words)


def plural(rng: random.Random, value: str, _: list[str]) -> str:
    """Add or remove a trailing "s" of one word."""
    words = _words(value)
    i = rng.randrange(len(words))
    w = words[i]
    words[i] = w[:-1] if w.endswith("s") and len(w) > 3 else w + "s"
    return " ".join(words)


def article(rng: random.Random, value: str, _: list[str]) -> str:
    """Remove a leading "the" or add one."""
    return value[4:] if value.startswith("the ") else "the " + value


VARIATIONS = (punctuation, typo, token_order, truncation, qualifier, abbreviation, plural, article)


def vary(rng: random.Random, value: str, vocabulary: list[str], max_variations: int = 2) -> str:
    """Apply one to ``max_variations`` randomly chosen variations; never returns an empty string."""
    out = value
    for fn in rng.sample(VARIATIONS, 1 + rng.randrange(max_variations)):
        out = fn(rng, out, vocabulary) or out
    return out.strip() or value
