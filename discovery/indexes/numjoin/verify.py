"""Per-set verification: LBfilter (Algorithm 1) and PGfilter (Algorithm 2) with the set-level early exits.

Sets are read in the order Algorithm 3 gave (:func:`.dominating.greedy_order`), or by id for PNODOM.  Per set X:

1. Group level, per query group ``g_q`` and each candidate center ``c`` the MVP-tree left for it (Theorem 3): the
   group of X at ``c`` (binary search on X's sorted centers, the hash of §III-D); Lemma 3 drops it, Lemma 5 matches
   it whole.  Algorithm 1 (LBfilter, Theorem 1): with the group of X at ``g_q``'s own center, every query object and
   member within ``tau / 2`` of that center match (Alg. 1 line 6).  If the lower bound reaches the threshold, X is
   joinable and is not read further (Alg. 1 line 8); if the query objects with a surviving group cannot reach it,
   X is not joinable (Theorem 2).
2. Object level (Algorithm 2 line 17), per query object ``q`` of ``g_q`` and each surviving group: the triangle
   through ``q``'s own center bounds ``d(q, c)`` without computing it (``|d(g_q.C, c) - d(q, g_q.C)|`` below,
   the sum above), and so do the MVP-tree's pivots (Lemma 1: ``max_p |d(q, p) - d(c, p)|`` below), then Lemma 2 /
   Lemma 4 on ``d(q, c)``, then Lemma 1 on the group's sorted list
   (:func:`.lemmas.window`), Lemma 1 again with the MVP-tree's pivots (each member's pivot distances are stored), and
   a distance only for the members left.  f_hit stops a query object at
   its first match; f_all counts every match.  After each query object Theorem 2 is checked (the object's possible
   contribution replaced by its real one) and, for threshold search without exact scores, Theorem 1's accept.

Sharing (PEXESO): ``d(g_q.C, c)`` is computed once per query and ``d(q, c)`` once per (query object, center) and kept,
so every set with a group at ``c`` reuses them - the distance-level use of one set's groups for all sets that the
global centers and dominating relations make possible.  PNODOM (``share=False``) recomputes both per set, as a method
without dominating processes sets one by one.

Top-k: sets are only rejected, never accepted early; the threshold is the largest of T's count, the k-th largest
lower bound from the posting lists and the k-th largest score of a completed set, and rejection is strict
(``upper < threshold``), so a set that could tie with the k-th is read whole.

Chords within the band of a chord metric (:meth:`.metric.Metric.chord_band`) are "unsure": recorded, never counted
here, kept in the upper bound, and decided afterwards by the canonical decision (:mod:`.search`).

Why compiled: every step's next move depends on the previous one (first match of a query object, the set's running
bounds, the rising top-k threshold); numpy would have to compute every candidate pair before knowing which are
needed, which is what the early exits exist to avoid.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .lemmas import filter_key, lookup, match_key, window
from .metric import pair_chord

UNREAD, ACCEPTED, REJECTED, COMPLETE = 0, 1, 2, 3


@njit(cache=True)
def _grow(a, n):
    if n < a.size:
        return a
    b = np.empty(max(16, 2 * a.size), dtype=a.dtype)
    b[:a.size] = a
    return b


@njit(cache=True)
def _kth(best, k):
    """k-th largest of the completed scores (0 while fewer than k)."""
    if best.size < k:
        return 0
    return np.sort(best)[best.size - k]


@njit(cache=True)
def verify_sets(order, n_sets, need, top_k, thr0, exact, hit, share,
                set_start, gcenter, gradius, gstart, mdist, lake,
                qstart, qcenter, qradius, qdist, query, qhalf,
                cand_start, cand_center, cand_dgc, centers, q_piv, c_piv, m_piv,
                tau_f, tau_m, c_lo, c_hi, half):
    n_q_groups = qstart.size - 1
    nq = query.shape[0]
    status = np.zeros(n_sets, dtype=np.int8)
    score = np.zeros(n_sets, dtype=np.int64)
    hit_stamp = np.full(nq, -1, dtype=np.int64)
    wit_stamp = np.full(nq, -1, dtype=np.int64)
    # d(q, c) cache per (query object, candidate of its group)
    qoff = np.empty(nq, dtype=np.int64)
    base = 0
    for gq in range(n_q_groups):
        kq = cand_start[gq + 1] - cand_start[gq]
        for q in range(qstart[gq], qstart[gq + 1]):
            qoff[q] = base
            base += kq
    cache = np.full(base if share else 0, np.nan)
    n_cand = cand_center.size
    tk = np.empty(n_cand, dtype=np.int64)
    tg = np.empty(n_cand, dtype=np.int64)
    tdgc = np.empty(n_cand, dtype=np.float64)
    ta = np.empty(n_q_groups + 1, dtype=np.int64)
    poss = np.zeros(n_q_groups, dtype=np.int64)
    w_set = np.empty(16, np.int64)
    w_q = np.empty(16, np.int64)
    w_x = np.empty(16, np.int64)
    w_ch = np.empty(16, np.float64)
    nw = 0
    u_set = np.empty(16, np.int64)
    u_q = np.empty(16, np.int64)
    u_x = np.empty(16, np.int64)
    u_ch = np.empty(16, np.float64)
    nu = 0
    best = np.zeros(0, dtype=np.int64)
    n_center_d = 0
    n_object_d = 0
    accept_ok = top_k == 0 and not exact
    for X in order:
        thr = need
        if top_k > 0:
            thr = max(need, thr0, _kth(best, top_k))
        lo_g, hi_g = set_start[X], set_start[X + 1]
        sim = 0
        lb_extra = 0
        upper = 0
        nt = 0
        # ---- group level and LBfilter (Algorithm 1) ----
        for gq in range(n_q_groups):
            ta[gq] = nt
            size_q = qstart[gq + 1] - qstart[gq]
            whole = -1
            poss[gq] = 0
            for k in range(cand_start[gq], cand_start[gq + 1]):
                g = lookup(gcenter, lo_g, hi_g, cand_center[k])
                if g < 0:
                    continue
                if share:
                    dgc = cand_dgc[k]
                else:
                    dgc = pair_chord(centers, qcenter[gq], centers, cand_center[k])
                    n_center_d += 1
                if gradius[g] < filter_key(dgc, qradius[gq], tau_f):          # Lemma 3
                    continue
                gsize = gstart[g + 1] - gstart[g]
                if gradius[g] <= match_key(dgc, qradius[gq], tau_m):          # Lemma 5
                    if hit:
                        whole = g
                        break
                    sim += size_q * gsize
                    for q in range(qstart[gq], qstart[gq + 1]):
                        if wit_stamp[q] != X:
                            wit_stamp[q] = X
                            w_set, w_q, w_x, w_ch = (_grow(w_set, nw), _grow(w_q, nw), _grow(w_x, nw),
                                                     _grow(w_ch, nw))
                            w_set[nw], w_q[nw], w_x[nw], w_ch[nw] = X, q, gstart[g], np.nan
                            nw += 1
                    continue
                tk[nt], tg[nt], tdgc[nt] = k, g, dgc
                nt += 1
                poss[gq] += gsize
            if hit:
                if whole >= 0:
                    nt = ta[gq]
                    for q in range(qstart[gq], qstart[gq + 1]):
                        if hit_stamp[q] != X:
                            hit_stamp[q] = X
                            sim += 1
                            w_set, w_q, w_x, w_ch = _grow(w_set, nw), _grow(w_q, nw), _grow(w_x, nw), _grow(w_ch, nw)
                            w_set[nw], w_q[nw], w_x[nw], w_ch[nw] = X, q, gstart[whole], np.nan
                            nw += 1
                    continue
                n_half = 0
                g0 = lookup(gcenter, lo_g, hi_g, qcenter[gq])
                if g0 >= 0 and qhalf[gq] > 0 and mdist[gstart[g0]] <= half:
                    n_half = qhalf[gq]
                    for q in range(qstart[gq], qstart[gq] + n_half):
                        hit_stamp[q] = X
                        w_set, w_q, w_x, w_ch = _grow(w_set, nw), _grow(w_q, nw), _grow(w_x, nw), _grow(w_ch, nw)
                        w_set[nw], w_q[nw], w_x[nw], w_ch[nw] = X, q, gstart[g0], np.nan
                        nw += 1
                    sim += n_half
                if nt > ta[gq]:
                    upper += size_q - n_half
            else:
                upper += size_q * poss[gq]
                g0 = lookup(gcenter, lo_g, hi_g, qcenter[gq])
                if g0 >= 0 and qhalf[gq] > 0 and gradius[g0] > match_key(0.0, qradius[gq], tau_m):
                    a = gstart[g0]
                    n_x = 0
                    while a + n_x < gstart[g0 + 1] and mdist[a + n_x] <= half:
                        n_x += 1
                    lb_extra += qhalf[gq] * n_x
        ta[n_q_groups] = nt
        upper += sim
        if accept_ok and sim + lb_extra >= need:                                # Theorem 1
            status[X], score[X] = ACCEPTED, sim + lb_extra
            continue
        if upper < thr:                                                         # Theorem 2
            status[X], score[X] = REJECTED, sim
            continue
        # ---- object level (Algorithm 2 line 17) ----
        done = False
        for gq in range(n_q_groups):
            if ta[gq + 1] == ta[gq]:
                continue
            for q in range(qstart[gq], qstart[gq + 1]):
                if hit and hit_stamp[q] == X:
                    continue
                found = False
                unsure = 0
                cnt = 0
                for t in range(ta[gq], ta[gq + 1]):
                    g = tg[t]
                    R = gradius[g]
                    dgc = tdgc[t]
                    if R < filter_key(dgc - qdist[q], 0.0, tau_f):              # Lemma 2, d(q, c) bounded below
                        continue
                    a, b = gstart[g], gstart[g + 1]
                    if dgc + qdist[q] + R <= tau_m:                             # Lemma 4, d(q, c) bounded above
                        s_end, w_end = b, b
                    else:
                        c = cand_center[tk[t]]
                        lb = 0.0
                        for p in range(q_piv.shape[1]):
                            lb = max(lb, abs(q_piv[q, p] - c_piv[c, p]))
                        if R < filter_key(lb, 0.0, tau_f):                      # Lemma 2, pivot bound on d(q, c)
                            continue
                        if share:
                            ci = qoff[q] + tk[t] - cand_start[gq]
                            dqc = cache[ci]
                            if np.isnan(dqc):
                                dqc = pair_chord(query, q, centers, cand_center[tk[t]])
                                cache[ci] = dqc
                                n_center_d += 1
                        else:
                            dqc = pair_chord(query, q, centers, cand_center[tk[t]])
                            n_center_d += 1
                        if R < filter_key(dqc, 0.0, tau_f):                     # Lemma 2
                            continue
                        if R <= match_key(dqc, 0.0, tau_m):                     # Lemma 4
                            s_end, w_end = b, b
                        else:
                            a, s_end, w_end = window(mdist, a, b, dqc, tau_f, tau_m)   # Lemma 1
                    if s_end > a:
                        if wit_stamp[q] != X:
                            wit_stamp[q] = X
                            w_set, w_q, w_x, w_ch = _grow(w_set, nw), _grow(w_q, nw), _grow(w_x, nw), _grow(w_ch, nw)
                            w_set[nw], w_q[nw], w_x[nw], w_ch[nw] = X, q, a, np.nan
                            nw += 1
                        if hit:
                            found = True
                            break
                        cnt += s_end - a
                    for x in range(s_end, w_end):
                        lb = 0.0
                        for p in range(q_piv.shape[1]):
                            lb = max(lb, abs(q_piv[q, p] - m_piv[x, p]))
                        if lb > tau_f:                                          # Lemma 1 on the pivots
                            continue
                        ch = pair_chord(lake, x, query, q)
                        n_object_d += 1
                        if ch <= c_lo:
                            if wit_stamp[q] != X:
                                wit_stamp[q] = X
                                w_set, w_q, w_x, w_ch = (_grow(w_set, nw), _grow(w_q, nw), _grow(w_x, nw),
                                                         _grow(w_ch, nw))
                                w_set[nw], w_q[nw], w_x[nw], w_ch[nw] = X, q, x, ch
                                nw += 1
                            if hit:
                                found = True
                                break
                            cnt += 1
                        elif ch <= c_hi:
                            u_set, u_q, u_x, u_ch = _grow(u_set, nu), _grow(u_q, nu), _grow(u_x, nu), _grow(u_ch, nu)
                            u_set[nu], u_q[nu], u_x[nu], u_ch[nu] = X, q, x, ch
                            nu += 1
                            unsure += 1
                    if found:
                        break
                if hit:
                    if found:
                        hit_stamp[q] = X
                        sim += 1
                    elif unsure == 0:
                        upper -= 1
                else:
                    sim += cnt
                    upper += cnt + unsure - poss[gq]
                if accept_ok and sim >= need:
                    status[X], score[X] = ACCEPTED, sim
                    done = True
                    break
                if upper < thr:
                    status[X], score[X] = REJECTED, sim
                    done = True
                    break
            if done:
                break
        if not done:
            status[X], score[X] = COMPLETE, sim
            if top_k > 0:
                best = np.append(best, sim)
    return (status, score, w_set[:nw], w_q[:nw], w_x[:nw], w_ch[:nw], u_set[:nu], u_q[:nu], u_x[:nu], u_ch[:nu],
            n_center_d, n_object_d)
