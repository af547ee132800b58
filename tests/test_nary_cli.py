"""``lakescout nary`` and ``Lakescout.nary`` on the sample lake read through the real index: exact answers (equal to
``exhaustive`` and to the lake's ground truth, mapping included), the JSON shape, and clear errors."""
from __future__ import annotations

import json
from collections import defaultdict

import pytest

from discovery.api import Lakescout
from discovery.config import Config
from discovery.ground.normalize import normalize_array
from discovery.indexes.nary.service import MATCHED_SAMPLE
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.query.resolve import QueryError, resolve_query
from discovery.surfaces.cli import main

from test_nary_stage import run_refresh


@pytest.fixture(scope="module")
def warehouse(spark, demo_lake, tmp_path_factory):
    wh = str(tmp_path_factory.mktemp("nary") / "wh")
    run_refresh(spark, wh, demo_lake, Config())
    return wh


@pytest.fixture(scope="module")
def truth(demo_lake):
    """Ground truth per n-ary query: lake path -> (J, lake key columns), tables with J > 0 only."""
    out = defaultdict(dict)
    for row in load_ground_truth(demo_lake)["nary"]:
        if row["joinable_tuples"] > 0:
            out[(row["query_table"], tuple(row["query_columns"]))][row["lake_table"]] = (
                row["joinable_tuples"], row["lake_columns"])
    return out


def test_answers_equal_exhaustive_and_ground_truth(warehouse, truth):
    ls = Lakescout(warehouse)
    assert len(truth) >= 5
    for (query, key), expected in truth.items():
        everything = ls.nary(query, list(key), k=1000, method="exhaustive")
        got = {r["path"]: (r["joinability"], [r["mapping"][c] for c in key]) for r in everything["results"]}
        assert got == expected, query
        reference = [(r["table_id"], r["joinability"]) for r in everything["results"]]
        for method in ("mate", "scr", "bloom"):
            for k in (1, 5):
                top = ls.nary(query, ",".join(key), k=k, method=method)
                assert [(r["table_id"], r["joinability"]) for r in top["results"]] == reference[:k], (query, method)
        assert ls.nary(query, list(key), k=5, bits=512)["results"] == ls.nary(query, list(key), k=5)["results"]


def test_json_shape_and_self_exclusion(warehouse, truth, capsys):
    (query, key), expected = next(iter(truth.items()))
    assert main(["nary", "--warehouse", warehouse, "--query", query, "--key", ",".join(key), "-k", "3",
                 "--json"]) == 0
    out = json.loads(capsys.readouterr().out)
    assert set(out) == {"snapshot_id", "query", "key", "method", "results", "stats"}
    assert out["key"] == list(key) and out["method"] == "mate" and out["query"] == query
    assert [r["rank"] for r in out["results"]] == [1, 2, 3]
    for r in out["results"]:
        assert set(r) == {"rank", "table_id", "path", "joinability", "mapping", "matched_tuples", "tuples_not_found"}
        assert expected[r["path"]] == (r["joinability"], [r["mapping"][c] for c in key])
    for field in ("candidate_rows_fetched", "rows_passing_filter", "false_positive_rows", "rows_verified"):
        assert isinstance(out["stats"][field], int)
    assert out["stats"]["rows_verified"] <= out["stats"]["rows_passing_filter"] <= out["stats"]["rows_checked"]
    # the query named by its lake table id is left out of its own results
    ls = Lakescout(warehouse)
    own = ls.nary(query, list(key), k=1, method="exhaustive")
    top_id = own["results"][0]["table_id"]
    top_path = own["results"][0]["path"]
    by_id = ls.nary(str(top_id), [expected[top_path][1][0], expected[top_path][1][1]], k=50)
    assert top_id not in [r["table_id"] for r in by_id["results"]]
    assert main(["nary", "--warehouse", warehouse, "--query", query, "--key", ",".join(key)]) == 0
    human = capsys.readouterr().out
    assert "rank" in human and f"{key[0]} -> " in human


def _tuples(snapshot, table: str, columns: list[str]) -> set[tuple[str, ...]]:
    """The distinct normalised tuples of ``columns`` over the rows of ``table`` that have a value in each."""
    t = resolve_query(snapshot, table)
    values = [normalize_array(t.column(c)).to_pylist() for c in columns]
    return {row for row in zip(*values) if None not in row}


def test_results_carry_their_matched_tuples(warehouse, truth):
    """Each result's matched tuples are query tuples that one row of the lake table holds under its mapping, as
    many as J (up to the sample's bound), and the tuples not found are the rest of the query's distinct tuples."""
    ls = Lakescout(warehouse)
    for (query, key), _ in list(truth.items())[:4]:
        out = ls.nary(query, list(key), k=3)
        asked = _tuples(ls.snapshot, query, list(key))
        assert out["stats"]["query_tuples"] == len(asked)
        for r in out["results"]:
            held = asked & _tuples(ls.snapshot, r["path"], [r["mapping"][c] for c in key])
            assert len(held) == r["joinability"]
            matched = [tuple(t) for t in r["matched_tuples"]]
            assert len(matched) == len(set(matched)) == min(r["joinability"], MATCHED_SAMPLE)
            assert set(matched) <= held
            assert r["tuples_not_found"] == len(asked) - r["joinability"]


def run_error(argv, capsys) -> str:
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert "Traceback" not in captured.err and captured.err.count("\n") == 1
    return captured.err


def test_errors_are_one_clear_line(warehouse, truth, tmp_path, capsys):
    (query, key), _ = next(iter(truth.items()))
    base = ["nary", "--warehouse", warehouse, "--query", query]
    assert "no column 'nope'" in run_error(base + ["--key", f"{key[0]},nope"], capsys)
    assert "lakescout join" in run_error(base + ["--key", key[0]], capsys)
    assert "distinct" in run_error(base + ["--key", f"{key[0]},{key[0]}"], capsys)
    assert "empty column name" in run_error(base + ["--key", f"{key[0]},"], capsys)
    assert "initial column" in run_error(base + ["--key", ",".join(key), "--initial-column", "x"], capsys)
    empty = tmp_path / "empty.csv"
    empty.write_text("a,b,c\nNA,x,1\n,y,2\n", encoding="utf-8")
    assert "empty" in run_error(["nary", "--warehouse", warehouse, "--query", str(empty), "--key", "a,b"], capsys)
    missing = str(tmp_path / "nowhere")
    assert "nowhere" in run_error(["nary", "--warehouse", missing, "--query", query, "--key", "a,b"], capsys)
    assert "neither a file" in run_error(base[:4] + ["no/such.csv", "--key", "a,b"], capsys)
    with pytest.raises(QueryError):
        Lakescout(warehouse).nary(query, list(key), k=0)
    with pytest.raises(QueryError):
        Lakescout(warehouse).nary(query, list(key), method="fast")
