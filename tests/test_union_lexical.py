"""The lexical table score added to the union score (:mod:`discovery.indexes.union.lexical`): its cosines are TF-IDF
over the snapshot's columns as a plain computation gives them; every exact method returns exactly the brute-force top-k
of ``score + weight * cosine`` on random lakes (tables aligning no column included), in the compact index (with its
bound pass) and the full one; served through ``discovery.open`` and the CLI, the stored terms are the lake's and a
search's score is Definition 5 plus the stated term."""
from __future__ import annotations

import json
import math
from collections import Counter

import numpy as np
import pyarrow as pa
import pytest

from discovery.api import Lakescout
from discovery.indexes.union import UnionIndex, compact, unionability
from discovery.indexes.union.compact import COMPACT_METHODS, CompactIndex
from discovery.indexes.union.lexical import DEFAULT_WEIGHT, LexicalIndex, bonus
from discovery.indexes.union.widths import SCORES
from discovery.query.resolve import resolve_query
from discovery.query.vectors import query_terms
from discovery.surfaces.cli import main
from discovery.transforms.encoders.terms import BUCKETS, words
from synthetic_lake import SyntheticLake, build_index_inputs
from test_union_widths import TAU, _lake, _query, brute_top


def _random_terms(owner: np.ndarray, seed: int) -> tuple[pa.Array, pa.Array]:
    """Terms of each column from a small vocabulary (so tables share words), copied tables keeping their
    originals' terms, some columns without any."""
    rng = np.random.default_rng(seed)
    terms, counts = [], []
    for _ in owner:
        n = int(rng.integers(0, 6))
        buckets = np.unique(rng.integers(0, 40, size=n) * 7919 % BUCKETS)
        terms.append(buckets.tolist())
        counts.append(rng.integers(1, 4, size=len(buckets)).tolist())
    return pa.array(terms, pa.list_(pa.int32())), pa.array(counts, pa.list_(pa.int32()))


def dense_cosines(column_table_ids, terms, counts, query_terms_) -> dict[int, float]:
    """The definition, computed plainly: per column counts x IDF over the columns, unit; summed per table, unit;
    the query's unseen terms dropped."""
    df = Counter(b for col in terms for b in set(col))
    n = len(terms)
    idf = {b: math.log((1 + n) / (1 + c)) + 1 for b, c in df.items()}

    def unit(v: dict) -> dict:
        norm = math.sqrt(sum(x * x for x in v.values()))
        return {k: x / norm for k, x in v.items()} if norm > 0 else dict(v)

    def table(cols) -> dict:
        out: Counter = Counter()
        for buckets, cnt in cols:
            for b, x in unit({b: c * idf[b] for b, c in zip(buckets, cnt) if b in idf}).items():
                out[b] += x
        return unit(dict(out))

    by_table: dict[int, list] = {}
    for t, b, c in zip(column_table_ids, terms, counts):
        by_table.setdefault(int(t), []).append((b, c))
    q = table(query_terms_)
    return {t: sum(w * q.get(b, 0.0) for b, w in table(cols).items()) for t, cols in by_table.items()}


@pytest.mark.parametrize("chunk", [1, 5, 40])
def test_a_build_in_runs_of_tables_is_the_build_in_one_piece(chunk):
    """Table vectors built a few terms at a time (each run whole tables, columns stored in no table order, some
    columns of tables outside the index, some tables without columns) are the one-piece build's, bit for bit."""
    rng = np.random.default_rng(chunk)
    owner = rng.integers(0, 40, 200)
    terms, counts = _random_terms(owner, chunk)
    ids = np.unique(np.r_[owner[owner % 7 != 3], [50, 51]])
    whole = LexicalIndex.build(ids, owner, terms, counts, chunk_terms=10 ** 9)
    runs = LexicalIndex.build(ids, owner, terms, counts, chunk_terms=chunk)
    a, b = whole.by_bucket, runs.by_bucket
    assert a.shape == b.shape == (len(ids), BUCKETS)
    np.testing.assert_array_equal(a.indptr, b.indptr)
    np.testing.assert_array_equal(a.indices, b.indices)
    np.testing.assert_array_equal(a.data.view(np.int64), b.data.view(np.int64))
    buckets = np.unique(rng.integers(0, 40, 4) * 7919 % BUCKETS)
    query = [(buckets, np.ones(len(buckets), dtype=np.int32))]
    np.testing.assert_array_equal(whole.cosines(query), runs.cosines(query))


def test_cosines_are_tf_idf_over_the_columns():
    owner = np.repeat(np.arange(30), 3)
    terms, counts = _random_terms(owner, 1)
    ids = np.unique(owner)
    index = LexicalIndex.build(ids, owner, terms, counts)
    rng = np.random.default_rng(2)
    for _ in range(5):
        buckets = [np.unique(rng.integers(0, 50, size=4) * 7919 % BUCKETS) for _ in range(3)]
        query = [(b, np.full(len(b), 2, dtype=np.int32)) for b in buckets]
        want = dense_cosines(owner, terms.to_pylist(), counts.to_pylist(),
                             [(b.tolist(), c.tolist()) for b, c in query])
        got = index.cosines(query)
        np.testing.assert_allclose(got, [want[int(t)] for t in ids], atol=1e-12)
        assert (got <= 1 + 1e-12).all() and (got >= 0).all()


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("seed", range(3))
def test_every_exact_method_returns_the_brute_force_top_k_with_the_lexical_term(monkeypatch, score, seed):
    monkeypatch.setattr(compact, "BOUND_PASS_MIN_COLUMNS", 0)   # the bound pass, however small the lake
    model, vectors, owner, ordinal = _lake(seed)
    # copied tables (ids 250 on) keep their originals' terms, so their scores tie exactly and order by id
    terms, counts = _random_terms(owner, seed)
    lake = SyntheticLake(vectors, owner, ordinal, np.zeros((0, vectors.shape[1])))
    centroids, parts = build_index_inputs(lake, seed=0)
    full = UnionIndex.build(vectors, owner, ordinal, centroids, parts)
    small = CompactIndex.build(vectors, owner, ordinal)
    ids = np.unique(owner)
    lexical = LexicalIndex.build(ids, owner, terms, counts)
    rng = np.random.default_rng(seed)
    outside_alignment = 0
    for q in range(4):
        query = _query(model, seed * 10 + q)
        buckets = [np.unique(rng.integers(0, 40, size=3) * 7919 % BUCKETS) for _ in range(len(query))]
        q_terms = [(b, np.ones(len(b), dtype=np.int32)) for b in buckets]
        weight = 0.5
        if q % 2:  # the words of a table aligning no column, weighed so that they decide: it ranks on them alone
            apart = next(t for t in ids if unionability(query, vectors[owner == t], TAU).score == 0
                         and terms[int(np.flatnonzero(owner == t)[0])].as_py())
            q_terms = [(np.array(terms[i].as_py()), np.array(counts[i].as_py()))
                       for i in np.flatnonzero(owner == apart)]
            weight = 1e3
        cosines = lexical.cosines(q_terms)
        added = bonus(weight, score, len(query), cosines)
        want = brute_top(vectors, owner, ordinal, query, 8, score, dict(zip(ids.tolist(), added)))
        for index, methods in ((small, COMPACT_METHODS), (full, ("exact", "pgtus", "pgtus++"))):
            for method in methods:
                if index is small:
                    got = index.search(query, 8, method, tau=TAU, score=score, bonus=added)
                else:
                    got = index.search(query, 8, method, tau=TAU, score=score, lexical=weight,
                                       lexical_cosines=cosines)
                assert [r.table_id for r in got.results] == [t for t, _ in want], (method, score)
                np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-5)
                outside_alignment += sum(not r.alignment for r in got.results)
    assert outside_alignment > 0


def test_a_weight_of_zero_is_the_score_alone():
    model, vectors, owner, ordinal = _lake(4)
    small = CompactIndex.build(vectors, owner, ordinal)
    terms, counts = _random_terms(owner, 4)
    lexical = LexicalIndex.build(np.unique(owner), owner, terms, counts)
    query = _query(model, 3)
    cosines = lexical.cosines([(np.array([0]), np.array([1]))] * len(query))
    assert bonus(0.0, "sum", len(query), cosines) is None
    plain = small.search(query, 10, "exact", tau=TAU)
    assert [(r.table_id, r.score) for r in small.search(query, 10, "exact", tau=TAU, bonus=None).results] == \
        [(r.table_id, r.score) for r in plain.results]


# -- served: discovery.open and the CLI ------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def served(indexed_lake):
    _, warehouse = indexed_lake
    return Lakescout(warehouse), warehouse


def test_stored_terms_are_the_lake_tables_own(served):
    ls, _ = served
    snap = ls.snapshot
    cv = snap.read("column_vectors", columns=["table_id", "ordinal", "terms", "term_counts"])
    assert cv.column("terms").null_count == 0
    rows = {(r["table_id"], r["ordinal"]): (r["terms"], r["term_counts"]) for r in cv.to_pylist()}
    for table_id in sorted({t for t, _ in rows})[::25]:
        table = resolve_query(snap, table_id)
        for ordinal, (buckets, counts) in enumerate(query_terms(table)):
            assert rows[table_id, ordinal] == (buckets.tolist(), counts.tolist())
    assert words("Base_Pay (USD)") == ["base", "pay", "usd"]


def test_a_served_search_is_definition_5_plus_the_stated_term(served):
    ls, _ = served
    snap = ls.snapshot
    cv = snap.read("column_vectors", columns=["table_id", "terms", "term_counts"])
    catalog = snap.read("catalog", columns=["table_id", "path", "status"]).to_pylist()
    query = next(r["path"] for r in catalog if r["status"] == "ok" and "hr/" in r["path"])
    table = resolve_query(snap, query)
    q_terms = [(b.tolist(), c.tolist()) for b, c in query_terms(table)]
    cos = dense_cosines(cv.column("table_id").to_pylist(), cv.column("terms").to_pylist(),
                        cv.column("term_counts").to_pylist(), q_terms)
    n = len(table.names)
    alone = {r["table_id"]: r["score"] for r in ls.union(query, k=500, method="exact", lexical=0)["results"]}
    for method in COMPACT_METHODS:
        found = ls.union(query, k=10, method=method)
        assert found["stats"]["lexical"] == DEFAULT_WEIGHT
        want = sorted(((alone.get(t, 0.0) + DEFAULT_WEIGHT * n * c, t) for t, c in cos.items()
                       if t != table.table_id and alone.get(t, 0.0) + DEFAULT_WEIGHT * n * c > 0),
                      key=lambda x: (-x[0], x[1]))[:10]
        assert [r["table_id"] for r in found["results"]] == [t for _, t in want], method
        np.testing.assert_allclose([r["score"] for r in found["results"]], [s for s, _ in want], atol=1e-6)
    assert ls.union(query, k=3, method="tactus")["stats"]["lexical"] == 0.0


def test_the_cli_takes_the_weight(served, capsys):
    ls, warehouse = served
    query = str(ls.snapshot.read("catalog", columns=["table_id"]).column("table_id")[0])
    assert main(["union", "--warehouse", warehouse, "--query", query, "-k", "3", "--lexical", "0", "--json"]) == 0
    plain = json.loads(capsys.readouterr().out)
    assert plain["stats"]["lexical"] == 0.0
    assert plain["results"] == ls.union(int(query), k=3, lexical=0)["results"]
    assert main(["union", "--warehouse", warehouse, "--query", query, "-k", "3", "--lexical", "1.5"]) == 2
    assert "lexical" in capsys.readouterr().err
