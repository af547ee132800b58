"""Algorithm 1 of MATE (top-k n-ary joinable tables) and its baselines.

Methods:

* ``mate``: initial column (§6.1) -> its posting lists -> candidate tables by posting count, descending -> table
  filtering rules (1) and (2) (§6.2) -> row filtering with XASH super keys (§6.3) -> exact J (Eq. 2).
* ``bloom``: the same with Bloom-filter super keys of the same size (§7.1.2).
* ``scr``: the same without super keys (single-column retrieval, §7.1.1): every fetched row is verified.
* ``exhaustive``: no pruning of any kind; the exact J of every table holding a value of the initial column (any table
  with J > 0 does).  The reference the other three must equal.

Ranking is by J descending, then table id ascending; tables with J = 0 are not results.  Because of that tie-break
the pruning rules are applied in their exact form: a table with upper bound ``B`` is dropped iff ``B < J_k`` or
(``B == J_k`` and its id is larger than the id of the current k-th table).  With candidate tables visited by
(posting count descending, table id ascending) rule (1) may then stop the scan, as in the paper.

The bounds: J of a table is at most the number of its fetched postings ``L_t`` (every joined tuple needs its own row
holding the initial value in the mapped column), and at most ``r_match + (L_t - r_checked)`` while its postings are
being filtered, since the super key never rejects a joinable row (Lemma of §6.3).  Row filtering is vectorised per
table; rule (2) is evaluated on the running counts in posting order, so the statistics are those of the sequential
loop of Algorithm 1.

Statistics count postings (PL items, the paper's candidate rows): fetched, checked by the filter, passing it,
verified, and false positives among the verified ones (rows that do not hold the full key of any query tuple they
were matched with).
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from discovery.ground.xash import superkey_covers
from discovery.indexes.nary.joinability import best_mapping, column_hits, injective_match
from discovery.indexes.nary.query import PreparedQuery, QueryColumns, prepare_query
from discovery.indexes.nary.ranges import expand_ranges

if TYPE_CHECKING:
    from discovery.indexes.nary.index import NaryIndex

METHODS = ("mate", "scr", "bloom", "exhaustive")
_PAIRS_PER_CHUNK = 1 << 21


@dataclass(frozen=True)
class NaryMatch:
    """One result: a lake table, its joinability J and the key mapping query column -> lake column ordinal."""

    table_id: int
    joinability: int
    mapping: dict[str, int]


@dataclass
class NaryStats:
    """Work done by one search (postings are counted as candidate rows)."""

    initial_column: str
    query_tuples: int
    matchable_tuples: int
    candidate_tables: int = 0
    candidate_rows_fetched: int = 0
    rows_checked: int = 0
    rows_passing_filter: int = 0
    rows_verified: int = 0
    false_positive_rows: int = 0
    tables_evaluated: int = 0
    tables_pruned_rule1: int = 0
    tables_pruned_rule2: int = 0


@dataclass
class NarySearchResult:
    """Ranked results and statistics of one n-ary join search."""

    method: str
    key: list[str]
    k: int
    results: list[NaryMatch] = field(default_factory=list)
    stats: NaryStats | None = None
    query: PreparedQuery | None = None      # the distinct matchable tuples searched for (to explain results)

    def to_dict(self) -> dict:
        return {"method": self.method, "key": list(self.key), "k": self.k,
                "results": [{"rank": r + 1, "table_id": m.table_id, "joinability": m.joinability,
                             "mapping": dict(m.mapping)} for r, m in enumerate(self.results)],
                "stats": asdict(self.stats) if self.stats is not None else {}}


class _TopK:
    """The k best (J, table id) so far, ordered by J descending then table id ascending."""

    def __init__(self, k: int) -> None:
        self.k = k
        self.entries: list[tuple[int, int, tuple[int, ...]]] = []

    @property
    def full(self) -> bool:
        return len(self.entries) >= self.k

    def floor(self, table_id: int) -> int:
        """The J a table must exceed to enter: 0 while not full, else J_k (or J_k - 1 if it wins the tie)."""
        if not self.full:
            return 0
        j_k, id_k, _ = self.entries[-1]
        return j_k - 1 if table_id < id_k else j_k

    def add(self, j: int, table_id: int, mapping: tuple[int, ...]) -> None:
        self.entries.append((j, table_id, mapping))
        self.entries.sort(key=lambda e: (-e[0], e[1]))
        del self.entries[self.k:]


def _pairs(item_value: np.ndarray, tuple_start: np.ndarray, tuple_count: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(item, tuple) pairs: each posting with every query tuple sharing its initial value (line 16 of Alg. 1)."""
    counts = tuple_count[item_value]
    return np.repeat(np.arange(item_value.size), counts), expand_ranges(tuple_start[item_value], counts)


def search(index: NaryIndex, query_columns: QueryColumns, key: list[str], k: int = 10, method: str = "mate",
           initial_column: str | None = None, exclude: int | None = None) -> NarySearchResult:
    """Top-k lake tables by joinability J (Eq. 2) with the query on the multi-column ``key``.

    ``exclude`` names a table that is no candidate (the query itself when it is a lake table); dropping its
    postings before the scan keeps the top-k exact over the remaining tables.
    """
    if method not in METHODS:
        raise ValueError(f"unknown method {method!r}; choose one of {list(METHODS)}")
    if not isinstance(k, (int, np.integer)) or k < 1:
        raise ValueError(f"k must be a positive integer, got {k!r}")
    query = prepare_query(index, query_columns, key, initial_column)
    stats = NaryStats(initial_column=query.key[query.initial], query_tuples=query.n_tuples,
                      matchable_tuples=int(query.tuples.shape[0]))
    result = NarySearchResult(method=method, key=list(query.key), k=int(k), stats=stats, query=query)
    if query.tuples.shape[0] == 0:
        return result

    # initialisation: query tuples grouped by initial value, the initial column's posting lists, candidate tables
    order = np.argsort(query.tuples[:, query.initial], kind="stable")
    tuples = query.tuples[order]
    if method == "mate":
        query_keys = np.bitwise_or.reduce(index.value_xash()[tuples], axis=1)
        row_keys = index.row_superkey
    elif method == "bloom":
        _, value_keys, row_keys = index.bloom_superkeys()
        query_keys = np.bitwise_or.reduce(value_keys[tuples], axis=1)
    else:
        query_keys = row_keys = None
    init_values, tuple_start, tuple_count = np.unique(tuples[:, query.initial], return_index=True,
                                                      return_counts=True)
    pl_start = index.pl_ptr[init_values]
    pl_count = index.pl_ptr[init_values + 1] - pl_start
    postings = expand_ranges(pl_start, pl_count)
    item_value = np.repeat(np.arange(init_values.size), pl_count)
    item_row = index.pl_row[postings].astype(np.int64)
    item_table = index.row_table[item_row]
    if exclude is not None:
        other = item_table != exclude
        postings, item_value, item_row, item_table = (postings[other], item_value[other], item_row[other],
                                                      item_table[other])
    by_table = np.lexsort((index.pl_col[postings], item_row, item_table))
    item_value, item_row, item_table = item_value[by_table], item_row[by_table], item_table[by_table]
    tables, table_start, table_size = np.unique(item_table, return_index=True, return_counts=True)
    visit = np.lexsort((tables, -table_size))
    stats.candidate_rows_fetched = int(postings.size)
    stats.candidate_tables = int(tables.size)

    prune = method != "exhaustive"
    top = _TopK(int(k))
    for position, t in enumerate(visit):
        table_id, size = int(tables[t]), int(table_size[t])
        floor = top.floor(table_id) if prune else 0
        if prune and top.full and size <= floor:  # rule (1): no later table can enter either
            stats.tables_pruned_rule1 = int(visit.size - position)
            break
        items = slice(int(table_start[t]), int(table_start[t]) + size)
        rows, values = item_row[items], item_value[items]
        pair_item, pair_tuple = _pairs(values, tuple_start, tuple_count)
        if query_keys is not None and row_keys is not None:
            passed = np.zeros(pair_item.size, dtype=bool)
            for lo in range(0, pair_item.size, _PAIRS_PER_CHUNK):
                part = slice(lo, lo + _PAIRS_PER_CHUNK)
                passed[part] = superkey_covers(row_keys, query_keys, rows[pair_item[part]], pair_tuple[part])
            item_passed = np.bincount(pair_item[passed], minlength=size) > 0
        else:
            passed = np.ones(pair_item.size, dtype=bool)
            item_passed = np.ones(size, dtype=bool)
        matched_so_far = np.cumsum(item_passed)
        if prune and top.full:  # rule (2), in posting order
            bound = size - np.arange(1, size + 1) + matched_so_far
            hopeless = np.flatnonzero(bound <= floor)
            if hopeless.size:
                stats.rows_checked += int(hopeless[0]) + 1
                stats.rows_passing_filter += int(matched_so_far[hopeless[0]])
                stats.tables_pruned_rule2 += 1
                continue
        n_passed = int(matched_so_far[-1])
        stats.rows_checked += size
        stats.rows_passing_filter += n_passed
        stats.rows_verified += n_passed
        stats.tables_evaluated += 1
        pair_item, pair_tuple = pair_item[passed], pair_tuple[passed]
        # one verification per distinct (row, tuple): a row holding the initial value in two columns is one row
        pair_row = rows[pair_item]
        unique_pairs, pair_class = np.unique(np.stack([pair_row, pair_tuple], axis=1), axis=0,
                                             return_inverse=True)
        found = column_hits(index, unique_pairs[:, 0], tuples[unique_pairs[:, 1]])
        true_pair = np.zeros(unique_pairs.shape[0], dtype=bool)
        true_pair[found.kept[injective_match(found.hits)]] = True
        true_item = np.bincount(pair_item[true_pair[pair_class.ravel()]], minlength=size) > 0
        stats.false_positive_rows += int(np.count_nonzero(item_passed & ~true_item))
        j, mapping = best_mapping(found.hits, unique_pairs[found.kept, 1], floor)
        if mapping is not None:
            top.add(j, table_id, tuple(int(found.columns[c]) for c in mapping))
    result.results = [NaryMatch(table_id=tid, joinability=j, mapping=dict(zip(query.key, cols)))
                      for j, tid, cols in top.entries]
    return result
