"""Baselines of PEXESO 003 §V-A, each returning the brute-force answer: brute force, a KD-tree per set (the paper's
RTREE), and a pivot table without groups (the paper's EPT).  PNODOM is :meth:`.index.NumericIndex.search` with
``method="pnodom"``.

All decide a pair with the canonical decision of :mod:`.metric` and share PEXESO's set-level rules, so the
comparison measures the indexes, not the bookkeeping: sets are read one by one, a threshold search without exact
scores stops a set once its score reaches T, and a set is dropped once the query objects left cannot reach the
threshold (top-k: the k-th best completed score, strict).  Each reports its distance computations; the KD-tree's
are the candidate pairs it returns (scipy does not expose the distances computed inside the tree).

* :func:`brute_force`: every pair, canonical chords (the reference of the tests); its ``object`` distances are
  |Q| times the lake's objects.
* :class:`BruteForce`: every pair through BLAS, with the pairs whose BLAS value lies within its proven error of the
  band re-decided canonically: the same answer at benchmark scale.
* :class:`KDTreeSearch`: ``scipy.spatial.cKDTree`` per set on the prepared vectors (chords are Euclidean there),
  ball queries of radius ``c_hi`` plus slack, in chunks of query objects between the set-level checks.
* :class:`PivotTableSearch`: |P| pivots (HF, 7 as §V-B) and every lake object's distances to them; Lemma 1 per
  (query object, lake object), pivot matching (``d(q, p) + d(x, p) <= tau``), a distance for the rest (compiled:
  the scan stops at a query object's first match under f_hit, a data-dependent exit).
"""
from __future__ import annotations

import time
from collections.abc import Callable

import numpy as np
from numba import njit

from ..join.tally import required_matches
from .metric import chord_pairwise, chord_rows, get_metric, max_norm, pair_chord, raw_rows, slack
from .mvptree import hf_pivots
from .results import JoinableSet, NumericJoinResult, check_similarity, rank, resolve_unsure

#: Query objects per KD-tree ball query between two set-level checks.
KD_CHUNK = 256


def _result(metric, sets_raw, q_raw, scores, exact, wit, need, k, stats):
    """Assemble results from per-set scores and witness arrays (set, query row, set row, chord)."""
    w_set, w_q, w_x, w_ch = wit
    if k is None:
        ids = rank({s: int(scores[s]) for s in range(len(scores))}, need, None)
    else:
        ids = rank({s: int(scores[s]) for s in range(len(scores)) if exact[s] == 1}, need, k)
    order = np.lexsort((w_q, w_set))
    w_set, w_q, w_x, w_ch = w_set[order], w_q[order], w_x[order], w_ch[order]
    out = []
    for sid in ids:
        a, b = np.searchsorted(w_set, sid), np.searchsorted(w_set, sid + 1)
        pairs = np.column_stack([w_q[a:b].astype(np.float64), w_x[a:b].astype(np.float64),
                                 metric.to_units(w_ch[a:b])])
        out.append(JoinableSet(int(sid), int(scores[sid]), bool(exact[sid] == 1), pairs, q_raw[w_q[a:b]],
                               sets_raw[sid][w_x[a:b]]))
    return NumericJoinResult(out, stats)


class _Baseline:
    name = "baseline"
    #: The method's own pass over the prepared sets (each subclass's), filling ``scores``, ``exact`` and ``stats``
    #: and returning the witnesses.
    _run: Callable[..., list[np.ndarray]]

    def __init__(self, sets, metric="euclidean"):
        self.metric = get_metric(metric)
        self.prepared = [self.metric.prepare(s) for s in sets]
        self.raw = [raw_rows(s, p.shape[0]) for s, p in zip(sets, self.prepared)]
        self.max_norm = max_norm(*self.prepared)

    def search(self, query, tau, T=None, k=None, similarity="hit", exact_scores=False) -> NumericJoinResult:
        t0 = time.perf_counter()
        hit = check_similarity(similarity)
        if T is None and k is None:
            raise ValueError("give a threshold T (a fraction of the query's size) or k for top-k")
        qv = self.metric.prepare(query)
        nq = qv.shape[0]
        need = required_matches(T, nq) if T is not None else 1
        c_lo, c_hi = self.metric.chord_band(tau)
        s = slack(qv.shape[1] if nq else 1, max(self.max_norm, max_norm(qv)))
        stats = {"method": self.name, "query_size": nq, "need": need, "distances": {"object": 0, "pivot": 0}}
        n = len(self.prepared)
        scores = np.zeros(n, dtype=np.int64)
        exact = np.full(n, 2, dtype=np.int8)    # 0 accepted early (score a lower bound), 1 complete, 2 rejected
        wit = [np.zeros(0, np.int64)] * 3 + [np.zeros(0)]
        if nq:
            wit = self._run(qv, tau, c_lo, c_hi, s, hit, need, 0 if k is None else int(k), bool(exact_scores),
                            scores, exact, stats)
        rejected = exact == 2
        res = _result(self.metric, self.raw, raw_rows(query, nq), np.where(rejected, 0, scores),
                      np.where(rejected, 1, exact), wit, need, k, stats)
        stats["seconds"] = time.perf_counter() - t0
        return res


def _set_checks(sim, upper, need, thr, accept_ok):
    if accept_ok and sim >= need:
        return 0
    if upper < thr:
        return 2
    return -1


class BruteForce(_Baseline):
    """Every pair, BLAS for speed, canonical chords wherever BLAS's error could change a decision."""

    name = "brute"

    def _run(self, qv, tau, c_lo, c_hi, s, hit, need, top_k, exact_scores, scores, exact, stats):
        q_sq = np.einsum("ij,ij->i", qv, qv)
        out = [], [], [], []
        for sid, x in enumerate(self.prepared):
            if x.shape[0] == 0:
                exact[sid] = 1
                continue
            sq = q_sq[:, None] + np.einsum("ij,ij->i", x, x)[None, :] - 2.0 * (qv @ x.T)
            band = 8.0 * (qv.shape[1] + 16) * 1.2e-16 * (q_sq.max() + np.einsum("ij,ij->i", x, x).max()
                                                         + (c_hi if np.isfinite(c_hi) else 4.0) ** 2) + 1e-300
            stats["distances"]["object"] += sq.size
            lo2 = c_lo * c_lo - band if np.isfinite(c_lo) else np.inf
            hi2 = c_hi * c_hi + band if np.isfinite(c_hi) else np.inf
            match = sq < lo2
            qi, xi = np.nonzero((sq >= lo2) & (sq <= hi2))
            if qi.size:
                ch = chord_rows(qv[qi], x[xi])
                match[qi, xi] = self.metric.matches(ch, tau)
            scores[sid] = match.any(axis=1).sum() if hit else match.sum()
            exact[sid] = 1
            qi, xi = np.nonzero(match)
            qs, first = np.unique(qi, return_index=True)
            out[0].append(np.full(qs.size, sid))
            out[1].append(qs)
            out[2].append(xi[first])
            out[3].append(chord_rows(qv[qs], x[xi[first]]))
        return tuple(np.concatenate(a) if a else np.zeros(0) for a in out)


def brute_force(sets, query, tau, metric="euclidean", T=None, k=None, similarity="hit") -> NumericJoinResult:
    """The reference answer: canonical chords of every pair, the canonical decision, exact scores."""
    m = get_metric(metric)
    hit = check_similarity(similarity)
    qv = m.prepare(query)
    nq = qv.shape[0]
    need = required_matches(T, nq) if T is not None else 1
    scores, wit = {}, []
    computed = 0
    for sid, s in enumerate(sets):
        x = m.prepare(s)
        if nq == 0 or x.shape[0] == 0:
            scores[sid] = 0
            continue
        ch = chord_pairwise(qv, x)
        computed += ch.size
        match = m.matches(ch, tau)
        scores[sid] = int(match.any(axis=1).sum() if hit else match.sum())
        for q in np.flatnonzero(match.any(axis=1)):
            xi = int(np.flatnonzero(match[q])[0])
            wit.append((sid, q, xi, ch[q, xi]))
    ids = rank(scores, need, k)
    out = []
    raw = [raw_rows(s, m.prepare(s).shape[0]) for s in sets]
    q_raw = raw_rows(query, nq)
    for sid in ids:
        w = [r for r in wit if r[0] == sid]
        pairs = np.array([[q, x, float(m.to_units(c))] for _, q, x, c in w]).reshape(-1, 3)
        out.append(JoinableSet(sid, scores[sid], True, pairs, q_raw[pairs[:, 0].astype(int)],
                               raw[sid][pairs[:, 1].astype(int)]))
    return NumericJoinResult(out, {"method": "brute-force", "need": need, "distances": {"object": int(computed)}})


class KDTreeSearch(_Baseline):
    name = "kdtree"

    def __init__(self, sets, metric="euclidean", leafsize: int = 16):
        from scipy.spatial import cKDTree  # here: importing scipy.spatial costs a cold join query about 0.3 s

        super().__init__(sets, metric)
        self.trees = [cKDTree(x, leafsize=leafsize) if x.shape[0] else None for x in self.prepared]

    def _run(self, qv, tau, c_lo, c_hi, s, hit, need, top_k, exact_scores, scores, exact, stats):
        nq = qv.shape[0]
        accept_ok = top_k == 0 and not exact_scores
        best: list[int] = []
        out = [], [], [], []
        radius = c_hi + s
        for sid, tree in enumerate(self.trees):
            thr = max(need, sorted(best)[-top_k]) if top_k and len(best) >= top_k else need
            exact[sid] = 2
            if tree is None:
                continue
            x = self.prepared[sid]
            sim, upper = 0, nq if hit else nq * x.shape[0]
            verdict = -1
            for a in range(0, nq, KD_CHUNK):
                chunk = qv[a:a + KD_CHUNK]
                lists = tree.query_ball_point(chunk, r=radius if np.isfinite(radius) else np.inf)
                counts = np.fromiter((len(near) for near in lists), dtype=np.int64, count=len(lists))
                qi = np.repeat(np.arange(a, a + chunk.shape[0]), counts)
                xi = np.fromiter((i for near in lists for i in near), dtype=np.int64, count=int(counts.sum()))
                ch = chord_rows(qv[qi], x[xi])
                stats["distances"]["object"] += int(qi.size)
                ok = self.metric.matches(ch, tau)
                qi, xi, ch = qi[ok], xi[ok], ch[ok]
                if qi.size:
                    order = np.lexsort((xi, qi))
                    qi, xi, ch = qi[order], xi[order], ch[order]
                    qs, first = np.unique(qi, return_index=True)
                    for arr, v in zip(out, (np.full(qs.size, sid), qs, xi[first], ch[first])):
                        arr.append(v)
                got = np.unique(qi).size if hit else qi.size
                sim += got
                upper -= (chunk.shape[0] - got) if hit else chunk.shape[0] * x.shape[0] - got
                verdict = _set_checks(sim, upper, need, thr, accept_ok)
                if verdict >= 0:
                    break
            scores[sid] = sim
            exact[sid] = 1 if verdict < 0 else verdict
            if verdict < 0 and top_k:
                best.append(sim)
        return tuple(np.concatenate(a) if a else np.zeros(0, np.int64) for a in out)


@njit(cache=True)
def _pivot_scan(qv, qp, x, xp, sid, tau_f, tau_m, c_lo, c_hi, hit, need, thr, accept_ok, wit, n_w, uns, n_u):
    """One set: returns (score, verdict, distances, n_w, n_u); verdict -1 complete, 0 accepted, 2 rejected."""
    nq, nx, n_p = qv.shape[0], x.shape[0], qp.shape[1]
    sim = 0
    upper = nq if hit else nq * nx
    dist = 0
    for q in range(nq):
        cnt = 0
        unsure = 0
        for i in range(nx):
            lb = 0.0
            ub = np.inf
            for p in range(n_p):
                lb = max(lb, abs(qp[q, p] - xp[i, p]))
                ub = min(ub, qp[q, p] + xp[i, p])
            if lb > tau_f:
                continue
            if ub <= tau_m:
                ch = np.nan
            else:
                ch = pair_chord(x, i, qv, q)
                dist += 1
                if ch > c_lo:
                    if ch <= c_hi:
                        if n_u >= uns.shape[0]:
                            return sim, 9, dist, n_w, n_u
                        uns[n_u, 0], uns[n_u, 1], uns[n_u, 2] = sid, q, i
                        uns[n_u, 3] = ch
                        n_u += 1
                        unsure += 1
                    continue
            if cnt == 0:
                wit[n_w, 0], wit[n_w, 1], wit[n_w, 2], wit[n_w, 3] = sid, q, i, ch
                n_w += 1
            cnt += 1
            if hit:
                break
        if hit:
            if cnt:
                sim += 1
            elif unsure == 0:
                upper -= 1
        else:
            sim += cnt
            upper += cnt + unsure - nx
        if accept_ok and sim >= need:
            return sim, 0, dist, n_w, n_u
        if upper < thr:
            return sim, 2, dist, n_w, n_u
    return sim, -1, dist, n_w, n_u


class PivotTableSearch(_Baseline):
    name = "pivot-table"

    def __init__(self, sets, metric="euclidean", n_pivots: int = 7, seed: int = 0):
        super().__init__(sets, metric)
        allx = np.concatenate([p for p in self.prepared if p.shape[0]])
        sample = allx[np.random.default_rng(seed).choice(allx.shape[0], min(allx.shape[0], 5000), replace=False)]
        self.pivots = np.ascontiguousarray(sample[hf_pivots(sample, n_pivots, seed)])
        self.tables = [chord_pairwise(x, self.pivots) for x in self.prepared]

    def _run(self, qv, tau, c_lo, c_hi, s, hit, need, top_k, exact_scores, scores, exact, stats):
        qp = chord_pairwise(qv, self.pivots)
        stats["distances"]["pivot"] += qp.size
        accept_ok = top_k == 0 and not exact_scores
        best: list[int] = []
        wit_all, uns_all = [], []
        for sid, (x, xp) in enumerate(zip(self.prepared, self.tables)):
            thr = max(need, sorted(best)[-top_k]) if top_k and len(best) >= top_k else need
            wit = np.empty((qv.shape[0], 4))
            cap = 64
            while True:
                uns = np.empty((cap, 4))
                sim, verdict, dist, n_w, n_u = _pivot_scan(qv, qp, x, xp, sid, c_hi + s, c_lo - s, c_lo, c_hi, hit,
                                                           need, thr, accept_ok, wit, 0, uns, 0)
                stats["distances"]["object"] += int(dist)
                if verdict != 9:        # 9: the unsure buffer filled up; read the set again with a larger one
                    break
                cap *= 8
            scores[sid] = sim
            exact[sid] = 1 if verdict < 0 else verdict
            wit_all.append(wit[:n_w])
            uns_all.append(uns[:n_u])
            if verdict < 0 and top_k:
                best.append(sim)
        w = np.concatenate(wit_all) if wit_all else np.zeros((0, 4))
        u = np.concatenate(uns_all) if uns_all else np.zeros((0, 4))
        wit = (w[:, 0].astype(np.int64), w[:, 1].astype(np.int64), w[:, 2].astype(np.int64), w[:, 3].copy())
        uns = (u[:, 0].astype(np.int64), u[:, 1].astype(np.int64), u[:, 2].astype(np.int64), u[:, 3].copy())
        wit = resolve_unsure(self.metric, tau, hit, scores, wit, uns, qv.shape[0])
        nan = np.flatnonzero(np.isnan(wit[3]))
        if nan.size:
            ch = wit[3].copy()
            ch[nan] = [pair_chord(self.prepared[s_], x_, qv, q_) for s_, q_, x_ in
                       zip(wit[0][nan], wit[1][nan], wit[2][nan])]
            wit = (wit[0], wit[1], wit[2], ch)
        return wit


BASELINES = {"brute": BruteForce, "kdtree": KDTreeSearch, "pivot-table": PivotTableSearch}
