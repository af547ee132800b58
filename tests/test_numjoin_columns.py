"""What the numerical join indexes in a table (:mod:`discovery.numjoin.columns`), the same rules at refresh and at
query time."""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa

from discovery.numjoin.columns import column_groups, coordinate_pairs, coordinate_role, query_group


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
