"""The delimited-text repair rules: one fixture file per rule, exact cells and the warning it lists.

Every rule must keep each cell in its own column; files with quoted cells that contain the delimiter check that no
repair shifts a row.  A last test compares the reader with pandas on generated messy files.
"""
from __future__ import annotations

import csv
import pickle

import numpy as np
import pandas as pd
import pytest

from discovery.config import Limits
from discovery.data.lake import LakeFileError, read_lake_table

PADDED = "delimiter padded with spaces (' | '): a quote after the padding opens a quoted cell"


def _read(tmp_path, data: str | bytes, name: str = "t.csv", limits: Limits = Limits()):
    raw = data.encode() if isinstance(data, str) else data
    (tmp_path / name).write_bytes(raw)
    return read_lake_table(str(tmp_path), name, "csv", len(raw), limits)


def _rows(table) -> list[list]:
    return [list(r) for r in zip(*(c.to_pylist() for c in table.columns))]


def test_trailing_delimiter_on_every_row_keeps_cells_in_their_columns(tmp_path):
    t = _read(tmp_path, "style | plan | building\r\nModern | Detached | Divider |\r\nBauhaus | Single | Niche |\r\n")
    assert t.names == ["style", "plan", "building"]
    assert _rows(t) == [["Modern", "Detached", "Divider"], ["Bauhaus", "Single", "Niche"]]
    assert t.warnings == ["2 of 2 rows (lines 2 and 3) end with a delimiter after the last column: the empty fields "
                          "are dropped"]


def test_trailing_delimiter_on_the_header_too(tmp_path):
    t = _read(tmp_path, "a|b|\n1|2|\n3|4\n5|6|\n")
    assert t.names == ["a", "b"]
    assert _rows(t) == [["1", "2"], ["3", "4"], ["5", "6"]]
    assert t.warnings == [
        "column 3: no header name and no value in any row (an extra delimiter on every line): dropped",
        "2 of 3 rows (lines 2 and 4) end with a delimiter after the last column: the empty fields are dropped"]


def test_trailing_header_field_with_values_below_is_a_column(tmp_path):
    t = _read(tmp_path, "a,b,\n1,2,x\n3,4,\n")
    assert t.names == ["a", "b", "column_3"]
    assert _rows(t) == [["1", "2", "x"], ["3", "4", None]]
    assert t.warnings == ["column 3 has no header name: named column_<number>"]


def test_padded_delimiter_and_quoted_cells_holding_it(tmp_path):
    t = _read(tmp_path, 'name | note | n\n"Smith | J." | "say ""hi"" | bye" | 1\nDoe | plain | 2 |\n')
    assert _rows(t) == [["Smith | J.", 'say "hi" | bye', "1"], ["Doe", "plain", "2"]]
    assert t.warnings == [PADDED, "1 of 2 rows (line 3) end with a delimiter after the last column: the empty "
                                  "fields are dropped"]


def test_no_repair_shifts_a_row_with_quoted_delimiters(tmp_path):
    data = ('id,city,remark\n'
            '1,"Paris, France","a, b"\n'
            '2,"Rome","line one\nline two, still"\n'
            '3,Oslo,x,y\n'
            '4,"Bern, CH",\n'
            '5,"Lima, ""PE""",z,\n')
    t = _read(tmp_path, data)
    assert t.names == ["id", "city", "remark"]
    assert _rows(t) == [["1", "Paris, France", "a, b"], ["2", "Rome", "line one\nline two, still"],
                        ["4", "Bern, CH", None], ["5", 'Lima, "PE"', "z"]]
    assert t.warnings == [
        "1 of 5 rows (line 5) have 4 fields, more than the header's 3, and no rule explains them: skipped",
        "1 of 4 rows (line 7) end with a delimiter after the last column: the empty fields are dropped"]


def test_crlf_alone_is_no_repair_and_mixed_line_endings_are_listed(tmp_path):
    t = _read(tmp_path, "a,b\r\n1,2\r\n3,4\r\n")
    assert _rows(t) == [["1", "2"], ["3", "4"]] and t.warnings == []
    t = _read(tmp_path, "a,b\r\n1,2\n3,4\r5,6\r\n7,8,9\r\n10,11\n")
    assert _rows(t) == [["1", "2"], ["3", "4"], ["5", "6"], ["10", "11"]]
    assert t.warnings == [
        "mixed line endings (3 CRLF, 2 LF, 1 CR): each read as the end of a line",
        "1 of 5 rows (line 5) have 3 fields, more than the header's 2, and no rule explains them: skipped"]


def test_header_shorter_than_the_body(tmp_path):
    t = _read(tmp_path, "k|v\nx|1|a\ny|2|b\nz|3\n")
    assert t.names == ["k", "v", "column_3"]
    assert _rows(t) == [["x", "1", "a"], ["y", "2", "b"], ["z", "3", None]]
    assert t.warnings == [
        "the header is shorter than the body: 2 of 3 rows have more than its 2 fields (3 fields); the table is 3 "
        "columns wide, column 3 unnamed",
        "1 of 3 rows (line 4) have fewer than 3 fields: their missing cells at the end are empty",
        "column 3 has no header name: named column_<number>"]


def test_widened_table_drops_a_column_no_row_fills(tmp_path):
    t = _read(tmp_path, "k,v\nx,1,,a\ny,2,,b\n")
    assert t.names == ["k", "v", "column_4"]
    assert _rows(t) == [["x", "1", "a"], ["y", "2", "b"]]
    assert t.warnings == [
        "the header is shorter than the body: 2 of 2 rows have more than its 2 fields (4 fields); the table is 4 "
        "columns wide, columns 3 and 4 unnamed",
        "column 3: no header name and no value in any row (an extra delimiter on every line): dropped",
        "column 4 has no header name: named column_<number>"]


def test_header_longer_than_the_body(tmp_path):
    t = _read(tmp_path, "a;b;c;d\n1;2\n3;4\n")
    assert t.names == ["a", "b", "c", "d"]
    assert _rows(t) == [["1", "2", None, None], ["3", "4", None, None]]
    assert t.warnings == ["the header is longer than the body: no row has more than 2 of its 4 fields; columns 3 "
                          "and 4 empty"]


def test_short_rows_are_padded(tmp_path):
    t = _read(tmp_path, "a,b,c\n1,2,3\n4,5\n6\n")
    assert _rows(t) == [["1", "2", "3"], ["4", "5", None], ["6", None, None]]
    assert t.warnings == ["2 of 3 rows (lines 3 and 4) have fewer than 3 fields: their missing cells at the end are "
                          "empty"]


def test_a_stacked_second_table_is_not_indexed(tmp_path):
    t = _read(tmp_path, "planet,star\nMars,Sun\nVenus,Vega\ntopic,field,unit\nSun,Solar,K\nMoon,Tidal,m\n")
    assert t.names == ["planet", "star"]
    assert _rows(t) == [["Mars", "Sun"], ["Venus", "Vega"]]
    assert t.warnings == ["lines 4 to 6: 3 rows of 3 fields below the 2-field header (a second table written under "
                          "the first): not indexed"]


def test_markdown_table(tmp_path):
    t = _read(tmp_path, "| name | role |\n|------|:----:|\n| Ann  | lead |\n| Bo   | dev  |\n")
    assert t.names == ["name", "role"]
    assert _rows(t) == [["Ann", "lead"], ["Bo", "dev"]]
    assert t.warnings == [
        "line 2 is a Markdown rule under the header: skipped",
        "columns 1 and 4: no header name and no value in any row (an extra delimiter on every line): dropped",
        "2 of 2 rows (lines 3 and 4) end with a delimiter after the last column: the empty fields are dropped"]


def _pandas_row_count(path) -> int:
    return len(pd.read_csv(path, engine="python", on_bad_lines="skip", skipinitialspace=True, dtype=str))


def test_a_first_row_ending_with_a_delimiter_keeps_every_row_pandas_keeps(tmp_path):
    """pandas reads every row of up to as many fields as the first data row has; none of them is a second table."""
    t = _read(tmp_path, "a,b\n1,2,\n3,4,5\n6,7,8\n9,10,11\n")
    assert t.num_rows == _pandas_row_count(tmp_path / "t.csv") == 4
    assert t.names == ["a", "b", "column_3"]
    assert _rows(t) == [["1", "2", None], ["3", "4", "5"], ["6", "7", "8"], ["9", "10", "11"]]
    assert t.warnings == [
        "the header is shorter than the body: 3 of 4 rows have more than its 2 fields (3 fields); the table is 3 "
        "columns wide, column 3 unnamed",
        "column 3 has no header name: named column_<number>"]


def test_a_few_rows_as_wide_as_a_first_row_ending_with_a_delimiter_are_kept(tmp_path):
    t = _read(tmp_path, "a,b\n1,2,\n3,4,5\n6,7\n8,9\n10,11\n12,13,14,15\n")
    assert t.num_rows == _pandas_row_count(tmp_path / "t.csv") == 5
    assert _rows(t) == [["1", "2", None], ["3", "4", "5"], ["6", "7", None], ["8", "9", None], ["10", "11", None]]
    assert t.warnings == [
        "the first data row (line 2) has 3 fields, more than the header's 2, and pandas reads every row of up to 3 "
        "fields: 1 of 6 rows have more than 2 fields; the table is 3 columns wide, column 3 unnamed",
        "1 of 6 rows (line 7) have 4 fields, more than the table's 3, and no rule explains them: skipped",
        "3 of 5 rows (lines 4, 5 and 6) have fewer than 3 fields: their missing cells at the end are empty",
        "column 3 has no header name: named column_<number>"]


@pytest.mark.parametrize("data,rows", [
    (",,\n1,2,3\n4,5,6\n", [["1", "2", "3"], ["4", "5", "6"]]),
    (",,\nann,30,2.5\nbob,41,\n", [["ann", "30", "2.5"], ["bob", "41", None]]),
])
def test_a_header_of_bare_delimiters_over_data_is_a_header_of_unnamed_columns(tmp_path, data, rows):
    t = _read(tmp_path, data)
    assert t.num_rows == _pandas_row_count(tmp_path / "t.csv") == 2
    assert t.names == ["column_1", "column_2", "column_3"]
    assert _rows(t) == rows
    assert t.warnings[0] == ("line 1 has delimiters and no names over rows of data: it is the header, its columns "
                             "unnamed")


def test_bare_delimiters_above_a_header_of_names_are_blank_lines(tmp_path):
    t = _read(tmp_path, ",,\n,,\nname,age,city\nann,30,Oslo\n")
    assert t.names == ["name", "age", "city"] and _rows(t) == [["ann", "30", "Oslo"]]
    assert t.warnings == ["2 row(s) of delimiters without any value (lines 1 and 2): skipped as blank lines"]


def test_rows_of_bare_delimiters_are_blank_lines(tmp_path):
    t = _read(tmp_path, "a,b\n1,2\n,\n\n3,4\n,,\n")
    assert _rows(t) == [["1", "2"], ["3", "4"]]
    assert t.warnings == ["2 row(s) of delimiters without any value (lines 3 and 6): skipped as blank lines"]


def test_skipped_rows_are_bounded_and_the_error_names_lines_not_cells(tmp_path):
    data = "a,b\n1,2\n3,4,5\n6,7\n8,9\n10,,12\n13,14\n"
    t = _read(tmp_path, data)
    assert _rows(t) == [["1", "2"], ["6", "7"], ["8", "9"], ["13", "14"]]
    assert t.warnings == ["2 of 6 rows (lines 3 and 6) have 3 fields, more than the header's 2, and no rule explains "
                          "them: skipped"]
    with pytest.raises(LakeFileError) as err:
        _read(tmp_path, data, limits=Limits(max_skipped_rows=1, max_ragged_fraction=0.0))
    reason = ("ragged rows: 2 of 6 rows (lines 3 and 6) have 3 fields, more than the header's 2, and no rule explains "
              "them; at most 1 may be skipped")
    assert err.value.reason == reason
    assert err.value.examples == ("line 3: '3,4,5'", "line 6: '10,,12'")
    assert str(err.value) == reason + ", e.g. line 3: '3,4,5'; line 6: '10,,12'"


@pytest.mark.parametrize("ragged,ok", [(10, True), (11, False)])
def test_skip_bound_grows_with_the_table(tmp_path, ragged, ok):
    lines = ["a,b"] + [f"{i},{i}" for i in range(1000)]
    for k in range(ragged):                       # scattered, never two in a row
        lines.insert(2 + 50 * k, "x,y,z")
    data = "\n".join(lines) + "\n"
    if ok:
        t = _read(tmp_path, data)
        assert t.num_rows == 1000
        assert t.warnings[0].startswith(f"{ragged} of 1010 rows (lines 3, 53, 103, 153, 203, ...) have 3 fields")
    else:
        with pytest.raises(LakeFileError, match=r"ragged rows: 11 of 1011 rows .* at most 10 may be skipped"):
            _read(tmp_path, data)


@pytest.mark.parametrize("data,reason", [
    ("a,b\n", "header only: no data rows"),
    ("| a | b |\n|---|---|\n", "header only: no data rows"),
    ("|||\n|||\n", "no header row: no line has a value"),
])
def test_too_little_left(tmp_path, data, reason):
    with pytest.raises(LakeFileError, match=reason):
        _read(tmp_path, data)


def test_unclosed_quote_is_named_a_closed_multiline_one_is_read(tmp_path):
    t = _read(tmp_path, 'a,b\n1,"x\ny"\n')
    assert _rows(t) == [["1", "x\ny"]]
    for data in ('a,b\n1,2\n3,"x\n4,5\n', 'a,b\r\n1,2\r\n3,"x\r\n4,5\r\n', 'a,b\n1,2\n3,"x ""q""\n4,5'):
        with pytest.raises(LakeFileError, match="the quoted field opened on line 3 is never closed"):
            _read(tmp_path, data)


def test_cells_past_the_tokenizer_limit_name_line_and_column(tmp_path):
    n = csv.field_size_limit()
    with pytest.raises(LakeFileError, match=rf"cell on line 3, column 3 has more than {n - 1} characters; the limit "
                                            rf"is 65536"):
        _read(tmp_path, "a,b,c\n1,2,3\n4,5," + "x" * (n + 10) + "\n")


def test_delimiter_is_the_one_that_separates_the_header(tmp_path):
    t = _read(tmp_path, "sport | countries\nsoftball | USA, Canada\nbaseball | Japan, Cuba\n")
    assert t.delimiter == "|"
    assert _rows(t) == [["softball", "USA, Canada"], ["baseball", "Japan, Cuba"]]


def test_lake_file_error_reads_as_a_message_and_survives_pickling():
    plain = LakeFileError("empty file")
    assert (str(plain), plain.reason, plain.examples) == ("empty file", "empty file", ())
    err = pickle.loads(pickle.dumps(LakeFileError("ragged rows", ["line 3: 'x'"])))
    assert (str(err), err.reason, err.examples) == ("ragged rows, e.g. line 3: 'x'", "ragged rows", ("line 3: 'x'",))


_WORDS = ["alpha", "beta", "gamma", "delta", "omega", "kappa", "sigma", "theta", "zeta", "iota"]


def _messy_file(rng: np.random.Generator) -> tuple[str, str, list[str], list[list], bool]:
    """A random table rendered with messy but readable dialect features; returns text, delimiter, names, rows, and
    whether pandas is a fair reference: it moves cells when only the rows end with a delimiter, and its strict
    tokenizer drops a row whose quoted cell is followed by padding (``"a, b" , c``)."""
    delim = str(rng.choice([",", "|", ";", "\t"]))
    pad = delim != "\t" and bool(rng.random() < 0.5)
    trailing = str(rng.choice(["none", "header and rows", "rows"]))
    n_cols, n_rows = int(rng.integers(2, 6)), int(rng.integers(3, 12))
    names = [f"{_WORDS[i]}_name" for i in range(n_cols)]
    rows = []
    for _ in range(n_rows):
        row = []
        for c in range(n_cols):
            w1, w2 = rng.choice(_WORDS, 2)
            kind = int(rng.integers(0, 6))
            row.append(None if kind == 0 and c > 0 else f"{w1}{delim} {w2}" if kind == 1 else
                       f'{w1} "{w2}"' if kind == 2 else f"{w1}\n{w2}" if kind == 3 else str(w1))
        rows.append(row)

    def cell(v):
        if v is None:
            return ""
        return '"' + v.replace('"', '""') + '"' if any(ch in v for ch in (delim, '"', "\n")) else v

    sep = f" {delim} " if pad else delim
    endings = str(rng.choice(["\n", "\r\n", "mixed"]))
    out = []
    for i, fields in enumerate([names] + rows):
        fields = [cell(v) for v in fields]
        while i and fields[-1] == "" and rng.random() < 0.7:
            fields.pop()                               # a short row
        line = sep.join(fields)
        if trailing == "header and rows" or (trailing == "rows" and i):
            line += sep.rstrip() if pad else delim
        out.append(line + (str(rng.choice(["\n", "\r\n", "\r"])) if endings == "mixed" else endings))
    return "".join(out), delim, names, rows, trailing != "rows" and not pad


def _pandas_rows(path, delim: str) -> tuple[list[str], list[list]]:
    df = pd.read_csv(path, sep=delim, engine="python", on_bad_lines="skip", skipinitialspace=True, dtype=str,
                     keep_default_na=False).fillna("")
    df = df[[c for c in df.columns if not (c.startswith("Unnamed:") and (df[c].str.strip() == "").all())]]
    rows = [[(v.strip() or None) for v in r] for r in df.itertuples(index=False)]
    return [c.strip() for c in df.columns], rows


@pytest.mark.parametrize("seed", range(60))
def test_generated_messy_files_match_their_source_and_pandas(tmp_path, seed):
    text, delim, names, rows, pandas_fair = _messy_file(np.random.default_rng(seed))
    t = _read(tmp_path, text)
    assert t.delimiter == delim
    assert (t.names, _rows(t)) == (names, rows)
    assert not any(w in warning for warning in t.warnings for w in _WORDS)    # warnings never quote cells
    if pandas_fair:
        assert _pandas_rows(tmp_path / "t.csv", delim) == (names, rows)
