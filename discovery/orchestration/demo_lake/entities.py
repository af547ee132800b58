"""Synthetic entity names built from the word lists, drawn with a seeded ``numpy.random.Generator``."""
from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Sequence, Set

import numpy as np

from . import vocab

Maker = Callable[[np.random.Generator], str]


def pick(rng: np.random.Generator, seq: Sequence):
    """One element of ``seq`` chosen uniformly."""
    return seq[int(rng.integers(len(seq)))]


def picks(rng: np.random.Generator, seq: Sequence, n: int) -> list:
    """``n`` elements of ``seq`` chosen uniformly with replacement."""
    return [seq[i] for i in rng.integers(len(seq), size=n)]


def unique(rng: np.random.Generator, n: int, maker: Maker, exclude: Set[str] = frozenset()) -> list[str]:
    """``n`` distinct names from ``maker``, none of them (compared case-insensitively) in ``exclude``.

    Raises if the name space of ``maker`` is too small, instead of looping forever.
    """
    seen = {e.lower() for e in exclude}
    out: list[str] = []
    for _ in range(50 * n + 100):
        if len(out) == n:
            return out
        name = maker(rng)
        if name.lower() not in seen:
            seen.add(name.lower())
            out.append(name)
    if len(out) == n:
        return out
    raise ValueError(f"name space too small for {n} distinct names")


def company(rng: np.random.Generator) -> str:
    stem, core, legal = pick(rng, vocab.COMPANY_STEMS), pick(rng, vocab.COMPANY_CORES), pick(rng, vocab.COMPANY_LEGAL)
    return f"{stem} {core} {legal}"


def person(rng: np.random.Generator) -> str:
    return f"{pick(rng, vocab.FIRST_NAMES)} {pick(rng, vocab.LAST_NAMES)}"


def title(rng: np.random.Generator) -> str:
    adj, noun = pick(rng, vocab.TITLE_ADJECTIVES), pick(rng, vocab.TITLE_NOUNS)
    form = int(rng.integers(4))
    if form == 0:
        return f"The {adj} {noun}"
    if form == 1:
        return f"{adj} {noun}"
    if form == 2:
        return f"The {noun} of the {pick(rng, vocab.TITLE_NOUNS)}"
    return f"A {adj} {noun}"


def team(rng: np.random.Generator) -> str:
    return f"{pick(rng, vocab.CITIES)[0]} {pick(rng, vocab.TEAM_MASCOTS)}"


def university(rng: np.random.Generator) -> str:
    city = pick(rng, vocab.CITIES)[0]
    form = int(rng.integers(5))
    if form == 4:
        return f"{city} College of {pick(rng, vocab.RESEARCH_FIELDS)}"
    return (f"University of {city}", f"{city} Institute of Technology", f"{city} State University",
            f"{city} University of Applied Sciences")[form]


def airport(rng: np.random.Generator) -> str:
    city = pick(rng, vocab.CITIES)[0]
    if rng.random() < 0.3:
        return f"{city} {pick(rng, vocab.LAST_NAMES)} {pick(rng, vocab.AIRPORT_WORDS)}"
    return f"{city} {pick(rng, vocab.AIRPORT_WORDS)}"


def hospital(rng: np.random.Generator) -> str:
    if rng.random() < 0.5:
        return f"Saint {pick(rng, vocab.HOSPITAL_SAINTS)} {pick(rng, vocab.HOSPITAL_KINDS)}"
    return f"{pick(rng, vocab.CITIES)[0]} {pick(rng, vocab.HOSPITAL_KINDS)}"


def restaurant(rng: np.random.Generator) -> str:
    form = int(rng.integers(3))
    if form == 0:
        return f"The {pick(rng, vocab.TITLE_ADJECTIVES)} {pick(rng, vocab.RESTAURANT_NOUNS)}"
    if form == 1:
        return f"{pick(rng, vocab.LAST_NAMES)}'s {pick(rng, vocab.RESTAURANT_NOUNS)}"
    return f"{pick(rng, vocab.RESTAURANT_NOUNS)} & {pick(rng, vocab.TITLE_NOUNS)}"


def product(rng: np.random.Generator) -> str:
    noun = pick(rng, tuple(vocab.PRODUCT_NOUNS))
    return f"{pick(rng, vocab.PRODUCT_ADJECTIVES)} {pick(rng, vocab.PRODUCT_MATERIALS)} {noun}"


def airline(rng: np.random.Generator) -> str:
    word = pick(rng, vocab.AIRLINE_WORDS)
    return f"{word} Airways" if rng.random() < 0.5 else f"Air {word}"


def band(rng: np.random.Generator) -> str:
    return f"The {pick(rng, vocab.TITLE_ADJECTIVES)} {pick(rng, vocab.TITLE_NOUNS)}s" if rng.random() < 0.5 \
        else person(rng)


def code(rng: np.random.Generator, letters: int, digits: int = 0) -> str:
    """An upper-case code such as ``"KXR"`` or ``"AB-4821"``."""
    head = "".join(chr(65 + int(i)) for i in rng.integers(26, size=letters))
    if not digits:
        return head
    return head + "-" + "".join(str(int(i)) for i in rng.integers(10, size=digits))


def dates(rng: np.random.Generator, n: int, start: str = "2018-01-01", span_days: int = 2000) -> list[str]:
    """``n`` ISO dates uniformly in ``[start, start + span_days)``."""
    base = dt.date.fromisoformat(start)
    return [(base + dt.timedelta(days=int(d))).isoformat() for d in rng.integers(span_days, size=n)]


def ints(rng: np.random.Generator, n: int, low: int, high: int) -> list[str]:
    """``n`` integers in ``[low, high)`` rendered as text."""
    return [str(int(v)) for v in rng.integers(low, high, size=n)]


def floats(rng: np.random.Generator, n: int, low: float, high: float, digits: int = 1) -> list[str]:
    """``n`` uniform floats in ``[low, high)`` rendered with ``digits`` decimals."""
    return [f"{v:.{digits}f}" for v in rng.uniform(low, high, size=n)]


def lognormal_ints(rng: np.random.Generator, n: int, mean: float, sigma: float) -> list[str]:
    """``n`` heavy-tailed positive integers (populations, head counts, revenues)."""
    return [str(int(v) + 1) for v in rng.lognormal(mean, sigma, size=n)]
