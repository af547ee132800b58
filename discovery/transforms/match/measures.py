"""The distances a matcher can join by, each in [0, 1], for value pairs given by their rows in :class:`Features`.

Each measure sees a different way one entity gets written twice, and none sees them all:

* ``edit``: 1 - the Indel ratio of the canonical texts (typos, small insertions);
* ``order``: the same with the words sorted (``Agarwal Pankaj K.`` ~ ``Pankaj K. Agarwal``, ``Smith, John``);
* ``contain``: 1 - rapidfuzz's token-set ratio, 0 when one value's words hold the other's (``Gray Davis`` inside
  ``Gov. Gray Davis``, a name inside ``Name (Tenure)``);
* ``words`` / ``grams``: 1 - the cosine of the IDF-weighted word and 3-gram vectors (:mod:`.blocking`), so a rare
  shared word counts more than a common one;
* ``soft``: 1 - the soft word similarity of :func:`.align.align` (typos and abbreviations as the same word,
  ``Mumbai Intl Apt.`` ~ ``Mumbai International Airport``).

Which measure and which threshold join a given column pair is not fixed here: :mod:`.autoconfig` picks them per pair
of columns from the lake column's own values.  The string measures are rapidfuzz's, compiled and batched over the
pairs (``process.cpdist``), rather than a Python loop of our own.
"""
from __future__ import annotations

import numpy as np
from rapidfuzz import fuzz, process

from .align import align
from .blocking import Features, cosine

MEASURES = ("edit", "order", "contain", "words", "grams", "soft")


def distances(f: Features, a: np.ndarray, b: np.ndarray) -> tuple[np.ndarray, list[tuple[list[str], list[str]]]]:
    """``(distance, leftovers)`` of the pairs of rows ``(a[i], b[i])`` of ``f``: distances ``(n, len(MEASURES))``
    in :data:`MEASURES` order, and the words each pair's alignment leaves on either side (:func:`.align.align`), which
    the consistency rule reads."""
    n = a.size
    out = np.ones((n, len(MEASURES)))
    leftovers: list[tuple[list[str], list[str]]] = []
    if not n:
        return out, leftovers
    left, right = [f.text[i] for i in a], [f.text[j] for j in b]
    for k, scorer in enumerate((fuzz.ratio, fuzz.token_sort_ratio, fuzz.token_set_ratio)):
        out[:, k] = 1.0 - process.cpdist(left, right, scorer=scorer, dtype=np.float64, workers=-1) / 100.0
    out[:, 3] = 1.0 - cosine(f.word_vectors, a, b)
    out[:, 4] = 1.0 - cosine(f.gram_vectors, a, b)
    for i, (x, y) in enumerate(zip(a.tolist(), b.tolist())):
        soft, left_a, left_b = align(f.words[x], f.words[y], f.idf, f.default_idf)
        out[i, 5] = 1.0 - soft
        leftovers.append((left_a, left_b))
    np.clip(out, 0.0, 1.0, out=out)
    return out, leftovers
