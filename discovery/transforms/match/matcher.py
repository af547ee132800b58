"""Two columns' values matched as a careful person would: the writing side of a join, with its precision stated.

The join search finds *which* lake column joins a query column (PEXESO's exact top-k over the value index); once
the two columns are chosen, no index constrains how their values are paired, so the pairing uses what entity
matching does best without labels:

1. equal values join (``p`` 1, rule ``equal``);
2. the others are blocked (:mod:`.blocking`: each query value's nearest lake values by IDF-weighted words and
   3-grams) and every candidate pair measured six ways (:mod:`.measures`); a pair the consistency rule refuses
   (:mod:`.align`: ``Sven Berg`` ~ ``Ben Berg``, codes one digit apart) is no candidate;
3. which measures at which thresholds join is chosen for this column pair from the lake column's own values, for
   the precision target (:mod:`.autoconfig`, Auto-FuzzyJoin's principle), on a :func:`sample` of at most
   :data:`SAMPLE` query values; each query value joins its nearest lake value under the configuration that
   estimates it most precise;
4. when both columns write more around the entity, each in a column-wide shape (``John Adams; 1797 – 1801``
   against ``John Adams (Federalist)``), steps 1 to 3 run again on the part that names it (:mod:`.views`, the
   string programs of Auto-Join), and the answer with more estimated true positives is kept.

The lake column is a :class:`~.sides.LakeSide`: held here, or by a Spark job (:mod:`spark_jobs.match`), with the
same pairs.  Each pair carries its estimated precision (``score``) and the rule that matched it;
:attr:`Matches.precision` is the estimate for all of them, which the written table's description states beside the
target.  When both columns are keys (one row per value) the pairs are one-to-one (:func:`one_to_one`), which only
removes pairs; the estimate is the greedy union's, before that.  Values are the join keys of
:mod:`discovery.surfaces.materialize.keys` (normalised text), so the pairs key rows as the search's pairs do.
"""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np

from .autoconfig import apply as apply_configs, select
from .measures import MEASURES
from .programs import apply, learn
from .sides import Blocker, LakeSide, LocalLake
from .views import best, grouped

#: Candidates per query value from each blocking channel; lake neighbours are read twice as deep.
CANDIDATES = 10
#: Query values the configuration is chosen on (:func:`sample`); the rest are matched under it.
SAMPLE = 20_000


@dataclass(frozen=True)
class Matches:
    """Matched values (``query[i]`` ~ ``lake[i]`` at ``distance[i]`` under ``rule[i]``, estimated precision
    ``score[i]``); ``values`` the distinct query values; ``precision`` the estimate over all pairs (None when
    none); ``rules`` the configurations chosen; ``views`` the views both sides were matched on (:mod:`.views`),
    None for the whole values; ``programs`` the string programs that wrote the pairs (:func:`match_rows`), None
    when they were matched as values."""

    query: list[str]
    lake: list[str]
    distance: np.ndarray
    score: np.ndarray
    rule: list[str]
    values: int
    target: float
    precision: float | None
    rules: list[str] = field(default_factory=list)
    views: tuple[str, str] | None = None
    programs: list[str] | None = None

    def describe(self) -> dict:
        out = {"matcher": "auto", "precision_target": self.target,
               "estimated_precision": None if self.precision is None else round(self.precision, 4),
               "rules": ["equal"] + self.rules, "matched_values": len(self.query),
               "query_values": self.values}
        if self.views is not None:
            out["views"] = {"query": self.views[0], "lake": self.views[1]}
        if self.programs is not None:
            out["programs"] = self.programs
        return out


def _rows_sorted(rows: np.ndarray, values: np.ndarray, n: int) -> np.ndarray:
    """``(n, width)``: each row's ``values`` ascending, padded with inf."""
    order = np.lexsort((values, rows))
    rows, values = rows[order], values[order]
    counts = np.bincount(rows, minlength=n)
    out = np.full((n, max(int(counts.max(initial=0)), 1)), np.inf)
    out[rows, np.arange(rows.size) - np.repeat(np.cumsum(counts) - counts, counts)] = values
    return out


def _rule(measure: int, theta: float) -> str:
    return f"{MEASURES[measure]} <= {theta:.3f}"


def one_to_one(pairs: list[tuple]) -> list[tuple]:
    """``pairs`` (query value, lake value, distance, score, rule) with each lake value kept for its most probable
    query value (highest score, then least distance, then the first query value): when both columns are keys,
    two query rows are two entities and cannot both be one lake row's."""
    best: dict[str, tuple] = {}
    for p in pairs:
        held = best.get(p[1])
        if held is None or (-p[3], p[2], p[0]) < (-held[3], held[2], held[0]):
            best[p[1]] = p
    kept = set(map(id, best.values()))
    return [p for p in pairs if id(p) in kept]


def match_values(query, lake, target: float = 0.95, depth: int = CANDIDATES, keys: bool = False) -> Matches:
    """Each distinct ``query`` value with the ``lake`` value it names, if any, for the precision ``target``
    (module docstring); with ``keys`` (both columns hold one row per value) one-to-one (:func:`one_to_one`).
    Nulls and empty values are skipped.  ``lake`` is the lake column's values, or a :class:`LakeSide` held
    elsewhere (a Spark job's, :mod:`spark_jobs.match`), which gives the same pairs.

    When both columns write more around the entity in a column-wide shape (:mod:`.views`), the values are matched
    again on the views that make the most of them equal, and that answer is kept when its estimated true positives
    (the sum of the pairs' ``p``) exceed the whole values'; its rules name the views."""
    query = list(dict.fromkeys(v for v in query if v))
    lake = lake if isinstance(lake, LakeSide) else LocalLake([v for v in dict.fromkeys(lake) if v])
    pairs, precision, rules = _match(query, lake, target, depth)
    chosen = None
    views = best(query, lake)
    if views is not None:
        viewed = _on_views(query, lake, views, target, depth)
        if sum(p[3] for p in viewed[0]) > sum(p[3] for p in pairs):
            (pairs, precision, rules), chosen = viewed, views
    if keys:
        pairs = one_to_one(pairs)
    pairs.sort(key=lambda p: (p[2], p[0]))
    return Matches([p[0] for p in pairs], [p[1] for p in pairs], np.array([p[2] for p in pairs], np.float64),
                   np.array([p[3] for p in pairs], np.float64), [p[4] for p in pairs], len(query), target,
                   precision, rules, None if chosen is None else (chosen[0].describe(), chosen[1].describe()))


def match_rows(rows: list[tuple[str, ...]], row_keys: list[str], lake, names: list[str], target: float = 0.95,
               keys: bool = False) -> Matches:
    """Query rows of several text columns (``rows``, one tuple of normalised values per distinct row, ``row_keys``
    their join keys, ``names`` the columns) with the ``lake`` value each names, if any.

    The rows' values joined by spaces are matched as one value (:func:`match_values`: ``first`` and ``last``
    against a column of full names).  When string programs learned from the two columns (:mod:`.programs`:
    ``first`` and ``last`` against user names) reach ``target`` by their own estimate, they decide every row whose
    output the lake holds (joined, or left out when another row writes the same value), and the rows they do not
    decide keep the matched values' answer: a lake value written exactly by a program is stronger evidence than a
    similarity, and two people the program writes as one (``James Smith``, ``John Smith``: ``jsmith``) are told
    apart by no similarity either.  The pairs are keyed by ``row_keys``."""
    lake = list(dict.fromkeys(v for v in lake if v))
    text = [" ".join(r) for r in rows]
    whole = match_values(text, lake, target, keys=keys)
    by_text: dict[str, list[int]] = {}
    for r, t in enumerate(text):
        by_text.setdefault(t, []).append(r)
    at = {q: i for i, q in enumerate(whole.query)}
    fuzzy = [(r, at[t]) for t, rs in by_text.items() if t in at for r in rs]
    programs = learn(rows, lake)
    joins, decided, estimate = apply(programs, rows, lake)
    if estimate is None or estimate < target:
        pick = np.array([i for _, i in fuzzy], np.int64)
        return Matches([row_keys[r] for r, _ in fuzzy], [whole.lake[i] for i in pick.tolist()], whole.distance[pick],
                       whole.score[pick], [whole.rule[i] for i in pick.tolist()], len(rows), target,
                       whole.precision, whole.rules, whole.views)
    shown = [p.describe(names) for p in programs]
    taken = {v for _, v, _, _ in joins}
    pairs = [(row_keys[r], v, 0.0, p, f"program: {shown[k]}") for r, v, k, p in joins]
    pairs += [(row_keys[r], whole.lake[i], float(whole.distance[i]), float(whole.score[i]), whole.rule[i])
              for r, i in fuzzy if r not in decided and whole.lake[i] not in taken]
    pairs.sort(key=lambda p: (p[2], p[0]))
    score = np.array([p[3] for p in pairs], np.float64)
    return Matches([p[0] for p in pairs], [p[1] for p in pairs], np.array([p[2] for p in pairs], np.float64), score,
                   [p[4] for p in pairs], len(rows), target, float(score.mean()) if pairs else None,
                   [f"program: {p}" for p in shown] + (whole.rules if len(pairs) > len(joins) else []),
                   whole.views if len(pairs) > len(joins) else None, shown)


def _match(query: list[str], side: LakeSide, target: float, depth: int) -> tuple[list[tuple], float | None, list]:
    """``(pairs, estimated precision, rules)`` of distinct values: equal values, then the fuzzy matcher's."""
    at = side.holding(query)
    equal = sorted(v for v in query if v in at)
    rest = sorted(v for v in query if v not in at)
    pairs = [(v, v, 0.0, 1.0, "equal") for v in equal]
    precision, rules = (1.0 if equal else None), []
    if rest and side.size:
        found, precision, rules = _fuzzy(rest, side.blocker(rest), target, len(equal), depth)
        pairs += found
    return pairs, precision, rules


def sample(values: list[str], size: int = SAMPLE) -> np.ndarray:
    """Positions of the query values the configuration is chosen on: all of them up to ``size``, else the ``size``
    with the least hash of their text, in their order.  A hash, not a position, so the choice does not depend on
    how the values arrived; 20,000 values put the estimate's standard error near 0.0015 at precision 0.95, and the
    greedy union's cost grows with the values it reads."""
    if len(values) <= size:
        return np.arange(len(values))
    keys = np.fromiter((int.from_bytes(hashlib.blake2b(v.encode("utf-8"), digest_size=8).digest(), "big")
                        for v in values), np.uint64, len(values))
    return np.sort(np.argsort(keys, kind="stable")[:size])


def _on_views(query: list[str], lake: LakeSide, views: tuple, target: float, depth: int):
    """:func:`_match` on the views of both columns, its pairs mapped back to the values behind them; a pair landing
    on a view several lake values share is dropped (two entities the view cannot tell apart)."""
    q_keys, q_behind = grouped(query, views[0])
    keyed, behind = lake.viewed(views[1])
    found, precision, rules = _match(q_keys, keyed, target, depth)
    value_of = behind({lk for _, lk, *_ in found})
    where = f" on {views[0].describe()} ~ {views[1].describe()}"
    pairs = [(q, value_of[lk], d, s, rule + where) for qk, lk, d, s, rule in found if lk in value_of
             for q in q_behind[qk]]
    return pairs, precision, rules


def _nearest_per_measure(qi: np.ndarray, li: np.ndarray, d: np.ndarray, n: int):
    """Per query value and measure, the nearest candidate's distance (inf: none) and lake position (ties to the
    lower position), and each value's candidate distances per measure, ascending."""
    nf = d.shape[1]
    dist, lid = np.full((n, nf), np.inf), np.full((n, nf), -1)
    lr_sorted = []
    for k in range(nf):
        order = np.lexsort((li, d[:, k], qi))
        first = order[np.r_[True, qi[order][1:] != qi[order][:-1]]]
        first = first[np.isfinite(d[first, k])]
        dist[qi[first], k], lid[qi[first], k] = d[first, k], li[first]
        lr_sorted.append(_rows_sorted(qi, d[:, k], n))
    return dist, lid, lr_sorted


def _fuzzy(rest: list[str], blocker: Blocker, target: float, equal: int, depth: int):
    """The fuzzy pairs of the query values ``rest`` (sorted, none equal to a lake value): blocked candidates
    measured, the configuration chosen on a :func:`sample` of the values (all of them up to :data:`SAMPLE`) by
    the greedy union, then applied to every value."""
    qi, li, d = blocker.candidates(depth)
    if not qi.size:
        return [], (1.0 if equal else None), []
    n = len(rest)
    dist, lid, lr_sorted = _nearest_per_measure(qi, li, d, n)
    used = np.unique(lid[lid >= 0])
    if not used.size:
        return [], (1.0 if equal else None), []
    # the lake values a query value may join, with their own neighbours: how alike distinct entities look here
    a, ll = blocker.neighbours(used, 2 * depth)
    row_of = np.full(len(blocker.lake), -1)
    row_of[used] = np.arange(used.size)
    ll_sorted = [_rows_sorted(row_of[a], ll[:, k], used.size) for k in range(len(MEASURES))]
    lid_rows = np.where(lid >= 0, row_of[np.maximum(lid, 0)], 0)
    s = sample(rest)
    sel = select(dist[s], lid[s], lid_rows[s], [x[s] for x in lr_sorted], ll_sorted, target, equal * s.size / n)
    lake_at, score, config = apply_configs(sel.configs, dist, lid, lid_rows, lr_sorted, ll_sorted)
    found = []
    for r in np.flatnonzero(lake_at >= 0).tolist():
        measure, theta = sel.configs[config[r]]
        found.append((rest[r], blocker.lake[lake_at[r]], float(dist[r, measure]), float(score[r]),
                      _rule(measure, theta)))
    return found, sel.precision, [_rule(m, t) for m, t in sel.configs]
