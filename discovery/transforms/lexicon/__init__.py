"""Names by meaning: groups of phrases that name one attribute (``pay`` ~ ``salary`` ~ ``wage``, ``dob`` ~ ``date of
birth``, ``qty`` ~ ``quantity``), read from two files shipped beside this module.

* ``columns.txt``: column-name abbreviations and the synonyms of business, public and scientific tables that a general
  dictionary splits by sense (``compensation`` ~ ``salary``, ``client`` ~ ``customer``), part of Lakescout.
* ``wordnet_nouns.txt``: WordNet 3.0's noun synonym groups, each lemma by its most common sense only
  (``scripts/wordnet_lexicon.py`` says how they are drawn; ``WORDNET_LICENSE`` is WordNet's licence).  A general
  dictionary reaches the words of any lake (``velocity`` ~ ``speed``, ``postcode`` ~ ``postal code``); taking only a
  word's first sense keeps rare senses out (``id`` is not ``Idaho``).  The column lexicon speaks first: a phrase it
  lists takes no WordNet group (``zip``, whose first sense in WordNet is ``nothing``, is only a postal code).

Why a lexicon and not the lake's own evidence or a model: columns whose values look alike under different names would
teach synonyms, but a name search would then return every table whose values resemble another's, which it does not
ask for; the optional pretrained model is not installed everywhere and costs seconds to load in a command.  A lexicon
is read once per process (about 0.2 s), is the same on every machine, and its every match can be explained by the line
that made it.

A phrase is kept as the words :func:`discovery.transforms.encoders.header.header_words` makes of it (case, separators
and regular plurals do not matter), so the lexicon and the names it is matched with are split the same way.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass, field

from ..encoders.header import header_words

#: The lexicon files, by the name a match reports as its source.
SOURCES = {"columns": "columns.txt", "wordnet": "wordnet_nouns.txt"}
#: The longest phrase, in words, that a term is searched for (``height above sea level``).
MAX_PHRASE_WORDS = 4
#: Phrases of one term replaced at most: a third synonym says little more, and the variants grow as a product.
MAX_REPLACEMENTS = 2
#: Synonym variants of one term at most: a term whose words all have synonyms would otherwise multiply them.  The
#: variants with fewer replacements come first, so the cap drops the least certain ones.
MAX_VARIANTS = 64


@dataclass
class Lexicon:
    """Phrase groups and, for every phrase (as its words), the groups that hold it."""

    groups: list[tuple[tuple[str, ...], ...]] = field(default_factory=list)
    sources: list[str] = field(default_factory=list)
    by_phrase: dict[tuple[str, ...], list[int]] = field(default_factory=dict)

    def add(self, phrases: list[str], source: str) -> None:
        """A group of ``phrases``; a phrase an earlier source already holds is left out of a later source's group."""
        words = list(dict.fromkeys(w for w in (_phrase(p, source) for p in phrases) if w))
        words = [w for w in words if all(self.sources[g] == source for g in self.by_phrase.get(w, ()))]
        if len(words) < 2:
            return
        for w in words:
            self.by_phrase.setdefault(w, []).append(len(self.groups))
        self.groups.append(tuple(words))
        self.sources.append(source)

    def synonyms(self, phrase: tuple[str, ...]) -> list[tuple[tuple[str, ...], str]]:
        """Every other phrase of a group that holds ``phrase``, with the group's source; each phrase once."""
        out: dict[tuple[str, ...], str] = {}
        for g in self.by_phrase.get(phrase, ()):
            for other in self.groups[g]:
                if other != phrase:
                    out.setdefault(other, self.sources[g])
        return list(out.items())

    def variants(self, words: list[str]) -> list[tuple[tuple[str, ...], str, int]]:
        """The term ``words`` with some of its phrases replaced by synonyms: (new words, the synonyms as text,
        how many phrases were replaced), fewest replacements first, at most :data:`MAX_VARIANTS`, without the term
        itself.  Replacing more than one phrase finds ``high temperature`` as ``max temp``."""
        out: dict[tuple[str, ...], tuple[str, int]] = {}

        def walk(i: int, made: tuple[str, ...], used: tuple[str, ...]) -> None:
            if i == len(words):
                if used:
                    out.setdefault(made, (", ".join(used), len(used)))
                return
            walk(i + 1, made + (words[i],), used)
            if len(used) == MAX_REPLACEMENTS:
                return
            for span in range(min(MAX_PHRASE_WORDS, len(words) - i), 0, -1):
                for other, _source in self.synonyms(tuple(words[i:i + span])):
                    walk(i + span, made + other, used + (" ".join(other),))

        walk(0, (), ())
        out.pop(tuple(words), None)
        ranked = sorted(out.items(), key=lambda item: item[1][1])       # stable: fewest replacements first
        return [(v, text, n) for v, (text, n) in ranked[:MAX_VARIANTS]]


def _phrase(text: str, source: str) -> tuple[str, ...]:
    """A phrase's words; none for a WordNet plural (``names``, a sense of calling names, is not ``name``)."""
    words = tuple(header_words(text))
    if source == "wordnet" and " ".join(words) != " ".join(text.lower().replace("-", " ").split()):
        return ()
    return words


@functools.lru_cache(maxsize=1)
def lexicon() -> Lexicon:
    """The shipped lexicon, read once per process."""
    out = Lexicon()
    folder = os.path.dirname(os.path.abspath(__file__))
    for source, name in SOURCES.items():
        with open(os.path.join(folder, name), encoding="utf-8") as fh:
            for line in fh:
                line = line.split("#", 1)[0].strip()
                if line:
                    out.add([p.strip() for p in line.split("|")], source)
    return out
