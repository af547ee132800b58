"""The two-table matcher over a lake column no process holds: what one task computes from a block of the column.

A lake column of millions of distinct values is split into blocks (a Spark job's partitions, :mod:`spark_jobs.match`);
the query's values, which the asking process holds anyway, go to every block.  Each step of the matcher that reads
the whole column is one a block can compute a part of and a merge can finish exactly:

* **IDF** (:mod:`.blocking`): document frequencies are counts, summed over blocks (:func:`feature_rows`), and a
  feature's weight is a function of its count alone (:func:`.blocking.idf_weight`);
* **blocking**: a query value's ``m`` nearest lake values by a cosine are the ``m`` best, by cosine then by value,
  of each block's ``m`` best (:func:`block_nearest`); the vectors a block builds are the very rows the whole column
  gives (:func:`.blocking.vectors` sums each row in feature order), so every cosine is the same float32 number;
* **measures** of a pair read the pair's two values and the IDF of their words, so once the merge has kept a query
  value's candidates, a task holding those pairs measures them (:func:`pair_distances`);
* the **neighbours** of the lake values a query value may join are the same merge with those values as the query.

What stays with the asker is what the query's size bounds: the candidates (at most ``2 m`` a query value), the
neighbours of the lake values they name, the configuration chosen on a sample (:func:`.matcher.sample`) and the
pairs.
"""
from __future__ import annotations

import numpy as np
import pyarrow as pa

from .align import consistent
from .blocking import Weights, featurise, features_of, idf_weight, nearest_scored
from .measures import MEASURES, distances

#: Feature kinds, as the frames of a Spark job carry them.
WORDS, GRAMS = 0, 1

FEATURE_SCHEMA = pa.schema([("value", pa.string()), ("kind", pa.int8()), ("feature", pa.string())])
NEAREST_SCHEMA = pa.schema([("q", pa.int64()), ("value", pa.string()), ("cos_words", pa.float32()),
                            ("cos_grams", pa.float32())])


def feature_rows(values: list[str]) -> pa.RecordBatch:
    """One row per distinct feature (word or 3-gram) of each value: what document frequencies count."""
    out_v, out_k, out_f = [], [], []
    for v in values:
        split, grams = features_of(v)
        for kind, feats in ((WORDS, split), (GRAMS, grams)):
            for f in sorted(set(feats)):
                out_v.append(v)
                out_k.append(kind)
                out_f.append(f)
    return pa.RecordBatch.from_arrays([pa.array(out_v, pa.string()), pa.array(out_k, pa.int8()),
                                       pa.array(out_f, pa.string())], schema=FEATURE_SCHEMA)


def local_counts(values: list[str]) -> dict[tuple[int, str], int]:
    """Document frequencies of ``values``' features, keyed ``(kind, feature)``."""
    out: dict[tuple[int, str], int] = {}
    batch = feature_rows(values)
    for k, f in zip(batch.column(1).to_pylist(), batch.column(2).to_pylist()):
        out[(k, f)] = out.get((k, f), 0) + 1
    return out


def weights_of(counts: dict[tuple[int, str], int], n: int) -> Weights:
    """The IDF of the features ``counts`` holds (their document frequencies over all ``n`` values)."""
    words = {f: idf_weight(c, n) for (k, f), c in counts.items() if k == WORDS}
    grams = {f: idf_weight(c, n) for (k, f), c in counts.items() if k == GRAMS}
    return Weights(words, grams, n)


def merged(a: Weights, b: Weights) -> Weights:
    """The weights of the features of both (the query's and a block's: one IDF, read in two parts)."""
    return Weights({**a.words, **b.words}, {**a.grams, **b.grams}, a.n)


def block_nearest(query: list[str], query_weights: Weights, block: list[str], block_weights: Weights,
                  m: int) -> pa.RecordBatch:
    """Each query value's ``m`` nearest values of ``block`` by words and by 3-grams, with the cosines (null where
    the pair is not among that channel's ``m``).  ``block`` is sorted, so ties fall to the lesser value as in the
    whole column."""
    block = sorted(block)
    f = featurise(query, block, merged(query_weights, block_weights))
    q, lake = f.rows("query"), f.rows("lake")
    scored = [nearest_scored(mat[q], mat[lake], m) for mat in (f.word_vectors, f.gram_vectors)]
    width = max(len(block), 1)
    keys = [i * width + j for i, j, _ in scored]
    both = np.unique(np.concatenate(keys))
    cos = []
    for key, (_, _, s) in zip(keys, scored):
        out = np.full(both.size, np.nan, np.float32)
        out[np.searchsorted(both, key)] = s
        cos.append(out)
    return pa.RecordBatch.from_arrays(
        [pa.array(both // width, pa.int64()), pa.array([block[j] for j in (both % width).tolist()], pa.string())]
        + [pa.array(c, pa.float32(), mask=np.isnan(c)) for c in cos], schema=NEAREST_SCHEMA)


def pair_distances(query: list[str], query_weights: Weights, q: np.ndarray, values: list[str],
                   lake_weights: Weights, refuse: bool) -> np.ndarray:
    """The distances (:mod:`.measures`) of the pairs ``(query[q[i]], values[i])``; with ``refuse``, inf where the
    consistency rule refuses the pair.  Only the pairs' own values are weighed, by the whole column's IDF."""
    if not values:
        return np.zeros((0, len(MEASURES)))
    rows, at_q = np.unique(q, return_inverse=True)
    lake = sorted(set(values))
    at = {v: i for i, v in enumerate(lake)}
    f = featurise([query[i] for i in rows.tolist()], lake, merged(query_weights, lake_weights))
    d, left = distances(f, at_q, f.n_query + np.array([at[v] for v in values], np.int64))
    if refuse:
        d[~np.array([consistent(x, y) for x, y in left], dtype=bool)] = np.inf
    return d
