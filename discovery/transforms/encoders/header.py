"""The header channel of column vectors: what a column's name says, as a unit vector of its own.

Value vectors alone miss the evidence a person reads first: two columns called ``release_year`` and ``Year`` are
about the same attribute whatever their cells are.  A name is split into words (``camelCase``, ``snake_case``,
punctuation and digit runs all separate words), lower-cased, and a regular plural made singular; every word is a
feature of weight ``word_weight`` and every character 3- and 4-gram of the marked word sequence (``<release year>``)
a feature of weight 1, so ``yr`` / ``year`` / ``years`` stay close and word order does not matter.  Features are
signed-hashed (count sketch) into ``dim`` buckets with the project's stable hash (:mod:`.ngrams`), so a name gives the
same vector in every process.

Names the reader generates (``column_<number>`` for a header field without a name) and pure digit runs (the
``_2`` suffix of a repeated name) carry no evidence and give no features; such a column's header vector is zero.

The column vector concatenates the two channels, ``unit([sqrt(w) * header, sqrt(1 - w) * values])`` (see
:meth:`discovery.transforms.encoders.base.Encoder.column_vector`): for two columns that both have a header, the cosine
is exactly ``w * cos(header) + (1 - w) * cos(values)``, and the result is still a unit vector, so PGTUS's bounds, cones
and the exactness of the default union search hold unchanged over the combined similarity (Definition 5 is taken over
it).
"""
from __future__ import annotations

import re

import numpy as np

from .deterministic import unit
from .ngrams import extract_features, splitmix64

#: Character n-gram sizes of the header channel (names are short: 5-grams would rarely be shared).
HEADER_NGRAMS = (3, 4)
_GENERATED = re.compile(r"^column_\d+(?:_\d+)?$")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])")
_WORDS = re.compile(r"[^\W\d_]+", re.UNICODE)
_SEED = 0x4EAD


def header_words(name: str | None) -> list[str]:
    """Words of a column name: split at case changes, punctuation, underscores and digits; lower-cased; regular
    plurals made singular.  Generated names give no words."""
    if not name or _GENERATED.match(name.strip()):
        return []
    return [_singular(w.lower()) for w in _WORDS.findall(_CAMEL.sub(" ", name))]


def _singular(word: str) -> str:
    """``cities`` -> ``city``, ``years`` -> ``year``; ``status``, ``address``, ``analysis`` and short words stay."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 3 and word.endswith("s") and not word.endswith(("ss", "us", "is")):
        return word[:-1]
    return word


def header_vectors(names: list[str | None], dim: int, word_weight: float = 2.0, seed: int = 0) -> np.ndarray:
    """Unit header vectors (len(names), dim) in float64; a name without words gives the zero vector."""
    texts = [" ".join(header_words(n)) for n in names]
    out = np.zeros((len(texts), dim))
    present = [i for i, t in enumerate(texts) if t]
    if not present:
        return out
    feats = extract_features([texts[i] for i in present], HEADER_NGRAMS, word_weight, seed ^ _SEED)
    mixed = splitmix64(feats.hashes)
    bucket = (mixed % np.uint64(dim)).astype(np.int64)
    sign = np.where(mixed >> np.uint64(63), -1.0, 1.0)
    acc = np.bincount(feats.rows * dim + bucket, weights=sign * feats.weights, minlength=len(present) * dim)
    out[present] = unit(acc.reshape(len(present), dim))
    return out
