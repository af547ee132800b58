"""The stated rules of written tables, case by case: typing cells, one type per union column, names, keys, dedupe."""
from __future__ import annotations

import datetime as dt

import numpy as np
import pyarrow as pa
import pytest

from discovery.surfaces.materialize.coerce import common_type, to_type, typed_column
from discovery.surfaces.materialize.keys import cell_keys, tuple_keys, value_keys
from discovery.surfaces.materialize.naming import Names, short_name
from discovery.surfaces.materialize.union import first_rows, row_hashes


@pytest.mark.parametrize("kind,cells,want", [
    ("int", ["1,234", "-5", None], [1234, -5, None]),
    ("float", ["1.5", "12.5%", "1e3", "2,000.25"], [1.5, 12.5, 1000.0, 2000.25]),
    ("bool", ["Yes", "no", "T", "f", None], [True, False, True, False, None]),
    ("date", ["2020-01-02", "2021-12-31"], [dt.date(2020, 1, 2), dt.date(2021, 12, 31)]),
    ("date", ["2020/01/02"], [dt.date(2020, 1, 2)]),
    ("date", ["1/2/2020", "3/4/2021"], [dt.date(2020, 1, 2), dt.date(2021, 3, 4)]),      # month first where both fit
    ("date", ["1/2/2020", "13/2/2020"], [dt.date(2020, 2, 1), dt.date(2020, 2, 13)]),    # day first where it must be
    ("datetime", ["2020-01-02 03:04", "2020-01-02T05:06:07"],
     [dt.datetime(2020, 1, 2, 3, 4), dt.datetime(2020, 1, 2, 5, 6, 7)]),
])
def test_a_column_of_its_kind_is_written_as_that_kind(kind, cells, want):
    typed = typed_column(pa.array(cells), kind, "c", "t")
    assert typed.note is None and typed.array.to_pylist() == want


def test_zoned_times_are_utc_and_a_mix_is_text():
    zoned = typed_column(pa.array(["2020-01-02T03:04:05Z", "2020-01-02 05:00:00+02:00"]), "datetime", "c", "t")
    assert zoned.array.type == pa.timestamp("us", tz="UTC")
    assert [v.hour for v in zoned.array.to_pylist()] == [3, 3]
    mixed = typed_column(pa.array(["2020-01-02T03:04:05Z", "2020-01-02 03:04"]), "datetime", "when", "t.csv")
    assert mixed.array.type == pa.string() and "when" in mixed.note and "t.csv" in mixed.note


@pytest.mark.parametrize("kind,cells", [("int", ["1", "2", "n/a!"]), ("float", ["1.5", "x"]), ("bool", ["yes", "2"]),
                                        ("date", ["2020-01-02", "soon"])])
def test_one_cell_that_does_not_parse_keeps_the_column_as_text(kind, cells):
    typed = typed_column(pa.array(cells), kind, "amount", "lake table 'a.csv'")
    assert typed.array.to_pylist() == cells and typed.note and "amount" in typed.note and "a.csv" in typed.note


def test_a_column_without_a_value_takes_its_kind():
    assert typed_column(pa.array([None, None], pa.string()), "int", "c", "t").array.type == pa.int64()


def test_union_columns_take_one_type_by_the_stated_rules():
    i, f, s, d, t = pa.int64(), pa.float64(), pa.string(), pa.date32(), pa.timestamp("us")
    assert common_type([("q", i), ("a", i)], "c") == (i, None)
    assert common_type([("q", i), ("a", f), ("b", pa.null())], "c") == (f, None)
    assert common_type([("q", d), ("a", t)], "c") == (t, None)
    text, warning = common_type([("q", i), ("a.csv", s)], "amount")
    assert text == s and "amount" in warning and "a.csv: text" in warning and "q: int64" in warning
    assert common_type([("q", pa.bool_()), ("a", i)], "c")[0] == s
    assert to_type(pa.array([1, 2]), f).to_pylist() == [1.0, 2.0]
    assert to_type(pa.array([dt.date(2020, 1, 2)]), t).to_pylist() == [dt.datetime(2020, 1, 2)]
    assert to_type(pa.array([1.5]), s).to_pylist() == ["1.5"]


def test_short_names_and_names_that_never_clash():
    assert short_name("finance/payables/purchase_orders.csv.gz") == "purchase_orders"
    assert short_name("sales/orders_delta") == "orders_delta" and short_name("a/b.jsonl") == "b"
    assert short_name("notes.v2") == "notes.v2"
    names = Names(["Vendor", "orders.amount"])
    assert [names.take(n) for n in ("orders.amount", "orders.amount", "orders.distance", "Vendor")] == \
        ["orders.amount_2", "orders.amount_3", "orders.distance", "Vendor_2"]


def test_keys_of_cells_are_the_keys_of_the_values_they_hold():
    assert cell_keys([pa.array([" IBM  Corp", "n/a", None])], "text").to_pylist() == ["ibm corp", None, None]
    numbers = cell_keys([pa.array(["1,000", "-0", "x"])], "number")
    assert numbers.to_pylist() == [1000.0, 0.0, None]
    assert value_keys(np.array([[1000.0], [-0.0]]), "number").to_pylist() == numbers.to_pylist()[:2]
    places = cell_keys([pa.array(["48.8", "91", None]), pa.array(["2.3", "2.3", "2.3"])], "coordinates")
    assert places.to_pylist()[0] == value_keys(np.array([[48.8, 2.3]]), "coordinates").to_pylist()[0]
    assert places.to_pylist()[1:] == [None, None]                        # out of range, missing: no key


def test_tuple_keys_are_injective_whatever_the_values_hold():
    sep, esc = "\x1f", "\x1e"
    a = tuple_keys([pa.array(["x" + sep, "x", "a" + esc + "1", "a" + esc]), pa.array(["y", sep + "y", "b", "1b"])])
    assert len(set(a.to_pylist())) == 4
    assert tuple_keys([pa.array(["x", None]), pa.array(["y", "y"])]).to_pylist()[1] is None


def test_dedupe_keeps_the_first_of_equal_rows_in_order():
    t = pa.table({"a": [1, 1, None, None, 2, 1], "b": ["x", "x", None, None, "y", "z"], "c": pa.nulls(6),
                  "source": ["q", "l1", "l1", "l2", "l2", "l2"]})
    kept = first_rows(t, ["a", "b", "c"])
    assert kept.column("source").to_pylist() == ["q", "l1", "l2", "l2"]
    assert (row_hashes(t, ["a", "b"])[0] == row_hashes(t.slice(1), ["a", "b"])[0]).all()


@pytest.mark.parametrize("kind,cells,want", [
    ("int", ["1", "N/A", "-", "null", "2"], [1, None, None, None, 2]),
    ("date", ["2020-01-02", "n/a", "NULL"], [dt.date(2020, 1, 2), None, None]),
    ("float", ["--", "?"], [None, None]),
])
def test_null_tokens_are_nulls_before_a_column_is_typed(kind, cells, want):
    typed = typed_column(pa.array(cells), kind, "c", "t")
    assert typed.note is None and typed.array.to_pylist() == want
    assert typed_column(pa.array(cells), "string", "c", "t").array.to_pylist() == cells   # text keeps what it says


def test_an_output_ending_that_names_no_format_is_refused():
    from discovery.surfaces.materialize.output import OutputError, output_format

    assert [output_format(t) for t in ("a.parquet", "a.PQ", "b.csv", "c.delta", "s3://b/wh/out")] == \
        ["parquet", "parquet", "csv", "delta", "delta"]
    with pytest.raises(OutputError, match=r"'.xlsx'.*\.parquet, \.csv or \.delta"):
        output_format("out.xlsx")
    assert output_format("out.xlsx", "csv") == "csv"                  # a format given is the user's choice
