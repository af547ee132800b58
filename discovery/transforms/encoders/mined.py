"""Positive pairs mined from the lake by an independent lexical scorer (IDF-weighted word overlap).

Generated variations (:mod:`.variations`) teach the join encoder which edits usually do not change an entity, but the
spellings that really occur in a lake ("indian general election in arunachal pradesh, 2004" / "indian general
election, 2004 (arunachal pradesh)", "mexican treefrogs" / "mexican burrowing treefrogs") are richer than any fixed
list of edits.  A lake that holds one entity in two tables holds both spellings, and a scorer that does not depend
on the encoder finds them: two values whose IDF-weighted word sets are close (cosine of binary TF-IDF over words) and
that are each other's best such partner.  Mining with the encoder's own space instead only confirms what the encoder
already believes (measured: no gain), while word IDF is what TF-IDF baselines rank fuzzy joins by.

Guards: the pair must carry the same number tokens ("1893 lsu football team" and "1894 lsu football team" are
different entities, the rule :mod:`.variations` also keeps), share at least one word of document frequency at most
``max_df`` (the candidate blocking, which keeps the sparse product linear in the lake), and reach cosine
``min_similarity``; values whose best partner is ambiguous (another partner within ``ambiguity`` of the best) are
skipped, as are pairs that are not mutual best partners.  On AutoFJ's 164k distinct values, at the join encoder's
``mined_similarity`` of 0.6, this mines 13,641 pairs, 4,867 of them ground-truth pairs (a third of the 13,712 that
differ after normalisation); in a sample of the others are near duplicates outside the ground truth ("the o2 arena"
/ "the o2 arena (london)") and wrong pairs ("danny says" / "jane says").  Cost: one sparse product over the rare
words and a few numpy passes (12 s for those 164k values on a heavily shared machine), before the first step.

The same scorer, restricted to the values of one column, mines the join encoder's hard negatives
(:func:`mine_negatives`): distinct values that one column holds side by side are distinct entities.  So do the
values of one column that carry the same numbers under other words (:func:`mine_number_negatives`).
"""
from __future__ import annotations

import re

import numpy as np
import scipy.sparse as sp

_TOKEN = re.compile(r"\w+")
_DIGITS = re.compile(r"\d")


#: What the miners score with: binary value x word incidence, word document frequencies, and an id per distinct set
#: of number tokens, -1 for none (:func:`word_matrix`).
Words = tuple[sp.csr_matrix, np.ndarray, np.ndarray]


def word_matrix(values: list[str]) -> Words:
    """Binary value x word incidence, word document frequencies and an id of each value's number tokens; computed
    once when both :func:`mine_pairs` and :func:`mine_negatives` run on the same values."""
    tokens = [sorted(set(_TOKEN.findall(v))) for v in values]
    lengths = np.fromiter((len(t) for t in tokens), dtype=np.int64, count=len(tokens))
    flat = [w for t in tokens for w in t]
    words, word_ids = (np.unique(np.array(flat, dtype=object), return_inverse=True) if flat
                       else (np.zeros(0), np.zeros(0, dtype=np.int64)))
    rows = np.repeat(np.arange(len(values)), lengths)
    incidence = sp.csr_matrix((np.ones(len(flat)), (rows, word_ids)), shape=(len(values), len(words)))
    df = np.asarray(incidence.sum(axis=0)).ravel()
    spelled = np.array([" ".join(w for w in t if _DIGITS.search(w)) for t in tokens], dtype=object)
    numbers = np.unique(spelled, return_inverse=True)[1].astype(np.int64)
    numbers[spelled == ""] = -1
    return incidence, df, numbers


def _tfidf(incidence: sp.csr_matrix, df: np.ndarray) -> sp.csr_matrix:
    """Unit-normalised rows of binary word incidence weighted by inverse document frequency."""
    weighted = incidence @ sp.diags(np.log(incidence.shape[0] / np.maximum(df, 1)))
    norms = np.sqrt(np.asarray(weighted.multiply(weighted).sum(axis=1)).ravel())
    return (sp.diags(1.0 / np.maximum(norms, 1e-12)) @ weighted).tocsr()


def mine_pairs(values: list[str], min_similarity: float = 0.5, max_df: int = 50, ambiguity: float = 0.05,
               words: Words | None = None) -> np.ndarray:
    """Index pairs ``(i, j)``, ``i < j``, of values that are mutual best lexical partners (see the module docstring).

    ``values`` are distinct prepared strings; the result is an ``(n, 2)`` int64 array in a deterministic order.
    """
    empty = np.zeros((0, 2), dtype=np.int64)
    if len(values) < 2:
        return empty
    incidence, df, numbers = word_matrix(values) if words is None else words
    if incidence.shape[1] == 0:
        return empty
    tfidf = _tfidf(incidence, df)
    rare = tfidf @ sp.diags((df <= max_df).astype(np.float64))
    candidates = sp.triu(rare @ rare.T, k=1).tocoo()
    i, j = candidates.row.astype(np.int64), candidates.col.astype(np.int64)
    same_numbers = numbers[i] == numbers[j]
    i, j = i[same_numbers], j[same_numbers]
    if i.size == 0:
        return empty
    sim = np.asarray(tfidf[i].multiply(tfidf[j]).sum(axis=1)).ravel()
    # Best and second-best partner of every value, over both directions of each candidate pair.
    src, dst, s = np.concatenate((i, j)), np.concatenate((j, i)), np.concatenate((sim, sim))
    order = np.lexsort((dst, -s, src))
    src, dst, s = src[order], dst[order], s[order]
    first = np.r_[True, src[1:] != src[:-1]]
    starts = np.flatnonzero(first)
    best_of = np.full(len(values), -1, dtype=np.int64)
    best_sim = np.zeros(len(values))
    second_sim = np.zeros(len(values))
    best_of[src[starts]] = dst[starts]
    best_sim[src[starts]] = s[starts]
    has_second = np.r_[starts[1:], src.size] - starts > 1
    second_sim[src[starts[has_second]]] = s[starts[has_second] + 1]
    a = np.flatnonzero(best_of >= 0)
    b = best_of[a]
    keep = (a < b) & (best_of[b] == a) & (best_sim[a] >= min_similarity)
    keep &= (best_sim[a] - second_sim[a] >= ambiguity) & (best_sim[b] - second_sim[b] >= ambiguity)
    return np.stack((a[keep], b[keep]), axis=1)


def mine_negatives(values: list[str], columns: list[np.ndarray], min_similarity: float = 0.3, max_df: int = 50,
                   max_similarity: float = 0.999, words: Words | None = None) -> np.ndarray:
    """Index pairs ``(i, j)``, ``i < j``, of near-duplicate values of one column: hard negatives.

    The distinct values of one column are, as a rule, distinct entities, and the lexically closest of them ("1893
    lsu football team" / "1894 lsu football team", "john smith" / "john smithson") are exactly what a top-1 join must
    tell apart, while in-batch negatives drawn from the whole lake are almost never that close.  ``columns`` holds
    the indices into ``values`` of each column's distinct values; every value is paired with its most similar other
    value of a column it belongs to (cosine of the same IDF-weighted words as :func:`mine_pairs`, candidates sharing a
    word held by at most ``max_df`` values of that column) when the cosine lies in ``[min_similarity,
    max_similarity)``: equal word sets (the same words reordered or punctuated) are two spellings of one value, not
    two entities.  The result is an ``(n, 2)`` int64 array in a deterministic order.
    """
    empty = np.zeros((0, 2), dtype=np.int64)
    sizes = np.fromiter((len(c) for c in columns), dtype=np.int64, count=len(columns))
    if len(values) < 2 or sizes.sum() < 2:
        return empty
    incidence, df, _ = word_matrix(values) if words is None else words
    if incidence.shape[1] == 0:
        return empty
    tfidf = _tfidf(incidence, df)
    member = np.concatenate([np.asarray(c, dtype=np.int64) for c in columns])
    occurrence = incidence[member].tocoo()  # (column, value) occurrence x word
    key = np.repeat(np.arange(len(columns)), sizes)[occurrence.row] * incidence.shape[1] + occurrence.col
    keys, inverse, counts = np.unique(key, return_inverse=True, return_counts=True)
    rare = counts[inverse] <= max_df
    block = sp.csr_matrix((np.ones(int(rare.sum())), (occurrence.row[rare], inverse[rare])),
                          shape=(member.size, keys.size))
    candidates = sp.triu(block @ block.T, k=1).tocoo()
    i, j = member[candidates.row], member[candidates.col]
    i, j = np.minimum(i, j)[i != j], np.maximum(i, j)[i != j]
    if i.size == 0:
        return empty
    pair = np.unique(i * len(values) + j)  # one code per pair: a 1-d unique, sorted as (i, j)
    i, j = pair // len(values), pair % len(values)
    sim = np.asarray(tfidf[i].multiply(tfidf[j]).sum(axis=1)).ravel()
    keep = (sim >= min_similarity) & (sim < max_similarity)
    src, dst = np.concatenate((i[keep], j[keep])), np.concatenate((j[keep], i[keep]))
    s = np.concatenate((sim[keep], sim[keep]))
    order = np.lexsort((dst, -s, src))
    src, dst = src[order], dst[order]
    first = np.r_[True, src[1:] != src[:-1]] if src.size else np.zeros(0, dtype=bool)
    best = np.unique(np.minimum(src[first], dst[first]) * len(values) + np.maximum(src[first], dst[first]))
    return np.stack((best // len(values), best % len(values)), axis=1)


def mine_number_negatives(columns: list[np.ndarray], words: Words, max_similarity: float = 0.999) -> np.ndarray:
    """Index pairs ``(i, j)``, ``i < j``, of values of one column that carry the same number tokens: hard negatives.

    Mined positives always carry equal numbers (:func:`mine_pairs`' guard), and generated variations keep them, so
    every positive the encoder sees agrees on its numbers while in-batch negatives almost never do: the encoder learns
    equal numbers as strong evidence of one entity, and puts "2012 korea open" within tau of "2012 king's cup",
    "landsat 8" of "luna 8".  On AutoFJ a sixth of the best-match errors at tau 4% were such pairs, and they are what
    lets a broader table match more of a query than the query's own one (``benchmarks/join.py --autofj``).  A
    column's distinct values are distinct entities, so its values sharing one non-empty set of number tokens are
    paired as negatives, each with the next of its group in a ring (by index: linear in the column, however many
    values share a year), except pairs whose IDF-weighted word sets are equal (cosine at least ``max_similarity``:
    one value spelled twice).  ``words`` is :func:`word_matrix` of the values the indices name.
    """
    empty = np.zeros((0, 2), dtype=np.int64)
    incidence, df, numbers = words
    sizes = np.fromiter((len(c) for c in columns), dtype=np.int64, count=len(columns))
    if sizes.sum() < 2:
        return empty
    member = np.concatenate([np.asarray(c, dtype=np.int64) for c in columns])
    column = np.repeat(np.arange(len(columns)), sizes)
    number = numbers[member]
    keep = number >= 0
    if not keep.any():
        return empty
    member, column, number = member[keep], column[keep], number[keep]
    order = np.lexsort((member, number, column))
    member, column, number = member[order], column[order], number[order]
    start = np.r_[True, (column[1:] != column[:-1]) | (number[1:] != number[:-1])]
    starts = np.flatnonzero(start)
    ends = np.r_[starts[1:], member.size]
    group = np.cumsum(start) - 1
    following = np.arange(member.size) + 1
    following[ends - 1] = starts  # the ring closes on the group's first value
    paired = (ends - starts)[group] >= 2
    i, j = member[paired], member[following[paired]]
    i, j = np.minimum(i, j)[i != j], np.maximum(i, j)[i != j]
    if i.size == 0:
        return empty
    n = np.int64(incidence.shape[0])
    pair = np.unique(i * n + j)
    i, j = pair // n, pair % n
    tfidf = _tfidf(incidence, df)
    sim = np.asarray(tfidf[i].multiply(tfidf[j]).sum(axis=1)).ravel()
    keep = sim < max_similarity
    return np.stack((i[keep], j[keep]), axis=1)
