"""The lexical table score: the TF-IDF cosine of two tables' words, added to the union score with a weight.

Definition 5 sums the similarities of aligned column vectors; on real lakes a plain lexical ranking (TF-IDF over the
words of column names and sampled values) beats it at some k (fivethirtyeight at k = 1, UGEN-V1 from k = 14), and
adding the lexical table cosine to Definition 5 gained on every lake measured (benchmarks/README.md, "A lexical
channel and a table-level blend").  The served score is therefore

    ``score(Q, T) = U(Q, T, tau) + w * q * cos(Q, T)``   (``score = "sum"``, q the query's columns)
    ``score(Q, T) = f(Q, T) * U(Q, T, tau) + w * cos(Q, T)``   (a width-weighted score, :mod:`.widths`)

with ``w`` = :data:`DEFAULT_WEIGHT`: ``q`` scales the cosine like a table aligning every query column at similarity
1, so the weight means the same for narrow and wide queries.  ``cos`` is over table vectors built as the baseline
builds them: per column, the counts of its terms (:mod:`discovery.transforms.encoders.terms`) times their IDF over the
snapshot's columns (``log((1 + n) / (1 + df)) + 1``), normalised; summed over the table's columns and normalised.
A query's terms unseen in the snapshot are dropped, as a vocabulary would drop them.

Why 0.2: at 0.1 to 0.5 the blend gained MAP@10 on UGEN-V1, fivethirtyeight and the sample lake alike (0.2: +0.008,
+0.011, +0.001; 0.5: +0.014, +0.017, +0.004); on public union benchmarks held out from this machine 0.2 lifted MAP@10
(0.784 to 0.801) and 0.5 and above did not, so the largest weight measured to gain everywhere is the default.  0
gives Definition 5 alone.

Why the searches stay exact: the cosine is one number per lake table for a given query, computed for every table
(the query's terms index the table vectors by bucket, so the work is the postings of its own terms), and added to
every table's upper and lower bounds alike; a table no column pair aligns scores its cosine term alone, so it is
ranked too.  The IDF is the snapshot's: a table's score depends on the lake it is searched in, as its rank does.
"""
from __future__ import annotations

from dataclasses import dataclass

from typing import TYPE_CHECKING

import numpy as np
import pyarrow as pa

from ...transforms.encoders.terms import BUCKETS

if TYPE_CHECKING:
    from scipy import sparse

#: The weight of the lexical table cosine (see the module docstring); 0 is Definition 5 (or a width score) alone.
DEFAULT_WEIGHT = 0.2
#: Column terms a build turns into table vectors at a time (:meth:`LexicalIndex.build`): about 400 MB of working
#: arrays, a few dozen thousand tables.
CHUNK_TERMS = 8_000_000


@dataclass(frozen=True)
class LexicalIndex:
    """Unit TF-IDF vectors of a snapshot's tables (rows in the union index's table order), bucket by bucket."""

    by_bucket: sparse.csc_matrix   # (tables, BUCKETS)
    idf: np.ndarray                # float64 per bucket; 0 where no column of the snapshot has the bucket
    columns: int                   # columns the IDF is over

    @property
    def nbytes(self) -> int:
        m = self.by_bucket
        return int(m.data.nbytes + m.indices.nbytes + m.indptr.nbytes + self.idf.nbytes)

    @classmethod
    def build(cls, table_ids: np.ndarray, column_table_ids: np.ndarray, terms: pa.Array,
              term_counts: pa.Array, chunk_terms: int | None = None) -> LexicalIndex:
        """From the snapshot's column rows (their table ids, ``terms`` and ``term_counts`` list arrays); a column of
        a table not in ``table_ids`` (ascending) counts in the IDF but in no table vector.

        The table vectors are built a run of whole tables at a time, about ``chunk_terms`` (default
        :data:`CHUNK_TERMS`) column terms each, and stacked: the working arrays of a build are a few per term, and
        at a million tables (tens of millions of terms) building in one piece peaked at several times the index.
        The IDF needs every column's terms first; it is counted from the stored int32 buckets as they are."""
        from scipy import sparse  # a search with the lexical term off never pays its import

        terms = terms.combine_chunks() if isinstance(terms, pa.ChunkedArray) else terms
        term_counts = term_counts.combine_chunks() if isinstance(term_counts, pa.ChunkedArray) else term_counts
        n_cols = len(terms)
        df = np.bincount(terms.flatten().to_numpy(zero_copy_only=False), minlength=BUCKETS)
        idf = np.where(df > 0, np.log((1.0 + n_cols) / (1.0 + df)) + 1.0, 0.0)
        del df
        column_table_ids = np.asarray(column_table_ids, dtype=np.int64)
        table_ids = np.asarray(table_ids, dtype=np.int64)
        pos = np.minimum(np.searchsorted(table_ids, column_table_ids), max(len(table_ids) - 1, 0))
        known = table_ids[pos] == column_table_ids if len(table_ids) else np.zeros(n_cols, bool)
        order = np.flatnonzero(known)
        order = order[np.argsort(pos[order], kind="stable")]       # by table, each table's columns in stored order
        lengths = terms.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
        table_of = pos[order]
        starts = np.flatnonzero(np.r_[True, table_of[1:] != table_of[:-1]]) if len(order) else np.zeros(0, int)
        before = np.r_[0, np.cumsum(lengths[order])][starts]          # terms of the columns before each table
        step = chunk_terms or CHUNK_TERMS
        marks = np.arange(step, before[-1] + 1, step) if len(before) else np.zeros(0, int)
        cuts = np.unique(np.r_[0, starts[np.minimum(np.searchsorted(before, marks), len(starts) - 1)], len(order)])
        parts = []
        for a, b in zip(cuts[:-1], cuts[1:]):
            rows = pa.array(order[a:b])
            offsets, buckets, counts = _flat(terms.take(rows), term_counts.take(rows))
            owner = np.repeat(np.arange(b - a), np.diff(offsets))
            weights = _unit_groups(counts * idf[buckets], owner, b - a)
            first = int(pos[order[a]])
            part = sparse.csr_matrix((weights, (pos[order[a:b]][owner] - first, buckets)),
                                     shape=(int(pos[order[b - 1]]) - first + 1, BUCKETS))
            part.sum_duplicates()
            norms = np.sqrt(np.asarray(part.multiply(part).sum(axis=1)).ravel())
            parts.append((first, sparse.diags(np.divide(1.0, norms, out=np.zeros_like(norms), where=norms > 0))
                          @ part))
        blocks, at = [], 0
        for first, part in parts:                                   # tables with no known column: empty rows
            if first > at:
                blocks.append(sparse.csr_matrix((first - at, BUCKETS)))
            blocks.append(part)
            at = first + part.shape[0]
        if at < len(table_ids) or not blocks:
            blocks.append(sparse.csr_matrix((len(table_ids) - at, BUCKETS)))
        summed = sparse.vstack(blocks, format="csr")
        del parts, blocks
        return cls(sparse.csc_matrix(summed), idf, n_cols)

    def query_vector(self, column_terms: list[tuple[np.ndarray, np.ndarray]]) -> tuple[np.ndarray, np.ndarray]:
        """The query's unit table vector over the snapshot's IDF: (buckets ascending, weights)."""
        if not column_terms:
            return np.zeros(0, dtype=np.int64), np.zeros(0)
        buckets = np.concatenate([np.asarray(b, dtype=np.int64) for b, _ in column_terms])
        counts = np.concatenate([np.asarray(c, dtype=np.float64) for _, c in column_terms])
        owner = np.repeat(np.arange(len(column_terms)), [len(b) for b, _ in column_terms])
        seen = self.idf[buckets] > 0
        buckets, owner = buckets[seen], owner[seen]
        weights = _unit_groups(counts[seen] * self.idf[buckets], owner, len(column_terms))
        found, where = np.unique(buckets, return_inverse=True)
        total = np.bincount(where, weights=weights, minlength=len(found))
        norm = float(np.sqrt(total @ total))
        return found, (total / norm if norm > 0 else total)

    def cosines(self, column_terms: list[tuple[np.ndarray, np.ndarray]]) -> np.ndarray:
        """cos(query, table) for every table of the index (float64, in its table order)."""
        buckets, weights = self.query_vector(column_terms)
        if not len(buckets):
            return np.zeros(self.by_bucket.shape[0])
        return np.asarray(self.by_bucket[:, buckets] @ weights).ravel()


def bonus(weight: float, score: str, query_width: int, cosines: np.ndarray | None) -> np.ndarray | None:
    """What the lexical term adds to each table's score (see the module docstring); None when nothing is added."""
    if cosines is None or weight == 0:
        return None
    return cosines * (weight * (query_width if score == "sum" else 1.0))


def _flat(terms: pa.Array, term_counts: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Offsets, buckets and counts of list arrays (a null list, a row stored before terms existed, is empty)."""
    terms = terms.combine_chunks() if isinstance(terms, pa.ChunkedArray) else terms
    term_counts = term_counts.combine_chunks() if isinstance(term_counts, pa.ChunkedArray) else term_counts
    lengths = terms.value_lengths().fill_null(0).to_numpy(zero_copy_only=False).astype(np.int64)
    offsets = np.r_[0, np.cumsum(lengths)]
    buckets = terms.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    counts = term_counts.flatten().to_numpy(zero_copy_only=False).astype(np.float64)
    return offsets, buckets, counts


def _unit_groups(weights: np.ndarray, owner: np.ndarray, groups: int) -> np.ndarray:
    """``weights`` divided by the Euclidean norm of their group (``owner``)."""
    norms = np.sqrt(np.bincount(owner, weights=weights * weights, minlength=groups))
    return weights / np.where(norms > 0, norms, 1.0)[owner]
