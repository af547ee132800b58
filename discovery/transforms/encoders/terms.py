"""The words a column shows a reader, hashed: what the union search's lexical table score counts.

A column's terms are the words of its name and of a small priority sample of its distinct values (the same stable
sample the column vector starts from, :func:`.columns.priority_sample`), each word hashed into one of
:data:`BUCKETS` buckets with its count.  They are stored per column with its vector (``column_vectors.terms`` and
``term_counts``), and a query table's columns get theirs by the same function, so a lake table used as the query has
exactly its stored terms.  The weighting (IDF over the snapshot's columns) is applied when a snapshot's union index
is loaded (:mod:`discovery.indexes.union.lexical`), so an incremental refresh stores only the terms of the tables it
reads.

Why these choices: :data:`VALUES` = 5 and words split on anything that is not a letter or a digit are the TF-IDF
baseline the union benchmarks compare with (``benchmarks/union.py``), whose table cosine, added to Definition 5, is
what gained on every lake measured (benchmarks/README.md, "A lexical channel and a table-level blend").  2^20 buckets
make two distinct words of a lake share a bucket rarely (a lake of 100k distinct words: about 5% of words share
one) for 4 bytes a term.
"""
from __future__ import annotations

import re
import zlib

import numpy as np

from .columns import ColumnProfile, priority_sample

#: Distinct values per column whose words are counted (the most frequent first, ties by a stable hash).
VALUES = 5
#: Hash buckets of a word (a power of two).
BUCKETS = 1 << 20
#: The rule's version: stored terms made by another rule are stale (:func:`.stored.column_requires`).
RULE = 1
_WORD = re.compile(r"[^\W_]+")


def words(text: str) -> list[str]:
    """The lower-cased runs of letters and digits of ``text``."""
    return _WORD.findall(text.lower())


def column_terms(name: str, profile: ColumnProfile) -> tuple[np.ndarray, np.ndarray]:
    """The column's term buckets (int32, ascending, distinct) and each one's count (int32)."""
    chosen = priority_sample(profile.values, profile.counts, VALUES)
    found = words(name)
    for i in chosen.tolist():
        found += words(profile.values[i])
    if not found:
        return np.zeros(0, dtype=np.int32), np.zeros(0, dtype=np.int32)
    hashed = np.fromiter((zlib.crc32(w.encode("utf-8")) for w in found), dtype=np.int64, count=len(found))
    buckets, counts = np.unique(hashed & (BUCKETS - 1), return_counts=True)
    return buckets.astype(np.int32), counts.astype(np.int32)
