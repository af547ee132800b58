"""The served join index is exact on the numbers it stores: float32 pivot distances read back from rows.

A pivot that is a value of the query column (pivots are lake values) sits at distance 0 from that query vector, so
Lemma 1 compares the stored float32 ``d(x, p)`` with tau directly: a pair at distance exactly tau is lost if the
stored distance rounded up by more than the slack, and Lemma 2 accepts a pair just beyond tau if it rounded down.
These pairs go through the production path: ``pivot_mappings`` rows as the pivots stage writes them
(:func:`mapping_rows`) and the index the service builds from rows (:func:`index_from_rows`).
"""
import numpy as np
import pyarrow as pa
import pytest

from discovery.indexes.join import METHODS
from discovery.indexes.join.metric import canonical_squared
from discovery.indexes.join.pivots import map_to_pivots
from discovery.indexes.join.stage import COLUMN_KEY_BASE, index_from_rows
from join_data import brute_force, stored_rows, unit

DIM = 16


def _served_index(lake: np.ndarray, keys: np.ndarray, pivots: np.ndarray):
    """Index built as the service builds it, from rows as the pivots stage writes them."""
    model, vv, rows = stored_rows(lake, keys, pivots)
    assert rows.schema.field("distances").type == pa.list_(pa.float32())
    return index_from_rows(rows, vv, model)


def _rounding(x: np.ndarray, pivot: np.ndarray) -> float:
    """Stored (float32) minus float64 pivot distance of ``x``."""
    d = map_to_pivots(x[None], pivot[None])[0, 0]
    return float(np.float32(d)) - d


def _boundary_pairs(rng, query: np.ndarray, want_up: bool, n: int = 4000):
    """Lake vectors 0.6-1.3 away from ``query`` whose stored distance to it rounds up (or down) by over 1e-8."""
    directions = unit(rng.normal(size=(n, DIM)))
    found = []
    for s, r in zip(rng.uniform(0.8, 3.0, n), directions):
        x = unit((query + s * r)[None])[0]
        err = _rounding(x, query)
        if (err > 1e-8) if want_up else (err < -1e-8):
            found.append(x)
    return found


def _lake(rng, special: np.ndarray):
    """The special vector alone in column 0 of table 1, plus 300 random vectors in 30 columns of table 2."""
    filler = unit(rng.normal(size=(300, DIM)))
    keys = np.r_[1 * COLUMN_KEY_BASE, 2 * COLUMN_KEY_BASE + np.arange(300) % 30]
    return np.vstack([special[None], filler]), keys


@pytest.mark.parametrize("seed", range(3))
def test_pair_at_exactly_tau_with_the_pivot_at_the_query_is_found(seed):
    rng = np.random.default_rng(seed)
    query = unit(rng.normal(size=(1, DIM)))[0]
    tried = 0
    for x in _boundary_pairs(rng, query, want_up=True)[:20]:
        lake, keys = _lake(rng, x)
        pivots = np.vstack([query, lake[1 + rng.choice(300, 2, replace=False)]])
        index = _served_index(lake, keys, pivots)
        chord = float(np.sqrt(canonical_squared(x[None], query[None])[0]))
        tau = chord / 2.0                       # tau as a fraction of the maximum distance 2: the chord exactly
        expected = brute_force(lake, keys, query[None], tau, 1.0)
        if canonical_squared(x[None], query[None])[0] > chord * chord or keys[0] not in expected:
            continue                            # the two float64 sums disagree on this boundary: not decisive
        tried += 1
        for method in METHODS:
            assert index.search(query[None], tau, 1.0, method=method).joinabilities() == expected, method
            assert index.search(query[None], tau, method=method, top_k=40).joinabilities() == expected, method
    assert tried >= 5


@pytest.mark.parametrize("seed", range(3))
def test_pair_just_beyond_tau_is_not_matched_by_a_rounded_down_distance(seed):
    rng = np.random.default_rng(100 + seed)
    query = unit(rng.normal(size=(1, DIM)))[0]
    tried = 0
    for x in _boundary_pairs(rng, query, want_up=False)[:20]:
        lake, keys = _lake(rng, x)
        pivots = np.vstack([query, lake[1 + rng.choice(300, 2, replace=False)]])
        index = _served_index(lake, keys, pivots)
        chord = float(np.sqrt(canonical_squared(x[None], query[None])[0]))
        tau = (chord - 1e-12) / 2.0             # just below the pair's distance, above its stored pivot distance
        expected = brute_force(lake, keys, query[None], tau, 1.0)
        assert keys[0] not in expected
        tried += 1
        for method in METHODS:
            assert index.search(query[None], tau, 1.0, method=method).joinabilities() == expected, method
            assert index.search(query[None], tau, method=method, top_k=40).joinabilities() == expected, method
    assert tried >= 5
