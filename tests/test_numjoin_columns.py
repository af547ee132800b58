"""What the numerical join indexes in a table (:mod:`discovery.indexes.numjoin.columns`), the same rules at refresh and
at query time."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from discovery.indexes.numjoin.columns import column_groups, coordinate_pairs, coordinate_role, query_group


def _cols(*cells):
    return [pa.array(c, pa.string()) for c in cells]


def test_coordinate_names_pair_by_prefix():
    names = ["name", "start_lat", "start_lng", "endLatitude", "endLongitude", "lat", "elevation"]
    assert coordinate_role("Latitude") == ("lat", "") and coordinate_role("stop_lon") == ("lon", "stop")
    assert coordinate_role("platform") is None and coordinate_role("latency") is None
    assert coordinate_pairs(names) == [(1, 2), (3, 4)]   # "lat" alone has no longitude of its prefix


def test_groups_of_a_table():
    names = ["city", "lat", "lng", "price", "emb", "flag"]
    cols = _cols(["a", "b", "c", "d"], ["48.85", "48.86", None, "48.85"], ["2.35", "2.36", "2.4", "2.35"],
                 ["1,200", "7", "7", "9"],
                 [json.dumps([1.0, 2.0]), json.dumps([1.0, 2.0]), json.dumps([0.0, -1.5]), None],
                 ["true", "false", "true", "true"])
    groups = {g.label: g for g in column_groups(names, cols)}
    assert set(groups) == {"lat", "lng", "price", "emb", "lat,lng"}
    assert groups["lat,lng"].kind == "coordinates" and groups["lat,lng"].values.tolist() == [[48.85, 2.35],
                                                                                              [48.86, 2.36]]
    assert groups["price"].values[:, 0].tolist() == [7.0, 9.0, 1200.0] and groups["price"].spread == 1193.0
    assert groups["emb"].kind == "vector" and groups["emb"].values.tolist() == [[0.0, -1.5], [1.0, 2.0]]


def test_out_of_range_pairs_are_not_coordinates_and_queries_say_why():
    names = ["lat", "lng", "word"]
    cols = _cols(["120", "130", "140"], ["1", "2", "3"], ["x", "y", "z"])
    assert [g.kind for g in column_groups(names, cols)] == ["number", "number"]
    assert "not latitude, longitude pairs" in query_group(names, cols, [0, 1])
    assert "neither numbers, coordinates nor" in query_group(names, cols, [2])
    assert query_group(names, cols, [1]).values[:, 0].tolist() == [1.0, 2.0, 3.0]


def test_caps_are_seeded_samples_and_reported():
    names = ["v"]
    cols = _cols([str(i) for i in range(500)])
    a, b = column_groups(names, cols, max_values=50), column_groups(names, cols, max_values=50)
    assert a[0].total == 500 and len(a[0].values) == 50 and np.array_equal(a[0].values, b[0].values)


def _place_cells(rng, n, digits=6):
    lat = np.round(rng.uniform(48.80, 48.90, n), digits)
    lon = np.round(rng.uniform(2.25, 2.45, n), digits)
    return [f"{v:.{digits}f}" for v in lat], [f"{v:.{digits}f}" for v in lon]


def test_coordinate_names_in_any_common_form():
    for lat, lon in [("pickup_latitude", "pickup_longitude"), ("lat1", "lon1"), ("Latitude (deg)", "Longitude (deg)"),
                     ("Breitengrad", "Längengrad"), ("y_lat", "x_lon"), ("LAT_DD", "LNG_DD"), ("latitud", "longitud")]:
        assert coordinate_pairs(["name", lat, lon]) == [(1, 2)], (lat, lon)
    assert coordinate_pairs(["lat1", "lon2", "lat2", "lon1"]) == [(0, 3), (2, 1)]
    assert coordinate_role("long") == ("lon", "") and coordinate_role("long_jump") is None


def test_coordinates_found_by_values_and_what_is_no_place():
    rng = np.random.default_rng(0)
    lat, lon = _place_cells(rng, 30)
    kinds = lambda names, cols: {g.label: g.kind for g in column_groups(names, cols)}  # noqa: E731
    # unnamed neighbours written as positions: a place, latitude first
    assert kinds(["site", "", "column_3"], _cols(["a"] * 30, lat, lon))[",column_3"] == "coordinates"
    # axis letters: x is the longitude
    got = {g.label: g for g in column_groups(["x", "y"], _cols(lon, lat))}
    assert got["y,x"].kind == "coordinates" and got["y,x"].values[:, 0].min() > 48
    # one side named: its role holds, the other takes the rest
    got = {g.label: g for g in column_groups(["lng", "pos"], _cols(lon, lat))}
    assert got["pos,lng"].kind == "coordinates"
    # a longitude beyond 90 tells the order of unnamed neighbours
    far = [f"{v:.5f}" for v in rng.uniform(100, 120, 30)]
    assert kinds(["", "column_2"], _cols(far, lat)).get(",column_2") is None
    assert kinds(["", "column_2"], _cols(far, lat))["column_2,"] == "coordinates"
    # what is no place: percentages (named, or carrying 1 decimal), integers, named measurements, too few points
    pct = [f"{v:.1f}" for v in rng.uniform(10, 60, 30)]
    assert "coordinates" not in kinds(["", "column_2"], _cols(pct, pct[::-1])).values()
    assert "coordinates" not in kinds(["share_a", "share_b"], _cols(lat, lon)).values()
    assert "coordinates" not in kinds(["adjpoll_a", "adjpoll_b"], _cols(lat, lon)).values()
    ints = [str(int(float(v))) for v in lat]
    assert "coordinates" not in kinds(["", "column_2"], _cols(ints, lon)).values()
    assert "coordinates" not in kinds(["", "column_2"], _cols(lat[:5] * 6, lon[:5] * 6)).values()
    assert "coordinates" not in kinds(["", "name", "column_3"], _cols(lat, ["a"] * 30, lon)).values()
    # shares written to 12 decimals under a headerless file's first row as names: fractions of one, no place
    shares = [[f"{v:.12f}" for v in rng.uniform(0.001, 0.35, 30)] for _ in range(2)]
    assert "coordinates" not in kinds(["0.007194244604", "0.213771839671"], _cols(*shares)).values()
    # ... while places near 0°, 0° but beyond a degree on one axis (Sao Tome) still are
    near = [f"{v:.5f}" for v in rng.uniform(0.1, 0.4, 30)], [f"{v:.5f}" for v in rng.uniform(6.5, 6.8, 30)]
    assert kinds(["", "column_2"], _cols(*near))[",column_2"] == "coordinates"
