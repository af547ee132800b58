"""PEXESO verification on threads returns exactly what one thread and brute force return: the same columns, counts,
order and witness pairs (what the context order reads), for threshold and top-k search (with ties, with a slack), and
with query values given as several vectors; the inputs are small, so the per-thread minimum is lowered to split them."""
import threading

import numpy as np
import pytest

from discovery.ground import threads
from discovery.indexes.join import JoinIndex, select_pivots
from discovery.indexes.join import verification
from discovery.indexes.join.cost import CANDIDATES, choose_parameters
from join_data import brute_force, clustered_lake, query_from, top_k_reference, unit


@pytest.fixture
def split(monkeypatch):
    """Set the thread count; records how many parts each pass of verification ran."""
    parts = []
    run_parts = verification.run_parts

    def counted(work, items):
        items = list(items)
        parts.append(len(items))
        return run_parts(work, items)

    monkeypatch.setattr(verification, "MIN_PAIRS_PER_THREAD", 1)
    monkeypatch.setattr(verification, "run_parts", counted)

    def set_threads(n):
        monkeypatch.setattr(threads, "_threads", [n])
        parts.clear()
        return parts
    return set_threads


def _answer(result):
    return [(c.column_id, c.matches, c.joinability, c.pairs.tolist()) for c in result.columns]


def _tied_lake(rng, n_entities=90, n_cols=60, dim=16):
    """Columns of copies of well-separated entities (tau 0.2 matches a query value only with its own entity): counts
    are set intersections, and many columns tie."""
    entities = unit(rng.normal(size=(n_entities, dim)))
    sizes = rng.choice([8, 8, 12, 30], n_cols)
    picks = [rng.choice(n_entities, s, replace=False) for s in sizes]
    ids = np.concatenate([np.full(p.size, 3 * c + 1) for c, p in enumerate(picks)])
    return entities[np.concatenate(picks)], ids, entities[rng.choice(n_entities, 40, replace=False)]


@pytest.mark.parametrize("seed", range(6))
def test_threads_return_the_one_thread_answer_and_brute_force(split, seed):
    rng = np.random.default_rng(seed)
    if seed % 2:
        lake, ids, query = _tied_lake(rng)
        settings = [(0.1, 0.0), (0.1, 0.2)]
    else:
        lake, ids, entities = clustered_lake(rng)
        query = query_from(rng, entities, 60)
        settings = [(0.06, 0.2), (0.1, 0.0), (0.2, 0.5)]
    index = JoinIndex.build(lake, ids, select_pivots(lake, 3, seed=seed), levels=3)
    for tau, T in settings:
        full = brute_force(lake, ids, query, tau, 0.0)
        asks = [dict(T=T), dict(T=T, exact_joinability=False)]
        asks += [dict(top_k=k, slack=s, pool=p) for k, s, p in [(1, 0, None), (3, 0, None), (5, 2, 9), (10, 3, 40)]]
        for ask in asks:
            split(1)
            one = index.search(query, tau, **ask)
            for n in (2, 3, 7):
                parts = split(n)
                many = index.search(query, tau, **ask)
                assert _answer(many) == _answer(one), (tau, ask, n)
                assert max(parts) > 1
            if "top_k" in ask and not ask["slack"]:
                assert one.joinabilities() == top_k_reference(full, ask["top_k"]), (tau, ask)
            elif "top_k" not in ask and ask.get("exact_joinability", True):
                assert one.joinabilities() == brute_force(lake, ids, query, tau, T), (tau, ask)


@pytest.mark.parametrize("seed", range(3))
def test_threads_count_values_given_as_several_vectors(split, seed):
    """A value's vectors (its segments) may fall in different ranges of sorted vectors: values, not vectors, are what
    the ranges cut."""
    rng = np.random.default_rng(seed)
    lake, ids, entities = clustered_lake(rng)
    query = query_from(rng, entities, 80)
    value_ids = rng.integers(0, 30, size=len(query)) * 5 + 2
    index = JoinIndex.build(lake, ids, select_pivots(lake, 4, seed=seed), levels=3)
    for ask in (dict(T=0.1), dict(top_k=4, slack=1, pool=12)):
        split(1)
        one = index.search(query, 0.1, value_ids=value_ids, **ask)
        assert one.columns
        parts = split(3)
        assert _answer(index.search(query, 0.1, value_ids=value_ids, **ask)) == _answer(one)
        assert max(parts) > 1
    value_of = np.unique(value_ids, return_inverse=True)[1]
    expected = brute_force(lake, ids, query, 0.1, 0.1, value_of=value_of)
    assert index.search(query, 0.1, 0.1, value_ids=value_ids).joinabilities() == expected


def test_value_ranges_cut_at_about_equal_pairs(monkeypatch):
    monkeypatch.setattr(verification, "MIN_PAIRS_PER_THREAD", 10)
    before = np.concatenate(([0], np.cumsum([5, 30, 5, 5, 5, 30, 0, 20])))
    assert verification._value_ranges(before, 1).tolist() == [0, 8]
    assert verification._value_ranges(before, 2).tolist() == [0, 5, 8]      # 50 pairs each
    cuts = verification._value_ranges(before, 100)                            # at most one range per value
    assert cuts[0] == 0 and cuts[-1] == 8 and (np.diff(cuts) > 0).all() and len(cuts) - 1 <= 8
    monkeypatch.setattr(verification, "MIN_PAIRS_PER_THREAD", 40)
    assert len(verification._value_ranges(before, 100)) - 1 == 2              # 100 pairs: 2 ranges of at least 40
    assert verification._value_ranges(np.zeros(4, np.int64), 4).tolist() == [0, 3]


def test_the_cost_model_counts_on_one_thread_whatever_the_process_runs_on(split):
    """Several threads verify some columns further than one would, by how they interleave, so PEXESO's cost model
    counts on the calling thread only: the same sample makes the same choice, with the same costs, on any machine."""
    lake, ids, _ = clustered_lake(np.random.default_rng(3), n_cols=40, dim=16)
    parts = split(4)
    on_four = choose_parameters(lake, ids, 10 * len(lake), 0.06, "euclidean", 0, CANDIDATES[:6])
    assert parts and max(parts) == 1
    split(1)
    assert on_four == choose_parameters(lake, ids, 10 * len(lake), 0.06, "euclidean", 0, CANDIDATES[:6])


def test_threads_of_this_caller_hold_only_on_the_calling_thread(split):
    split(3)
    seen = []
    with threads.threads_of_this_caller(1):
        seen.append(threads.query_threads())
        other = threading.Thread(target=lambda: seen.append(threads.query_threads()))
        other.start()
        other.join()
    seen.append(threads.query_threads())
    assert seen == [1, 3, 3]
