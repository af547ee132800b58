"""The web-table join benchmark's lake: deterministic, with the planted cell shapes and right answers."""
from __future__ import annotations

import pyarrow as pa

from discovery.ground.normalize import normalize_values
from discovery.transforms.segments import glued_spellings, segments_of
from webjoin import LEFT_OUT, QUERIES, generate_lake, right_answers


def _cells(tables, table, column):
    t = next(t for t in tables if t["name"] == table)
    return next(c for c in t["columns"] if c["name"] == column)["cells"]


def test_the_lake_is_deterministic():
    assert generate_lake() == generate_lake()
    assert generate_lake(1) != generate_lake()


def test_the_planted_shapes_are_in_the_cells():
    t = generate_lake()
    assert "George Washington; April 30 1789 \u2013 March 4 1797; (born 1732);" in _cells(t, "presidents_terms",
                                                                                          "President")
    assert "John Adams; 1789 \u2013 1797" in _cells(t, "vice_presidents", "Vice President")
    assert "Abraham Lincoln (1861 - 1865)" in _cells(t, "presidents_spans", "President")
    assert "Washington, George" in _cells(t, "presidents_directory", "Name")
    assert "Van Buren, Martin" in _cells(t, "presidents_directory", "Name")
    assert "Maine; 44\u00b019\u2032N 69\u00b047\u2032W" in _cells(t, "states_coordinates", "State")
    assert "Augusta, Maine" in _cells(t, "capitals_located", "Capital")
    assert {"NewJersey", "Maine"} <= set(_cells(t, "states_glued", "State"))
    assert "SaltLakeCity" in _cells(t, "capitals_glued", "Capital")
    parties = {table["name"]: set(_cells(t, table["name"], "Party")) for table in t
               if any(c["name"] == "Party" for c in table["columns"])}
    assert sum(1 for p in parties.values() if p == parties["candidates"]) >= 7   # ties on the party column
    assert parties["candidates"] - parties["nominees"] == set(LEFT_OUT)          # the right one trails by three


def test_each_query_has_right_answers_and_the_segment_rule_reaches_them():
    t = generate_lake()
    for table, column, _ in QUERIES:
        assert right_answers(t, table, column), (table, column)
    assert right_answers(t, "candidates", "Party") == {("nominees", "Party")}
    assert ("vice_presidents", "Vice President") not in right_answers(t, "presidents", "Name")
    cells = _cells(t, "states_glued", "State")
    values = normalize_values(cells)
    split = dict(zip(values, glued_spellings(pa.array(cells), values)))
    assert segments_of("newjersey", 3, split["newjersey"]) == ["new jersey"]
    assert segments_of(normalize_values(["Maine; 44\u00b019\u2032N 69\u00b047\u2032W"])[0]) == ["maine"]
