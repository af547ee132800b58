"""The in-memory join index and joinable column search (PEXESO Alg. 3, threshold and top-k).

Definitions (PEXESO Def. 1-2, §V): value vectors are L2-normalised; q matches x iff d(q, x) <= tau, with tau a
fraction of the maximum distance; the joinability of a lake column S is the fraction of the query column's vectors
having a match in S.  Threshold search returns every column whose joinability is >= T; top-k search (PEXESO's top-k
joinable column search) returns the k columns of highest joinability among those with any match, and takes no T.
Query vectors are taken as the query column's distinct values (one vector per distinct value), so |Q| is the number
of rows of ``query_vectors``; or, with ``value_ids``, a value is given as several vectors (its whole cell and its
segments, :mod:`discovery.transforms.segments`): it matches S when any of its vectors matches a vector of S, and |Q|
counts values.  Lake values are stored the same way, each segment vector one more row of its column, so column counting
needs no change there.  Blocking and the lemmas run per vector as before; verification keys are (column, query
value), a key's postings are the candidate runs of all its vectors, and the key ends at its first match: the answer is
brute force over the same vectors, as ``tests/test_join_segments.py`` checks on random segmentations.  The result
columns' witnesses are then taken as the nearest pairs (:meth:`JoinIndex._nearest`), the same for every method.

Exactness with stored mappings.  The lake's pivot distances may be given in float32 (as ``pivot_mappings`` stores
them); the index keeps exactly those numbers (widened to float64 without change), builds its cell boxes from them,
and every lemma is widened by :func:`.metric.mapping_slack` for the storage type the mappings came in, so the
lemmas' decisions hold for the true distances.

Methods: ``pexeso`` (blocking + inverted-index verification), ``pexeso-h`` (the same blocking, naive verification),
``exact`` (blocked BLAS brute force).  All three return identical columns and joinabilities.  With
``exact_joinability=False`` a threshold search stops counting a column once it is joinable (the papers' early
accept), so the joinabilities reported for result columns are lower bounds (still >= T) and the column set is
unchanged; top-k always counts exactly.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field
from types import SimpleNamespace

import numpy as np

from .baselines import verify_exact, verify_pexeso_h
from .blocking import block
from .grid import CellHierarchy, GridSpec
from .metric import (MatchPredicate, canonical_squared_at, check_metric, chord_threshold, from_chord, mapping_slack,
                     prepare_vectors, squared_norms, to_chord)
from .pivots import map_to_pivots
from .tally import TopK, required_matches
from .verification import verify_pexeso

METHODS = ("pexeso", "pexeso-h", "exact")


@dataclass
class JoinableColumn:
    """A result column: ``pairs`` rows are (query vector index, lake vector index, distance), one per matched query
    vector (its witness: the column's nearest vector, ties by the lower index), indices into the caller's arrays,
    distance in the metric's units."""

    column_id: int
    matches: int
    joinability: float
    pairs: np.ndarray


@dataclass
class JoinResult:
    columns: list[JoinableColumn]
    stats: dict = field(default_factory=dict)

    @property
    def column_ids(self) -> np.ndarray:
        return np.array([c.column_id for c in self.columns], dtype=np.int64)

    def joinabilities(self) -> dict[int, int]:
        """column id -> number of matched query vectors."""
        return {c.column_id: c.matches for c in self.columns}


class JoinIndex:
    """Lake value vectors sorted by (leaf cell, column), their hierarchical grid HG_SV and inverted index.

    The inverted index is implicit in the sort: the vectors of one column inside one leaf cell are a contiguous run,
    the runs of a leaf cell are its postings list (in column order, for document-at-a-time access), and every cell of
    every level is a contiguous range of runs.
    """

    def __init__(self, vectors, column_ids, mapped, pivots, grid: GridSpec, metric: str, cells=None, order=None):
        """``order``: given when the rows already come sorted by (leaf cell, column), as :meth:`from_mapped` reads
        them; it numbers each row as the caller does (``self.order``), and no sorted copy is made."""
        check_metric(metric)
        x = prepare_vectors(vectors, metric)
        column_ids = np.asarray(column_ids, dtype=np.int64).reshape(-1)
        mapped = np.asarray(mapped)
        if x.shape[0] == 0:
            raise ValueError("a join index needs at least one vector")
        if column_ids.size != x.shape[0] or mapped.shape[0] != x.shape[0]:
            raise ValueError("vectors, column_ids and mapped must have the same number of rows")
        if mapped.shape[1] != grid.n_pivots or np.asarray(pivots).shape[0] != grid.n_pivots:
            raise ValueError("pivots, mapped vectors and grid disagree on the number of pivots")
        self.metric = metric
        self.grid = grid
        self.pivots = prepare_vectors(pivots, metric)
        # The precision the mappings were given in (float32 as stored in Delta) bounds their rounding error.
        self.storage_eps = float(np.finfo(mapped.dtype if mapped.dtype.kind == "f" else np.float64).eps)
        self.mapped_max = float(np.abs(mapped).max())
        cells = grid.leaf_cells(mapped) if cells is None else np.asarray(cells, dtype=np.int64)
        self.column_values, col = np.unique(column_ids, return_inverse=True)
        if order is None:
            order = np.lexsort((col, cells))
            x, mapped, col, cells = x[order], mapped[order], col[order], cells[order]
        elif np.any((cells[1:] < cells[:-1]) | ((cells[1:] == cells[:-1]) & (col[1:] < col[:-1]))):
            raise ValueError("rows given with their order must be sorted by (leaf cell, column)")
        self.order = np.asarray(order, dtype=np.int64)
        self.vectors = np.ascontiguousarray(x)
        self.sq_norms = squared_norms(self.vectors)
        self.mapped = np.ascontiguousarray(to_chord(mapped, metric), dtype=np.float64)
        self.col = col.astype(np.int64)
        boundary = np.r_[True, (cells[1:] != cells[:-1]) | (self.col[1:] != self.col[:-1])]
        run_heads = np.flatnonzero(boundary)
        self.run_start = np.r_[run_heads, x.shape[0]].astype(np.int64)
        self.run_col = self.col[run_heads]
        self.hierarchy = CellHierarchy(cells, self.mapped, grid.n_pivots, grid.levels)
        self.leaf_start = self.hierarchy.start[grid.levels]
        self.leaf_run_start = np.searchsorted(self.run_start, self.leaf_start).astype(np.int64)

    # construction ---------------------------------------------------------------------------------------------
    @classmethod
    def build(cls, vectors, column_ids, pivots, levels: int = 4, metric: str = "euclidean",
              grid: GridSpec | None = None) -> JoinIndex:
        """Map the vectors to the pivots, fit the grid extent to them (unless given) and index them."""
        mapped = map_to_pivots(vectors, pivots, metric)
        grid = grid if grid is not None else GridSpec.fit(mapped, levels)
        return cls(vectors, column_ids, mapped, pivots, grid, metric)

    @classmethod
    def from_mapped(cls, vectors, column_ids, mapped, pivots, grid: GridSpec, metric: str = "euclidean",
                    cells=None, order=None) -> JoinIndex:
        """Index precomputed pivot mappings (and leaf cells) as read from ``pivot_mappings``; with ``order``, rows
        already sorted by (leaf cell, column) (see ``__init__``).

        Pass the mappings in the type they are stored in (float32): the lemmas' slack follows that precision.
        """
        return cls(vectors, column_ids, mapped, pivots, grid, metric, cells, order)

    @property
    def n_columns(self) -> int:
        return int(self.column_values.size)

    @property
    def nbytes(self) -> int:
        return int(sum(a.nbytes for a in (self.vectors, self.sq_norms, self.mapped, self.col, self.order,
                                          self.run_start, self.run_col, self.leaf_run_start))
                   + self.hierarchy.nbytes)

    # search ---------------------------------------------------------------------------------------------------
    def _query(self, query_vectors, value_ids=None):
        """The query sorted by leaf cell.  ``n`` counts the query's *values* (the keys of match counting) and ``value``
        names the value of each sorted vector; ``orig`` maps a value back to the caller's numbering.  Without
        ``value_ids`` every vector is a value of its own, numbered by its sorted position."""
        q = prepare_vectors(query_vectors, self.metric)
        if q.shape[0] == 0:
            raise ValueError("the query column has no vectors")
        if q.shape[1] != self.vectors.shape[1]:
            raise ValueError(f"query vectors have dimension {q.shape[1]}, the index has {self.vectors.shape[1]}")
        mapped = map_to_pivots(q, self.pivots, self.metric)
        cells = self.grid.leaf_cells(mapped)
        order = np.argsort(cells, kind="stable")
        vectors = np.ascontiguousarray(q[order])
        chord = to_chord(mapped[order], self.metric)
        slack = mapping_slack(self.storage_eps, max(self.mapped_max, float(np.abs(mapped).max())), q.shape[1])
        if value_ids is None:
            n, value, orig = q.shape[0], np.arange(q.shape[0], dtype=np.int64), order
        else:
            value_ids = np.asarray(value_ids, dtype=np.int64).reshape(-1)
            if value_ids.size != q.shape[0]:
                raise ValueError("value_ids must name the value of every query vector")
            orig, value = np.unique(value_ids[order], return_inverse=True)  # values numbered 0..n-1, keys of counting
            n, value = orig.size, value.astype(np.int64)
        return SimpleNamespace(n=n, n_vectors=q.shape[0], value=value, vectors=vectors, sq_norms=squared_norms(vectors),
                               mapped=np.ascontiguousarray(chord, dtype=np.float64), orig=orig, cells=cells[order],
                               slack=slack)

    def search(self, query_vectors, tau: float = 0.06, T: float = 0.6, method: str = "pexeso",
               top_k: int | None = None, exact_joinability: bool = True, min_matches: int = 1,
               value_ids=None, slack: int = 0, pool: int | None = None) -> JoinResult:
        """Joinable columns for the query column, ranked by joinability (ties by column id).

        ``tau``: distance threshold as a fraction of the maximum distance.  Threshold search (``top_k`` None): every
        column with joinability >= ``T`` (a fraction of |Q|).  Top-k search: the ``top_k`` columns of highest
        joinability among those with a match; ``T`` is not applied; with ``slack`` (matches) also every column whose
        count lies within ``slack`` of the k-th, at most ``pool`` columns in all (:class:`.tally.TopK`).
        ``min_matches``: a floor on the match count (used to carry a top-k threshold across partitions).
        ``value_ids``: the query value of each query vector, when a value is given as several vectors (its segments,
        :mod:`discovery.transforms.segments`): a value matches a column when any of its vectors does, and joinability
        counts values (|Q| is the number of distinct ids); result pairs then name query values by these ids.
        """
        if method not in METHODS:
            raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
        if top_k is not None and top_k < 1:
            raise ValueError("top_k must be >= 1")
        top = None if top_k is None else TopK(top_k, slack, pool)
        query = self._query(query_vectors, value_ids)
        need = max(required_matches(T if top_k is None else 0.0, query.n), int(min_matches))
        tau_c = chord_threshold(tau, self.metric)
        max_sq = float(max(self.sq_norms.max(), query.sq_norms.max()))
        pred = MatchPredicate(tau_c, self.vectors.shape[1], max_sq)
        stop = not exact_joinability
        stats = {"method": method, "query_vectors": query.n_vectors, "query_values": query.n, "required_matches": need,
                 "lake_vectors": int(self.vectors.shape[0]), "lake_columns": self.n_columns}
        if method == "exact":
            verified = verify_exact(self, query, need, top, stop, pred)
        else:
            qh = CellHierarchy(query.cells, query.mapped, self.grid.n_pivots, self.grid.levels)
            blocked = block(qh, query.mapped, self.hierarchy, tau_c, query.slack)
            stats.update(blocked.stats)
            stats["candidate_vectors"] = int((self.leaf_start[blocked.cand_leaf + 1]
                                              - self.leaf_start[blocked.cand_leaf]).sum())
            stats["candidate_runs"] = int((self.leaf_run_start[blocked.cand_leaf + 1]
                                           - self.leaf_run_start[blocked.cand_leaf]).sum())
            verify = verify_pexeso if method == "pexeso" else verify_pexeso_h
            verified = verify(self, query, blocked, need, top, stop, pred)
        stats.update(verified.stats)
        return JoinResult(self._results(query, verified, need, top, pred, stats), stats)

    def _nearest(self, query, pred: MatchPredicate, cols: np.ndarray, keys: np.ndarray, stats: dict,
                 block_cells: int = 1 << 22) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The canonical witness of each key (``column * |Q| + query value``, sorted): the lake vector of the column
        nearest to any of the value's vectors, ties by the lower caller row; returns (keys, sorted lake positions,
        squared chords), position -1 (chord inf) for a key with no vector within tau.

        Verification stops a key at the first match it finds, and which one that is depends on the method and on the
        index's layout.  The witness names the lake value a matched query value links to: the evidence shown, and the
        rows the context score reads.  Taking the nearest makes both a function of the lake and the query alone, so
        every method and every build of one lake report the same pairs and the same context order.  It costs one
        float32 product of each result column's vectors with its matched values' vectors (the same fast path and
        re-check band as :class:`~.metric.MatchPredicate`, then the canonical distance of the pairs that can be
        nearest), for the result columns only.
        """
        started = time.perf_counter()
        nq = query.n
        out_x, out_sq = np.full(keys.size, -1, np.int64), np.full(keys.size, np.inf)
        rows = np.flatnonzero(np.isin(self.col, cols))
        rows = rows[np.argsort(self.col[rows], kind="stable")]
        lake_at = np.searchsorted(self.col[rows], np.stack([cols, cols + 1]))
        key_at = np.searchsorted(keys // nq, np.stack([cols, cols + 1]))
        computed = 0
        for la, lb, ka, kb in zip(*lake_at, *key_at):
            values = keys[ka:kb] % nq
            qpos = np.flatnonzero(np.isin(query.value, values))
            qpos = qpos[np.argsort(query.value[qpos], kind="stable")]           # grouped by value, as ``values``
            q_first = np.searchsorted(query.value[qpos], values)
            of_value = np.repeat(np.arange(values.size), np.diff(np.r_[q_first, qpos.size]))
            qv, qsq = query.vectors[qpos], query.sq_norms[qpos]
            r = rows[la:lb]
            if not (r.size and qpos.size):
                continue
            # The nearest pair's canonical value lies within the band of its fast one, so the pairs that can be
            # nearest are those within two bands of the value's least fast value (and within one of tau).  Blocks
            # keep every pair under the limit known so far (the least only falls), and the final limit picks.
            least = np.full(values.size, np.inf)
            found_r, found_q, found_fast = [], [], []
            step = max(1, block_cells // max(qpos.size, 1))
            for s in range(0, r.size, step):
                b = r[s:s + step]
                fast = self.sq_norms[b][:, None] + qsq[None, :] - 2.0 * (self.vectors[b] @ qv.T)
                least = np.minimum(least, np.minimum.reduceat(fast.min(axis=0), q_first))
                limit = np.minimum(least + 2.0 * pred.band, pred.tau_sq + pred.band)
                ri, qi = np.nonzero(fast <= limit[of_value][None, :])
                found_r.append(s + ri)
                found_q.append(qi)
                found_fast.append(fast[ri, qi])
            ri, qi, fast = np.concatenate(found_r), np.concatenate(found_q), np.concatenate(found_fast)
            limit = np.minimum(least + 2.0 * pred.band, pred.tau_sq + pred.band)
            keep = fast <= limit[of_value[qi]]
            ri, qi = ri[keep], qi[keep]
            sq = canonical_squared_at(self.vectors, r[ri], query.vectors, qpos[qi])
            computed += sq.size
            ok = sq <= pred.tau_sq
            ri, qi, sq = ri[ok], qi[ok], sq[ok]
            if not ri.size:                          # no value of the column lies within tau of any query value
                continue
            best = np.lexsort((qpos[qi], self.order[r[ri]], sq, of_value[qi]))
            first = best[np.r_[True, np.diff(of_value[qi][best]) != 0]]
            at = ka + of_value[qi[first]]
            out_x[at], out_sq[at] = r[ri[first]], sq[first]
        stats.update(witness_distances=computed, witness_seconds=time.perf_counter() - started)
        return keys, out_x, out_sq

    def witnesses(self, query_vectors, column_id: int, tau: float, value_ids=None) -> np.ndarray:
        """The pairs a search reports for lake column ``column_id``, for every query value: rows (query value, caller
        row, distance), one per value with a vector within ``tau`` of the column's, its nearest (:meth:`_nearest`,
        over the column's vectors).

        A search finds which values match and names each one's nearest; here the column is given, so every value is
        resolved against it directly and the pairs are those of any search that returns the column, whatever it
        found of the others: the whole value mapping of one join result.
        """
        query = self._query(query_vectors, value_ids)
        c = int(np.searchsorted(self.column_values, column_id))
        if c >= self.column_values.size or self.column_values[c] != column_id:
            return np.zeros((0, 3))
        max_sq = float(max(self.sq_norms.max(), query.sq_norms.max()))
        pred = MatchPredicate(chord_threshold(tau, self.metric), self.vectors.shape[1], max_sq)
        keys, x, sq = self._nearest(query, pred, np.array([c]), c * query.n + np.arange(query.n, dtype=np.int64), {})
        found = x >= 0
        dist = from_chord(np.sqrt(np.maximum(sq[found], 0.0)), self.metric)
        pairs = np.column_stack([query.orig[keys[found] % query.n], self.order[x[found]], dist])
        return pairs[np.argsort(pairs[:, 0], kind="stable")]

    def _results(self, query, verified, need: int, top: TopK | None, pred: MatchPredicate,
                 stats) -> list[JoinableColumn]:
        matched = verified.matched
        ok = matched >= need
        if top is not None:
            ok &= verified.exact
        cols = np.flatnonzero(ok)
        cols = cols[np.lexsort((self.column_values[cols], -matched[cols]))]
        if top is not None:
            cols = cols[:top.cut(matched[cols])]
        nq = query.n
        wk = verified.matched_keys[np.isin(verified.matched_keys // nq, cols)]
        wk, wx, wsq = self._nearest(query, pred, cols, np.sort(wk), stats)
        dist = from_chord(np.sqrt(np.maximum(wsq, 0.0)), self.metric)
        bounds = np.searchsorted(wk // nq, np.stack([cols, cols + 1]))
        out = []
        for c, a, b in zip(cols, bounds[0], bounds[1]):
            sel = slice(a, b)
            pairs = np.column_stack([query.orig[wk[sel] % nq], self.order[wx[sel]], dist[sel]])
            pairs = pairs[np.argsort(pairs[:, 0], kind="stable")]
            m = int(matched[c])
            out.append(JoinableColumn(int(self.column_values[c]), m, m / nq, pairs))
        return out
