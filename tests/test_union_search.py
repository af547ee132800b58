"""End-to-end union search on a small generated lake: exactness of exact/PGTUS/PGTUS++/Starmie and TACTUS rules."""
import numpy as np
import pytest

from discovery.indexes.union import UnionIndex, pgtus, unionability
from discovery.indexes.union.partitioning import partition_lake
from discovery.indexes.union.search import DEFAULT_TAU
from synthetic_lake import (build_index_inputs, draw_tables, generate_lake, lake_model,
                                       table_vectors_of)
from discovery.indexes.union.tactus import adaptive_cut


@pytest.fixture(scope="module")
def setup():
    model = lake_model(16, 50, 10, 10, max_columns=9, seed=11)
    lake = generate_lake(model, 400, seed=12)
    centroids, parts = build_index_inputs(lake, 20)
    index = UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids, parts,
                             lake.table_vectors)
    return model, lake, index


def brute_top(lake, query, k, tau, exclude=None):
    scored = []
    for t in np.unique(lake.column_table_ids):
        if t == exclude:
            continue
        rows = np.flatnonzero(lake.column_table_ids == t)
        rows = rows[np.argsort(lake.column_ordinals[rows])]
        s = unionability(query, lake.column_vectors[rows], tau).score
        if s > 0:
            scored.append((-s, int(t)))
    return [(t, -s) for s, t in sorted(scored)[:k]]


@pytest.mark.parametrize("seed", range(6))
def test_exact_equals_brute_force(setup, seed):
    model, lake, index = setup
    query, _, _ = draw_tables(model, 1, seed=900 + seed)
    got = index.search(query, 7, "exact")
    want = brute_top(lake, query, 7, DEFAULT_TAU)
    assert [r.table_id for r in got.results] == [t for t, _ in want]
    np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-5)
    for r in got.results:
        assert sum(s for _, _, s in r.alignment) == pytest.approx(r.score)


def _lake_of(kind: str, seed: int):
    """(lake vectors, owner, ordinals, queries): random directions, clustered domains, or clustered with exact copies
    (duplicate tables tie in score, copied query columns have similarity 1)."""
    rng = np.random.default_rng(seed)
    if kind == "random":
        dim = int(rng.integers(3, 9))
        sizes = rng.integers(1, 7, size=int(rng.integers(20, 120)))
        vectors = rng.standard_normal((sizes.sum(), dim))
        vectors = (vectors / np.linalg.norm(vectors, axis=1, keepdims=True)).astype(np.float32)
        owner = np.repeat(np.arange(len(sizes)), sizes)
        ordinal = np.arange(len(owner)) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        queries = []
        for _ in range(4):
            q = rng.standard_normal((int(rng.integers(1, 7)), dim))
            queries.append((q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32))
        return vectors, owner, ordinal, queries
    model = lake_model(12, 30, 6, 8, max_columns=8, noise=(0.1, 0.8), stray=0.2, seed=seed)
    vectors, owner, ordinal = draw_tables(model, int(rng.integers(40, 160)), seed=seed + 1)
    queries = [draw_tables(model, 1, seed=seed + 2 + i)[0] for i in range(4)]
    if kind == "copies":
        n = owner.max() + 1
        copied = rng.choice(n, size=n // 3, replace=False)
        rows = np.concatenate([np.flatnonzero(owner == t) for t in copied])
        new_owner = np.concatenate([np.full(int((owner == t).sum()), n + i) for i, t in enumerate(copied)])
        vectors = np.concatenate([vectors, vectors[rows]])
        owner = np.concatenate([owner, new_owner])
        ordinal = np.concatenate([ordinal, ordinal[rows]])
        queries = [np.concatenate([q, vectors[rows[:2]]]) for q in queries]
    return vectors, owner, ordinal, queries


@pytest.mark.parametrize("share", [1.0, 0.0])  # the cone stream always / never within its budget
@pytest.mark.parametrize("kind", ["random", "clustered", "copies"])
@pytest.mark.parametrize("seed", range(12))
def test_default_returns_exacts_top_k(kind, seed, share, monkeypatch):
    # The default candidate generation cannot miss: pgtus++ and pgtus return exactly exact's top-k (ids, scores,
    # ties by id, alignments) for every tau and k, hence never fewer results than exact.
    monkeypatch.setattr(pgtus, "CONE_WORK_SHARE", share)
    vectors, owner, ordinal, queries = _lake_of(kind, seed)
    centroids, parts = partition_lake(vectors, owner, ordinal, seed=seed)
    index = UnionIndex.build(vectors, owner, ordinal, centroids, parts)
    for qi, query in enumerate(queries):
        for tau in (0.2, 0.5, 0.7, 0.9, 1.0):
            unionable = sum(unionability(query, vectors[owner == t], tau).score > 0 for t in np.unique(owner))
            for k in (1, 3, 10, 40):
                want = index.search(query, k, "exact", tau=tau)
                assert len(want.results) == min(k, unionable)
                for method in ("pgtus++", "pgtus"):
                    got = index.search(query, k, method, tau=tau)
                    assert [(r.table_id, r.score, r.alignment) for r in got.results] == \
                        [(r.table_id, r.score, r.alignment) for r in want.results], (method, qi, tau, k)
                    if got.stats.candidates_after_refinement:  # some table reachable: streamed or scored exhaustively
                        assert (got.stats.candidates_bounded > 0) == (share == 1.0)
                        assert got.stats.exhaustive == (share == 0.0)


@pytest.mark.parametrize("seed", range(6))
def test_approximate_method_is_capped_but_still_answers_k(setup, seed):
    # one centroid and one refined table per query column: the approximate candidates are few, yet the answer has
    # as many tables as exact's, and when it had to widen it is exact's
    model, lake, index = setup
    query, _, _ = draw_tables(model, 1, seed=700 + seed)
    for k in (5, 30):
        exact = index.search(query, k, "exact", tau=0.6)
        got = index.search(query, k, "pgtus++-approx", tau=0.6, phi_c=1, phi_ref=1)
        assert len(got.results) == len(exact.results)
        if len(exact.results) < k:
            assert [(r.table_id, r.score) for r in got.results] == [(r.table_id, r.score) for r in exact.results]
        exact_scores = {r.table_id: r.score for r in index.search(query, index.table_count, "exact", tau=0.6).results}
        assert all(exact_scores[r.table_id] == r.score for r in got.results)


@pytest.mark.parametrize("arrival", ["ranked", "table_id"])
@pytest.mark.parametrize("seed", range(8))
def test_ebbp_computes_no_more_exact_matchings_than_bbp(setup, arrival, seed, monkeypatch):
    # on the stream the default feeds (best first by cone bound, stopping at the floor) and in table-id order
    monkeypatch.setattr(pgtus, "CONE_WORK_SHARE", 1.0)
    model, _, index = setup
    query, _, _ = draw_tables(model, 1, seed=800 + seed)
    for tau in (0.5, 0.7):
        for k in (1, 5, 20):
            enhanced = index.search(query, k, "pgtus++", tau=tau, arrival=arrival)
            base = index.search(query, k, "pgtus", tau=tau, arrival=arrival)
            assert [(r.table_id, r.score) for r in enhanced.results] == [(r.table_id, r.score) for r in base.results]
            assert enhanced.stats.exact_matchings <= base.stats.exact_matchings
            assert enhanced.stats.exact_matchings >= len(enhanced.results)


def test_excluding_the_query_table(setup):
    _, lake, index = setup
    rows = np.flatnonzero(lake.column_table_ids == 17)
    query = lake.column_vectors[rows]
    for method in ("exact", "pgtus++", "pgtus", "pgtus++-approx", "starmie", "tactus"):
        res = index.search(query, 5, method, exclude_table_id=17, query_table_vector=lake.table_vectors[17])
        assert 17 not in [r.table_id for r in res.results]
    assert index.search(query, 1, "exact").results[0].table_id == 17


def literal_cut(scores, k, tau_abs, tau_drop):
    cut = min(k, len(scores))
    for i in range(k + 1, len(scores) + 1):
        if scores[i - 1] < tau_abs or scores[i - 2] - scores[i - 1] > tau_drop:
            return i - 1
        cut = i
    return cut


@pytest.mark.parametrize("seed", range(100))
def test_adaptive_cut(seed):
    rng = np.random.default_rng(seed)
    k = int(rng.integers(1, 6))
    scores = np.sort(rng.uniform(0.0, 1.0, size=int(rng.integers(0, 3 * k + 1))))[::-1]
    assert adaptive_cut(scores, k, 0.5, 0.2) == literal_cut(scores, k, 0.5, 0.2)


def test_tactus_scores_are_dual_evidence(setup):
    model, lake, index = setup
    query, owner, _ = draw_tables(model, 1, seed=77)
    tq = table_vectors_of(query, owner, 1)[0]
    res = index.search(query, 5, "tactus", query_table_vector=tq)
    assert res.score_kind == "dual_evidence" and 1 <= len(res.results) <= 5
    for r in res.results:
        rows = np.flatnonzero(lake.column_table_ids == r.table_id)
        sims = query @ lake.column_vectors[rows].T
        mu_t = float(tq @ lake.table_vectors[r.table_id])
        assert r.score == pytest.approx(mu_t + sims.max(axis=1).mean(), abs=1e-5)
        assert [a[2] for a in r.alignment] == pytest.approx(list(sims.max(axis=1)), abs=1e-6)
    scores = [r.score for r in res.results]
    assert scores == sorted(scores, reverse=True)


def test_bad_input(setup):
    _, _, index = setup
    with pytest.raises(ValueError):
        index.search(np.ones((2, 3)), 5)
    with pytest.raises(ValueError):
        index.search(np.ones((2, 16)), 5, "nope")
    with pytest.raises(ValueError):
        index.search(np.ones((2, 16)), 5, "tactus")


@pytest.mark.parametrize("seed", range(5))
def test_exact_with_competing_pairs_equals_brute_force(seed):
    # few domains and many stray columns: tables hold several columns of one domain, so admissible pairs compete
    model = lake_model(8, 6, 2, 6, max_columns=6, noise=(0.05, 0.3), stray=0.5, seed=40 + seed)
    lake = generate_lake(model, 60, seed=50 + seed)
    centroids, parts = build_index_inputs(lake, 4)
    index = UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids, parts)
    query, _, _ = draw_tables(model, 1, seed=60 + seed)
    got = index.search(query, 8, "exact", tau=0.6)
    want = brute_top(lake, query, 8, 0.6)
    assert [r.table_id for r in got.results] == [t for t, _ in want]
    np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-6)
    assert 0 < got.stats.assignments_solved <= got.stats.exact_matchings
    for method, params in (("pgtus", {}), ("pgtus++", {}), ("pgtus++-approx", {"phi_c": 4, "phi_ref": 60})):
        for arrival in ("ranked", "table_id"):
            res = index.search(query, 8, method, tau=0.6, arrival=arrival, **params)
            assert [(r.table_id, r.alignment) for r in res.results] == [(r.table_id, r.alignment) for r in got.results]


@pytest.mark.parametrize("method", ["pgtus", "pgtus++", "pgtus++-approx", "starmie"])
def test_arrival_order_changes_work_not_results(setup, method, monkeypatch):
    monkeypatch.setattr(pgtus, "CONE_WORK_SHARE", 1.0)  # pgtus / pgtus++ stream in both orders
    model, lake, index = setup
    query, _, _ = draw_tables(model, 1, seed=31)
    params = dict(phi_c=20, phi_ref=index.table_count, k_prime=len(lake.column_vectors))
    ranked = index.search(query, 6, method, **params)
    by_id = index.search(query, 6, method, arrival="table_id", **params)
    assert [(r.table_id, r.score) for r in ranked.results] == [(r.table_id, r.score) for r in by_id.results]
    assert by_id.stats.candidates_after_refinement == ranked.stats.candidates_after_refinement


def test_phi_r_and_arrival_are_checked(setup, monkeypatch):
    monkeypatch.setattr(pgtus, "CONE_WORK_SHARE", 1.0)
    model, _, index = setup
    query, _, _ = draw_tables(model, 1, seed=32)
    with pytest.raises(ValueError):
        index.search(query, 5, "pgtus++", phi_r=4)
    with pytest.raises(ValueError):
        index.search(query, 5, "pgtus++", arrival="random")
    wide = index.search(query, 5, "pgtus++", phi_r=15)
    narrow = index.search(query, 5, "pgtus++")
    assert [r.table_id for r in wide.results] == [r.table_id for r in narrow.results]
    assert narrow.stats.exact_matchings <= wide.stats.exact_matchings
