"""Metrics of the numerical join: canonical chords, unit conversions, the boundary band."""
import numpy as np
import pytest

from discovery.indexes.numjoin.metric import (EARTH_RADIUS_M, chord_pairwise, chord_rows, chord_to_many, get_metric,
                                              pair_chord, raw_rows)


def test_compiled_and_numpy_chords_have_the_same_bits():
    rng = np.random.default_rng(0)
    a, b = rng.normal(size=(50, 20)) * 1e3, rng.normal(size=(60, 20))
    pw = chord_pairwise(a, b)
    compiled = np.array([[pair_chord(a, i, b, k) for k in range(60)] for i in range(50)])
    assert np.array_equal(pw, compiled)
    assert np.array_equal(pw[3], chord_to_many(a[3], b))
    assert np.array_equal(np.diag(pw[:50, :50]), chord_rows(a, b[:50]))


def test_absolute_is_the_exact_difference():
    m = get_metric("absolute")
    a, b = np.array([0.1, 1e9, -3.0, 7.0]), np.array([0.3, 1e9 + 1.5, 4.0, 7.0])
    assert np.array_equal(m.distance(a, b), np.abs(a - b))


def test_haversine_against_the_textbook_formula():
    m = get_metric("haversine")
    rng = np.random.default_rng(1)
    a = np.column_stack([rng.uniform(-89, 89, 200), rng.uniform(-180, 180, 200)])
    b = np.column_stack([rng.uniform(-89, 89, 200), rng.uniform(-180, 180, 200)])
    la1, lo1, la2, lo2 = map(np.radians, (a[:, 0], a[:, 1], b[:, 0], b[:, 1]))
    h = np.sin((la2 - la1) / 2) ** 2 + np.cos(la1) * np.cos(la2) * np.sin((lo2 - lo1) / 2) ** 2
    ref = 2 * EARTH_RADIUS_M * np.arcsin(np.sqrt(h))
    np.testing.assert_allclose(m.distance(a, b), ref, rtol=1e-9, atol=1e-3)
    # one degree of latitude
    assert abs(m.distance([[0.0, 0.0]], [[1.0, 0.0]])[0] - EARTH_RADIUS_M * np.pi / 180) < 1e-6
    with pytest.raises(ValueError, match="latitude"):
        m.prepare([[91.0, 0.0]])


def test_angular_is_the_arc_angle():
    m = get_metric("angular")
    d = m.distance([[1.0, 0.0], [1.0, 0.0], [1.0, 1.0]], [[0.0, 3.0], [-2.0, 0.0], [5.0, 5.0]])
    np.testing.assert_allclose(d, [np.pi / 2, np.pi, 0.0], atol=1e-12)
    with pytest.raises(ValueError, match="zero vector"):
        m.prepare([[0.0, 0.0]])


@pytest.mark.parametrize("name", ["angular", "haversine"])
def test_band_brackets_the_canonical_decision(name):
    m = get_metric(name)
    rng = np.random.default_rng(2)
    tau = 0.3 if name == "angular" else 2000.0
    c_lo, c_hi = m.chord_band(tau)
    c = m.to_chord(tau)
    chords = c * (1 + rng.uniform(-1e-6, 1e-6, 100000))
    ok = m.matches(chords, tau)
    assert ok[chords <= c_lo].all() and not ok[chords > c_hi].any()
    assert m.chord_band(10.0 * m.max_distance())[0] == np.inf


def test_identity_metrics_have_no_band_and_refuse_bad_tau():
    m = get_metric("euclidean")
    assert m.chord_band(2.5) == (2.5, 2.5)
    with pytest.raises(ValueError):
        m.chord_band(-1.0)
    with pytest.raises(ValueError, match="unknown metric"):
        get_metric("manhattan")
    with pytest.raises(ValueError, match="finite"):
        m.prepare([[np.nan, 1.0]])
    assert raw_rows(np.zeros((0, 2)), 0).shape == (0, 2)
