"""Result shape of the numerical join, shared by PEXESO, PNODOM and the baselines.

Set similarity (PEXESO 003 Eq. 1-2): ``f_hit`` counts the query's objects with a match in X, ``f_all`` the matched
(query object, object of X) pairs.  Sets are taken as given (rows, duplicates included); a caller that wants distinct
values deduplicates before indexing and querying.  ``T`` is a fraction of the query's size |Q| (as in the semantic
join): a set is joinable when its score reaches ``ceil(T |Q|)`` (at least 1), for f_all too (on average T matched
lake objects per query object).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

SIMILARITIES = ("hit", "all")


@dataclass
class JoinableSet:
    """A result set.  ``pairs`` rows are (query row, row in the set, distance in the metric's units): one witness per
    query object found matching.  ``exact``: False when a threshold search stopped counting at T (the score is then a
    lower bound, still >= the threshold)."""

    set_id: int
    score: int
    exact: bool
    pairs: np.ndarray
    query_values: np.ndarray | None = None
    lake_values: np.ndarray | None = None


@dataclass
class NumericJoinResult:
    sets: list[JoinableSet]
    stats: dict = field(default_factory=dict)

    @property
    def set_ids(self) -> np.ndarray:
        return np.array([s.set_id for s in self.sets], dtype=np.int64)

    def scores(self) -> dict[int, int]:
        return {s.set_id: s.score for s in self.sets}


def check_similarity(similarity: str) -> bool:
    """True for f_hit."""
    if similarity not in SIMILARITIES:
        raise ValueError(f"unknown set similarity {similarity!r}; expected one of {SIMILARITIES}")
    return similarity == "hit"


def rank(scores: dict[int, int], need: int, k: int | None) -> list[int]:
    """Set ids with score >= need, best first (ties by set id), the first k for top-k."""
    ids = sorted((s for s, v in scores.items() if v >= need), key=lambda s: (-scores[s], s))
    return ids if k is None else ids[:k]


def resolve_unsure(metric, tau, hit, score, wit, uns, nq):
    """Decide the band's chords canonically; add the matches to the scores (in place) and to the witnesses."""
    w_set, w_q, w_x, w_ch = wit
    u_set, u_q, u_x, u_ch = uns
    if u_set.size == 0:
        return wit
    ok = metric.matches(u_ch, tau)
    u_set, u_q, u_x, u_ch = u_set[ok], u_q[ok], u_x[ok], u_ch[ok]
    key = u_set * nq + u_q
    witnessed = np.isin(key, w_set * nq + w_q)
    if hit:
        new_key, first = np.unique(key[~witnessed], return_index=True)
        np.add.at(score, new_key // nq, 1)
    else:
        np.add.at(score, u_set, 1)
        new_key, first = np.unique(key[~witnessed], return_index=True)
    sel = np.flatnonzero(~witnessed)[first]
    return (np.r_[w_set, u_set[sel]], np.r_[w_q, u_q[sel]], np.r_[w_x, u_x[sel]], np.r_[w_ch, u_ch[sel]])
