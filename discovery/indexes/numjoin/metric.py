"""Metrics of the numerical join (PEXESO 003 §II-A): one internal scale, the Euclidean distance of prepared vectors.

Every metric maps its values to vectors once (:meth:`Metric.prepare`) and from then on every method works on the
Euclidean distance between prepared vectors, the *chord*:

* ``absolute``: 1-d values, ``|a - b|`` in the column's units (a 1-d vector; ``sqrt(x * x) == |x|`` in IEEE
  arithmetic, so the chord is the absolute difference bit for bit).
* ``euclidean``: d-dim vectors, L2 in the vectors' units.
* ``angular``: d-dim vectors, the arc angle in radians between them (a metric, PEXESO 003 §V "L2 and angular").
  Prepared vectors are unit length; the chord ``c`` and the angle are tied by ``theta = 2 asin(c / 2)``.
* ``haversine``: (latitude, longitude) in degrees, the great-circle distance in metres on a sphere of radius
  :data:`EARTH_RADIUS_M`.  Prepared vectors are points of the unit sphere in 3-d; ``2 R asin(c / 2)`` is the
  haversine distance (the same central angle, computed from the chord, which is better conditioned for the short
  distances joins use than ``asin(sqrt(hav))``).

The chord is itself a metric (Euclidean in the prepared space) and an increasing function of the metric's distance,
so every triangle-inequality lemma runs on chords, and ``tau`` converts once to a chord bound.

Exactness.  A pair matches iff ``to_units(chord(a, b)) <= tau``, the chord computed by :func:`chord_rows` in float64
summing squared differences dimension by dimension in a fixed order (a function of the two rows only, so every method
gets the same bits; the compiled :func:`pair_chord` performs the same operations in the same order).  For the two
chord metrics the threshold becomes a band ``[c_lo, c_hi]`` (:meth:`Metric.chord_band`): chords at most ``c_lo``
certainly match, chords above ``c_hi`` certainly do not, and the few in between are decided by :meth:`Metric.matches`
itself, so every method takes the brute-force decision on every pair.  The lemmas never see an exact boundary:
:func:`slack` bounds the rounding of a chord and filters widen tau by three times it, matching narrows it.
"""
from __future__ import annotations

import numpy as np
from numba import njit

EARTH_RADIUS_M = 6371008.8
_U64 = float(np.finfo(np.float64).eps) / 2.0
#: Relative width of the chord band of the chord metrics: far above the few-ulp error of sin/asin.
_BAND = 1e-9


class Metric:
    """A metric on one kind of value: how values become prepared vectors, and chords become the metric's units."""

    #: name, units of tau and of reported distances, number of input columns (None: any)
    name = "euclidean"
    units = "vector units"
    input_dim: int | None = None

    def prepare(self, values) -> np.ndarray:
        x = np.asarray(values, dtype=np.float64)
        if x.ndim == 1:
            x = x.reshape(-1, 1) if self.input_dim in (None, 1) else x.reshape(-1, self.input_dim)
        if x.ndim != 2:
            raise ValueError(f"{self.name}: values must be a 1-d or 2-d array, got shape {x.shape}")
        if self.input_dim is not None and x.shape[1] != self.input_dim and x.shape[0]:
            raise ValueError(f"{self.name}: values need {self.input_dim} column(s), got {x.shape[1]}")
        if not np.isfinite(x).all():
            raise ValueError(f"{self.name}: values must be finite (drop nulls before indexing)")
        return np.ascontiguousarray(self._prepare(x))

    def _prepare(self, x: np.ndarray) -> np.ndarray:
        return x

    @property
    def identity(self) -> bool:
        """True when the prepared vectors are the values as given (absolute, euclidean): an index keeps one copy."""
        return type(self)._prepare is Metric._prepare

    def to_units(self, chord) -> np.ndarray:
        return np.asarray(chord, dtype=np.float64)

    def to_chord(self, distance: float) -> float:
        return float(distance)

    def max_distance(self) -> float | None:
        """Largest possible distance (None when unbounded)."""
        return None

    def chord_band(self, tau: float) -> tuple[float, float]:
        """``(c_lo, c_hi)``: chords ``<= c_lo`` match at ``tau`` for certain, chords ``> c_hi`` never do."""
        if not np.isfinite(tau) or tau < 0:
            raise ValueError(f"tau must be a finite distance >= 0 in {self.units}, got {tau}")
        return float(tau), float(tau)

    def matches(self, chords, tau: float) -> np.ndarray:
        """The canonical decision ``distance <= tau`` for canonical chords (what brute force computes)."""
        return self.to_units(chords) <= tau

    def distance(self, a, b) -> np.ndarray:
        """Distances in the metric's units between the values of rows ``a[i]`` and ``b[i]``."""
        return self.to_units(chord_rows(self.prepare(a), self.prepare(b)))

    def __repr__(self) -> str:
        return f"Metric({self.name!r})"


class Absolute(Metric):
    name, units, input_dim = "absolute", "column units", 1


class Euclidean(Metric):
    name, units, input_dim = "euclidean", "vector units", None


class _ChordMetric(Metric):
    """A metric whose distance is ``scale * 2 asin(chord / 2)`` on unit vectors."""

    scale = 1.0

    def to_units(self, chord) -> np.ndarray:
        c = np.asarray(chord, dtype=np.float64)
        return self.scale * 2.0 * np.arcsin(np.minimum(c / 2.0, 1.0))

    def to_chord(self, distance: float) -> float:
        return float(2.0 * np.sin(min(distance / self.scale, np.pi) / 2.0))

    def max_distance(self) -> float:
        return float(np.pi * self.scale)

    def chord_band(self, tau: float) -> tuple[float, float]:
        super().chord_band(tau)
        if tau >= self.max_distance():
            return np.inf, np.inf
        c = self.to_chord(tau)
        return c * (1.0 - _BAND), c * (1.0 + _BAND) + 1e-300


class Angular(_ChordMetric):
    name, units, input_dim = "angular", "radians", None

    def _prepare(self, x):
        norms = np.sqrt(np.einsum("ij,ij->i", x, x))
        if np.any(norms == 0):
            raise ValueError("angular: the zero vector has no direction")
        return x / norms[:, None]


class Haversine(_ChordMetric):
    name, units, input_dim = "haversine", "metres", 2
    scale = EARTH_RADIUS_M

    def _prepare(self, x):
        lat, lon = x[:, 0], x[:, 1]
        if np.any(np.abs(lat) > 90) or np.any(np.abs(lon) > 360):
            raise ValueError("haversine: values must be (latitude, longitude) in degrees")
        la, lo = np.radians(lat), np.radians(lon)
        return np.stack([np.cos(la) * np.cos(lo), np.cos(la) * np.sin(lo), np.sin(la)], axis=1)


METRICS: dict[str, Metric] = {m.name: m for m in (Absolute(), Euclidean(), Angular(), Haversine())}


def get_metric(metric: str | Metric) -> Metric:
    if isinstance(metric, Metric):
        return metric
    if metric not in METRICS:
        raise ValueError(f"unknown metric {metric!r}; expected one of {sorted(METRICS)}")
    return METRICS[metric]


def slack(dim: int, max_norm: float) -> float:
    """Bound, with room to spare, on the error of a lemma built from three computed chords of vectors of length at
    most ``max_norm`` in ``dim`` dimensions.

    A canonical chord is within ``(dim + 4) u |a - b|`` of the true distance (one rounding per difference, square and
    addition, and the root), and ``|a - b| <= 2 max_norm``; a lemma adds or subtracts three such chords and tau.
    """
    return 16.0 * (dim + 8) * _U64 * (2.0 * max_norm + 1.0)


def chord_rows(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Canonical chords of row pairs ``a[i], b[i]`` (see the module docstring)."""
    acc = np.zeros(a.shape[0], dtype=np.float64)
    for j in range(a.shape[1]):
        diff = a[:, j] - b[:, j]
        acc += diff * diff
    return np.sqrt(acc)


def chord_to_many(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Canonical chords from one prepared vector ``a`` to every row of ``b``."""
    acc = np.zeros(b.shape[0], dtype=np.float64)
    for j in range(b.shape[1]):
        diff = a[j] - b[:, j]
        acc += diff * diff
    return np.sqrt(acc)


def chord_pairwise(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """Canonical chords between every row of ``a`` and every row of ``b``, shape ``(len(a), len(b))``."""
    acc = np.zeros((a.shape[0], b.shape[0]), dtype=np.float64)
    for j in range(a.shape[1]):
        diff = a[:, j, None] - b[None, :, j]
        acc += diff * diff
    return np.sqrt(acc)


def raw_rows(values, n: int) -> np.ndarray:
    """Values as given, one row per value (for evidence), also when there are none."""
    a = np.asarray(values, dtype=np.float64)
    return a.reshape(n, -1) if n else a.reshape(0, a.shape[1] if a.ndim == 2 else 1)


def max_norm(*arrays: np.ndarray) -> float:
    return max([float(np.sqrt(np.einsum("ij,ij->i", x, x).max())) for x in arrays if x.size] + [0.0])


@njit(cache=True)
def pair_chord(a, i, b, k) -> float:
    """:func:`chord_rows` of rows ``a[i]``, ``b[k]``: the same float64 operations in the same order, the same bits
    (no fastmath, so no fused multiply-add)."""
    acc = 0.0
    for j in range(a.shape[1]):
        diff = a[i, j] - b[k, j]
        acc += diff * diff
    return np.sqrt(acc)
