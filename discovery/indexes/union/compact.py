"""The compact union index: exact's top-k from int8 codes, float32 vectors read only for the tables that can still win.

A served snapshot answers ``exact``, ``pgtus`` and ``pgtus++`` (all three return exact's top-k, scores and ties
included) from :class:`CompactIndex`, whose arrays (:mod:`.arrays`) are memory-mapped: a query touches all the int8
codes (a quarter of the float32 vectors) and, of the float32 vectors, only the columns of the tables it scores.

* ``exact`` scores every table from the float32 vectors (``scoring.exhaustive_scores``), the baseline.
* ``pgtus`` / ``pgtus++`` run the bound pass over the codes (:mod:`.quantised`; on lakes of fewer than
  :data:`BOUND_PASS_MIN_COLUMNS` columns they score every table as ``exact`` does): an upper bound of every table's
  Definition 5 score, whatever its columns' similarities.  Tables are then scored exactly from their float32
  vectors in descending bound order, in batches of doubling size, until the next bound is below theta, the k-th
  best exact score so far: a table whose bound is below theta scores below theta, so it cannot enter the top-k nor
  tie with its last member, and neither can any table after it.  Theta only rises as tables are scored, so the stop
  is final.  A batch is scored with ``exhaustive_scores`` over the gathered columns of its tables, the same
  similarities, admissible pairs and matchings ``exact`` computes, so scores and alignments are the same numbers.

On the lakes where PGTUS's cones narrow nothing (real lakes such as UGEN-V1, where 96% of the tables reach the k-th
score), the codes do: their bounds are within a few hundredths of a similarity per pair, where the cones' are within
the angle of a column to its anchor.
"""
from __future__ import annotations

from bisect import bisect_left
from dataclasses import dataclass

import numpy as np

from .arrays import StoredRows, narrow_offsets
from .csr import expand_spans, offsets_from_counts
from .matching import unit_rows
from .quantised import encode, fit_steps, table_upper_bounds
from .results import Alignment, SearchStats, UnionResult, UnionSearch
from .scoring import ExhaustiveScores, exhaustive_scores
from .widths import factors, score_kind

#: methods the compact index answers; each returns exact's top-k (see the module docstring).
COMPACT_METHODS = ("exact", "pgtus", "pgtus++")
#: tables in the first batch scored exactly: at least this many and 4k (the k-th score it finds sets theta).  A table
#: costs microseconds to score, the bound pass a tenth of a second at 750k columns; on the generated 100k-table lake
#: (benchmarks/union_scale.py) every query stopped after this first batch.
FIRST_BATCH = 64
#: lakes with fewer columns are scored exhaustively by every method: there ``exact``'s float32 pass takes a few
#: milliseconds (8 ms on UGEN-V1's 9,918 columns), less than loading the compiled bound pass costs a cold process
#: (about 1.3 s: numba's import and its cached kernel).
BOUND_PASS_MIN_COLUMNS = 50_000


@dataclass(frozen=True)
class _Scored:
    """One batch of tables scored exactly: their table indices and what ``exhaustive_scores`` found for them."""

    tix: np.ndarray
    found: ExhaustiveScores
    col_offsets: np.ndarray


class CompactIndex:
    """Column vectors of one snapshot as int8 codes and float32 vectors (both may be memory-mapped), for exact union.

    Columns are stored grouped by table (tables by ascending id, as the ``UnionIndex`` stores them): table t owns
    rows ``col_offsets[t]:col_offsets[t + 1]`` of ``vectors`` (unit float32 rows), ``codes`` (int8) and ``ordinals``
    (``table_ids``, ``vectors`` and ``ordinals`` in memory or as :class:`~discovery.indexes.union.arrays.StoredRows`
    files). A query reads table ids only for the tables it returns or excludes: ties are ordered by table index, which
    is the order of the ids.
    ``steps`` and ``error`` are the per-dimension quantisation step and measured rounding error (:mod:`.quantised`);
    ``quantities`` the columns' quantity codes (:mod:`discovery.transforms.quantities`; None: every pair compatible),
    which a query passes to the exact scoring with its own columns' codes.
    """

    def __init__(self, table_ids: np.ndarray, col_offsets: np.ndarray, ordinals: np.ndarray, vectors: np.ndarray,
                 codes: np.ndarray, steps: np.ndarray, error: np.ndarray,
                 quantities: np.ndarray | None = None) -> None:
        self.table_ids = table_ids
        self.col_offsets = col_offsets
        self.ordinals = ordinals
        self.vectors = vectors
        self.codes = codes
        self.steps = steps
        self.error = error
        self.quantities = None if quantities is None else np.asarray(quantities)
        self.dim = int(vectors.shape[1])
        self._col_table: np.ndarray | None = None

    @classmethod
    def build(cls, column_vectors: np.ndarray, column_table_ids: np.ndarray, column_ordinals: np.ndarray,
              column_quantities: np.ndarray | None = None) -> CompactIndex:
        """An in-memory index of columns given in any order (a table's columns keep their relative order)."""
        order = np.argsort(np.asarray(column_table_ids, dtype=np.int64), kind="stable")
        vectors = unit_rows(np.asarray(column_vectors)[order])
        table_ids, counts = np.unique(np.asarray(column_table_ids, dtype=np.int64)[order], return_counts=True)
        steps = fit_steps(vectors)
        codes = np.empty(vectors.shape, dtype=np.int8)
        error = encode(vectors, steps, codes)
        return cls(table_ids, narrow_offsets(offsets_from_counts(counts)),
                   np.asarray(column_ordinals)[order].astype(np.int32),
                   vectors, codes, steps, error,
                   np.zeros(len(order), dtype=np.int16) if column_quantities is None
                   else np.asarray(column_quantities, dtype=np.int16)[order])

    @property
    def table_count(self) -> int:
        return len(self.table_ids)

    @property
    def nbytes(self) -> int:
        """Bytes the index holds: every array neither mapped nor read per query, and the codes and column offsets,
        which every bounded query reads whole (:class:`~discovery.indexes.union.arrays.StoredRows` hold no rows: a query
        reads the float32 rows of the tables it scores and the ids and ordinals of those it returns)."""
        arrays = (self.table_ids, self.col_offsets, self.ordinals, self.vectors, self.codes, self.steps, self.error,
                  self.quantities, self._col_table)
        whole = (self.codes, self.col_offsets)
        return sum(a.nbytes for a in arrays
                   if a is not None and (any(a is w for w in whole) or not isinstance(a, np.memmap)))

    def table_columns(self, table_id: int) -> tuple[np.ndarray, np.ndarray] | None:
        """A table's columns as the index holds them, by ordinal: its unit float32 rows (q, d) and quantity codes;
        None when the index has no such table.  A query that is this table, unchanged, gives the search these rows
        (``normalised``): the rows the index computed from the stored vectors, bit for bit what normalising the
        vectors the query would be encoded to gives."""
        pos = bisect_left(self.table_ids, table_id)
        if pos >= len(self.table_ids) or int(self.table_ids[pos]) != table_id:
            return None
        start, count = int(self.col_offsets[pos]), int(self.col_offsets[pos + 1] - self.col_offsets[pos])
        if isinstance(self.vectors, StoredRows):
            rows = self.vectors.take(np.array([start]), np.array([count]))
        else:
            rows = np.asarray(self.vectors[start:start + count])
        ordinals = np.asarray(self.ordinals[start:start + count]) if not isinstance(self.ordinals, StoredRows) \
            else self.ordinals.take(np.array([start]), np.array([count]))
        order = np.argsort(ordinals, kind="stable")
        codes = (np.zeros(count, dtype=np.int16) if self.quantities is None
                 else np.asarray(self.quantities[start:start + count]))
        return np.ascontiguousarray(rows[order], dtype=np.float32), codes[order]

    def search(self, query_column_vectors: np.ndarray, k: int = 10, method: str = "pgtus++", *, tau: float,
               exclude_table_id: int | None = None, query_quantities: np.ndarray | None = None,
               score: str = "sum", normalised: bool = False, bonus: np.ndarray | None = None) -> UnionSearch:
        """Top-``k`` tables unionable with a query given as its column vectors (q, d) and their quantity codes, by
        ``score`` (:mod:`.widths`) plus ``bonus``, a number >= 0 per table added to its score (the lexical term,
        :mod:`.lexical`); exact's answer for every method of :data:`COMPACT_METHODS`.  ``normalised``: the rows are
        already the index's unit rows (:meth:`table_columns`) and are used as they are."""
        if method not in COMPACT_METHODS:
            raise ValueError(f"the compact index answers {', '.join(COMPACT_METHODS)}, not {method!r}")
        query = np.asarray(query_column_vectors, dtype=np.float32)
        if query.ndim != 2 or query.shape[1] != self.dim or len(query) == 0:
            raise ValueError(f"query must be a non-empty (q, {self.dim}) array of column vectors")
        if k < 1:
            raise ValueError("k must be at least 1")
        if not tau > 0:
            raise ValueError("tau must be greater than 0")
        query = query if normalised else unit_rows(query)
        exclude = -1
        if exclude_table_id is not None:
            pos = bisect_left(self.table_ids, exclude_table_id)
            if pos < len(self.table_ids) and self.table_ids[pos] == exclude_table_id:
                exclude = pos
        scale = factors(score, len(query), np.diff(self.col_offsets))
        if method == "exact" or len(self.codes) < BOUND_PASS_MIN_COLUMNS:
            found = self._exact(query, k, tau, exclude, method, query_quantities, scale, bonus)
        else:
            found = self._bounded(query, k, tau, exclude, method, query_quantities, scale, bonus)
        return UnionSearch(found.results, found.stats, score_kind(score))

    def score(self, query_column_vectors: np.ndarray, table_ids: list[int], *, tau: float,
              query_quantities: np.ndarray | None = None, score: str = "sum",
              bonus: np.ndarray | None = None) -> list[UnionResult]:
        """``score`` (Definition 5 by default) and alignment of each of ``table_ids`` (ids the index lacks, and
        tables with no admissible pair and no ``bonus``, are left out), best first as a search ranks them: what a
        search would report for them, whether or not they would make its top k."""
        query = unit_rows(np.asarray(query_column_vectors, dtype=np.float32))
        pos = [bisect_left(self.table_ids, t) for t in table_ids]
        tix = np.array(sorted({p for p, t in zip(pos, table_ids) if p < len(self.table_ids)
                               and int(self.table_ids[p]) == t}), dtype=np.int64)
        if not tix.size:
            return []
        scale = factors(score, len(query), np.diff(self.col_offsets))
        return self._ranked([self._score(query, tix, tau, query_quantities)], len(tix), -1, scale, bonus)[0]

    def _exact(self, query: np.ndarray, k: int, tau: float, exclude: int, method: str,
               query_quantities: np.ndarray | None, scale: np.ndarray | None,
               bonus: np.ndarray | None) -> UnionSearch:
        if self._col_table is None:
            self._col_table = np.repeat(np.arange(len(self.table_ids), dtype=np.int32), np.diff(self.col_offsets))
        vectors = self.vectors.whole() if isinstance(self.vectors, StoredRows) else self.vectors
        found = exhaustive_scores(query, vectors, self._col_table, self.col_offsets, tau,
                                  *self._rule(query_quantities))
        scored = _Scored(np.arange(len(self.table_ids)), found, self.col_offsets)
        results, kept = self._ranked([scored], k, exclude, scale, bonus)
        stats = SearchStats(method, len(self.table_ids) - (exclude >= 0), kept, kept, found.solved,
                            exhaustive=method != "exact")
        return UnionSearch(results, stats, "unionability")

    def _bounded(self, query: np.ndarray, k: int, tau: float, exclude: int, method: str,
                 query_quantities: np.ndarray | None, scale: np.ndarray | None,
                 bonus: np.ndarray | None) -> UnionSearch:
        upper = table_upper_bounds(query, self.codes, self.steps, self.error, self.col_offsets, tau)
        if scale is not None:  # a positive factor per table: the bound of the weighted score (see .widths)
            upper = upper * scale
        if bonus is not None:  # a number per table added to its score, so to its bound (see .lexical)
            upper = upper + bonus
        if exclude >= 0:
            upper[exclude] = 0.0
        live = np.flatnonzero(upper > 0)
        live = live[np.lexsort((live, -upper[live]))]  # best bound first; live is ascending, so ties by table
        bounds = upper[live]
        batches: list[_Scored] = []
        best = np.zeros(0)  # exact scores > 0 found so far, descending, at most k
        done, size = 0, max(FIRST_BATCH, 4 * k)
        while done < len(live):
            theta = best[k - 1] if len(best) >= k else 0.0
            reach = int(np.searchsorted(-bounds, -theta, side="right")) if theta > 0 else len(live)
            if done >= reach:
                break
            stop = min(reach, done + size)
            batches.append(self._score(query, live[done:stop], tau, query_quantities))
            _, scores, _ = _batch_scores(batches[-1], scale, bonus)
            best = -np.sort(-np.concatenate([best, scores[scores > 0]]))[:k]
            done, size = stop, 2 * size
        results, kept = self._ranked(batches, k, exclude, scale, bonus)
        stats = SearchStats(method, len(live), kept, done, sum(b.found.solved for b in batches), len(self.table_ids))
        return UnionSearch(results, stats, "unionability")

    def _score(self, query: np.ndarray, tix: np.ndarray, tau: float, query_quantities: np.ndarray | None) -> _Scored:
        """Exact scores of the tables ``tix``, from their float32 columns gathered into one block."""
        starts, counts = self.col_offsets[tix], np.diff(self.col_offsets)[tix]
        rows = None
        if isinstance(self.vectors, StoredRows):
            columns = self.vectors.take(starts, counts)
        else:
            rows = expand_spans(starts, counts)[0]
            columns = self.vectors[rows]
        owner = np.repeat(np.arange(len(tix)), counts)
        offsets = offsets_from_counts(counts)
        q_codes, c_codes = self._rule(query_quantities)
        if c_codes is not None:
            c_codes = c_codes[expand_spans(starts, counts)[0] if rows is None else rows]
        found = exhaustive_scores(query, columns, owner, offsets, tau, q_codes, c_codes)
        return _Scored(tix, found, offsets)

    def _rule(self, query_quantities: np.ndarray | None) -> tuple[np.ndarray | None, np.ndarray | None]:
        """The query's quantity codes and the lake columns', or (None, None) when either side has none."""
        if query_quantities is None or self.quantities is None:
            return None, None
        return np.asarray(query_quantities, dtype=np.int16), self.quantities

    def _ranked(self, batches: list[_Scored], k: int, exclude: int, scale: np.ndarray | None,
                bonus: np.ndarray | None = None) -> tuple[list[UnionResult], int]:
        """The top-k of every scored table (score, weighted by ``scale`` and plus ``bonus`` per table, descending;
        table id ascending) with alignments, and how many tables scored above 0."""
        parts = [_batch_scores(b, scale, bonus) for b in batches]
        tix = np.concatenate([p[0] for p in parts]) if parts else np.zeros(0, np.int64)
        scores = np.concatenate([p[1] for p in parts]) if parts else np.zeros(0)
        where = np.concatenate([np.stack([np.full(len(p[2]), i), p[2]]) for i, p in enumerate(parts)], axis=1) \
            if parts else np.zeros((2, 0), np.int64)
        keep = (scores > 0) & (tix != exclude)
        top = np.flatnonzero(keep)[np.lexsort((tix[keep], -scores[keep]))][:k]
        ids = self._ids(tix[top])
        results = []
        for i, table_id in zip(top.tolist(), ids.tolist()):
            batch, found_at = batches[where[0, i]], int(where[1, i])
            pairs = () if found_at < 0 else batch.found.match(found_at, batch.col_offsets).pairs
            results.append(UnionResult(int(table_id), float(scores[i]), self._alignment(tix[i], pairs)))
        return results, int(keep.sum())

    def _ids(self, tix: np.ndarray) -> np.ndarray:
        """Table ids of the table indices ``tix``."""
        if isinstance(self.table_ids, StoredRows):
            return self.table_ids.take(tix, np.ones(len(tix), dtype=np.int64))
        return self.table_ids[tix]

    def _alignment(self, t: int, pairs: Alignment) -> Alignment:
        start, stop = int(self.col_offsets[t]), int(self.col_offsets[t + 1])
        if isinstance(self.ordinals, StoredRows):
            ords = self.ordinals.take(np.array([start]), np.array([stop - start]))
        else:
            ords = self.ordinals[start:stop]
        return tuple((q, int(ords[c]), s) for q, c, s in pairs)


def _batch_scores(batch: _Scored, scale: np.ndarray | None,
                  bonus: np.ndarray | None) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Table indices of a scored batch, their scores (Definition 5 times ``scale``, plus ``bonus``) and each one's
    position in the batch, which ``batch.found.match`` takes (-1: no admissible pair, nothing to match).  Without a
    bonus only the tables with an admissible pair are listed (the others score 0); with one, every table."""
    found = batch.found
    if bonus is None:
        tix, scores = batch.tix[found.tables], found.scores
        return tix, (scores * scale[tix] if scale is not None else scores), found.tables
    at = np.full(len(batch.tix), -1, dtype=np.int64)
    at[found.tables] = found.tables
    sums = np.zeros(len(batch.tix))
    sums[found.tables] = found.scores
    if scale is not None:
        sums = sums * scale[batch.tix]
    return batch.tix, sums + bonus[batch.tix], at
