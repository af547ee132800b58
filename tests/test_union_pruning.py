"""BBP (Algorithm 4) and EBBP (Algorithm 5) return exactly the exhaustive top-k over the same candidates."""
import numpy as np
import pytest

from discovery.indexes.union import UnionIndex
from discovery.indexes.union.pruning import BasePruner, EnhancedPruner, base_prune, enhanced_prune, stream_prune
from synthetic_lake import build_index_inputs, draw_tables, generate_lake, lake_model


def exhaustive(scores, ties, keep):
    order = sorted(range(len(scores)), key=lambda c: (-scores[c], ties[c]))
    return [(int(c), float(scores[c])) for c in order[:keep]]


def run(prune, order, lower, upper, ties, scores, keep):
    scored = []

    def scorer(c):
        scored.append(int(c))
        return float(scores[c]), None

    ranked, exact = prune(order, lower, upper, ties, scorer, keep)
    assert exact == len(scored) == len(set(scored))  # each candidate scored at most once, and every scoring counted
    return [(r.candidate, r.score) for r in ranked], set(scored)


def random_candidates(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 80))
    scores = rng.uniform(0, 10, size=n)
    if seed % 2:
        scores = np.round(scores)  # ties
    lower = scores - rng.exponential(1.0, size=n) * (rng.random(n) < 0.8)
    upper = scores + rng.exponential(2.0, size=n) * (rng.random(n) < 0.8)
    ties = rng.permutation(n) + 100
    keep = int(rng.integers(1, 12))
    # arrival: random, best upper bound first, or by table id (a scan of partitions in storage order)
    order = [rng.permutation(n), np.lexsort((ties, -upper)), np.argsort(ties)][seed % 3]
    return scores, lower, upper, ties, keep, order


@pytest.mark.parametrize("seed", range(300))
def test_random_intervals(seed):
    scores, lower, upper, ties, keep, order = random_candidates(seed)
    want = exhaustive(scores, ties, keep)
    bbp, scored_bbp = run(base_prune, order, lower, upper, ties, scores, keep)
    ebbp, scored_ebbp = run(enhanced_prune, order, lower, upper, ties, scores, keep)
    assert bbp == want
    assert ebbp == want
    # theta = the keep-th best score: no algorithm can settle the top-keep without scoring every candidate whose upper
    # bound exceeds it; BBP scores all of those plus its first keep arrivals, EBBP only candidates reaching theta
    theta = want[-1][1] if len(want) == keep else -np.inf
    reach = {int(c) for c in np.flatnonzero(upper >= theta)}
    assert scored_bbp >= reach | {int(c) for c in order[:keep]}
    assert {int(c) for c in np.flatnonzero(upper > theta)} <= scored_ebbp <= reach


@pytest.mark.parametrize("seed", range(300))
def test_ebbp_computes_no_more_exact_matchings_than_bbp_on_the_same_stream(seed):
    # the paper's claim for EBBP (Algorithm 5) against BBP (Algorithm 4), on random streams with many ties
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 15))
    scores = rng.integers(0, 10, size=n).astype(float)
    lower = scores - rng.integers(0, 4, size=n)
    upper = scores + rng.integers(0, 5, size=n)
    ties = rng.permutation(n)
    keep = int(rng.integers(1, 5))
    for order in (rng.permutation(n), np.argsort(ties), np.lexsort((ties, -upper))):
        _, scored_bbp = run(base_prune, order, lower, upper, ties, scores, keep)
        _, scored_ebbp = run(enhanced_prune, order, lower, upper, ties, scores, keep)
        assert len(scored_ebbp) <= len(scored_bbp)


@pytest.mark.parametrize("pruner_type", [BasePruner, EnhancedPruner])
@pytest.mark.parametrize("seed", range(40))
def test_stream_stops_at_the_floor(pruner_type, seed):
    rng = np.random.default_rng(seed)
    n, keep = 1000, int(rng.integers(1, 6))
    scores = np.sort(rng.uniform(0, 100, size=n))[::-1]  # exact bounds, distinct scores, best first
    ties = np.arange(n)
    batches = []

    def materialise(cands):
        batches.append(cands.tolist())
        return [(int(c), float(scores[c]), float(scores[c])) for c in cands]

    pruner = pruner_type(keep, ties, lambda c: (float(scores[c]), None))
    shuffled = rng.permutation(n)  # keys in any order: the stream picks them best first
    assert stream_prune(pruner, scores[shuffled], lambda c: materialise(shuffled[c]), 8) == (8, True)
    assert [(r.candidate, r.score) for r in pruner.finish()] == exhaustive(scores, ties, keep)
    assert batches == [list(range(8))]  # the 9th best key < the keep-th score: nothing after the first batch
    assert pruner.exact == keep


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
    lower, upper = index.candidate_bounds(query, 0.7, tix)
    scores = np.array([index.score(query, t, 0.7)[0] for t in tix])
    ties = index.table_ids[tix]
    for keep in (1, 5, 30):
        want = exhaustive(scores, ties, keep)
        for order in (np.arange(len(tix)), np.lexsort((ties, -upper))):
            bbp, scored_bbp = run(base_prune, order, lower, upper, ties, scores, keep)
            ebbp, scored_ebbp = run(enhanced_prune, order, lower, upper, ties, scores, keep)
            assert bbp == want and ebbp == want
            assert len(scored_ebbp) <= len(scored_bbp)


def test_stream_reports_when_it_would_pass_its_budget():
    scores = np.linspace(9.0, 1.0, 100)
    keys = np.full(100, 10.0)  # loose bounds: the floor never rises above the keys
    offered = []

    def materialise(cands):
        offered.extend(cands.tolist())
        return [(int(c), 0.0, 10.0) for c in cands]

    def pruner():
        return EnhancedPruner(3, np.arange(100), lambda c: (float(scores[c]), None))

    # the first batch (0-8) sets the floor; 100 candidates still reach it, costing more than 40
    assert stream_prune(pruner(), keys, materialise, 8, np.ones(100), 40) == (8, False)
    assert offered == list(range(8))
    offered.clear()
    assert stream_prune(pruner(), keys, materialise, 8, np.ones(100), 7) == (0, False)  # not even the first batch
    assert offered == []
    assert stream_prune(pruner(), keys, materialise, 8, np.ones(100), 100) == (100, True)
    assert offered == list(range(100))  # equal keys: by candidate
