"""Where the lake column a matcher pairs values with is held, and what the matcher asks of it.

The matcher (:mod:`.matcher`) needs from the whole lake column: which query values it holds, its views
(:mod:`.views`), and for the other query values their blocked candidates with their distances and the neighbours of
the lake values those name (:mod:`.blocking`, :mod:`.measures`).  A :class:`LakeSide` answers that; here for a
column held in this process (:class:`LocalLake`), in :mod:`spark_jobs.match` for one a Spark job holds.  Both give
positions in the sorted order of the lake values they name, the order every tie is broken in.
"""
from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable

import numpy as np

from .align import consistent
from .blocking import Features, candidates, featurise, neighbours
from .measures import distances
from .views import View, ambiguous, grouped
from .views import candidates as view_candidates, unique_keys


class Blocker(ABC):
    """Candidate pairs and lake neighbours of query values against a lake column: ``lake`` names the lake values
    the positions it returns index, in sorted order (the order every tie is broken in)."""

    lake: list[str]

    @abstractmethod
    def candidates(self, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(query row, lake position, distances)`` of each query value's blocked candidates (:mod:`.blocking`),
        distances in :data:`.measures.MEASURES` order, inf where the consistency rule refuses the pair."""
        ...

    @abstractmethod
    def neighbours(self, used: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        """``(lake position, distances)``: the lake values at positions ``used`` with the distances to each of
        their ``m`` nearest other lake values by words and by 3-grams."""
        ...


class LakeSide(ABC):
    """The lake column a matcher pairs query values with, wherever its distinct values are held: what the matcher
    asks of the whole column (which query values it holds, its views) and the :class:`Blocker` of query values
    against it."""

    size: int

    @abstractmethod
    def holding(self, values: list[str]) -> set[str]:
        """The ``values`` the column holds."""
        ...

    @abstractmethod
    def blocker(self, rest: list[str]) -> Blocker:
        ...

    @abstractmethod
    def shapes(self) -> list[View]:
        """The column's views (:func:`.views.candidates`)."""
        ...

    @abstractmethod
    def unique_views(self, view: View, wanted: set[str]) -> set[str]:
        """Of ``wanted``, the keys ``view`` gives exactly one of the column's values."""
        ...

    @abstractmethod
    def viewed(self, view: View) -> tuple[LakeSide, Callable[[set[str]], dict[str, str]]]:
        """The column's distinct views as a column, and what tells, for some of them, the one value behind each
        (a view several values share has none)."""
        ...


class LocalLake(LakeSide):
    """A lake column's distinct values held in this process."""

    def __init__(self, values: list[str]):
        self.values = sorted(values)
        self.size = len(self.values)

    def holding(self, values: list[str]) -> set[str]:
        return set(values) & set(self.values)

    def blocker(self, rest: list[str]) -> Blocker:
        return LocalBlocker(featurise(rest, self.values), self.values)

    def shapes(self) -> list[View]:
        return view_candidates(self.values)

    def unique_views(self, view: View, wanted: set[str]) -> set[str]:
        return unique_keys(self.values, view) & wanted

    def viewed(self, view: View) -> tuple[LakeSide, Callable[[set[str]], dict[str, str]]]:
        keys, behind = grouped(self.values, view)
        shared = ambiguous(behind)
        return LocalLake(keys), lambda wanted: {k: behind[k][0] for k in wanted if k not in shared}


class LocalBlocker(Blocker):
    def __init__(self, f: Features, lake: list[str]):
        self.f, self.lake = f, lake

    def candidates(self, depth: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        qi, li = candidates(self.f, depth)
        d, left = distances(self.f, qi, self.f.n_query + li)
        d[~np.array([consistent(x, y) for x, y in left], dtype=bool)] = np.inf
        return qi, li, d

    def neighbours(self, used: np.ndarray, m: int) -> tuple[np.ndarray, np.ndarray]:
        a, b = neighbours(self.f, used, m)
        ll, _ = distances(self.f, self.f.n_query + a, self.f.n_query + b)
        return a, ll
