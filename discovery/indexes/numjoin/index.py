"""The numerical join index (PEXESO 003): groups, the two-step index (hash + MVP-tree) and the inverted index.

``NumericIndex.build(sets, metric)`` indexes a list of vector sets (one per table column or column group), and
``NumericIndex.from_flat(values, offsets, metric)`` the same sets given as one array;
``index.search(query, tau, T=..., k=..., similarity="hit"|"all")`` answers threshold and top-k searches
(:mod:`.search`).

Storage.  :meth:`NumericIndex.to_arrays` gives the whole index as named numpy arrays, and
:meth:`NumericIndex.from_arrays` rebuilds it without computing a distance.  They are meant to be stored as columns of
Delta tables by the refresh, one table per row kind:

* ``centers``: one row per global center: ``centers`` (a ``list<double>``), ``center_piv`` (its distances to the
  MVP-tree's pivots);
* ``groups``: one row per group: ``group_set``, ``group_center``, ``group_radius``, ``group_start`` (first member
  row; the member count is the next group's start minus it);
* ``members``: one row per indexed object, sorted by (set, center, distance): ``member_row`` (its row in its set),
  ``member_dist`` (its chord to the group center), ``member_piv`` (its chords to the pivots, for Lemma 1),
  ``vectors`` (prepared) and ``values`` (as given, for evidence);
* ``pivots`` and the MVP-tree nodes (``node_*``), and the inverted index (``post_*``);
* ``meta``: metric name, dimension, number of sets, seed: one row.

A Spark stage can build the groups of each set independently once the centers are drawn (a set's groups depend only
on its objects and the centers), so the members and groups tables are written per set and the small center, tree and
posting tables are rebuilt by the driver.  Arrays with a ``_start`` suffix are offsets into the next table's rows.
"""
from __future__ import annotations

import numpy as np

from .dominating import InvertedIndex
from .groups import Groups, build_groups, default_center_count, select_centers
from .metric import Metric, chord_pairwise, get_metric, max_norm, raw_rows
from .mvptree import MVPTree
from .results import NumericJoinResult
from .search import search

_GROUP_FIELDS = ("set_start", "center", "set_of", "radius", "start", "member_row", "member_dist", "vectors")
_TREE_FIELDS = ("pivots", "entry_piv", "order", "start", "end", "child_start", "child_end", "box_lo", "box_hi")
_POST_FIELDS = ("start", "group", "radius", "set_of")


class NumericIndex:
    def __init__(self, metric: Metric, centers: np.ndarray, groups: Groups, tree: MVPTree,
                 inverted: InvertedIndex, values: np.ndarray, member_piv: np.ndarray, seed: int = 0):
        self.metric = metric
        self.centers = np.ascontiguousarray(centers, dtype=np.float64)
        self.groups = groups
        self.tree = tree
        self.inverted = inverted
        self.values = values
        self.member_piv = np.ascontiguousarray(member_piv, dtype=np.float64)
        self.seed = seed
        self.center_reach = inverted.center_reach()
        self.node_reach = tree.node_reach(self.center_reach)
        self.max_norm = max_norm(groups.vectors, self.centers)

    @classmethod
    def build(cls, sets: list, metric: str | Metric = "euclidean", **options) -> NumericIndex:
        """Index ``sets`` (arrays of values in the metric's input form: 1-d numbers, (lat, lon) rows, vectors).

        ``options``: :meth:`from_flat`'s index parameters.
        """
        metric = get_metric(metric)
        prepared = [metric.prepare(s) for s in sets]
        dims = {p.shape[1] for p in prepared if p.shape[0]}
        if len(dims) > 1:
            raise ValueError(f"all sets must have the same dimension, got {sorted(dims)}")
        dim = dims.pop() if dims else 1
        counts = [p.shape[0] for p in prepared]
        raw = [r for r in (raw_rows(s, n) for s, n in zip(sets, counts)) if r.shape[0]]
        return cls._index(metric, np.concatenate([p.reshape(-1, dim) for p in prepared]),
                          np.concatenate(raw) if raw else np.zeros((0, dim)), np.r_[0, np.cumsum(counts)], **options)

    @classmethod
    def from_flat(cls, values: np.ndarray, offsets: np.ndarray, metric: str | Metric = "euclidean",
                  **options) -> NumericIndex:
        """Index sets given as one array: set i is rows ``offsets[i]:offsets[i + 1]`` of ``values`` (one value a
        row, in the metric's input form).

        The refresh publishes a family this way (:func:`.stage.families`): a lake's numeric sets then cost no
        Python object each.  ``options``: ``n_centers``, ``n_pivots``, ``fanout``, ``leaf_size``, ``seed``.
        """
        metric = get_metric(metric)
        values = np.asarray(values, dtype=np.float64)
        if values.ndim == 1:
            values = values.reshape(-1, 1)
        return cls._index(metric, metric.prepare(values), values, np.asarray(offsets, dtype=np.int64), **options)

    @classmethod
    def _index(cls, metric: Metric, vectors: np.ndarray, raw: np.ndarray, offsets: np.ndarray,
               n_centers: int | None = None, n_pivots: int = 5, fanout: int = 3, leaf_size: int = 8,
               seed: int = 0) -> NumericIndex:
        """The index of prepared ``vectors`` (rows ``offsets[i]:offsets[i + 1]`` are set i), ``raw`` the same rows
        as given.

        The MVP-tree parameters follow §V-B's tuning in spirit (|P| small, a few children per node); the paper's
        |P| = 7 was tuned for 10^3 centers of 20-d data, and with equal-share splits a tree over 10^3 centers is
        only ``log_fanout(10^3 / leaf_size)`` levels deep, so 5 pivots already cover every level.
        """
        if not vectors.shape[0]:
            raise ValueError("a numeric index needs at least one value")
        n_sets = len(offsets) - 1
        set_ids = np.repeat(np.arange(n_sets), np.diff(offsets))
        n_centers = default_center_count(vectors.shape[0]) if n_centers is None else int(n_centers)
        centers = select_centers(vectors, n_centers, seed)
        groups = build_groups(vectors, set_ids, n_sets, centers)
        if metric.identity:     # the values are their prepared vectors: one array (halves a large lake's index)
            values = groups.vectors
        else:                   # values in member order: member i is row member_row[i] of the set of its group
            member_set = np.repeat(groups.set_of, groups.size)
            values = raw[offsets[member_set] + groups.member_row]
        tree = MVPTree.build(centers, n_pivots, fanout, leaf_size, seed)
        inverted = InvertedIndex.build(groups, centers.shape[0])
        member_piv = chord_pairwise(groups.vectors, tree.pivots)
        return cls(metric, centers, groups, tree, inverted, values, member_piv, seed)

    @property
    def n_sets(self) -> int:
        return self.groups.n_sets

    @property
    def dim(self) -> int:
        return int(self.centers.shape[1])

    def search(self, query, tau: float, T: float | None = None, k: int | None = None, similarity: str = "hit",
               method: str = "pexeso", exact_scores: bool = False, greedy_share: float = 0.08,
               allowed: np.ndarray | None = None) -> NumericJoinResult:
        """Sets joinable with ``query`` at distance ``tau`` (in the metric's units), among the sets ``allowed``
        (a bool per set id; None: all).

        ``T``: fraction of the query's size a set's score must reach (threshold search); ``k``: the k best sets
        (top-k; with T, among those reaching it).  ``similarity``: ``"hit"`` (query objects with a match) or
        ``"all"`` (matched pairs).  ``method``: ``"pexeso"`` (Algorithm 4) or ``"pnodom"`` (no dominating, sets
        one by one).  ``exact_scores``: threshold search counts every result's score instead of stopping at T.
        """
        return search(self, query, tau, T=T, k=k, similarity=similarity, method=method, exact_scores=exact_scores,
                      greedy_share=greedy_share, allowed=allowed)

    # storage ---------------------------------------------------------------------------------------------------
    def to_arrays(self) -> dict[str, np.ndarray]:
        out = {"centers": self.centers, "values": self.values, "member_piv": self.member_piv,
               "meta_metric": np.array(self.metric.name), "meta_seed": np.array(self.seed)}
        out.update({f"group_{f}": getattr(self.groups, f) for f in _GROUP_FIELDS})
        out.update({f"tree_{f}": getattr(self.tree, f) for f in _TREE_FIELDS})
        out.update({f"post_{f}": getattr(self.inverted, f) for f in _POST_FIELDS})
        return out

    @classmethod
    def from_arrays(cls, arrays: dict) -> NumericIndex:
        groups = Groups(**{f: np.asarray(arrays[f"group_{f}"]) for f in _GROUP_FIELDS})
        tree = MVPTree(**{f: np.asarray(arrays[f"tree_{f}"]) for f in _TREE_FIELDS})
        inverted = InvertedIndex(**{f: np.asarray(arrays[f"post_{f}"]) for f in _POST_FIELDS})
        return cls(get_metric(str(arrays["meta_metric"])), np.asarray(arrays["centers"]), groups, tree, inverted,
                   np.asarray(arrays["values"]), np.asarray(arrays["member_piv"]), int(arrays["meta_seed"]))

    @property
    def nbytes(self) -> int:
        return int(sum(np.asarray(a).nbytes for a in self.to_arrays().values()))
