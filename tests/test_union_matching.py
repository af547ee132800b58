"""Definition 5 (maximum t-matching, then maximum weight) against brute-force enumeration of all matchings."""
import itertools

import numpy as np
import pytest

from discovery.indexes.union.matching import (match_similarities, screened_similarities, similarity_matrix,
                                              unionability, unit_rows)


def brute_force(sim: np.ndarray, tau: float) -> tuple[int, float]:
    """(maximum number of admissible pairs, best weight among matchings with that many) by enumeration."""
    q, m = sim.shape
    best = (0, 0.0)
    for size in range(1, min(q, m) + 1):
        for rows in itertools.combinations(range(q), size):
            for cols in itertools.permutations(range(m), size):
                vals = sim[list(rows), list(cols)]
                if np.all(vals >= tau):
                    best = max(best, (size, float(vals.sum())))
    return best


@pytest.mark.parametrize("seed", range(300))
def test_exact_equals_enumeration(seed):
    rng = np.random.default_rng(seed)
    q, m = rng.integers(1, 5, size=2)
    sim = rng.uniform(-0.2, 1.0, size=(q, m))
    if seed % 3 == 0:
        sim = np.round(sim, 1)  # many ties
    tau = float(rng.choice([0.3, 0.5, 0.7]))
    card, weight = brute_force(sim, tau)
    got = match_similarities(sim, tau)
    assert got.score == pytest.approx(weight, abs=1e-9)
    assert len(got.pairs) == card
    rows = [p[0] for p in got.pairs]
    cols = [p[1] for p in got.pairs]
    assert len(set(rows)) == len(rows) and len(set(cols)) == len(cols)
    for r, c, s in got.pairs:
        assert s == sim[r, c] and s >= tau
    assert sum(s for _, _, s in got.pairs) == pytest.approx(got.score)


def test_cardinality_beats_weight():
    # one heavy pair versus two light ones: Definition 5 takes the two
    sim = np.array([[1.0, 0.75], [0.75, 0.0]])
    assert match_similarities(sim, 0.7).score == pytest.approx(1.5)


def test_vectors_and_determinism():
    rng = np.random.default_rng(7)
    a = rng.standard_normal((6, 16)).astype(np.float32)
    b = np.vstack([a[:3] + 0.05 * rng.standard_normal((3, 16)), rng.standard_normal((4, 16))]).astype(np.float32)
    a /= np.linalg.norm(a, axis=1, keepdims=True)
    b /= np.linalg.norm(b, axis=1, keepdims=True)
    first = unionability(a, b, 0.5)
    assert first == unionability(a, b, 0.5)
    assert {p[0] for p in first.pairs} >= {0, 1, 2}
    assert unionability(a[:0], b, 0.5).score == 0.0


@pytest.mark.parametrize("seed", range(20))
def test_screened_similarities_are_exact_wherever_they_reach_tau(seed):
    # the candidates' similarities are a float32 product with the entries near or above tau recomputed: every entry
    # >= tau is the float64 product's, every other entry is below tau, whatever the shape of the product
    rng = np.random.default_rng(seed)
    dim = int(rng.integers(2, 70))
    base = rng.standard_normal((3, dim))
    q, m = int(rng.integers(1, 9)), int(rng.integers(1, 300))
    query = unit_rows(base[rng.integers(3, size=q)] + 0.5 * rng.standard_normal((q, dim)) / np.sqrt(dim))
    noise = rng.uniform(0.1, 1.0) * rng.standard_normal((m, dim)) / np.sqrt(dim)
    lake = unit_rows(base[rng.integers(3, size=m)] + noise)
    for tau in (0.2, 0.5, 0.8, 0.95):
        full = similarity_matrix(query, lake)
        screened = screened_similarities(query, lake, tau)
        np.testing.assert_array_equal(screened >= tau, full >= tau)
        np.testing.assert_array_equal(screened[full >= tau], full[full >= tau])
