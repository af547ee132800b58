"""Context of a semantic-join answer: does the lake table also join the query's *other* columns?

A low-cardinality key (a ``Party`` column of ``democrat``, ``republican``, ``federalist``) matches a dozen lake
columns with the same joinability; the right one belongs to the table that shares the query's other columns too (the
same office holders, the same years).  That is the evidence of context-aware join discovery (DeepJoin's use of the
table around a column; "context" in join discovery generally): a second column that joins, and values shared across
the rows.  Two cheap, explainable measures, both over values normalised as every index and query normalises them
(:func:`discovery.ground.normalize.normalize_array`, the strings ``xash_postings`` holds):

* **column pairs** -- for each other query column, the lake column (not the matched one) holding the largest share of
  its distinct values; the pair counts when that containment reaches :data:`MIN_CONTAINMENT` and at least
  :data:`MIN_SHARED` values are shared.  A row-number column (the integers 0..n-1 or 1..n, one a row) is no
  evidence: every table numbered from 0 shares it, and it is left out on the query side.
* **rows** -- the share of the query rows whose key value matched for which a lake row holding the matched value (the
  search's witness of that query value) also holds, in another column, the query row's value of another column.
  A query value within tau of several lake values links through the nearest of them, ties by the lower row
  (:meth:`.search.JoinIndex._nearest`), so the score is a function of the lake and the query: every method and every
  build of one lake order the margin alike.

``context_score = rows + sum of the counted pairs' containments``: 0 without context; a table sharing two more columns
and agreeing on every row scores 3.  The score orders results only where joinability leaves them tied or within the
margin (:func:`context_order`); joinability stays the score.

Reads: the ``xash_postings`` rows of the candidate tables only (every non-null normalised cell, with its column and
row), their first :data:`MAX_ROWS` rows each (a filter the files' statistics prune on), as the rest of discovery
reads bounded parts of the index; no lake file is opened at query time.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.store.filters import among
from ...ground.normalize import normalize_array

#: A column pair is context when the lake column holds this share of the query column's distinct values ...
MIN_CONTAINMENT = 0.5
#: ... and at least this many of them (one shared value is a coincidence).
MIN_SHARED = 2
#: Rows of a candidate table read for its context (the postings' row numbers below it).
MAX_ROWS = 20_000
#: A query column is a category when its distinct values are at most this share of its non-empty cells: each value
#: is repeated on average, so the column names a kind of row (a party, a country, a status), not a row.
CATEGORY_SHARE = 0.5


@dataclass
class Context:
    """The context of one lake table for one query: the score and the evidence behind it."""

    score: float = 0.0
    pairs: list[tuple[str, str, float]] = field(default_factory=list)  # (query column, lake column, containment)
    rows: float = 0.0                  # share of linked query rows agreeing with a matched lake row on another column
    row_pairs: list[tuple[str, str, int]] = field(default_factory=list)  # (query column, lake column, rows agreeing)

    def text(self) -> str:
        """One line: ``Year ~ year, Office ~ office; rows 0.95 (Year ~ year)``; empty without context."""
        parts = []
        if self.pairs:
            parts.append(", ".join(f"{q} ~ {c}" for q, c, _ in self.pairs))
        if self.rows > 0:
            best = ", ".join(f"{q} ~ {c}" for q, c, _ in self.row_pairs[:2])
            parts.append(f"rows {self.rows:.2f}" + (f" ({best})" if best else ""))
        return "; ".join(parts)


def is_category(column: pa.Array | pa.ChunkedArray) -> bool:
    """True for a category column (:data:`CATEGORY_SHARE`), its cells normalised as the index normalises them.

    Why it matters to the order: the lake columns a category joins differ in which of its values they happen to hold
    (a table of one period or region lacks the rare parties), not in being about the same rows, so joinability
    leaves the right partner among near ties that only the rest of the row tells apart (``[join] category_margin``).
    """
    array = column.combine_chunks() if isinstance(column, pa.ChunkedArray) else column
    cells = pc.drop_null(normalize_array(array))  # empty cells and null tokens are null
    return len(cells) >= 2 and len(pc.unique(cells)) <= CATEGORY_SHARE * len(cells)


def is_row_number(codes: np.ndarray, values: list[str]) -> bool:
    """True for a column of row numbers: a value on every row, each a distinct integer, exactly 0..n-1 or 1..n
    (``codes`` the non-null cells' codes, ``values`` their strings)."""
    n = len(values)
    if n < 2 or np.unique(codes).size != n:
        return False
    try:
        ints = np.array([int(v) for v in values], dtype=np.int64)
    except ValueError:
        return False
    lo = int(ints.min())
    return lo in (0, 1) and int(ints.max()) == lo + n - 1


class QueryContext:
    """The query side, prepared once per search: every other column's normalised cells as codes of one vocabulary
    (``others``: the columns that can be evidence; none, and no table has context), and each row's link (the lake
    value its key value matched, as a code) for each candidate column."""

    def __init__(self, names: list[str], columns: list[pa.Array], key: int):
        self.names = names
        self.key = key
        arrays = [c.combine_chunks() if isinstance(c, pa.ChunkedArray) else c for c in columns]
        normalised = {j: normalize_array(a) for j, a in enumerate(arrays)}
        self.key_values = normalised[key]
        others = {j: pc.drop_null(v) for j, v in normalised.items() if j != key}
        self.vocab = pc.unique(pa.concat_arrays([v.cast(pa.string()) for v in others.values()]
                                                or [pa.array([], pa.string())]))
        self.codes = {j: self.code(normalised[j]) for j in others}
        self.others = [j for j, v in others.items()
                       if len(v) and not is_row_number(self.codes[j][self.codes[j] >= 0], v.to_pylist())]
        self.distinct = {j: np.unique(self.codes[j][self.codes[j] >= 0]) for j in self.others}
        keys = self.key_values.dictionary_encode()
        self.key_index = {v: i for i, v in enumerate(keys.dictionary.to_pylist())}
        self.key_row = keys.indices.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)
        self.code_of: dict[str, int] = {}

    @property
    def n_vocab(self) -> int:
        return len(self.vocab)

    def add_values(self, values: list[str]) -> None:
        """Extend the vocabulary with lake values (the witnesses of the key's matches); existing codes stay.  The
        values' codes are kept (:attr:`code_of`), so the links of many tables cost one hash of the vocabulary."""
        distinct = sorted(set(values))
        new = pa.array(distinct, pa.string())
        new = new.filter(pc.invert(pc.is_in(new, value_set=self.vocab)))
        if len(new):
            self.vocab = pa.concat_arrays([self.vocab, new])
        self.code_of = dict(zip(distinct, self.code(pa.array(distinct, pa.string())).tolist()))

    def code(self, values) -> np.ndarray:
        """Codes of normalised strings in the query's vocabulary; -1 for null or a value the query does not hold."""
        idx = pc.index_in(values.cast(pa.string()), value_set=self.vocab)
        return idx.fill_null(-1).to_numpy(zero_copy_only=False).astype(np.int64)

    def links(self, link: dict[str, str]) -> np.ndarray:
        """Per query row, the code of the lake value its key value matched (``link``: query value -> lake value),
        -1 for a row whose key found no match.  Lake values not given to :meth:`add_values` are coded here."""
        unknown = sorted({v for v in link.values() if v not in self.code_of})
        if unknown:
            self.code_of.update(zip(unknown, self.code(pa.array(unknown, pa.string())).tolist()))
        target = np.full(len(self.key_index) + 1, -1, dtype=np.int64)      # the last slot: rows with a null key
        for value, lake_value in link.items():
            at = self.key_index.get(value)
            if at is not None:
                target[at] = self.code_of[lake_value]
        return target[self.key_row]


def read_postings(read, table_ids: list[int], max_rows: int = MAX_ROWS) -> pa.Table:
    """``xash_postings`` rows (table_id, column, row, value) of ``table_ids``, their first ``max_rows`` rows."""
    if not table_ids:
        return pa.table({"table_id": pa.array([], pa.int64()), "column": pa.array([], pa.int32()),
                         "row": pa.array([], pa.int64()), "value": pa.array([], pa.string())})
    flt = among("table_id", table_ids) & (pc.field("row") < max_rows)
    return read(["table_id", "column", "row", "value"], flt)


def table_context(query: QueryContext, postings: pa.Table, lake_column: int, link: dict[str, str],
                  lake_names: dict[int, str], codes: np.ndarray | None = None) -> Context:
    """The context of one lake table: ``postings`` its ``xash_postings`` rows, ``lake_column`` the ordinal of the
    column the search matched, ``link`` each matched query value's witness lake value.  ``codes``: the postings'
    values already coded (:meth:`QueryContext.code`) by a caller holding many tables' postings, which codes them in
    one call: each call hashes the whole vocabulary, and once per table that was a third of a query's context time
    (61 tables on the 1M-vector lake of ``benchmarks/join_latency.py``)."""
    if not query.others or postings.num_rows == 0:
        return Context()
    col = postings.column("column").to_numpy().astype(np.int64)
    row = postings.column("row").to_numpy().astype(np.int64)
    code = query.code(postings.column("value")) if codes is None else codes
    n_rows = int(row.max()) + 1
    key_of_row = np.full(n_rows, -1, dtype=np.int64)
    at_key = col == lake_column
    key_of_row[row[at_key]] = code[at_key]
    keep = ~at_key & (code >= 0)
    col, row, code = col[keep], row[keep], code[keep]
    lake_cols, col_at = np.unique(col, return_inverse=True)
    # column pairs: the lake column holding most of each other query column's distinct values (ties: the higher one)
    shared = _shared_counts([query.distinct[j] for j in query.others], col_at, code, lake_cols.size)
    pairs = []
    for i, j in enumerate(query.others):
        dj = query.distinct[j]
        most = int(shared[i].max(initial=0))
        if most >= MIN_SHARED and most / dj.size >= MIN_CONTAINMENT:
            c = int(lake_cols[np.flatnonzero(shared[i] == most)[-1]])
            pairs.append((query.names[j], lake_names.get(c, str(c)), most / dj.size))
    # rows: (matched key value, other value) of a query row found in one lake row of another column
    linked = query.links(link)
    has_link = linked >= 0
    lake_key = key_of_row[row]
    at_row = lake_key >= 0
    pair_codes = [np.where(has_link & (query.codes[j] >= 0), linked * query.n_vocab + query.codes[j], -1)
                  for j in query.others]
    agree_any, agreeing = _agreeing_rows(pair_codes, col_at[at_row], lake_key[at_row] * query.n_vocab + code[at_row],
                                         lake_cols.size)
    row_pairs = [(query.names[query.others[i]], lake_names.get(int(lake_cols[c]), str(int(lake_cols[c]))),
                  int(agreeing[i, c])) for c, i in zip(*np.nonzero(agreeing.T))]
    rows = float(agree_any.sum() / has_link.sum()) if has_link.any() else 0.0
    row_pairs.sort(key=lambda p: -p[2])
    score = rows + sum(s for _, _, s in pairs)
    return Context(round(score, 6), pairs, round(rows, 6), row_pairs)


class _Cells:
    """A table's distinct (key, column) cells, sorted by key, and the columns holding a given key: one sort and one
    search per query array, instead of a set intersection per (query column, lake column)."""

    def __init__(self, keys: np.ndarray, col_at: np.ndarray):
        order = np.lexsort((col_at, keys))
        keys, col_at = keys[order], col_at[order]
        first = np.r_[True, (keys[1:] != keys[:-1]) | (col_at[1:] != col_at[:-1])][:keys.size]
        self.keys, self.cols = keys[first], col_at[first]

    def columns_of(self, wanted: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(the column of every cell whose key is in ``wanted``, the number of such cells per wanted key)."""
        lo, hi = np.searchsorted(self.keys, wanted, "left"), np.searchsorted(self.keys, wanted, "right")
        size = hi - lo
        total = int(size.sum())
        starts = np.repeat(lo - np.r_[0, np.cumsum(size)[:-1]], size) if total else np.zeros(0, dtype=np.int64)
        return self.cols[starts + np.arange(total)], size


def _shared_counts(distinct: list[np.ndarray], col_at: np.ndarray, code: np.ndarray, n_cols: int) -> np.ndarray:
    """``[i, c]``: how many of the codes ``distinct[i]`` (unique) lake column ``c`` holds, ``col_at`` and ``code``
    the lake cells' column index and value code."""
    cells = _Cells(code, col_at)
    out = np.zeros((len(distinct), n_cols), dtype=np.int64)
    for i, d in enumerate(distinct):
        out[i] = np.bincount(cells.columns_of(d)[0], minlength=n_cols)
    return out


def _agreeing_rows(pair_codes: list[np.ndarray], col_at: np.ndarray, pairs: np.ndarray,
                   n_cols: int) -> tuple[np.ndarray, np.ndarray]:
    """(per query row: does any lake column agree, ``[i, c]``: query rows whose (key, other column ``i``) pair lake
    column ``c`` holds in one row).  ``pair_codes[i]``: per query row its pair code, -1 for none; ``pairs`` and
    ``col_at``: the lake cells' (row key, value) pair codes and column index."""
    cells = _Cells(pairs, col_at)
    agree_any = np.zeros(pair_codes[0].size if pair_codes else 0, dtype=bool)
    agreeing = np.zeros((len(pair_codes), n_cols), dtype=np.int64)
    for i, codes in enumerate(pair_codes):
        rows = np.flatnonzero(codes >= 0)
        cols, found = cells.columns_of(codes[rows])
        agreeing[i] = np.bincount(cols, minlength=n_cols)
        agree_any[rows[found > 0]] = True
    return agree_any, agreeing


def context_groups(matches: list[int], slack: int) -> list[int]:
    """Group number of each result, results sorted by joinability (matches descending): a group starts at its
    highest count, its head, and holds the following results whose count is within ``slack`` of the head's."""
    groups, head, g = [], None, -1
    for m in matches:
        if head is None or head - m > slack:
            head, g = m, g + 1
        groups.append(g)
    return groups


def context_order(matches: list[int], scores: list[float | None], slack: int) -> list[int]:
    """The order of results sorted by matches descending (ties as :func:`.service.ties_by_size` puts them): within
    each group of :func:`context_groups`, context score descending, then as before.  A result never passes one whose
    count exceeds its own by more than ``slack``: such two results lie in different groups, and groups keep their
    order."""
    groups = context_groups(matches, slack)
    return sorted(range(len(matches)), key=lambda i: (groups[i], -(scores[i] or 0.0), i))
