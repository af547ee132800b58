"""Realistic spelling variations of a value: the positive pairs of the join encoder's contrastive training.

Real lakes spell one entity many ways ("Hollister v. Benedict & Burnham Mfg. Co." / "hollister v. benedict and
burnham manufacturing company", "Tom Elliott" / "Tom Elliott (politician)", "2008 Cyprus ... tournament" /
"Cyprus ... tournament 2008", "Kevin Vann" / "Kevin William Vann", "2007 European Rally Championship season" /
"2007 European Rally Championship").  Each function below produces one such kind of variation from a normalised
value; a training positive applies one or two of them.  Case and Unicode variants need no generator: normalisation
removes them before encoding.

What is added or dropped comes from the lake itself (:class:`LakeVocabulary`): the words a lake adds and drops
between spellings are its *generic* words ("season", "people", "church", "football"), which occur in many of its
values, so dropped and added words are drawn by document frequency; added qualifiers are ones the lake's values
really carry ("(politician)", ", ontario").  Number tokens are never dropped or added: two values that differ in a
number ("1893 lsu football team" / "1894 lsu football team") are different entities, and a generator that blurred
numbers would, by transitivity, pull all of them together.  Every choice draws from the ``random.Random`` passed in,
so training is reproducible.
"""
from __future__ import annotations

import bisect
import itertools
import random
import re
from collections import Counter
from dataclasses import dataclass

_PUNCT = re.compile(r"[^\w\s]")
_VOWELS = set("aeiou")
_PAREN = re.compile(r"\s*\(([^)]*)\)\s*$")
_NUMBER = re.compile(r"\d")
_WORD = re.compile(r"[^\W\d_]{3,}")
#: Function words skipped by acronyms ("national association for the advancement of ..." -> "naacp").
_STOPWORDS = frozenset({"of", "the", "and", "for", "in", "at", "on", "to", "a", "an", "de", "la", "le", "du", "des"})


@dataclass(frozen=True)
class LakeVocabulary:
    """Words and qualifiers of the lake, with cumulative document-frequency weights for weighted draws.

    ``words`` are runs of three or more letters; ``cumulative[i]`` is the summed document frequency of
    ``words[:i + 1]``.  ``qualifiers`` are the distinct parenthesised or comma-separated trailing qualifiers that
    the lake's values carry, with their own cumulative counts.
    """

    words: tuple[str, ...]
    cumulative: tuple[int, ...]
    qualifiers: tuple[str, ...]
    qualifier_cumulative: tuple[int, ...]
    document_frequency: dict[str, int]

    @classmethod
    def from_values(cls, values: list[str]) -> LakeVocabulary:
        """Count word document frequencies and trailing qualifiers over normalised distinct values."""
        df: Counter[str] = Counter()
        quals: Counter[str] = Counter()
        for v in values:
            df.update(set(_WORD.findall(v)))
            m = _PAREN.search(v)
            if m and m.group(1):
                quals[f"({m.group(1)})"] += 1
            elif ", " in v:
                tail = v.rsplit(", ", 1)[1]
                if tail and not _NUMBER.search(tail):
                    quals[", " + tail] += 1
        words = tuple(sorted(df)) or ("x",)
        qualifiers = tuple(sorted(quals)) or ("(x)",)
        return cls(words, tuple(itertools.accumulate(df.get(w, 1) for w in words)), qualifiers,
                   tuple(itertools.accumulate(quals.get(q, 1) for q in qualifiers)), dict(df))

    def frequent_word(self, rng: random.Random) -> str:
        """A word drawn with probability proportional to its document frequency."""
        return self.words[bisect.bisect_right(self.cumulative, rng.randrange(self.cumulative[-1]))]

    def qualifier(self, rng: random.Random) -> str:
        """A qualifier drawn with probability proportional to how many values carry it."""
        return self.qualifiers[bisect.bisect_right(self.qualifier_cumulative,
                                                   rng.randrange(self.qualifier_cumulative[-1]))]


def _words(value: str) -> list[str]:
    return value.split(" ")


def punctuation(rng: random.Random, value: str, _: LakeVocabulary) -> str:
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


def typo(rng: random.Random, value: str, _: LakeVocabulary) -> str:
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


def token_order(rng: random.Random, value: str, _: LakeVocabulary) -> str:
    """Reorder tokens the way titles are rewritten: a trailing ", qualifier" moved to the front ("election, 2003"
    -> "2003 election"), "a of b" turned into "b a", the first or last token moved to the other end, or two
    adjacent tokens swapped."""
    if ", " in value and rng.random() < 0.5:
        head, tail = value.rsplit(", ", 1)
        return f"{tail} {head}"
    words = _words(value)
    if len(words) < 2:
        return value
    if "of" in words[1:-1] and rng.random() < 0.5:
        i = words.index("of", 1)
        return " ".join(words[i + 1:] + words[:i])
    if rng.random() < 0.6:
        return " ".join(words[1:] + words[:1]) if rng.random() < 0.5 else " ".join(words[-1:] + words[:-1])
    i = rng.randrange(len(words) - 1)
    words[i], words[i + 1] = words[i + 1], words[i]
    return " ".join(words)


def dropped_word(rng: random.Random, value: str, vocabulary: LakeVocabulary) -> str:
    """Drop one word that is not a number: mostly a generic one (drawn by document frequency, as "season" or
    "football" are), sometimes any one (a middle name).  Values of one word are left alone.

    Nine in ten draws are frequency-weighted: on AutoFJ this ranks true matches above random pairs better than an
    even split, because uniform drops also teach the model to ignore the rare words that identify an entity."""
    words = _words(value)
    candidates = [i for i, w in enumerate(words) if not _NUMBER.search(w)]
    if len(words) < 2 or not candidates:
        return value
    if rng.random() < 0.9:
        df = [vocabulary.document_frequency.get(_PUNCT.sub("", words[i]), 1) for i in candidates]
        i = rng.choices(candidates, weights=df)[0]
    else:
        i = rng.choice(candidates)
    return " ".join(words[:i] + words[i + 1:])


def added_word(rng: random.Random, value: str, vocabulary: LakeVocabulary) -> str:
    """Insert a generic word of the lake (drawn by document frequency) at the end, the start or inside."""
    words = _words(value)
    i = rng.choice((len(words), len(words), 0, rng.randrange(len(words) + 1)))
    return " ".join(words[:i] + [vocabulary.frequent_word(rng)] + words[i:])


def qualifier(rng: random.Random, value: str, vocabulary: LakeVocabulary) -> str:
    """Remove a trailing qualifier ("(politician)", ", singapore"; numeric ones stay), replace it with, or add, a
    qualifier that other values of the lake carry."""
    m = _PAREN.search(value)
    tail = value.rsplit(", ", 1)[1] if ", " in value else ""
    if m:
        stripped = value[:m.start()]
    elif tail and not _NUMBER.search(tail):
        stripped = value[:-len(tail) - 2]
    else:
        stripped = value
    if stripped != value and stripped and rng.random() < 0.6:
        return stripped
    extra = vocabulary.qualifier(rng)
    return f"{stripped}{'' if extra.startswith(',') else ' '}{extra}"


def abbreviation(rng: random.Random, value: str, _: LakeVocabulary) -> str:
    """Shorten a word to its first letters and a full stop ("national" -> "nat."), a first name to an initial, or a
    given name to its short form ("samuel" -> "sam")."""
    words = _words(value)
    long_words = [i for i, w in enumerate(words) if len(w) >= 5 and w.isalpha()]
    if not long_words:
        return value
    i = rng.choice(long_words)
    if i == 0 and len(words) >= 2 and rng.random() < 0.5:
        words[0] = words[0][0] + ("." if rng.random() < 0.7 else "")
    else:
        cut = 3 + rng.randrange(2)
        if words[i][cut - 1] in _VOWELS:
            cut += 1
        words[i] = words[i][:cut] + ("." if rng.random() < 0.6 else "")
    return " ".join(words)


def acronym(rng: random.Random, value: str, _: LakeVocabulary) -> str:
    """Replace a run of two to five words by their initials, skipping function words
    ("national labor relations board" -> "nlrb")."""
    words = _words(value)
    content = [i for i, w in enumerate(words) if w.isalpha() and w not in _STOPWORDS]
    if len(content) < 2:
        return value
    length = min(len(content), 2 + rng.randrange(4))
    start = rng.randrange(len(content) - length + 1)
    first, last = content[start], content[start + length - 1]
    initials = "".join(words[i][0] for i in content[start:start + length])
    return " ".join(words[:first] + [initials] + words[last + 1:])


def plural(rng: random.Random, value: str, _: LakeVocabulary) -> str:
    """Add or remove a trailing "s" of one word, or turn a possessive "'s" into "s"."""
    if "'s" in value and rng.random() < 0.5:
        return value.replace("'s", "s" if rng.random() < 0.5 else "", 1)
    words = _words(value)
    i = rng.randrange(len(words))
    w = words[i]
    words[i] = w[:-1] if w.endswith("s") and len(w) > 3 else w + "s"
    return " ".join(words)


def article(rng: random.Random, value: str, _: LakeVocabulary) -> str:
    """Remove a leading "the" or add one."""
    return value[4:] if value.startswith("the ") else "the " + value


#: Generators and their relative frequencies: the token-level edits that dominate real title variants (dropped and
#: added words, qualifiers) are drawn more often than the character-level ones.
VARIATIONS = (punctuation, typo, token_order, dropped_word, added_word, qualifier, abbreviation, acronym, plural,
              article)
WEIGHTS = (1.0, 1.5, 1.0, 2.5, 1.5, 2.0, 1.0, 0.3, 1.0, 0.5)


def vary(rng: random.Random, value: str, vocabulary: LakeVocabulary, max_variations: int = 2) -> str:
    """Apply one to ``max_variations`` weighted, randomly chosen variations; never returns an empty string."""
    out = value
    for fn in rng.choices(VARIATIONS, weights=WEIGHTS, k=1 + rng.randrange(max_variations)):
        out = fn(rng, out, vocabulary) or out
    return out.strip() or value
