"""Dominating relations (PEXESO 003 §IV, Definitions 5-6, Lemmas 6-7, Theorems 4-5) and next-set selection (Alg. 3).

The inverted index has one posting list per global center: the groups of every set at that center, sorted by radius
(Fig. 4).  Groups at one center dominate each other by radius (Definition 5), so for a query group and a center:

* Lemma 3 filters exactly the groups with ``R < key`` (:func:`.lemmas.filter_key`): a prefix of the posting list,
  found by one binary search, and by Lemma 6 everything before the first unfiltered group is filtered too;
* Lemma 5 matches exactly the groups with ``R <= key'`` (:func:`.lemmas.match_key`): again a prefix (Lemma 7).

:func:`posting_splits` takes these two binary searches for every (query group, candidate center) pair left by the
MVP-tree (Theorem 3), which decides the group-level question for that pair in every set at once, with one
distance computation (the two centers) instead of one per set.

Set-level dominating.  :func:`set_bounds` turns the splits into per-set bounds without touching any object:

* upper bound (Theorem 2 with the ``U`` of Lemma-filtered query objects, propagated across sets as Theorem 5 does):
  a query group none of whose candidate groups in X survives Lemma 3 contributes nothing; f_hit's bound is the sum
  of the sizes of the other query groups, f_all's the sum of |g_q| |g_x| over the surviving pairs.  Sets whose bound
  is below the threshold are dropped before Algorithm 4 reads them.  Theorem 5 reaches the same sets through one
  processed set X1 (every group of X2 dominated by one of X1); the posting lists give each set its own bound
  directly, which prunes every set Theorem 5 would and those no processed set happens to dominate.
* lower bound (Lemma 7 plus Algorithm 1's half-tau test): groups matched whole, and the query objects within
  ``tau / 2`` of a center shared with a group having a member within ``tau / 2``.  Theorem 4 carries a joinable
  verdict to sets that dominate X with tau (Definition 6: at least as many members within ``tau / 2``); computing
  Algorithm 1's bound for every set from the posting lists (no distance computation) decides each of them without
  the detour.  Top-k starts its threshold at the k-th largest lower bound (the k-size buffer of §II-B).

Algorithm 3 (:func:`greedy_order`): posting lists sorted by radius put the most dominating groups first; each step
counts the set ids among the first ``k`` unchecked entries of every posting list of the query's candidate centers and
takes the most frequent (ties: lowest id).  The paper's ``k`` is a percentage (8%); we read it as a share of each
posting list's length (at least one entry), the one reading defined for lists of any length.  Windows and counts are
kept incrementally, so the whole order costs one pass over the lists plus an argmax per step.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numba import njit

from .groups import Groups


@dataclass
class InvertedIndex:
    """Posting list of center c: groups ``group[start[c]:start[c + 1]]``, ascending radius (then set id)."""

    start: np.ndarray    # (C + 1,)
    group: np.ndarray    # (G,)
    radius: np.ndarray   # (G,) radius of group[i]
    set_of: np.ndarray   # (G,) set of group[i]

    @classmethod
    def build(cls, groups: Groups, n_centers: int) -> InvertedIndex:
        order = np.lexsort((groups.set_of, groups.radius, groups.center))
        start = np.searchsorted(groups.center[order], np.arange(n_centers + 1)).astype(np.int64)
        return cls(start, order.astype(np.int64), groups.radius[order], groups.set_of[order])

    def center_reach(self) -> np.ndarray:
        """Per center, the largest radius of a group at it; -inf for a center no set uses."""
        n = self.start.size - 1
        out = np.full(n, -np.inf)
        nonempty = self.start[1:] > self.start[:-1]
        out[nonempty] = self.radius[self.start[1:][nonempty] - 1]
        return out


@njit(cache=True)
def _splits(radius, start, cand_c, fkey, mkey):
    n_filt = np.empty(cand_c.size, dtype=np.int64)
    n_match = np.empty(cand_c.size, dtype=np.int64)
    for k in range(cand_c.size):
        lo, hi = start[cand_c[k]], start[cand_c[k] + 1]
        a, b = lo, hi
        while a < b:                       # first radius >= fkey
            mid = (a + b) >> 1
            if radius[mid] < fkey[k]:
                a = mid + 1
            else:
                b = mid
        n_filt[k] = a - lo
        a, b = lo, hi
        while a < b:                       # first radius > mkey
            mid = (a + b) >> 1
            if radius[mid] <= mkey[k]:
                a = mid + 1
            else:
                b = mid
        n_match[k] = a - lo
    return n_filt, n_match


def posting_splits(inv: InvertedIndex, cand_c, fkey, mkey):
    """Per candidate pair: how many leading groups of the posting list Lemma 3/6 filter and Lemma 5/7 match."""
    return _splits(inv.radius, inv.start, np.asarray(cand_c, np.int64), np.asarray(fkey, np.float64),
                   np.asarray(mkey, np.float64))


def _expand(start, lo, hi):
    """Positions ``start + lo[i] .. start + hi[i]`` for every i, flattened, with their i."""
    counts = np.maximum(hi - lo, 0)
    owner = np.repeat(np.arange(lo.size), counts)
    pos = np.repeat(start + lo - np.r_[0, np.cumsum(counts)[:-1]], counts) + np.arange(counts.sum())
    return pos, owner


def set_bounds(inv: InvertedIndex, groups: Groups, n_sets: int, cand_g, cand_c, n_filt, n_match, q_size,
               q_center, q_half, half: float, hit: bool):
    """Per-set upper and lower bounds of f from the posting lists alone (see the module docstring)."""
    cand_g = np.asarray(cand_g, np.int64)
    ps = inv.start[cand_c]
    plen = inv.start[np.asarray(cand_c) + 1] - ps
    n_q = q_size.size
    pos, owner = _expand(ps, n_filt, plen)
    s, gq, g = inv.set_of[pos], cand_g[owner], inv.group[pos]
    gsize = groups.size
    if hit:
        key = np.unique(s * n_q + gq)
        upper = np.bincount(key // n_q, weights=q_size[key % n_q], minlength=n_sets)
    else:
        upper = np.bincount(s, weights=q_size[gq] * gsize[g], minlength=n_sets)
    pos, owner = _expand(ps, np.zeros_like(n_match), n_match)
    ws, wq, wg = inv.set_of[pos], cand_g[owner], inv.group[pos]
    # Algorithm 1's half-tau part: groups at the query group's own center with a member within tau / 2.
    hs_parts: list[np.ndarray] = []
    hq_parts: list[np.ndarray] = []
    hv_parts: list[np.ndarray] = []
    for j in np.flatnonzero(q_half > 0):
        c = q_center[j]
        post = inv.group[inv.start[c]:inv.start[c + 1]]
        if post.size == 0:
            continue
        first = groups.member_dist[groups.start[post]]
        post = post[first <= half]
        if post.size:
            hs_parts.append(groups.set_of[post])
            hq_parts.append(np.full(post.size, j))
            hv_parts.append(q_half[j] * (np.ones(post.size, np.int64) if hit else groups.count_within(post, half)))
    hs = np.concatenate(hs_parts) if hs_parts else np.zeros(0, np.int64)
    hq = np.concatenate(hq_parts) if hq_parts else np.zeros(0, np.int64)
    hv = np.concatenate(hv_parts) if hv_parts else np.zeros(0, np.int64)
    if hit:
        wkey = np.unique(ws * n_q + wq)
        lower = np.bincount(wkey // n_q, weights=q_size[wkey % n_q], minlength=n_sets).astype(np.float64)
        hkey = hs * n_q + hq
        keep = ~np.isin(hkey, wkey)
        lower += np.bincount(hs[keep], weights=hv[keep], minlength=n_sets)
    else:
        lower = np.bincount(ws, weights=q_size[wq] * gsize[wg], minlength=n_sets).astype(np.float64)
        whole = np.isin(hs * n_q + hq, ws * n_q + wq)   # a pair matched whole is counted once, above
        lower += np.bincount(hs[~whole], weights=hv[~whole], minlength=n_sets)
    return upper.round().astype(np.int64), lower.round().astype(np.int64)


@njit(cache=True)
def _greedy(list_start, list_set, k_of, alive, n_sets):
    n_lists = list_start.size - 1
    done = ~alive
    counts = np.zeros(n_sets, dtype=np.int64)
    wend = list_start[:-1].copy()
    # occurrences of each set: (list, position)
    occ_n = np.zeros(n_sets + 1, dtype=np.int64)
    for i in range(list_set.size):
        occ_n[list_set[i] + 1] += 1
    for s in range(n_sets):
        occ_n[s + 1] += occ_n[s]
    fill = occ_n[:-1].copy()
    occ_list = np.empty(list_set.size, dtype=np.int64)
    occ_pos = np.empty(list_set.size, dtype=np.int64)
    for li in range(n_lists):
        for p in range(list_start[li], list_start[li + 1]):
            s = list_set[p]
            occ_list[fill[s]] = li
            occ_pos[fill[s]] = p
            fill[s] += 1
    in_window = np.zeros(n_lists, dtype=np.int64)
    for li in range(n_lists):
        p = list_start[li]
        while p < list_start[li + 1] and in_window[li] < k_of[li]:
            if not done[list_set[p]]:
                counts[list_set[p]] += 1
                in_window[li] += 1
            p += 1
        wend[li] = p
    candidates = 0
    for s in range(n_sets):
        if not done[s] and occ_n[s + 1] > occ_n[s]:
            candidates += 1
    order = np.empty(candidates, dtype=np.int64)
    for step in range(candidates):
        best, best_count = -1, -1
        for s in range(n_sets):
            if not done[s] and occ_n[s + 1] > occ_n[s] and counts[s] > best_count:
                best, best_count = s, counts[s]
        order[step] = best
        done[best] = True
        for o in range(occ_n[best], occ_n[best + 1]):
            li, p = occ_list[o], occ_pos[o]
            if p < wend[li]:               # it was in the window: slide the window by one unchecked entry
                q = wend[li]
                while q < list_start[li + 1] and done[list_set[q]]:
                    q += 1
                if q < list_start[li + 1]:
                    counts[list_set[q]] += 1
                    q += 1
                wend[li] = q
    return order


def greedy_order(inv: InvertedIndex, centers, alive: np.ndarray, share: float = 0.08) -> np.ndarray:
    """Algorithm 3 applied until every alive set on the posting lists of ``centers`` is ordered."""
    centers = np.unique(np.asarray(centers, np.int64))
    lo, hi = inv.start[centers], inv.start[centers + 1]
    pos, owner = _expand(lo, np.zeros_like(lo), hi - lo)
    sets = inv.set_of[pos]
    keep = alive[sets]
    sets, owner = sets[keep], owner[keep]
    list_start = np.searchsorted(owner, np.arange(centers.size + 1)).astype(np.int64)
    k_of = np.maximum(1, np.ceil(share * np.diff(list_start))).astype(np.int64)
    return _greedy(list_start, sets.astype(np.int64), k_of, np.asarray(alive, dtype=np.bool_), int(alive.size))
