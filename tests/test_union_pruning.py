"""BBP (Algorithm 4) and EBBP (Algorithm 5) return exactly the exhaustive top-k over the same candidates."""
import numpy as np
import pytest

from discovery.union import UnionIndex
from discovery.union.pruning import base_prune, enhanced_prune
from discovery.union.synthetic import build_index_inputs, draw_tables, generate_lake, lake_model


def exhaustive(scores, ties, keep):
    order = sorted(range(len(scores)), key=lambda c: (-scores[c], ties[c]))
    return [(int(c), float(scores[c])) for c in order[:keep]]


def run(prune, order, lower, upper, ties, scores, keep):
    ranked, exact = prune(order, lower, upper, ties, lambda c: (float(scores[c]), None), keep)
    return [(r.candidate, r.score) for r in ranked], exact


@pytest.mark.parametrize("seed", range(200))
def test_random_intervals(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    scores = rng.uniform(0, 10, size=n)
    if seed % 2:
        scores = np.round(scores)  # ties
    lower = scores - rng.exponential(1.0, size=n) * (rng.random(n) < 0.8)
    upper = scores + rng.exponential(2.0, size=n) * (rng.random(n) < 0.8)
    ties = rng.permutation(n) + 100
    keep = int(rng.integers(1, 12))
    order = rng.permutation(n)
    want = exhaustive(scores, ties, keep)
    bbp, n_bbp = run(base_prune, order, lower, upper, ties, scores, keep)
    ebbp, n_ebbp = run(enhanced_prune, order, lower, upper, ties, scores, keep)
    assert bbp == want
    assert ebbp == want
    assert n_bbp <= n and n_ebbp <= n


@pytest.fixture(scope="module")
def lake_index():
    model = lake_model(16, 60, 10, 10, max_columns=10, seed=5)
    lake = generate_lake(model, 600, seed=6)
    centroids, parts = build_index_inputs(lake, 20)
    return model, UnionIndex.build(lake.column_vectors, lake.column_table_ids, lake.column_ordinals, centroids,
                                   parts)


@pytest.mark.parametrize("seed", range(10))
def test_real_bounds_over_refined_candidates(lake_index, seed):
    model, index = lake_index
    query, _, _ = draw_tables(model, 1, seed=500 + seed)
    rng = np.random.default_rng(seed)
    tix = rng.permutation(index.table_count)[:200]
    lower, upper = index._candidate_bounds(query, 0.7, tix)
    scores = np.array([index._score(query, t, 0.7)[0] for t in tix])
    ties = index.table_ids[tix]
    for keep in (1, 5, 30):
        want = exhaustive(scores, ties, keep)
        assert run(base_prune, range(len(tix)), lower, upper, ties, scores, keep)[0] == want
        assert run(enhanced_prune, range(len(tix)), lower, upper, ties, scores, keep)[0] == want
