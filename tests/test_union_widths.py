"""Width-weighted union scores (``score``: ``max_width``, ``sqrt_width``): every exact method returns exactly the
brute-force top-k under the score it reports, on random lakes with ties, in the compact index (with its bound pass)
and the full one; served through ``discovery.open`` and the CLI they re-rank Definition 5's complete answer; the
methods that are not exact refuse them."""
from __future__ import annotations

import json

import numpy as np
import pytest

from discovery.api import Lakescout
from discovery.indexes.union import UnionIndex, compact, unionability
from discovery.indexes.union.compact import COMPACT_METHODS, CompactIndex
from discovery.query.params import ParameterError
from discovery.surfaces.cli import main
from synthetic_lake import SyntheticLake, build_index_inputs, draw_tables, generate_lake, lake_model
from discovery.indexes.union.widths import SCORES, factors

TAU = 0.4


def _lake(seed: int):
    """A clustered random lake of tables 1 to 9 columns wide whose last 30 tables copy earlier ones (ties by id)."""
    model = lake_model(16, 30, 6, 8, max_columns=9, noise=(0.1, 0.9), seed=seed)
    lake = generate_lake(model, 250, seed=seed + 1)
    rng = np.random.default_rng(seed)
    vectors, owner, ordinal = lake.column_vectors, lake.column_table_ids, lake.column_ordinals
    for new, old in enumerate(rng.choice(250, size=30, replace=False), start=250):
        rows = owner == old
        vectors = np.vstack([vectors, vectors[rows]])
        owner = np.concatenate([owner, np.full(rows.sum(), new)])
        ordinal = np.concatenate([ordinal, ordinal[rows]])
    return model, vectors, owner, ordinal


def brute_top(vectors, owner, ordinal, query, k, score, added: dict[int, float] | None = None):
    """Top-k (table id, score) by the definition: Definition 5 of each table times its width factor, plus the
    table's ``added`` term when given (the lexical term: a table with no admissible pair then scores it alone)."""
    scored = []
    for t in np.unique(owner):
        rows = np.flatnonzero(owner == t)
        rows = rows[np.argsort(ordinal[rows])]
        s = unionability(query, vectors[rows], TAU).score
        f = factors(score, len(query), np.array([len(rows)]))
        total = s * (1.0 if f is None else f[0]) + (added or {}).get(int(t), 0.0)
        if total > 0:
            scored.append((-total, int(t)))
    return [(t, -s) for s, t in sorted(scored)[:k]]


@pytest.mark.parametrize("score", SCORES)
@pytest.mark.parametrize("seed", range(3))
def test_every_exact_method_returns_the_brute_force_top_k(monkeypatch, score, seed):
    monkeypatch.setattr(compact, "BOUND_PASS_MIN_COLUMNS", 0)   # the bound pass, however small the lake
    model, vectors, owner, ordinal = _lake(seed)
    lake = SyntheticLake(vectors, owner, ordinal, np.zeros((0, vectors.shape[1])))
    centroids, parts = build_index_inputs(lake, seed=0)
    full = UnionIndex.build(vectors, owner, ordinal, centroids, parts)
    small = CompactIndex.build(vectors, owner, ordinal)
    for q in range(4):
        query = _query(model, seed * 10 + q)
        want = brute_top(vectors, owner, ordinal, query, 8, score)
        assert want
        for index, methods in ((small, COMPACT_METHODS), (full, ("exact", "pgtus", "pgtus++"))):
            for method in methods:
                got = index.search(query, 8, method, tau=TAU, score=score)
                assert [r.table_id for r in got.results] == [t for t, _ in want], (method, score)
                np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-5)
                assert got.score_kind == ("unionability" if score == "sum" else score)


def _query(model, seed: int) -> np.ndarray:
    columns, _, _ = draw_tables(model, 1, seed=seed)
    return columns


def test_methods_that_are_not_exact_refuse_a_width_score():
    model, vectors, owner, ordinal = _lake(5)
    lake = SyntheticLake(vectors, owner, ordinal, np.zeros((0, vectors.shape[1])))
    centroids, parts = build_index_inputs(lake, seed=0)
    full = UnionIndex.build(vectors, owner, ordinal, centroids, parts)
    for method in ("pgtus++-approx", "starmie", "tactus"):
        with pytest.raises(ValueError, match="score 'max_width' is answered by"):
            full.search(_query(model, 1), 5, method, score="max_width")
    with pytest.raises(ValueError, match="unknown union score"):
        CompactIndex.build(vectors, owner, ordinal).search(_query(model, 1), 5, tau=TAU, score="mean")


@pytest.fixture(scope="module")
def served(indexed_lake):
    path, warehouse = indexed_lake
    ls = Lakescout(warehouse)
    cv = ls.snapshot.read("column_vectors", columns=["table_id"]).column("table_id").to_numpy()
    ids, counts = np.unique(cv, return_counts=True)
    return ls, warehouse, dict(zip(ids.tolist(), counts.tolist()))


@pytest.mark.parametrize("score", ["max_width", "sqrt_width"])
def test_served_width_scores_re_rank_the_complete_definition_5_answer(served, score):
    ls, _, widths = served
    query = "finance/registers/firms.tsv"
    complete = ls.union(query, k=len(widths), method="exact", lexical=0)   # every table with an admissible pair
    assert 10 < len(complete["results"]) < len(widths)
    own = ls.union(query, k=10, score=score, lexical=0)
    assert own["stats"]["score_kind"] == score
    q = widths[next(t["table_id"] for t in ls.tables() if t["path"] == query)]   # a lake table: its own vectors
    rescored = sorted((-r["score"] * factors(score, q, np.array([widths[r["table_id"]]]))[0], r["table_id"])
                       for r in complete["results"])[:10]
    assert [r["table_id"] for r in own["results"]] == [t for _, t in rescored]
    np.testing.assert_allclose([r["score"] for r in own["results"]], [-s for s, _ in rescored], atol=1e-9)
    by_id = {r["table_id"]: r["alignment"] for r in complete["results"]}
    assert all(r["alignment"] == by_id[r["table_id"]] for r in own["results"])   # the factor leaves the matching


def test_cli_and_api_take_the_score_by_name(served, capsys):
    ls, warehouse, _ = served
    query = "finance/registers/firms.tsv"
    assert main(["union", "--warehouse", warehouse, "--query", query, "--score", "max_width", "--json"]) == 0
    assert json.loads(capsys.readouterr().out)["results"] == ls.union(query, score="max_width")["results"]
    with pytest.raises(ParameterError, match="score"):
        ls.union(query, score="mean")
    with pytest.raises(ParameterError, match="score"):
        ls.union(query, method="tactus", score="max_width")
