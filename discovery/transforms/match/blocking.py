"""Which value pairs a matcher looks at: the nearest values by IDF-weighted words and character 3-grams.

Comparing every query value with every lake value is quadratic; two values that name one entity share words or,
through typos, most of their 3-grams.  Each value becomes two sparse TF-IDF vectors (words; 3-grams of its words
joined by spaces, padded), IDF over the distinct values of both columns, L2-normalised; a query value's candidates
are its ``m`` nearest lake values by each cosine (the TF-IDF blocking that Sparkly, PVLDB 2023, shows strong).  The
same cosines are two of the matcher's measures (:mod:`.measures`).

Features in more than a tenth of the values (once there are over a thousand) are dropped: they say little (their
IDF is low) and would make every product dense.  Products run over blocks of query values sized so that a block's
result holds at most about 2**24 entries.
"""
from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .tokens import qgrams, words

#: Values above which features in more than ``COMMON_SHARE`` of them are dropped.
COMMON_FROM = 1000
COMMON_SHARE = 0.1
BLOCK_ENTRIES = 1 << 24


@dataclass
class Features:
    """The values of both columns as a matcher reads them: words, canonical text (words joined by spaces), the
    word and 3-gram TF-IDF matrices (rows: query values, then lake values) and the words' IDF."""

    words: list[list[str]]
    text: list[str]
    word_vectors: sp.csr_matrix
    gram_vectors: sp.csr_matrix
    idf: dict[str, float]
    default_idf: float
    n_query: int

    def rows(self, side: str) -> slice:
        return slice(0, self.n_query) if side == "query" else slice(self.n_query, len(self.text))


@dataclass(frozen=True)
class Weights:
    """The IDF of words and 3-grams over ``n`` values: given when the values a process holds are a block of the
    ones the IDF is over (:mod:`.distributed`), so every block weighs a feature as the whole would."""

    words: dict[str, float]
    grams: dict[str, float]
    n: int


def features_of(value: str) -> tuple[list[str], list[str]]:
    """The words of ``value`` and the 3-grams of its canonical text: what its two vectors count."""
    split = words(value)
    return split, qgrams(" ".join(split))


def idf_weight(df: int, n: int) -> float:
    """The IDF of a feature in ``df`` of ``n`` values (0 for a common one, module docstring), in float32 and by
    ``math.log``: computed one feature at a time, it is the same number wherever the feature is weighed."""
    if n > COMMON_FROM and df > COMMON_SHARE * n:
        return 0.0
    return float(np.float32(math.log((n + 1) / (df + 1)) + 1.0))


def default_weight(n: int) -> float:
    """The IDF of a word no value holds (:func:`.align.align` reads it)."""
    return math.log(n + 1) + 1.0


def document_frequencies(docs: list[list[str]]) -> Counter:
    """How many of ``docs`` hold each feature."""
    out: Counter = Counter()
    for doc in docs:
        out.update(set(doc))
    return out


def vectors(docs: list[list[str]], idf: dict[str, float]) -> sp.csr_matrix:
    """The L2-normalised TF-IDF rows of ``docs`` (float32) under ``idf``.  Columns are the docs' features in sorted
    order, so a row's entries, its norm and its products with any other row's are summed in the same order
    whichever other values share the matrix: a block of the values gets the very numbers the whole does."""
    vocab = {f: i for i, f in enumerate(sorted({f for doc in docs for f in doc}))}
    indices: list[int] = []
    indptr = [0]
    for doc in docs:
        indices.extend(vocab[f] for f in doc)
        indptr.append(len(indices))
    counts = sp.csr_matrix((np.ones(len(indices), np.float32), np.asarray(indices, np.int64),
                            np.asarray(indptr, np.int64)), shape=(len(docs), len(vocab)))
    counts.sum_duplicates()
    weight = np.fromiter((idf[f] for f in vocab), np.float32, len(vocab))
    matrix = counts.multiply(weight[None, :]).tocsr()
    norms = np.sqrt(np.asarray(matrix.multiply(matrix).sum(axis=1)).ravel())
    matrix = sp.diags(1.0 / np.where(norms > 0, norms, 1.0)).dot(matrix).tocsr()
    matrix.eliminate_zeros()
    matrix.sort_indices()
    return matrix.astype(np.float32)


def weigh(docs: list[list[str]]) -> dict[str, float]:
    """The IDF of every feature of ``docs``, over them."""
    n = len(docs)
    return {f: idf_weight(df, n) for f, df in document_frequencies(docs).items()}


def featurise(query: list[str], lake: list[str], weights: Weights | None = None) -> Features:
    """:class:`Features` of the distinct ``query`` and ``lake`` values, weighed over both (or by ``weights``)."""
    split = [words(v) for v in list(query) + list(lake)]
    text = [" ".join(w) for w in split]
    grams = [qgrams(t) for t in text]
    if weights is None:
        weights = Weights(weigh(split), weigh(grams), len(split))
    return Features(split, text, vectors(split, weights.words), vectors(grams, weights.grams), weights.words,
                    default_weight(weights.n), len(query))


def nearest(a: sp.csr_matrix, b: sp.csr_matrix, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Pairs ``(i, j)``: for each row ``i`` of ``a``, the ``m`` rows ``j`` of ``b`` with the largest positive
    cosine (ties by lower ``j``)."""
    i, j, _ = nearest_scored(a, b, m)
    return i, j


def nearest_scored(a: sp.csr_matrix, b: sp.csr_matrix, m: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """:func:`nearest` with each pair's cosine (float32)."""
    bt = b.T.tocsc()
    out_i, out_j, out_s = [], [], []
    block = max(1, BLOCK_ENTRIES // max(b.shape[0], 1))
    for start in range(0, a.shape[0], block):
        s = (a[start:start + block] @ bt).tocsr()
        s.eliminate_zeros()
        s.sort_indices()
        top = _top_per_row(s.indptr, s.data, m)
        out_i.append(np.repeat(np.arange(s.shape[0]), np.minimum(np.diff(s.indptr), m)) + start)
        out_j.append(s.indices[top].astype(np.int64))
        out_s.append(s.data[top])
    if not out_i:
        return np.zeros(0, np.int64), np.zeros(0, np.int64), np.zeros(0, np.float32)
    return np.concatenate(out_i), np.concatenate(out_j), np.concatenate(out_s)


def _top_per_row(indptr: np.ndarray, data: np.ndarray, m: int) -> np.ndarray:
    """Positions of each CSR row's ``m`` largest entries (ties to the lower position: the lower column), rows in
    order: a partition per row, a sort only of the few at the cut, no sort of the whole product."""
    out = []
    for lo, hi in zip(indptr[:-1].tolist(), indptr[1:].tolist()):
        if hi - lo <= m:
            out.append(np.arange(lo, hi))
            continue
        seg = data[lo:hi]
        cut = np.partition(seg, hi - lo - m)[hi - lo - m]
        kept = np.flatnonzero(seg >= cut)
        kept = kept[np.lexsort((kept, -seg[kept]))][:m]
        out.append(lo + np.sort(kept))
    return np.concatenate(out) if out else np.zeros(0, np.int64)


def candidates(f: Features, m: int) -> tuple[np.ndarray, np.ndarray]:
    """Candidate (query value, lake value) pairs, positions within each side: the ``m`` nearest by words and the
    ``m`` nearest by 3-grams, each pair once."""
    q, lake = f.rows("query"), f.rows("lake")
    pairs = [nearest(mat[q], mat[lake], m) for mat in (f.word_vectors, f.gram_vectors)]
    return _unique(np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]))


def neighbours(f: Features, lake_rows: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
    """For the lake values at ``lake_rows`` (positions within the lake side), their ``m`` nearest other lake values
    by words and by 3-grams: pairs (lake value, neighbour)."""
    lake = f.rows("lake")
    pairs = []
    for mat in (f.word_vectors, f.gram_vectors):
        side = mat[lake]
        i, j = nearest(side[lake_rows], side, m + 1)
        i = lake_rows[i]
        keep = i != j
        pairs.append((i[keep], j[keep]))
    return _unique(np.concatenate([p[0] for p in pairs]), np.concatenate([p[1] for p in pairs]))


def _unique(i: np.ndarray, j: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    if not i.size:
        return i.astype(np.int64), j.astype(np.int64)
    both = np.unique(np.stack([i, j], axis=1), axis=0)
    return both[:, 0], both[:, 1]


def cosine(mat: sp.csr_matrix, i: np.ndarray, j: np.ndarray) -> np.ndarray:
    """Cosine of rows ``i`` and ``j`` of ``mat`` (rows L2-normalised), pair by pair."""
    if not i.size:
        return np.zeros(0)
    return np.asarray(mat[i].multiply(mat[j]).sum(axis=1), dtype=np.float64).ravel()
