"""Parsing lake files: dialects, encodings, bounds, and a readable reason for everything that cannot be indexed."""
from __future__ import annotations

import codecs

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from discovery.config import Limits, ProfileConfig
from discovery.data.lake import LakeFileError, infer_type, list_lake, profile_table, read_lake_table
from discovery.data.lake.table import dedupe_names
from discovery.orchestration.demo_lake import load_ground_truth


def _read(tmp_path, name, data: bytes, limits=Limits()):
    p = tmp_path / name
    p.write_bytes(data)
    fmt = "parquet" if name.endswith(".parquet") else ("tsv" if name.endswith(".tsv") else "csv")
    return read_lake_table(str(tmp_path), name, fmt, len(data), limits)


def test_demo_lake_statuses_match_ground_truth(demo_lake):
    expected = {r["path"]: r["status"] for r in load_ground_truth(demo_lake)["broken"]}
    seen = {}
    for f in list_lake(demo_lake):
        try:
            read_lake_table(demo_lake, f.path, f.format, f.size, Limits())
            seen[f.path] = "ok"
        except LakeFileError:
            seen[f.path] = "error"
    assert {p: seen[p] for p in expected} == expected
    assert all(s == "ok" for p, s in seen.items() if p not in expected)


def test_demo_tables_parse_to_manifest_shape(demo_lake):
    gt = load_ground_truth(demo_lake)
    files = {f.path: f for f in list_lake(demo_lake)}
    for row in gt["tables"]:
        if row["role"] == "broken" and row["group"] != "ok":
            continue
        f = files[row["path"]]
        t = read_lake_table(demo_lake, f.path, f.format, f.size, Limits())
        assert (t.num_rows, len(t.names)) == (int(row["rows"]), int(row["cols"])), row["path"]


@pytest.mark.parametrize("data,delimiter", [
    (b"a,b\n1,2\n3,4\n", ","), (b"a;b\n1;2\n3;4\n", ";"), (b"a|b\n1|2\n3|4\n", "|"), (b"a\tb\n1\t2\n3\t4\n", "\t"),
    (b"a , b\n 1 , 2\n3,4\n", ","),
])
def test_delimiters_are_sniffed(tmp_path, data, delimiter):
    t = _read(tmp_path, "t.csv", data)
    assert t.delimiter == delimiter
    assert t.names == ["a", "b"]
    assert [c.to_pylist() for c in t.columns] == [["1", "3"], ["2", "4"]]


def test_quoted_fields_with_delimiters_and_newlines(tmp_path):
    t = _read(tmp_path, "q.csv", b'name,note\n"Smith, J.","line one\nline two"\nDoe,plain\n')
    assert t.columns[0].to_pylist() == ["Smith, J.", "Doe"]
    assert t.columns[1].to_pylist() == ["line one\nline two", "plain"]


@pytest.mark.parametrize("encoding,bom", [("utf-16", b""), ("utf-8", codecs.BOM_UTF8), ("cp1252", b"")])
def test_odd_encodings(tmp_path, encoding, bom):
    text = "city,amount\nMünchen,3\nSão Paulo,4\n"
    t = _read(tmp_path, "e.csv", bom + text.encode(encoding))
    assert t.columns[0].to_pylist() == ["München", "São Paulo"]
    assert t.names == ["city", "amount"]


@pytest.mark.parametrize("data,reason", [
    (b"", "empty file"),
    (b"   \n\n", "empty"),
    (b"a,b\n", "header only"),
    (b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR", "binary"),
    (b'a,b\n1,"open\n2,3\n4,5\n', "quoted field opened on line 2"),
    (b"a,b\n" + (b"1,2\n" * 4 + b"1,2,3,4\n") * 5, r"ragged rows: 5 of 25 rows \(lines 6, 11, 16, 21 and 26\)"),
])
def test_unreadable_files_get_a_reason(tmp_path, data, reason):
    with pytest.raises(LakeFileError, match=reason):
        _read(tmp_path, "bad.csv", data)


def test_bounds_are_reported(tmp_path):
    limits = Limits(max_cell_chars=10, max_columns=3, max_rows=2, max_file_bytes=1000)
    with pytest.raises(LakeFileError, match=r"cell on line 3, column 2 has 11 characters"):
        _read(tmp_path, "cell.csv", b"a,b\n1,2\n1," + b"x" * 11 + b"\n", limits)
    with pytest.raises(LakeFileError, match="4 columns, more than the limit of 3"):
        _read(tmp_path, "wide.csv", b"a,b,c,d\n1,2,3,4\n", limits)
    with pytest.raises(LakeFileError, match="larger than the limit"):
        _read(tmp_path, "big.csv", b"a\n" + b"1\n" * 600, limits)
    t = _read(tmp_path, "long.csv", b"a\n1\n2\n3\n", limits)
    assert t.num_rows == 2 and any("only the first 2 indexed" in w for w in t.warnings)


@pytest.mark.parametrize("name", ["grown.csv", "grown.parquet"])
def test_a_file_grown_past_the_limit_since_it_was_listed_is_refused(tmp_path, name):
    """The byte limit holds on what is read, not on the size a listing saw: a stale size lets no file be read whole."""
    if name.endswith(".parquet"):
        pq.write_table(pa.table({"n": list(range(5000))}), tmp_path / name)
    else:
        (tmp_path / name).write_bytes(b"a,b\n" + b"1,2\n" * 5000)
    size = (tmp_path / name).stat().st_size
    fmt = name.rsplit(".", 1)[1]
    assert read_lake_table(str(tmp_path), name, fmt, 10, Limits(max_file_bytes=size)).num_rows == 5000
    with pytest.raises(LakeFileError, match=f"larger than the limit of {size - 1} bytes"):
        read_lake_table(str(tmp_path), name, fmt, 10, Limits(max_file_bytes=size - 1))


def test_few_ragged_rows_are_skipped_with_a_warning(tmp_path):
    t = _read(tmp_path, "r.csv", b"a,b\n" + b"1,2\n" * 200 + b"9,9,9\n")
    assert t.num_rows == 200
    assert "1 of 201 rows (line 202) have 3 fields, more than the header's 2, and no rule explains them: skipped" \
        in t.warnings


def test_duplicate_and_empty_headers():
    names, notes = dedupe_names(["id", "Name", "name", "", "id"])
    assert names == ["id", "Name", "name", "column_4", "id_2"]
    assert notes == ["column 4 has no header name: named column_<number>",
                     "column 5 repeats the header name of column 1: suffix _2 added"]


def test_a_generated_name_never_takes_a_name_of_the_header():
    names, notes = dedupe_names(["a", "a", "a_2", "a", "", "column_5"])
    assert names == ["a", "a_3", "a_2", "a_4", "column_5_2", "column_5"]
    assert len(set(names)) == len(names)
    assert notes == ["column 5 has no header name: named column_<number>",
                     "column 2 repeats the header name of column 1: suffix _3 added",
                     "column 4 repeats the header name of column 1: suffix _4 added",
                     "column 5 has no header name, and column_5 names another column: suffix _2 added"]


def test_a_query_table_resolves_every_name_to_its_own_column(tmp_path):
    from discovery.query.resolve import QueryError, read_query_file

    path = tmp_path / "q.csv"
    path.write_text("id,ID,a,a,a_2,Name\n1,x,p,q,r,n\n")
    q = read_query_file(str(path))
    assert q.names == ["id", "ID", "a", "a_3", "a_2", "Name"]
    assert {n: q.column(n).to_pylist() for n in q.names} == {
        "id": ["1"], "ID": ["x"], "a": ["p"], "a_3": ["q"], "a_2": ["r"], "Name": ["n"]}
    assert q.column("name").to_pylist() == ["n"]              # a case-insensitive match, when it is the only one
    with pytest.raises(QueryError, match=r"no column 'Id'.* 2 columns differ from it only in case \(id, ID\)"):
        q.ordinal("Id")


def test_parquet_and_truncated_parquet(tmp_path):
    table = pa.table({"n": [1, 2, None], "s": ["x", None, "z"], "d": pa.array([1.5, 2.0, 3.25])})
    pq.write_table(table, tmp_path / "ok.parquet")
    data = (tmp_path / "ok.parquet").read_bytes()
    t = read_lake_table(str(tmp_path), "ok.parquet", "parquet", len(data), Limits())
    assert [c.to_pylist() for c in t.columns] == [["1", "2", None], ["x", None, "z"], ["1.5", "2", "3.25"]]
    assert t.types == ["int", None, "float"]
    nested = pa.table({"tags": [["a", "b"], None], "point": [{"x": 1}, {"x": 2}]})
    pq.write_table(nested, tmp_path / "nested.parquet")
    size = (tmp_path / "nested.parquet").stat().st_size
    t = read_lake_table(str(tmp_path), "nested.parquet", "parquet", size, Limits())
    # Records become dotted leaf columns; lists, which have no string form of their own, their JSON text.
    assert t.names == ["tags", "point.x"]
    assert [c.to_pylist() for c in t.columns] == [['["a", "b"]', None], ["1", "2"]]
    with pytest.raises(LakeFileError, match="unreadable Parquet"):
        _read(tmp_path, "cut.parquet", data[: len(data) // 2])


def test_missing_lake_folder():
    with pytest.raises(FileNotFoundError, match="does not exist"):
        list_lake("/nonexistent/lake")


def test_listing_skips_metadata_and_unknown_files(tmp_path):
    (tmp_path / "_ground_truth").mkdir()
    (tmp_path / "_ground_truth" / "gt.csv").write_text("a\n1\n")
    (tmp_path / ".hidden.csv").write_text("a\n1\n")
    (tmp_path / "notes.md").write_text("x")
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.TSV").write_text("a\tb\n1\t2\n")
    assert [(f.path, f.format) for f in list_lake(str(tmp_path))] == [("sub/t.TSV", "tsv")]


@pytest.mark.parametrize("values,kind", [
    (["1", "2", "-3", "1,234"], "int"), (["1.5", "2", "3e4", "12%"], "float"), (["true", "no", "T"], "bool"),
    (["2024-01-02", "1999-12-31"], "date"), (["2024-01-02 10:00:00", "2024-01-02T10:00Z"], "datetime"),
    (["Paris", "Rome"], "string"), ([None, None], "empty"),
    (["1"] * 99 + ["oops"], "int"), (["1"] * 90 + ["x"] * 10, "string"),
])
def test_type_inference(values, kind):
    assert infer_type(pa.array(values, pa.string()), 0.95) == kind


def test_profile_counts_and_key_candidates(tmp_path):
    t = _read(tmp_path, "p.csv", b"id,city,score\n1,Paris,1.5\n2,paris,\n3,Rome,2\n")
    prof = {p["name"]: p for p in profile_table(t, ProfileConfig())}
    assert prof["id"]["key_candidate"] and prof["id"]["distinct_count"] == 3 and prof["id"]["type"] == "int"
    assert prof["city"]["distinct_count"] == 2 and not prof["city"]["key_candidate"]  # Paris == paris normalised
    assert prof["score"]["null_fraction"] == pytest.approx(1 / 3) and prof["score"]["type"] == "float"
