"""In-memory MATE index built once from the ``xash_postings`` rows: posting lists, row cells and row super keys.

Everything is a flat numpy array addressed by offsets, so an index of millions of postings costs a few arrays and no
per-value Python objects:

* value ids: the distinct normalised values (``vocab``), looked up by a sorted 64-bit digest + ``searchsorted`` and
  confirmed by string equality (a digest collision can never merge two values);
* posting lists: ``pl_ptr[v]:pl_ptr[v+1]`` into ``pl_row`` / ``pl_col``, ordered by (value, row, column);
* rows: one global id per (table, row), ordered by table then row; ``row_table``, ``row_number``,
  ``row_superkey`` (XASH super key) and the row's cells ``cell_ptr[r]:cell_ptr[r+1]`` into ``cell_col`` /
  ``cell_vid`` (what the exact joinability check reads instead of the lake table itself);
* the XASH of every value (for query super keys) and the Bloom super keys of the rows (for the ``bloom``
  baseline), computed on first use.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.ground.xash import XashModel, alpha_for
from discovery.indexes.nary.bloom import bloom_hash_count, bloom_keys, value_digests
from discovery.indexes.nary.postings import POSTINGS_SCHEMA, binary_to_superkeys
from discovery.indexes.nary.search import NarySearchResult, search

_BLOOM_ROW_CHUNK = 1 << 18


@dataclass
class NaryIndex:
    """Posting lists with super keys, plus the row cells used to verify candidate rows exactly."""

    model: XashModel
    vocab: pa.Array
    vocab_digests: np.ndarray
    pl_ptr: np.ndarray
    pl_row: np.ndarray
    pl_col: np.ndarray
    row_table: np.ndarray
    row_number: np.ndarray
    row_superkey: np.ndarray
    cell_ptr: np.ndarray
    cell_col: np.ndarray
    cell_vid: np.ndarray
    table_ids: np.ndarray
    table_columns: np.ndarray
    _lookup_digest: np.ndarray = field(init=False, repr=False)
    _lookup_id: np.ndarray = field(init=False, repr=False)
    _bloom: tuple[int, np.ndarray, np.ndarray] | None = field(init=False, repr=False, default=None)
    _value_xash: np.ndarray | None = field(init=False, repr=False, default=None)

    def __post_init__(self) -> None:
        order = np.argsort(self.vocab_digests[:, 0], kind="stable")
        self._lookup_digest = self.vocab_digests[order, 0]
        self._lookup_id = order.astype(np.int64)

    @classmethod
    def from_postings(cls, postings: pa.Table, model: XashModel) -> NaryIndex:
        """Build the structures from postings (schema :data:`~discovery.indexes.nary.postings.POSTINGS_SCHEMA`).

        ``model`` must be the XASH model the postings were hashed with: query super keys are hashed with it.
        """
        missing = [f.name for f in POSTINGS_SCHEMA if f.name not in postings.column_names]
        if missing:
            raise ValueError(f"postings lack column(s) {missing}")
        encoded = pc.dictionary_encode(postings.column("value").combine_chunks())
        vocab = encoded.dictionary.cast(pa.string())
        vid = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int64)
        table = postings.column("table_id").to_numpy().astype(np.int64)
        row = postings.column("row").to_numpy().astype(np.int64)
        col = postings.column("column").to_numpy().astype(np.int32)
        order = np.lexsort((col, row, table))
        table, row, col, vid = table[order], row[order], col[order], vid[order]
        n = order.size
        new_row = np.ones(n, dtype=bool)
        if n:
            new_row[1:] = (table[1:] != table[:-1]) | (row[1:] != row[:-1])
        row_start = np.flatnonzero(new_row)
        cell_ptr = np.append(row_start, n).astype(np.int64)
        global_row = np.cumsum(new_row) - 1
        row_table = table[row_start]
        superkey = binary_to_superkeys(postings.column("superkey").take(pa.array(order[row_start])), model.words)
        by_value = np.argsort(vid, kind="stable")
        counts = np.bincount(vid, minlength=len(vocab))
        pl_ptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        row_index_dtype = np.int32 if row_start.size < np.iinfo(np.int32).max else np.int64
        table_ids, table_row_start = np.unique(row_table, return_index=True)
        table_columns = (np.maximum.reduceat(col, cell_ptr[table_row_start]) + 1 if n
                         else np.zeros(0, dtype=np.int32))
        return cls(model=model, vocab=vocab, vocab_digests=value_digests(vocab.to_pylist()),
                   pl_ptr=pl_ptr, pl_row=global_row[by_value].astype(row_index_dtype), pl_col=col[by_value],
                   row_table=row_table, row_number=row[row_start], row_superkey=superkey,
                   cell_ptr=cell_ptr, cell_col=col, cell_vid=vid.astype(np.int32 if len(vocab) < 2**31 else np.int64),
                   table_ids=table_ids, table_columns=table_columns.astype(np.int32))

    @property
    def n_rows(self) -> int:
        return int(self.row_table.size)

    @property
    def n_postings(self) -> int:
        return int(self.cell_col.size)

    def value_ids(self, values: pa.Array) -> np.ndarray:
        """Id of each (normalised) value in the vocabulary, -1 when absent or null."""
        values = values.cast(pa.string())
        out = np.full(len(values), -1, dtype=np.int64)
        present = np.flatnonzero(values.is_valid().to_numpy(zero_copy_only=False))
        if present.size == 0 or len(self.vocab) == 0:
            return out
        present_values = values.take(pa.array(present))
        strings = present_values.to_pylist()
        digest = value_digests(strings)[:, 0]
        lo = np.searchsorted(self._lookup_digest, digest, side="left")
        hi = np.searchsorted(self._lookup_digest, digest, side="right")
        hit = np.flatnonzero(hi > lo)
        first = self._lookup_id[lo[hit]]
        same = pc.equal(self.vocab.take(pa.array(first)), present_values.take(pa.array(hit)))
        same = same.to_numpy(zero_copy_only=False)
        out[present[hit[same]]] = first[same]
        for j in hit[~same]:  # a 64-bit digest shared by different values: try the others with that digest
            for slot in range(lo[j] + 1, hi[j]):
                candidate = int(self._lookup_id[slot])
                if self.vocab[candidate].as_py() == strings[j]:
                    out[present[j]] = candidate
                    break
        return out

    def value_xash(self) -> np.ndarray:
        """XASH of every vocabulary value, built once: a query tuple's super key is the OR of its values' rows here
        (a value absent from the vocabulary joins nothing, so the query never needs to hash a string itself)."""
        if self._value_xash is None:
            self._value_xash = self.model.hash_values(self.vocab)
        return self._value_xash

    def bloom_superkeys(self) -> tuple[int, np.ndarray, np.ndarray]:
        """(hash count, Bloom key of every vocabulary value, Bloom super key of every row), built once."""
        if self._bloom is None:
            avg_columns = float(self.table_columns.mean()) if self.table_columns.size else 1.0
            n_hashes = bloom_hash_count(self.model.bits, avg_columns)
            value_keys = bloom_keys(self.vocab_digests, self.model.bits, n_hashes)
            rows = np.zeros((self.n_rows, self.model.words), dtype=np.uint64)
            for lo in range(0, self.n_rows, _BLOOM_ROW_CHUNK):
                hi = min(lo + _BLOOM_ROW_CHUNK, self.n_rows)
                a, b = self.cell_ptr[lo], self.cell_ptr[hi]
                rows[lo:hi] = np.bitwise_or.reduceat(value_keys[self.cell_vid[a:b]], self.cell_ptr[lo:hi] - a, axis=0)
            self._bloom = (n_hashes, value_keys, rows)
        return self._bloom

    def resized(self, bits: int) -> NaryIndex:
        """The same index with super keys of another size, rebuilt in memory from the indexed cells.

        The character frequencies are the model's; alpha is Eq. 5 for ``bits`` over the exact number of distinct
        indexed values (the vocabulary).  Every row's super key is the OR of its cells' XASH at the new size, the
        same definition the refresh stage applies, so results stay exact and only the filter's selectivity changes.
        """
        if bits == self.model.bits:
            return self
        model = XashModel(bits=bits, alpha=alpha_for(len(self.vocab), bits),
                          char_frequencies=self.model.char_frequencies)
        value_keys = model.hash_values(self.vocab)
        rows = np.zeros((self.n_rows, model.words), dtype=np.uint64)
        for lo in range(0, self.n_rows, _BLOOM_ROW_CHUNK):
            hi = min(lo + _BLOOM_ROW_CHUNK, self.n_rows)
            a, b = self.cell_ptr[lo], self.cell_ptr[hi]
            rows[lo:hi] = np.bitwise_or.reduceat(value_keys[self.cell_vid[a:b]], self.cell_ptr[lo:hi] - a, axis=0)
        resized = replace(self, model=model, row_superkey=rows)
        resized._value_xash = value_keys
        return resized

    def search(self, query_columns, key: list[str], k: int = 10, method: str = "mate",
               initial_column: str | None = None, exclude: int | None = None) -> NarySearchResult:
        """Top-k joinable tables for a multi-column key; see :func:`discovery.indexes.nary.search.search`."""
        return search(self, query_columns, key, k=k, method=method, initial_column=initial_column, exclude=exclude)
