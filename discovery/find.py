"""Finding lake tables by name: a few words ranked against the names of the lake's columns and tables, and optionally
against the values sampled for the semantic join.

A term (one word or a quoted phrase: ``salary``, ``"hire date"``) is compared with a name through the header channel
of the column vectors (:func:`discovery.encoders.header.header_vectors`): the words of a name, split at case changes,
punctuation, underscores and digits, lower-cased, regular plurals made singular, and its character 3- and 4-grams.
So case and separators do not matter (``HIRE_DATE``, ``hireDate``, ``Hire Date``), and a name that shares words or
letters with the term comes close (``salaries``, ``annual salary``, ``Salary (EUR)``).  Names are compared by how
they are written, not by meaning: ``compensation`` does not find ``salary``.  Synonyms could be read off the lake
(columns whose values are alike under other names), but a term would then also pull in every table whose values
resemble those of a table it names, which a search for a name does not ask for.

A term matches a name when the cosine of their header vectors reaches :data:`MIN_SIMILARITY`; a table's match for a
term is its best: a column name, its own name (the file or dataset folder, extension dropped), or with ``values`` a
value equal to the term after normalisation (:func:`discovery.normalize.normalize_value`) among the distinct values
the semantic join sampled of a text column (``value_vectors``, similarity 1).  A table's score is the mean of its
matches over the terms, so a table that answers every term ranks first; ties go to the table whose columns the terms
cover more completely (the share of its columns matched), then to the lower table id.

The names are read from the snapshot's ``columns`` and ``catalog`` tables once per process and snapshot (distinct
names only, kept in the byte-bounded index cache), so a term is one matrix product over the distinct names and the
work grows with the matches, not with the lake.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from .encoders.header import header_vectors, header_words
from .normalize import normalize_value
from .query import QueryError
from .store import Snapshot, WarehouseError
from .store.cache import INDEXES

#: Cosine of header vectors from which a term and a name match.  0.5 keeps a name that holds the term's words among
#: others (``salary`` ~ ``annual salary``, ``Salary (EUR)``: 0.61; ``salaries`` is ``salary``: 1) and drops names
#: that share a 3-gram or two (``sal``: 0.09); benchmarks/find.py measures how the sample lake's tables are found.
MIN_SIMILARITY = 0.5
#: Dimensions and seed of the header vectors when the snapshot's column encoder has no header channel.
HEADER_DIM, HEADER_SEED = 128, 17
#: Results when ``k`` is not given.
DEFAULT_K = 10


@dataclass
class NameIndex:
    """The distinct names of a snapshot's columns and ok tables as header vectors, and which columns bear each."""

    vectors: np.ndarray          # (names, dim) float32 unit rows (zero for a name without words)
    names: list[str]             # the distinct names, in row order
    column_name: np.ndarray      # int32 per column: its name's row
    column_table: np.ndarray     # int64 per column: its table id
    column_ordinal: np.ndarray   # int32 per column
    table_ids: np.ndarray        # int64 per ok table
    table_name: np.ndarray       # int32 per ok table: the row of its own name (file or folder, extension dropped)
    table_columns: np.ndarray    # int32 per ok table: its number of columns
    paths: dict[int, str]

    @property
    def nbytes(self) -> int:
        return (self.vectors.nbytes + sum(len(n) + 50 for n in self.names) + self.column_name.nbytes * 4
                + self.table_ids.nbytes * 3 + sum(len(p) + 80 for p in self.paths.values()))


def table_name(path: str) -> str:
    """What a table is called: its file or dataset folder's name without extensions (``firms.csv.gz`` -> ``firms``)."""
    base = os.path.basename(path.rstrip("/"))
    return base.split(".")[0] or base


def _header(snapshot: Snapshot, names: list[str]) -> np.ndarray:
    """Header vectors as the snapshot's column encoder makes them (its dimension and seed), else the defaults."""
    from .vectors import snapshot_encoders

    try:
        encoder = snapshot_encoders(snapshot).column
    except WarehouseError:  # a snapshot without vectors still has names to search
        encoder = None
    if encoder is not None and encoder.column.header_weight > 0:
        return encoder.header_vectors(names).astype(np.float32)
    return header_vectors(names, HEADER_DIM, seed=HEADER_SEED).astype(np.float32)


def name_index(snapshot: Snapshot) -> NameIndex:
    """The snapshot's :class:`NameIndex`, built once per process and snapshot."""
    def build() -> NameIndex:
        catalog = snapshot.cached("catalog", ["table_id", "path", "format", "bytes", "status", "error"])
        catalog = catalog.filter(pc.is_in(catalog["status"], pa.array(["ok", "stale"])))
        columns = snapshot.cached("columns", ["table_id", "ordinal", "name"])
        columns = columns.filter(pc.is_in(columns["table_id"], catalog["table_id"]))
        own = pa.array([table_name(p) for p in catalog.column("path").to_pylist()], pa.string())
        everything = pa.chunked_array([pc.fill_null(columns["name"], ""), own], pa.string())
        encoded = pc.dictionary_encode(everything).combine_chunks()
        names = encoded.dictionary.to_pylist()
        codes = encoded.indices.to_numpy(zero_copy_only=False).astype(np.int32)
        n = columns.num_rows
        table_ids = catalog.column("table_id").to_numpy().astype(np.int64)
        counts = pc.value_counts(columns["table_id"]).flatten() if n else None
        per_table = dict(zip(counts[0].to_pylist(), counts[1].to_pylist())) if n else {}
        return NameIndex(_header(snapshot, names), names, codes[:n],
                         columns.column("table_id").to_numpy().astype(np.int64),
                         columns.column("ordinal").to_numpy().astype(np.int32), table_ids, codes[n:],
                         np.array([per_table.get(int(t), 0) for t in table_ids], np.int32),
                         dict(zip(table_ids.tolist(), catalog.column("path").to_pylist())))

    return INDEXES.get(("names", snapshot.warehouse.root, snapshot.snapshot_id), build)


def _value_hits(snapshot: Snapshot, terms: list[str]) -> list[tuple[int, int, int]]:
    """(term, table id, ordinal) of the text columns whose sampled distinct values hold a term (normalised)."""
    wanted = {normalize_value(t): i for i, t in enumerate(terms)}
    wanted.pop(None, None)
    if not wanted or "value_vectors" not in snapshot.versions:
        return []
    rows = snapshot.read("value_vectors", columns=["table_id", "ordinal", "value"],
                         filter=(pc.field("segment") == 0) & pc.field("value").isin(list(wanted)))
    return sorted({(wanted[v], t, o) for t, o, v in zip(*(rows.column(c).to_pylist()
                                                            for c in ("table_id", "ordinal", "value")))})


def find_tables(snapshot: Snapshot, terms: list[str], k: int = DEFAULT_K, values: bool = False) -> dict:
    """The ``k`` lake tables whose names best answer ``terms`` (see the module docstring), each with the name (or
    value) that matched each term and its similarity."""
    terms = [t.strip() for t in terms if isinstance(t, str) and t.strip()]
    if not terms:
        raise QueryError("give one or more words to find (a column or table name, or part of one)")
    wordless = [t for t in terms if not header_words(t) and not values]
    if wordless:
        raise QueryError(f"term {wordless[0]!r} has no letters to match names by (with values, it is matched "
                         "against sampled values)")
    index = name_index(snapshot)
    sims = _header(snapshot, terms) @ index.vectors.T if len(index.names) else np.zeros((len(terms), 0), np.float32)
    # float32 products of equal names land within 1e-7 of 1; to 6 decimals, equal names tie exactly
    sims = np.round(sims.astype(np.float64), 6)
    # every (term, table, column or -1 for the table's own name, similarity, how) that matches
    hits_term, hits_table, hits_col, hits_sim, hits_value = [], [], [], [], []
    by_name = np.argsort(index.column_name, kind="stable")
    starts = np.searchsorted(index.column_name[by_name], np.arange(len(index.names) + 1))
    for i in range(len(terms)):
        names = np.flatnonzero(sims[i] >= MIN_SIMILARITY)
        if names.size:
            cols = np.concatenate([by_name[starts[j]:starts[j + 1]] for j in names])
            hits_term.append(np.full(cols.size, i))
            hits_table.append(index.column_table[cols])
            hits_col.append(index.column_ordinal[cols])
            hits_sim.append(sims[i, index.column_name[cols]])
            hits_value.append(np.zeros(cols.size, bool))
            own = np.flatnonzero(np.isin(index.table_name, names))
            hits_term.append(np.full(own.size, i))
            hits_table.append(index.table_ids[own])
            hits_col.append(np.full(own.size, -1))
            hits_sim.append(sims[i, index.table_name[own]])
            hits_value.append(np.zeros(own.size, bool))
    if values:
        found = _value_hits(snapshot, terms)
        if found:
            term, table, col = map(np.array, zip(*found))
            hits_term.append(term)
            hits_table.append(table)
            hits_col.append(col)
            hits_sim.append(np.ones(len(found)))
            hits_value.append(np.ones(len(found), bool))
    if not hits_term:
        return {"snapshot_id": snapshot.snapshot_id, "terms": terms, "values": values, "results": []}
    term, table = np.concatenate(hits_term), np.concatenate(hits_table).astype(np.int64)
    col, sim = np.concatenate(hits_col), np.concatenate(hits_sim).astype(np.float64)
    is_value = np.concatenate(hits_value)
    order = np.lexsort((col, -sim, term, table))            # per (table, term): the best match first
    term, table, col, sim, is_value = term[order], table[order], col[order], sim[order], is_value[order]
    first = np.r_[True, (table[1:] != table[:-1]) | (term[1:] != term[:-1])]
    best_t, best_term, best_col, best_sim, best_val = (a[first] for a in (table, term, col, sim, is_value))
    tables, at = np.unique(best_t, return_index=True)
    score = np.add.reduceat(best_sim, at) / len(terms)
    matched_cols = {}
    for t, c in zip(table.tolist(), col.tolist()):
        if c >= 0:
            matched_cols.setdefault(t, set()).add(c)
    width = dict(zip(index.table_ids.tolist(), index.table_columns.tolist()))
    cover = np.array([len(matched_cols.get(int(t), ())) / max(width.get(int(t), 0), 1) for t in tables])
    ranked = np.lexsort((tables, -cover, -score))[:k]
    column_names = {}
    results = []
    for rank, j in enumerate(ranked, 1):
        t = int(tables[j])
        lo, hi = at[j], at[j + 1] if j + 1 < len(at) else len(best_t)
        matches = []
        for m in range(lo, hi):
            c = int(best_col[m])
            if c < 0:
                matched = {"table_name": table_name(index.paths[t])}
            else:
                if t not in column_names:
                    mine = index.column_table == t
                    column_names[t] = {int(o): index.names[n] for o, n in zip(index.column_ordinal[mine],
                                                                             index.column_name[mine])}
                matched = {"column": column_names[t].get(c, ""), "ordinal": c}
                if best_val[m]:
                    matched["value"] = normalize_value(terms[int(best_term[m])])
            matches.append({"term": terms[int(best_term[m])], **matched, "similarity": round(float(best_sim[m]), 4)})
        results.append({"rank": rank, "table_id": t, "path": index.paths.get(t, ""), "score": round(float(score[j]), 4),
                        "coverage": round(float(cover[j]), 4), "matches": matches})
    return {"snapshot_id": snapshot.snapshot_id, "terms": terms, "values": values, "results": results}
