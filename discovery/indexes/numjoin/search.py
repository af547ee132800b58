"""The full search, Algorithm 4 of PEXESO 003: threshold search and top-k, f_hit and f_all, PEXESO and PNODOM.

Per query:

1. The query set is split into groups at the index's global centers (Definition 4), each object to the nearest of a
   few centers its pivot distances point to (:func:`_group_query`); the group centers' pivot distances are the
   MVP-tree's stored entry distances.
2. Theorem 3 on the MVP-tree gives (query group, center) candidates; the centers' distance ``d(g_q.C, c)`` is
   computed once per candidate and Lemma 3 with the largest radius at ``c`` drops the rest.
3. PEXESO: the posting lists split every candidate center's groups in all sets at once (Lemmas 6-7), giving every
   set an upper and a lower bound (:func:`.dominating.set_bounds`); sets whose upper bound misses the threshold are
   dropped (Theorems 2 and 5), and the rest are ordered by the greedy dominating cover (Algorithm 3).  PNODOM skips
   this step and reads every set, by id.
4. :func:`.verify.verify_sets` runs Algorithms 1 and 2 per set with the set-level exits.
5. Chords in a chord metric's boundary band are decided by the canonical decision; witnesses proved by a lemma get
   their distance computed for the evidence (counted apart, as ``evidence`` distances).

``allowed`` (a bool per set) leaves out the sets the query may not pair with (their quantities differ,
:mod:`discovery.transforms.quantities`): they get bounds of 0 and are never verified, as if they held no value.

Top-k follows §II-B: a k-size buffer of exact scores whose smallest value is the running threshold (seeded with the
k-th largest lower bound), answers ranked by score, ties by set id.  T and k can be combined (the k best among the
sets reaching T); with neither, the call is refused.

Distance computations are counted by kind: ``grouping`` (query objects to the pivots and to their few candidate
centers), ``center``
(between query group centers and candidate centers, and query objects to candidate centers), ``object`` (query
object to lake object), ``evidence``.
"""
from __future__ import annotations

import time

import numpy as np

from ..join.tally import required_matches
from .dominating import greedy_order, posting_splits, set_bounds
from .groups import build_groups
from .lemmas import filter_key, match_key
from .metric import chord_pairwise, chord_rows, max_norm, raw_rows, slack
from .results import JoinableSet, NumericJoinResult, check_similarity, rank, resolve_unsure
from .verify import ACCEPTED, COMPLETE, UNREAD, verify_sets

METHODS = ("pexeso", "pnodom")
#: Centers (smallest pivot bounds first) a query object's own center is chosen among.
ASSIGN_CANDIDATES = 8


def search(ix, query_values, tau: float, T: float | None = None, k: int | None = None, similarity: str = "hit",
           method: str = "pexeso", exact_scores: bool = False, greedy_share: float = 0.08,
           allowed: np.ndarray | None = None) -> NumericJoinResult:
    """Search ``ix`` (a :class:`~.index.NumericIndex`); see :meth:`~.index.NumericIndex.search`."""
    t0 = time.perf_counter()
    hit = check_similarity(similarity)
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; expected one of {METHODS}")
    if T is None and k is None:
        raise ValueError("give a threshold T (a fraction of the query's size) or k for top-k")
    if k is not None and int(k) < 1:
        raise ValueError(f"k must be at least 1, got {k}")
    metric = ix.metric
    qv = metric.prepare(query_values)
    if qv.shape[0] and qv.shape[1] != ix.dim:
        raise ValueError(f"query vectors have dimension {qv.shape[1]}, the index has {ix.dim}")
    c_lo, c_hi = metric.chord_band(tau)
    nq = qv.shape[0]
    need = required_matches(T, nq) if T is not None else 1
    stats = {"method": method, "query_size": nq, "need": need,
             "distances": {"grouping": 0, "center": 0, "object": 0, "evidence": 0}}
    if nq == 0 or ix.groups.n_groups == 0:
        stats["seconds"] = time.perf_counter() - t0
        return NumericJoinResult([], stats)
    norm = max(ix.max_norm, max_norm(qv))
    s = slack(ix.dim, norm)
    # tau beyond every distance (c_lo = inf): a finite stand-in larger than any sum of three chords keeps the
    # lemmas' arithmetic finite
    big = 8.0 * norm + 1.0
    tau_f, tau_m = min(c_hi + s, big), min(c_lo - s, big)
    half = tau_m / 2.0
    centers = ix.centers
    qg, q_piv = _group_query(ix, qv, stats)
    q_size = qg.size
    q_half = np.array([np.searchsorted(qg.member_dist[a:b], half, side="right")
                       for a, b in zip(qg.start[:-1], qg.start[1:])], dtype=np.int64)
    # Theorem 3 on the MVP-tree, then Lemma 3 against the largest radius at each candidate center.
    cand_g, cand_c = ix.tree.candidates(ix.tree.entry_piv[qg.center], tau_f + qg.radius, ix.center_reach,
                                        ix.node_reach)
    dgc = chord_rows(centers[qg.center[cand_g]], centers[cand_c])
    stats["distances"]["center"] += int(cand_g.size)
    keep = ~(ix.center_reach[cand_c] < filter_key(dgc, qg.radius[cand_g], tau_f))
    cand_g, cand_c, dgc = cand_g[keep], cand_c[keep], dgc[keep]
    cand_start = np.searchsorted(cand_g, np.arange(qg.n_groups + 1)).astype(np.int64)
    stats["candidate_pairs"] = int(cand_g.size)
    thr0 = 0
    if method == "pexeso":
        n_filt, n_match = posting_splits(ix.inverted, cand_c, filter_key(dgc, qg.radius[cand_g], tau_f),
                                         match_key(dgc, qg.radius[cand_g], tau_m))
        upper, lower = set_bounds(ix.inverted, ix.groups, ix.n_sets, cand_g, cand_c, n_filt, n_match, q_size,
                                  qg.center, q_half, half, hit)
        if allowed is not None:  # a set the query may not pair with scores 0: bounded so, never read
            upper, lower = np.where(allowed, upper, 0), np.where(allowed, lower, 0)
        if k is not None and ix.n_sets >= k:
            thr0 = int(np.partition(lower, ix.n_sets - k)[ix.n_sets - k])
        alive = upper >= max(need, thr0)
        order = greedy_order(ix.inverted, cand_c, alive, greedy_share)
        stats["sets_pruned_by_bounds"] = int((~alive & (upper > 0)).sum())
    else:
        order = np.flatnonzero(np.diff(ix.groups.set_start) > 0).astype(np.int64)
        if allowed is not None:
            order = order[allowed[order]]
    g = ix.groups
    out = verify_sets(order, ix.n_sets, need, 0 if k is None else int(k), thr0, bool(exact_scores), hit,
                      method == "pexeso", g.set_start, g.center, g.radius, g.start, g.member_dist, g.vectors,
                      qg.start, qg.center, qg.radius, qg.member_dist, qg.vectors, q_half, cand_start, cand_c, dgc,
                      centers, q_piv, ix.tree.entry_piv, ix.member_piv, tau_f, tau_m, c_lo, c_hi, half)
    status, score, w_set, w_q, w_x, w_ch, u_set, u_q, u_x, u_ch, n_center, n_object = out
    stats["distances"]["center"] += int(n_center)
    stats["distances"]["object"] += int(n_object)
    score = score.copy()
    w_set, w_q, w_x, w_ch = resolve_unsure(metric, tau, hit, score, (w_set, w_q, w_x, w_ch), (u_set, u_q, u_x, u_ch),
                                            nq)
    stats["sets_read"] = int((status != UNREAD).sum())
    stats["unsure_pairs"] = int(u_set.size)
    if k is None:
        passing = np.flatnonzero((status == ACCEPTED) | ((status == COMPLETE) & (score >= need)))
        ids = rank({int(i): int(score[i]) for i in passing}, 0, None)
    else:
        ids = rank({int(i): int(score[i]) for i in np.flatnonzero(status == COMPLETE)}, need, int(k))
    raw_q = raw_rows(query_values, nq)
    sets = _evidence(ix, qg, raw_q, ids, score, status, (w_set, w_q, w_x, w_ch), stats)
    stats["seconds"] = time.perf_counter() - t0
    return NumericJoinResult(sets, stats)


def _group_query(ix, qv, stats):
    """Groups of the query set (Definition 4) and its objects' pivot distances, in group member order.

    Any assignment of objects to centers gives valid groups (:mod:`.groups`), so the query need not pay a distance to
    every global center: its objects' distances to the MVP-tree's pivots (which every later Lemma 2 check reuses as a
    free lower bound of ``d(q, c)``) bound the distance to every center from below, and each object joins the
    nearest of the :data:`ASSIGN_CANDIDATES` centers with the smallest bounds.
    """
    nq = qv.shape[0]
    q_piv = chord_pairwise(qv, ix.tree.pivots)
    m = min(ASSIGN_CANDIDATES, ix.centers.shape[0])
    lb = ix.tree.lower_bounds(q_piv)
    near = np.argpartition(lb, m - 1, axis=1)[:, :m] if m < lb.shape[1] else np.tile(np.arange(m), (nq, 1))
    d = chord_rows(np.repeat(qv, m, axis=0), ix.centers[near.reshape(-1)]).reshape(nq, m)
    assignment = near[np.arange(nq), np.argmin(d, axis=1)]
    stats["distances"]["grouping"] = int(q_piv.size + d.size)
    qg = build_groups(qv, np.zeros(nq, dtype=np.int64), 1, ix.centers, assignment)
    return qg, np.ascontiguousarray(q_piv[qg.member_row])


def _evidence(ix, qg, raw_q, ids, score, status, wit, stats):
    """One witness pair per matched query object of each result set, with its distance in the metric's units."""
    w_set, w_q, w_x, w_ch = wit
    want = np.isin(w_set, np.asarray(ids, dtype=np.int64))
    w_set, w_q, w_x, w_ch = w_set[want], w_q[want], w_x[want], w_ch[want].copy()
    todo = np.flatnonzero(np.isnan(w_ch))
    if todo.size:
        w_ch[todo] = chord_rows(ix.groups.vectors[w_x[todo]], qg.vectors[w_q[todo]])
        stats["distances"]["evidence"] += int(todo.size)
    dist = ix.metric.to_units(w_ch)
    order = np.lexsort((w_q, w_set))
    w_set, w_q, w_x, dist = w_set[order], w_q[order], w_x[order], dist[order]
    bounds = np.searchsorted(w_set, np.asarray(ids, dtype=np.int64)), np.searchsorted(w_set, np.asarray(ids) + 1)
    out = []
    for sid, a, b in zip(ids, *bounds):
        q_rows = qg.member_row[w_q[a:b]]
        x_rows = ix.groups.member_row[w_x[a:b]]
        pairs = np.column_stack([q_rows.astype(np.float64), x_rows.astype(np.float64), dist[a:b]])
        out.append(JoinableSet(int(sid), int(score[sid]), bool(status[sid] == COMPLETE), pairs,
                               raw_q[q_rows], ix.values[w_x[a:b]]))
    return out
