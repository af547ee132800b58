"""End-to-end union search on a small generated lake: exactness of exact/PGTUS/PGTUS++/Starmie and TACTUS rules."""
import numpy as np
import pytest

from discovery.union import UnionIndex, unionability
from discovery.union.synthetic import (build_index_inputs, draw_tables, generate_lake, lake_model,
                                       table_vectors_of)
from discovery.union.tactus import adaptive_cut


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
    want = brute_top(lake, query, 7, 0.7)
    assert [r.table_id for r in got.results] == [t for t, _ in want]
    np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-5)
    for r in got.results:
        assert sum(s for _, _, s in r.alignment) == pytest.approx(r.score)


@pytest.mark.parametrize("method", ["pgtus", "pgtus++", "starmie"])
@pytest.mark.parametrize("seed", range(4))
def test_pruned_methods_are_exact_given_full_candidates(setup, method, seed):
    model, lake, index = setup
    query, _, _ = draw_tables(model, 1, seed=950 + seed)
    got = index.search(query, 5, method, phi_c=20, phi_ref=index.table_count, k_prime=len(lake.column_vectors))
    want = brute_top(lake, query, 5, 0.7)
    assert [r.table_id for r in got.results] == [t for t, _ in want]
    np.testing.assert_allclose([r.score for r in got.results], [s for _, s in want], atol=1e-5)
    assert got.stats.exact_matchings <= got.stats.candidates_after_refinement


def test_excluding_the_query_table(setup):
    _, lake, index = setup
    rows = np.flatnonzero(lake.column_table_ids == 17)
    query = lake.column_vectors[rows]
    for method in ("exact", "pgtus++", "starmie", "tactus"):
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
    for method in ("pgtus", "pgtus++"):
        for arrival in ("ranked", "table_id"):
            res = index.search(query, 8, method, tau=0.6, phi_c=4, phi_ref=index.table_count, arrival=arrival)
            assert [(r.table_id, r.alignment) for r in res.results] == [(r.table_id, r.alignment) for r in got.results]


@pytest.mark.parametrize("method", ["pgtus", "pgtus++", "starmie"])
def test_arrival_order_changes_work_not_results(setup, method):
    model, lake, index = setup
    query, _, _ = draw_tables(model, 1, seed=31)
    params = dict(phi_c=20, phi_ref=index.table_count, k_prime=len(lake.column_vectors))
    ranked = index.search(query, 6, method, **params)
    by_id = index.search(query, 6, method, arrival="table_id", **params)
    assert [(r.table_id, r.score) for r in ranked.results] == [(r.table_id, r.score) for r in by_id.results]
    assert by_id.stats.candidates_after_refinement == ranked.stats.candidates_after_refinement


def test_phi_r_and_arrival_are_checked(setup):
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
