"""Values as a matcher reads them: canonical words, their character q-grams, and when two words are one word.

A value is compared by its words: accents folded (NFKD without combining marks), case folded, every run of letters
and digits a word, punctuation a separator, so ``Smith, John`` and ``john smith`` have the same words and ``"A Hard
Day's Night"`` and ``A Hard Day's Night`` the same string.  Two different words can still be one word written two
ways, and the rule that says when is the one every measure and the consistency rule (:mod:`.align`) share:

* a **typo**: the optimal-string-alignment distance (an adjacent swap counts one edit) is at most 1, or at most 2
  when the longer word has 8 letters or more; words holding digits never (``A1234`` and ``A1235`` are two codes);
* an **abbreviation**: the shorter word's letters appear in order in the longer one, starting with the same letter
  (``intl`` ~ ``international``, ``apt`` ~ ``airport``, ``j`` ~ ``john``, ``ber`` ~ ``berg``), no digits in either.
"""
from __future__ import annotations

import re
import unicodedata
from functools import lru_cache

from rapidfuzz.distance import OSA

_WORD = re.compile(r"[^\W_]+")


def words(value: str) -> list[str]:
    """The words of ``value``, accents and case folded."""
    folded = unicodedata.normalize("NFKD", value)
    folded = "".join(c for c in folded if not unicodedata.combining(c)).casefold()
    return _WORD.findall(folded)


def qgrams(text: str, q: int = 3) -> list[str]:
    """Character ``q``-grams of ``text`` padded at both ends, so short values and word edges count."""
    padded = f"#{text}#"
    return [padded[i:i + q] for i in range(max(1, len(padded) - q + 1))]


_DIGIT = re.compile(r"\d")


def has_digit(word: str) -> bool:
    return _DIGIT.search(word) is not None


def is_abbreviation(short: str, long: str) -> bool:
    """``short`` abbreviates ``long``: same first letter, its letters in order in ``long`` (module docstring)."""
    if len(short) >= len(long) or not short or short[0] != long[0] or has_digit(short) or has_digit(long):
        return False
    it = iter(long)
    return all(c in it for c in short)


@lru_cache(maxsize=1 << 16)
def one_word(a: str, b: str) -> bool:
    """Whether ``a`` and ``b`` are one word written two ways (module docstring)."""
    if a == b:
        return True
    if has_digit(a) or has_digit(b):
        return False
    if is_abbreviation(a, b) or is_abbreviation(b, a):
        return True
    longest = max(len(a), len(b))
    return OSA.distance(a, b, score_cutoff=2) <= (2 if longest >= 8 else 1) and min(len(a), len(b)) >= 3
