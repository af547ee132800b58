"""Two values word by word: how much of their weight they share, and whether they can name one entity.

The words of both values are aligned: equal words first, then words one value writes as one and the other as two or
three (``sp101`` ~ ``sp 101``, a number's thousands written apart), then the remaining ones paired, most alike first,
where :func:`.tokens.one_word` says they are one word written two ways.  The *soft* similarity is the IDF weight of the
aligned words over the weight of all words (a word frequent in the lake column, like ``inc`` or ``the``, weighs
little), the token measure of SoftTF-IDF with the typo and abbreviation rule as its word similarity.

What is left after the alignment decides whether two values can name one entity (:func:`consistent`).  Words
left on both sides stand in for each other (``Sven Berg`` ~ ``Ben Berg``, ``Susan Allen`` ~ ``L. M. Allen``, ``X
(film)`` ~ ``X (novel)``, ``Case 2019`` ~ ``Case 2020``): two entities, whatever a measure says.  Words left on one
side only are qualifiers one source adds (``Gov.`` in ``Gov. Gray Davis``, a tenure after a name, a legal suffix)
and stay consistent: whether a qualifier tells entities apart in a column is what the lake column's own values say
through :mod:`.autoconfig`'s estimate.  The rule removes matches; it never adds one.

Measured and left out (``benchmarks/README.md``): refusing a word the lake column's own values differ by (Auto-FJ's
negative rules), a word inserted inside the other value, or allowing substitutions of words common in the column;
each lost recall on the AutoFJ sets for at most a point of precision on the sample lake.
"""
from __future__ import annotations

from collections import Counter

from rapidfuzz.distance import Indel

from .tokens import is_abbreviation, one_word


def _credit(x: str, y: str) -> float:
    """How much of two paired words' weight an alignment counts: a typo nearly all, an abbreviation by how much
    of the long word it keeps."""
    if is_abbreviation(x, y) or is_abbreviation(y, x):
        short, long = sorted((x, y), key=len)
        return 0.5 + 0.5 * len(short) / len(long)
    return Indel.normalized_similarity(x, y)


def _glued(words: list[str], mine: Counter, other: Counter, w) -> float:
    """The weight of words of one value the other writes as one word (``sp 101`` ~ ``sp101``, ``12 962`` ~
    ``12962``, ``ses 7`` ~ ``ses7``): runs of two or three consecutive words still left whose concatenation is a word
    left in the other value.  Both are taken off what is left (``mine``, ``other``), as equal words are."""
    got = 0.0
    for n in (3, 2):
        for i in range(len(words) - n + 1):
            run, glued = Counter(words[i:i + n]), "".join(words[i:i + n])
            if other[glued] > 0 and not run - mine:
                mine.subtract(run)
                other[glued] -= 1
                got += w(glued) + sum(map(w, words[i:i + n]))
    return got


def align(a: list[str], b: list[str], weight: dict[str, float], default: float
          ) -> tuple[float, list[str], list[str]]:
    """``(soft similarity, words of a left, words of b left)`` of the words ``a`` and ``b`` (module docstring);
    ``weight`` the IDF of a word, ``default`` that of a word it lacks."""
    w = lambda t: weight.get(t, default)  # noqa: E731
    total = sum(map(w, a)) + sum(map(w, b))
    if not total:
        return 0.0, list(a), list(b)
    ca, cb = Counter(a), Counter(b)
    common = ca & cb
    got = 2.0 * sum(w(t) * n for t, n in common.items())
    la, lb = ca - common, cb - common
    got += _glued(a, la, lb, w) + _glued(b, lb, la, w)
    ra, rb = list(la.elements()), list(lb.elements())
    pairs = sorted(((_credit(x, y), i, j) for i, x in enumerate(ra) for j, y in enumerate(rb) if one_word(x, y)),
                   reverse=True)
    used_a, used_b = set(), set()
    for credit, i, j in pairs:
        if i in used_a or j in used_b:
            continue
        used_a.add(i)
        used_b.add(j)
        got += credit * (w(ra[i]) + w(rb[j]))
    return (got / total, [x for i, x in enumerate(ra) if i not in used_a],
            [y for j, y in enumerate(rb) if j not in used_b])


def consistent(left_a: list[str], left_b: list[str]) -> bool:
    """Whether two values whose alignment left these words can name one entity (module docstring)."""
    return not (left_a and left_b)
