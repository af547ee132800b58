"""Segment-aware semantic join: the segment rule, and PEXESO over segment vectors equal to brute force."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from discovery.ground.normalize import normalize_values
from discovery.indexes.join import JoinIndex, select_pivots
from discovery.indexes.join.stage import COLUMN_KEY_BASE, index_from_rows
from discovery.transforms.segments import MAX_SEGMENTS, glued_spellings, segments_of, unglue, value_segments

from join_data import stored_rows


@pytest.mark.parametrize("cell, segments", [
    ("George Washington; February 22 1732 \u2013 December 14 1799; (aged 67);", ["george washington"]),
    ("George Clinton (1777 - 1795)", ["george clinton"]),
    ("George Clinton; July 26 1739 \u2013 ...", ["george clinton"]),
    ("Maine; 44\u00b021\u2032N 68\u00b013\u2032W", ["maine"]),
    ("Washington, George; 1732 - 1799", ["washington, george"]),   # "Last, First" kept whole
    ("Augusta, Maine", ["augusta"]), ("Trenton, New Jersey; 1790", ["trenton"]),  # ... unless its tail is a region
    ("Paris, France", ["paris"]), ("Smith, Chad", []), ("Maine, Augusta", []),
    ("Manor Ground, Plumstead | Arsenal", ["manor ground", "arsenal"]),  # the head of a comma part
    ("New York / New Jersey", ["new york", "new jersey"]),
    ("Tom Elliott (politician)", ["tom elliott"]),                # a qualifier is no segment
    ("Democrat", []), ("Jul 1 1801; Jul 1 1804", []), ("a | b | c", []),
    ("one; two; three; four; five", ["one", "two", "three"]),     # at most MAX_SEGMENTS, in cell order
    ("same; same", ["same"]),
])
def test_segments_follow_the_stated_rule(cell, segments):
    assert MAX_SEGMENTS == 3
    assert segments_of(normalize_values([cell])[0]) == segments


@pytest.mark.parametrize("cell, split", [
    ("NewJersey", "New Jersey"), ("SanFrancisco", "San Francisco"), ("NewJerseyCity", "New Jersey City"),
    ("S\u00e3oPaulo", "S\u00e3o Paulo"), ("NewJersey; 40\u00b0N", "New Jersey; 40\u00b0N"),
    ("Maine and NewYork", "Maine and New York"),
    ("USA", "USA"), ("USAToday", "USAToday"), ("NewJerseyUSA", "NewJerseyUSA"),    # an all-caps part
    ("SantaFe", "Santa Fe"), ("FedEx", "Fed Ex"),                                   # a short word after the first
    ("McDonald", "McDonald"), ("DeSoto", "DeSoto"), ("LaSalle", "LaSalle"),        # a short capitalised first word
    ("StLouis", "StLouis"), ("ElPaso", "ElPaso"),
    ("MacArthur", "MacArthur"), ("iPhone", "iPhone"), ("New Jersey", "New Jersey"), ("newjersey", "newjersey"),
])
def test_glued_words_split_by_the_stated_rule(cell, split):
    assert unglue(cell) == split


def test_glued_words_are_split_before_case_folding_then_cut():
    cells = pa.array(["NewJersey", "Maine", "NewYork; 43\u00b0N 75\u00b0W", "McDonald", None, "SanFrancisco (city)"])
    values = normalize_values(cells.to_pylist()[:4] + cells.to_pylist()[5:])
    splits = glued_spellings(cells, values)
    assert splits == ["new jersey", None, "new york; 43\u00b0n 75\u00b0w", None, "san francisco (city)"]
    assert [segments_of(v, MAX_SEGMENTS, s) for v, s in zip(values, splits)] == [
        ["new jersey"], [], ["new york"], [], ["san francisco"]]
    owner, number, strings = value_segments(values, 1, splits)
    assert owner.tolist() == [0, 2, 4] and number.tolist() == [1, 1, 1]
    assert value_segments(values, 0, splits)[2] == []                       # the bound holds for glued words too


def test_the_split_of_a_value_is_a_function_of_its_spellings_not_their_order():
    spellings = ["NEWJERSEY", "NewJersey", "Newjersey", "NewJersey"]
    for order in (spellings, spellings[::-1], spellings[1:] + spellings[:1]):
        assert glued_spellings(pa.array(order), ["newjersey"]) == ["new jersey"]
    assert glued_spellings(pa.array(["NEWJERSEY", "Newjersey"]), ["newjersey"]) == [None]
    assert glued_spellings(pa.array([1, 2], pa.int64()), ["1"]) == [None]


def test_value_segments_name_their_value():
    owner, number, strings = value_segments(["a; bravo; charlie", "delta", "echo | foxtrot"], 2)
    assert owner.tolist() == [0, 0, 2, 2] and number.tolist() == [1, 2, 1, 2]
    assert strings == ["bravo", "charlie", "echo", "foxtrot"]
    assert value_segments(["x; yankee"], 0)[2] == []


def _segmented(rng, n_values, dim, centres, max_segments):
    """Vectors of ``n_values`` values, each a whole vector and 0..max_segments segment vectors near random centres."""
    owner = np.repeat(np.arange(n_values), 1 + rng.integers(0, max_segments + 1, size=n_values))
    x = centres[rng.integers(0, len(centres), size=owner.size)] + 0.08 * rng.normal(size=(owner.size, dim))
    return (x / np.linalg.norm(x, axis=1, keepdims=True)).astype(np.float32), owner


def _brute(lake, lake_cols, query, value_of, tau_c, need):
    d = np.sqrt(((query[:, None, :].astype(np.float64) - lake[None, :, :]) ** 2).sum(-1))
    hit = d <= tau_c
    out = {}
    for c in np.unique(lake_cols):
        n = np.unique(value_of[hit[:, lake_cols == c].any(axis=1)]).size
        if n >= need:
            out[int(c)] = n
    return out


@pytest.mark.parametrize("seed", range(6))
def test_pexeso_over_random_segmentations_equals_brute_force(seed):
    rng = np.random.default_rng(seed)
    dim, n_cols = 12, 9
    centres = rng.normal(size=(30, dim))
    lake, lake_owner, cols = [], [], []
    for c in range(n_cols):
        x, owner = _segmented(rng, 25, dim, centres[rng.choice(30, 8, replace=False)], 3)
        lake.append(x)
        cols.append(np.full(len(x), (c + 1) * COLUMN_KEY_BASE + c % 3))
        lake_owner.append(owner)
    lake, cols = np.concatenate(lake), np.concatenate(cols)
    query, value_of = _segmented(rng, 40, dim, centres[:10], 3)
    value_ids = value_of * 7 + 3  # any ids: results name values by them
    pivots = select_pivots(lake, 4, seed=seed)
    index = JoinIndex.build(lake, cols, pivots, levels=3)
    for tau in (0.1, 0.2):
        tau_c = tau * 2.0
        for T in (0.0, 0.2, 0.5):
            need = max(1, int(np.ceil(T * 40 - 1e-9)))
            expected = _brute(lake, cols, query, value_of, tau_c, need)
            pairs = {}
            for method in ("pexeso", "pexeso-h", "exact"):
                res = index.search(query, tau, T, method, value_ids=value_ids)
                assert {c.column_id: c.matches for c in res.columns} == expected, (method, tau, T)
                pairs[method] = {c.column_id: c.pairs for c in res.columns}
                for c in res.columns:
                    assert c.joinability == c.matches / 40
                    assert set(c.pairs[:, 0].astype(int)) <= set(value_ids.tolist())
                    assert len(c.pairs) == c.matches and np.all(c.pairs[:, 2] <= tau_c + 1e-9)
                    for v, x, d in c.pairs:  # the witness: the column's vector nearest the value's, at that distance
                        qv = query[value_ids == int(v)].astype(np.float64)
                        assert cols[int(x)] == c.column_id
                        near = np.linalg.norm(qv[:, None, :] - lake[cols == c.column_id][None, :, :], axis=2)
                        assert np.isclose(np.linalg.norm(qv - lake[int(x)], axis=1).min(), d, atol=1e-5)
                        assert np.isclose(near.min(), d, atol=1e-5)
            for method in ("pexeso", "pexeso-h"):  # the same witnesses, to the bit, whatever found the match
                assert pairs[method].keys() == pairs["exact"].keys()
                for c, p in pairs[method].items():
                    np.testing.assert_array_equal(p, pairs["exact"][c])
        best = sorted(_brute(lake, cols, query, value_of, tau_c, 1).items(), key=lambda kv: (-kv[1], kv[0]))[:3]
        for method in ("pexeso", "pexeso-h", "exact"):
            top = index.search(query, tau, method=method, top_k=3, value_ids=value_ids)
            assert [(c.column_id, c.matches) for c in top.columns] == best, method


def test_a_tied_nearest_witness_is_the_lower_row_for_every_method():
    rng = np.random.default_rng(11)
    lake = rng.normal(size=(60, 8))
    lake = (lake / np.linalg.norm(lake, axis=1, keepdims=True)).astype(np.float32)
    cols = np.repeat(np.arange(1, 7) * COLUMN_KEY_BASE, 10)
    lake[17] = lake[13]                               # one column holds the same vector twice
    lake[45] = lake[13]                               # and another column once
    query = lake[[13, 2]] + np.float32(0.001)
    index = JoinIndex.build(lake, cols, select_pivots(lake, 3, seed=0), levels=3)
    for method in ("pexeso", "pexeso-h", "exact"):
        res = {c.column_id: c.pairs for c in index.search(query, 0.05, 0.0, method).columns}
        assert res[cols[13]][:, :2].tolist() == [[0, 13]] and res[cols[45]][:, :2].tolist() == [[0, 45]]
        assert res[cols[2]][:, :2].tolist() == [[1, 2]]


def test_stored_segment_rows_index_like_any_vector_and_name_their_value():
    rng = np.random.default_rng(3)
    dim = 10
    centres = rng.normal(size=(12, dim))
    x, owner = _segmented(rng, 60, dim, centres, 3)
    keys = np.where(owner < 30, COLUMN_KEY_BASE + 1, 2 * COLUMN_KEY_BASE)
    segment = np.concatenate([np.arange(n) for n in np.bincount(owner)])
    values = [f"value {o:03d}" for o in owner]
    model, vv, pm = stored_rows(x, keys, select_pivots(x, 3, seed=0), values=values, segment=segment)
    index = index_from_rows(pm, vv, model)
    query, value_of = _segmented(rng, 20, dim, centres, 2)
    res = index.search(query, 0.15, 0.0, "pexeso", value_ids=value_of)
    assert {c.column_id: c.matches for c in res.columns} == _brute(x, keys, query, value_of, 0.3, 1)
    # index input rows are value_vectors rows in (table, ordinal, value, segment) order: each names its value
    rows = sorted(range(len(x)), key=lambda i: (keys[i] // COLUMN_KEY_BASE, keys[i] % COLUMN_KEY_BASE, values[i],
                                                segment[i]))
    for c in res.columns:
        for v, row, d in c.pairs:
            lake_row = rows[int(row)]
            assert np.isclose(np.linalg.norm(query[value_of == int(v)] - x[lake_row], axis=1), d, atol=1e-5).any()


def test_a_glued_lake_cell_gets_the_vector_of_its_split_spelling():
    """The embed stage and the query path cut through :func:`discovery.query.vectors.column_values`, which hands it the
    cells as written: ``NewJersey`` gets a segment vector equal to the whole-value vector of ``New Jersey``."""
    from discovery.transforms.encoders.columns import profile_column
    from discovery.transforms.encoders.hash_encoder import HashEncoder
    from discovery.query.vectors import column_values

    enc = HashEncoder()
    cells = pa.array(["NewJersey", "Maine", "NewJersey", "SanFrancisco (city)"])
    cv = column_values(enc, profile_column(cells), 0, 100, MAX_SEGMENTS, cells)
    assert cv.values == ["maine", "newjersey", "sanfrancisco (city)"]
    assert cv.value_of.tolist() == [0, 1, 2, 1, 2] and cv.segment.tolist() == [0, 0, 0, 1, 1]
    query = column_values(enc, profile_column(pa.array(["New Jersey", "San Francisco"])), 0, 100, MAX_SEGMENTS)
    assert np.allclose(cv.vectors[3], query.vectors[0]) and np.allclose(cv.vectors[4], query.vectors[1])
    assert column_values(enc, profile_column(cells), 0, 100, 0, cells).vectors.shape[0] == 3   # the bound holds
