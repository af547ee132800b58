"""Planted numerical joins: the same places under other names with coordinates a few metres apart, and the same
measurements taken again with a small error.

* ``coordinates``: a register of weather stations (name, lat, lng, elevation) and a table of air-quality sensors
  (another naming scheme, ``latitude`` / ``longitude``) placed at most :data:`MOVE_M` metres from a share of the
  stations, a few readings per sensor, plus sensors elsewhere; beside them a table of bus stops in the same city, a
  few of them within the join distance of a station (a weaker join, for the ranking to beat).
* ``measurement``: a spectrometer's calibration wavelengths (nm, three decimals) and a table of emission lines that
  lists a share of them again within :data:`NOISE_NM`, plus other lines.

The tables are written with their own random stream (the rest of the lake is byte-for-byte what it was without
them), and the ground truth (``numeric.csv``) counts, by brute force over the written values, the distinct query
values with a partner within the default tau of the numerical join (``[numjoin]``): ``tau_metres`` for coordinates,
``tau_share`` of the query column's range for measurements.
"""
from __future__ import annotations

import numpy as np

from ...config import NumjoinConfig
from ...indexes.numjoin.metric import get_metric
from .builder import LakeBuilder

#: Tables this module writes.
NUMERIC_TABLES = 5
MOVE_M = 15.0
NOISE_NM = 0.05
_CITY = (48.80, 48.90, 2.25, 2.45)
_M_PER_DEG = 111_320.0
_STREETS = ("Alesia", "Bercy", "Clichy", "Daumesnil", "Etoile", "Flandre", "Gobelins", "Italie", "Jaures", "Lepic",
            "Monge", "Nation", "Opera", "Pigalle", "Raspail", "Reuilly", "Tolbiac", "Vaugirard", "Wagram", "Voltaire")
_ELEMENTS = ("H", "He", "Li", "Na", "Mg", "Ca", "Fe", "Ne", "Ar", "Hg", "Kr", "Xe", "Cu", "Zn", "Sr", "Ba")


def _moved(rng, lat, lng, low, high):
    """Points ``low`` to ``high`` metres from (lat, lng) in random directions, rounded to 6 decimals (0.1 m)."""
    d = rng.uniform(low, high, len(lat))
    theta = rng.uniform(0, 2 * np.pi, len(lat))
    return (np.round(lat + d * np.cos(theta) / _M_PER_DEG, 6),
            np.round(lng + d * np.sin(theta) / (_M_PER_DEG * np.cos(np.radians(lat))), 6))


def _fmt(values, digits):
    return [f"{v:.{digits}f}" for v in values]


def _matched(query: np.ndarray, lake: np.ndarray, metric: str, tau: float) -> int:
    """Distinct query values with a lake value within ``tau`` (every pair compared)."""
    m = get_metric(metric)
    q, x = np.unique(query, axis=0), np.unique(lake, axis=0)
    hit = [bool((m.distance(np.repeat(q[i:i + 1], len(x), axis=0), x) <= tau).any()) for i in range(len(q))]
    return int(sum(hit))


def _row(q_path, q_cols, l_path, l_cols, kind, query, lake, metric, tau, units, planted):
    return {"query_table": q_path, "query_columns": q_cols, "lake_table": l_path, "lake_columns": l_cols,
            "kind": kind, "matched_values": _matched(query, lake, metric, tau),
            "query_distinct": int(len(np.unique(query, axis=0))), "tau": tau, "units": units, "planted": planted}


def write_numeric(lake: LakeBuilder, rng: np.random.Generator) -> list[dict]:
    """Write the planted numerical joins; returns their ``numeric.csv`` rows (the bus stops' weaker join too)."""
    cfg = NumjoinConfig()
    out = []
    # coordinates --------------------------------------------------------------------------------------------------
    n = int(rng.integers(32, 45))
    lat = np.round(rng.uniform(_CITY[0], _CITY[1], n), 6)
    lng = np.round(rng.uniform(_CITY[2], _CITY[3], n), 6)
    names = [f"{_STREETS[i % len(_STREETS)]} {'station' if i < len(_STREETS) else 'annex ' + str(i)}"
             for i in range(n)]
    q_path = lake.add_table("geo", "weather_stations", ["station", "lat", "lng", "elevation_m"],
                            [names, _fmt(lat, 6), _fmt(lng, 6), _fmt(rng.uniform(28, 130, n), 1)],
                            ["str", "float", "float", "float"], role="numeric", group="numeric:coordinates-1",
                            fmt="csv")
    near = np.sort(rng.permutation(n)[:int(round(n * rng.uniform(0.6, 0.85)))])
    s_lat, s_lng = _moved(rng, lat[near], lng[near], 2.0, MOVE_M)
    far = 12
    f_lat, f_lng = _moved(rng, lat[rng.integers(0, n, far)], lng[rng.integers(0, n, far)], 400.0, 2500.0)
    s_lat, s_lng = np.r_[s_lat, f_lat], np.r_[s_lng, f_lng]
    ids = [f"AQ-{int(v):04d}" for v in rng.permutation(10_000)[:len(s_lat)]]
    reps = rng.integers(1, 4, len(s_lat))
    rows = np.repeat(np.arange(len(s_lat)), reps)
    rows = rows[rng.permutation(len(rows))]
    l_path = lake.add_table("environment/air", "sensor_readings", ["sensor_id", "latitude", "longitude", "pm25"],
                            [[ids[i] for i in rows], _fmt(s_lat[rows], 6), _fmt(s_lng[rows], 6),
                             _fmt(rng.gamma(3, 4, len(rows)), 1)], ["str", "float", "float", "float"],
                            role="numeric", group="numeric:coordinates-1", fmt="csv")
    query = np.column_stack([lat, lng])
    out.append(_row(q_path, ["lat", "lng"], l_path, ["latitude", "longitude"], "coordinates", query,
                    np.column_stack([s_lat, s_lng]), "haversine", cfg.tau_metres, "metres", 1))
    b_lat, b_lng = np.round(rng.uniform(_CITY[0], _CITY[1], 50), 6), np.round(rng.uniform(_CITY[2], _CITY[3], 50), 6)
    few = rng.permutation(n)[:4]
    c_lat, c_lng = _moved(rng, lat[few], lng[few], 10.0, 40.0)
    b_lat, b_lng = np.r_[b_lat, c_lat], np.r_[b_lng, c_lng]
    stops = [f"{_STREETS[int(i)]} {int(j)}" for i, j in zip(rng.integers(0, len(_STREETS), len(b_lat)),
                                                             rng.integers(1, 200, len(b_lat)))]
    b_path = lake.add_table("transport", "bus_stops", ["stop_name", "stop_lat", "stop_lon"],
                            [stops, _fmt(b_lat, 6), _fmt(b_lng, 6)], ["str", "float", "float"], role="numeric",
                            group="numeric:coordinates-1", fmt="csv")
    out.append(_row(q_path, ["lat", "lng"], b_path, ["stop_lat", "stop_lon"], "coordinates", query,
                    np.column_stack([b_lat, b_lng]), "haversine", cfg.tau_metres, "metres", 0))
    # measurements -------------------------------------------------------------------------------------------------
    n = int(rng.integers(30, 50))
    wl = np.unique(np.round(rng.uniform(380, 750, n), 3))
    n = len(wl)
    q_path = lake.add_table("labs", "spectrometer_calibration", ["run", "wavelength_nm", "counts"],
                            [[f"run-{i + 1:03d}" for i in range(n)], _fmt(wl, 3),
                             [str(int(v)) for v in rng.integers(1000, 60000, n)]], ["str", "float", "int"],
                            role="numeric", group="numeric:measurement-1", fmt="csv")
    again = np.sort(rng.permutation(n)[:int(round(n * rng.uniform(0.6, 0.85)))])
    lines = np.r_[np.round(wl[again] + rng.uniform(-NOISE_NM, NOISE_NM, len(again)), 3),
                  np.round(rng.uniform(380, 750, 15), 3)]
    lines = lines[rng.permutation(len(lines))]
    l_path = lake.add_table("physics", "emission_lines", ["element", "line_nm", "relative_intensity"],
                            [[_ELEMENTS[int(i)] for i in rng.integers(0, len(_ELEMENTS), len(lines))], _fmt(lines, 3),
                             [str(int(v)) for v in rng.integers(5, 1000, len(lines))]], ["str", "float", "int"],
                            role="numeric", group="numeric:measurement-1", fmt="csv")
    tau = cfg.tau_share * float(wl.max() - wl.min())
    out.append(_row(q_path, ["wavelength_nm"], l_path, ["line_nm"], "measurement", wl[:, None], lines[:, None],
                    "absolute", tau, "column units", 1))
    return out
