"""The double-ended priority queue against a sorted-list model on random operation sequences."""
import bisect

import numpy as np
import pytest

from discovery.indexes.union.depq import DEPQ


@pytest.mark.parametrize("seed", range(40))
def test_random_operations_match_sorted_list(seed):
    rng = np.random.default_rng(seed)
    q = DEPQ()
    model: list[tuple[float, int]] = []  # sorted (key, item)
    next_item = 0
    for _ in range(600):
        op = rng.integers(6)
        if op <= 1 or not model:
            key = float(rng.integers(0, 20))  # small key range: many ties
            item = next_item if rng.random() < 0.8 or not next_item else int(rng.integers(next_item))
            if any(i == item for _, i in model):
                item = next_item
            next_item = max(next_item, item + 1)
            q.push(item, key)
            bisect.insort(model, (key, item))
        elif op == 2:
            item, key = q.pop_min()
            assert (key, item) == model.pop(0)
        elif op == 3:
            item, key = q.pop_max()
            assert (key, item) == model.pop()
        elif op == 4:
            key, item = model.pop(int(rng.integers(len(model))))
            q.remove(item)
        else:
            assert q.peek_min() == (model[0][1], model[0][0])
            assert q.peek_max() == (model[-1][1], model[-1][0])
        assert len(q) == len(model)
        for key, item in model[:3]:
            assert item in q and q.key(item) == key
    while model:
        assert q.pop_max() == (model[-1][1], model[-1][0])
        model.pop()
    with pytest.raises(IndexError):
        q.pop_min()


def test_reinserted_item_is_not_shadowed_by_its_tombstone():
    q = DEPQ()
    q.push(1, 5.0)
    q.push(2, 3.0)
    q.remove(1)
    q.push(1, 5.0)
    assert q.pop_max() == (1, 5.0)
    assert q.pop_max() == (2, 3.0)
    assert len(q) == 0


def test_memory_stays_bounded_under_churn():
    q = DEPQ()
    for i in range(5000):
        q.push(i, float(i % 97))
        if i >= 10:
            q.remove(i - 10)
    assert len(q) == 10
    assert len(q._min) + len(q._max) <= 2 * 10 + 2 * (10 + 17)
