"""Numerical joinable-set search (PEXESO 003): groups at global centers, MVP-tree, dominating relations.

Columns of numbers, coordinates and embeddings are sets of vectors; ``NumericIndex.build(sets, metric)`` indexes them
and ``index.search(query, tau, T=..., k=..., similarity="hit"|"all")`` finds the sets joinable with a query set.
The baselines of the paper's experiments are in :mod:`.baselines`.

In the lake: :mod:`.columns` says what a table's column groups are (numbers, coordinate pairs, numeric lists), the
``numeric`` refresh stage stores them (:mod:`.stage`), publishing lays out one index per metric family
(:mod:`.arrays`), and :mod:`.service` answers ``lakescout join`` / ``Lakescout.join`` on such columns.
"""
from .baselines import BASELINES, brute_force
from .index import NumericIndex
from .metric import METRICS, Metric, get_metric
from .results import SIMILARITIES, JoinableSet, NumericJoinResult
from .search import METHODS

__all__ = ["BASELINES", "METHODS", "METRICS", "Metric", "JoinableSet", "NumericIndex", "NumericJoinResult",
           "SIMILARITIES", "brute_force", "get_metric"]
