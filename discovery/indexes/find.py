"""Finding lake tables by name: a few words ranked against the names of the lake's columns and tables, by how they
are written and by what they mean, and optionally against the values sampled for the semantic join.

A term (one word or a quoted phrase: ``salary``, ``"hire date"``) and a name are compared by the features the header
channel of the column vectors reads (:mod:`discovery.transforms.encoders.header`): the words of a name, split at case
changes, punctuation, underscores and digits, lower-cased, regular plurals made singular, each of weight
:data:`WORD_WEIGHT`, and the character 3- and 4-grams of the marked word sequence (``<hire date>``), each of weight 1.
So case and separators do not matter (``HIRE_DATE``, ``hireDate``, ``Hire Date``), and a name that shares words or
letters with the term comes close (``salaries``, ``annual salary``, ``Salary (EUR)``).  The similarity is the exact
cosine of the two feature sets (64-bit feature hashes, not the column vectors' few buckets, whose collisions made
``pay`` look like ``TO``), and a term or name whose words are all one or two letters (``TO``, ``id``) matches only a
name or term holding the same word: two letters are too few to say a word by spelling.  A term of two or three words
is also matched in its other word orders (:func:`_orders`: ``max temp`` finds ``temp_max_c`` as ``temp max`` does).

By meaning: a term's phrases are also replaced by their synonyms in the shipped lexicon
(:mod:`discovery.transforms.lexicon`: ``pay`` -> ``salary``, ``wage``, ``compensation``; ``dob`` -> ``date of birth``).
The lexicon, not the lake, decides synonyms: columns whose values are alike under other names would pull in every table
whose values resemble a named one's, which a search for a name does not ask for.

A term matches a name when their similarity (through a synonym: the name's to the variant) reaches
:data:`MIN_SIMILARITY`; the match then scores its similarity, times :data:`SYNONYM_WEIGHT` to the power of the phrases
replaced, so a name written as the term ranks above one that means it.  A table's match for a term is its best: a
column name, its own name (the file or dataset folder, extension dropped), or with ``values`` a value equal to the
term after normalisation (:func:`discovery.ground.normalize.normalize_value`) among the distinct values the semantic
join sampled of a text column (``value_vectors``, similarity 1).  A table's score is the mean of its matches over the
terms, so a table that answers every term ranks first; ties go to the table whose columns the terms cover more
completely (the share of its columns matched), then to the lower table id.

The names are read from the snapshot's ``columns`` and ``catalog`` tables once per process and snapshot (distinct
names only, as a sparse feature matrix kept in the byte-bounded index cache), so a term is one sparse product over the
names that share a feature with it, and the work grows with the matches, not with the lake.
"""
from __future__ import annotations

import itertools
import os
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
from scipy import sparse

from ..data.store import Snapshot
from ..data.store.cache import INDEXES
from ..ground.normalize import normalize_value
from ..query.resolve import QueryError
from ..transforms.encoders.header import HEADER_NGRAMS, header_words
from ..transforms.encoders.ngrams import extract_features
from ..transforms.lexicon import lexicon

#: Similarity from which a term and a name match.  0.5 keeps a name that holds the term's words among others
#: (``salary`` ~ ``annual salary``: 0.62, ``Salary (EUR)``; ``salaries`` is ``salary``: 1) and drops names that share
#: a 3-gram or two (``sal``); benchmarks/find.py measures how the sample lake's tables are found.
MIN_SIMILARITY = 0.5
#: Weight of a word against one character n-gram: the header channel's default, so a shared word outweighs the
#: spelling around it.
WORD_WEIGHT = 2.0
#: What a match through one synonym is worth against the same match by spelling.  A name matches a variant as it
#: would match the term (cosine >= MIN_SIMILARITY); the weight only ranks.  Measured on the sample lake
#: (benchmarks/find.py, 693 queries of a table's own names, some replaced by other names of their attributes): 0.9
#: let the table's siblings, which hold every attribute under other names, outrank the table whose names the query
#: mostly spells (0.983 found in the top 5, against 0.994 by spelling alone); 0.6 keeps 0.993, and a name written as
#: the term, or holding it among other words (``annual salary`` for ``salary``: 0.58), ranks above one that only
#: means it.  Queries of synonyms alone find the same tables at every weight from 0.5 to 0.9.
SYNONYM_WEIGHT = 0.6
#: Words of a term (or of a synonym variant) up to which its other word orders are matched too (:func:`_orders`).
MAX_REORDERED = 3
#: Results when ``k`` is not given.
DEFAULT_K = 10


@dataclass
class NameIndex:
    """The distinct names of a snapshot's columns and ok tables as feature rows, and which columns bear each."""

    postings: sparse.csr_matrix  # (vocabulary, names): each feature's weight in each name's unit feature vector
    vocabulary: np.ndarray       # uint64: the sorted feature hashes, the rows of ``postings``
    short: np.ndarray            # bool per name: every word has at most two letters
    words: list[frozenset]       # per name: its words
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
        return (self.postings.data.nbytes + self.postings.indices.nbytes + self.postings.indptr.nbytes
                + self.vocabulary.nbytes + sum(len(n) * 2 + 150 for n in self.names) + self.column_name.nbytes * 4
                + self.table_ids.nbytes * 3 + sum(len(p) + 80 for p in self.paths.values()))


def table_name(path: str) -> str:
    """What a table is called: its file or dataset folder's name without extensions (``firms.csv.gz`` -> ``firms``)."""
    base = os.path.basename(path.rstrip("/"))
    return base.split(".")[0] or base


def _unit_features(word_lists: list[tuple[str, ...]]) -> tuple[sparse.csr_matrix, np.ndarray]:
    """Each name (given as its words) as a unit vector of feature weights, one row per name (none for a name without
    words), and the sorted feature hashes its columns stand for.  Equal features of a name are summed by the sparse
    matrix itself, not sorted out first: a lake's hundreds of thousands of names have tens of millions of features."""
    present = np.array([i for i, w in enumerate(word_lists) if w], dtype=np.int64)
    if not present.size:
        return sparse.csr_matrix((len(word_lists), 0)), np.zeros(0, np.uint64)
    found = extract_features([" ".join(word_lists[i]) for i in present], HEADER_NGRAMS, WORD_WEIGHT)
    vocabulary, feature = np.unique(found.hashes, return_inverse=True)
    rows = sparse.csr_matrix((found.weights, (present[found.rows], feature)),
                             shape=(len(word_lists), vocabulary.size))      # duplicates summed
    norms = np.sqrt(np.asarray(rows.multiply(rows).sum(axis=1)).ravel())
    return sparse.diags(1.0 / np.where(norms > 0, norms, 1.0)) @ rows, vocabulary


def _short(words) -> bool:
    """Every word of at most two letters (``TO``, ``id``): matched by a shared word only, never by its letters."""
    return bool(words) and all(len(w) <= 2 for w in words)


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
        per_table = {}
        if n:
            counts = pc.value_counts(columns["table_id"]).flatten()
            per_table = dict(zip(counts[0].to_pylist(), counts[1].to_pylist()))
        words = [tuple(header_words(name)) for name in names]
        rows, vocabulary = _unit_features(words)   # kept as postings: a query reads only its features' rows
        return NameIndex(rows.T.tocsr(), vocabulary, np.array([_short(w) for w in words], bool),
                         [frozenset(w) for w in words], names, codes[:n],
                         columns.column("table_id").to_numpy().astype(np.int64),
                         columns.column("ordinal").to_numpy().astype(np.int32), table_ids, codes[n:],
                         np.array([per_table.get(int(t), 0) for t in table_ids], np.int32),
                         dict(zip(table_ids.tolist(), catalog.column("path").to_pylist())))

    return INDEXES.get(("names", snapshot.warehouse.root, snapshot.snapshot_id), build)


def _orders(words: tuple[str, ...]) -> list[tuple[str, ...]]:
    """``words`` and, for two or three words, their other orders: names put a qualifier before or after what it
    qualifies (``max_temp`` / ``temp_max``, ``start_date`` / ``date_start``), and the n-grams that span two words make
    the spelling similarity depend on their order (``max temp`` ~ ``temp_max_c`` 0.52, ``temp max`` 0.79).  Beyond
    three words the orders multiply while names rarely reorder whole."""
    if not 2 <= len(words) <= MAX_REORDERED:
        return [words]
    return list(dict.fromkeys(itertools.permutations(words)))


def _name_matches(index: NameIndex, terms: list[str], synonyms: list[str]):
    """Per term: the rows of the names it matches (by spelling or through a synonym), their similarity, and the
    position in ``synonyms`` (appended to) of the synonym that matched, or -1 (see the module docstring)."""
    variant_words, variant_term, variant_weight, variant_via = [], [], [], []
    for i, term in enumerate(terms):
        words = header_words(term)
        seen: set[tuple[str, ...]] = set()
        spelled = [(tuple(words), 1.0, None)] + [(other, SYNONYM_WEIGHT ** replaced, text)
                                                 for other, text, replaced in lexicon().variants(words)]
        for base, weight, text in spelled:
            via = -1
            if text is not None:
                via = len(synonyms)
                synonyms.append(text)
            for ordered in _orders(base):
                if ordered not in seen:
                    seen.add(ordered)
                    variant_words.append(ordered)
                    variant_term.append(i)
                    variant_weight.append(weight)
                    variant_via.append(via)
    variants, hashes = _unit_features(variant_words)   # features the names lack count in the length too
    pos = np.minimum(np.searchsorted(index.vocabulary, hashes), max(index.vocabulary.size - 1, 0))
    known = (index.vocabulary[pos] == hashes) if index.vocabulary.size else np.zeros(hashes.size, bool)
    entries = variants.tocoo()
    keep = known[entries.col]
    query = sparse.csr_matrix((entries.data[keep], (entries.row[keep], pos[entries.col[keep]])),
                              shape=(len(variant_words), index.vocabulary.size))
    product = (query @ index.postings).tocoo()
    variant, name = product.row, product.col
    # float sums of equal names land within 1e-15 of 1; to 6 decimals, equal names tie exactly
    cosine = np.round(product.data, 6)
    keep = cosine >= MIN_SIMILARITY          # a name matches a variant as it would match the term; the weight ranks
    variant, name = variant[keep], name[keep]
    sim = np.round(cosine[keep] * np.asarray(variant_weight)[variant], 6)
    short = np.array([_short(w) for w in variant_words], bool)
    check = np.flatnonzero(short[variant] | index.short[name])
    if check.size:
        shared = np.array([bool(index.words[n].intersection(variant_words[v]))
                           for v, n in zip(variant[check], name[check])], bool)
        drop = np.zeros(variant.size, bool)
        drop[check[~shared]] = True
        variant, name, sim = variant[~drop], name[~drop], sim[~drop]
    term = np.asarray(variant_term)[variant]
    order = np.lexsort((variant, -sim, name, term))          # per (term, name): the best match, spelling first
    term, name, sim, variant = term[order], name[order], sim[order], variant[order]
    first = np.ones(term.size, bool)
    first[1:] = (term[1:] != term[:-1]) | (name[1:] != name[:-1])
    term, name, sim, variant = term[first], name[first], sim[first], variant[first]
    via = np.asarray(variant_via)[variant]
    return [(name[term == i], sim[term == i], via[term == i]) for i in range(len(terms))]


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
    hits_term, hits_table, hits_col, hits_sim, hits_value, hits_via = [], [], [], [], [], []
    by_name = np.argsort(index.column_name, kind="stable")
    starts = np.searchsorted(index.column_name[by_name], np.arange(len(index.names) + 1))
    synonyms: list[str] = []
    for i, (names, sims, via) in enumerate(_name_matches(index, terms, synonyms)):
        best_sim = np.zeros(len(index.names))
        best_sim[names] = sims
        best_via = np.full(len(index.names), -1)
        best_via[names] = via
        cols = np.concatenate([by_name[starts[j]:starts[j + 1]] for j in names]) if names.size else names
        own = np.flatnonzero(np.isin(index.table_name, names))
        hits_term.append(np.full(cols.size + own.size, i))
        hits_table.append(np.r_[index.column_table[cols], index.table_ids[own]])
        hits_col.append(np.r_[index.column_ordinal[cols], np.full(own.size, -1)])
        hits_sim.append(np.r_[best_sim[index.column_name[cols]], best_sim[index.table_name[own]]])
        hits_via.append(np.r_[best_via[index.column_name[cols]], best_via[index.table_name[own]]])
        hits_value.append(np.zeros(cols.size + own.size, bool))
    if values:
        found = _value_hits(snapshot, terms)
        if found:
            term, table, col = map(np.array, zip(*found))
            hits_term.append(term)
            hits_table.append(table)
            hits_col.append(col)
            hits_sim.append(np.ones(len(found)))
            hits_via.append(np.full(len(found), -1))
            hits_value.append(np.ones(len(found), bool))
    if not sum(h.size for h in hits_term):
        return {"snapshot_id": snapshot.snapshot_id, "terms": terms, "values": values, "results": []}
    term, table = np.concatenate(hits_term), np.concatenate(hits_table).astype(np.int64)
    col, sim = np.concatenate(hits_col), np.concatenate(hits_sim).astype(np.float64)
    is_value, via = np.concatenate(hits_value), np.concatenate(hits_via)
    order = np.lexsort((col, -sim, term, table))            # per (table, term): the best match first
    term, table, col, sim, is_value, via = (a[order] for a in (term, table, col, sim, is_value, via))
    first = np.r_[True, (table[1:] != table[:-1]) | (term[1:] != term[:-1])]
    best_t, best_term, best_col, best_sim, best_val, best_via = (a[first] for a in (table, term, col, sim, is_value,
                                                                                     via))
    tables, at = np.unique(best_t, return_index=True)
    score = np.add.reduceat(best_sim, at) / len(terms)
    matched_cols: dict[int, set[int]] = {}
    for t, c in zip(table.tolist(), col.tolist()):
        if c >= 0:
            matched_cols.setdefault(t, set()).add(c)
    width = dict(zip(index.table_ids.tolist(), index.table_columns.tolist()))
    cover = np.array([len(matched_cols.get(int(t), ())) / max(width.get(int(t), 0), 1) for t in tables])
    ranked = np.lexsort((tables, -cover, -score))[:k]
    column_names: dict[int, dict[int, str]] = {}
    results = []
    for rank, j in enumerate(ranked, 1):
        t = int(tables[j])
        lo, hi = at[j], at[j + 1] if j + 1 < len(at) else len(best_t)
        matches = []
        for m in range(lo, hi):
            c = int(best_col[m])
            matched: dict[str, object]
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
            if best_via[m] >= 0:
                matched["synonym"] = synonyms[int(best_via[m])]
            matches.append({"term": terms[int(best_term[m])], **matched, "similarity": round(float(best_sim[m]), 4)})
        results.append({"rank": rank, "table_id": t, "path": index.paths.get(t, ""), "score": round(float(score[j]), 4),
                        "coverage": round(float(cover[j]), 4), "matches": matches})
    return {"snapshot_id": snapshot.snapshot_id, "terms": terms, "values": values, "results": results}
