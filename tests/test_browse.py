"""Browsing the index through the path users take: ``Lakescout.tables`` / ``describe``, ``lakescout tables`` /
``describe``, the page's lake tables view; checked against the warehouse's own tables read directly."""
from __future__ import annotations

import json
import os
import re
import sys

import pyarrow.compute as pc
import pytest

from discovery.api import Lakescout
from discovery.data.lake.patterns import TableFilter
from discovery.query.resolve import QueryError
from discovery.surfaces.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plugins"))


@pytest.fixture(scope="module")
def ls(indexed_lake) -> Lakescout:
    return Lakescout(indexed_lake[1])


def test_tables_filters_by_path_format_and_status(ls):
    catalog = ls.snapshot.read("catalog").sort_by("path").to_pylist()
    everything = ls.tables()
    assert [r["path"] for r in everything] == [r["path"] for r in catalog if r["status"] != "deleted"]
    assert set(everything[0]) == {"table_id", "path", "format", "status", "rows", "cols", "bytes", "version",
                                  "content_hash", "indexed_at", "refresh_id", "error"}
    keep = TableFilter(include=["finance/", "*.tsv"])
    assert [r["path"] for r in ls.tables(path=["finance/", "*.tsv"])] == [
        r["path"] for r in catalog if r["status"] != "deleted" and keep(r["path"])]
    live = [r for r in catalog if r["status"] != "deleted"]
    family = lambda f: re.split(r"[/.]", f)[0]  # noqa: E731 - csv for csv.gz, hive for hive/parquet
    for fam in {family(r["format"]) for r in live}:
        assert [r["path"] for r in ls.tables(format=fam)] == [r["path"] for r in live if family(r["format"]) == fam]
    assert ls.tables(format=["parquet", "tsv"]) == [r for r in everything if r["format"] in ("parquet", "tsv")]
    errors = ls.tables(status="error")
    assert errors and [r["table_id"] for r in errors] == [r["table_id"] for r in catalog if r["status"] == "error"]
    assert all(r["error"] for r in errors)
    assert [r["version"] for r in everything] == [r["version"] for r in live]
    with pytest.raises(QueryError, match="status must be one of ok, stale, error, deleted"):
        ls.tables(status="broken")


def test_describe_says_what_each_column_is_in_and_why_not(ls):
    snap = ls.snapshot
    table = next(r for r in ls.tables() if r["path"] == "geo/legacy/staedte_umsatz.csv")
    out = ls.describe(table["path"])
    assert ls.describe(table["table_id"]) == out
    tid = table["table_id"]
    columns = snap.read("columns", filter=pc.field("table_id") == tid).sort_by("ordinal").to_pylist()
    assert [(c["name"], c["type"], c["distinct_count"]) for c in out["columns"]] == [
        (c["name"], c["type"], c["distinct_count"]) for c in columns]
    vectors = set(snap.read("column_vectors", columns=["ordinal"], filter=pc.field("table_id") == tid)["ordinal"]
                  .to_pylist())
    values = set(snap.read("value_vectors", columns=["ordinal"], filter=pc.field("table_id") == tid)["ordinal"]
                 .to_pylist())
    for c in out["columns"]:
        assert ("union" in c["indexes"]) == (c["ordinal"] in vectors)
        assert ("join" in c["indexes"]) == (c["ordinal"] in values)
        assert set(c["indexes"]) | set(c["not_indexed"]) == {"union", "join", "numeric", "nary"}
        assert not set(c["indexes"]) & set(c["not_indexed"])
    by_name = {c["name"]: c for c in out["columns"]}
    assert by_name["Umsatz"]["type"] == "string"       # "18.58 €": text, so not in the numerical join
    assert by_name["Umsatz"]["not_indexed"]["numeric"] == "string values, not numbers"
    few = by_name["Geschäftstyp"]
    assert re.fullmatch(rf"{few['distinct_count']} distinct values, fewer than \[embed\] join_min_distinct \(\d+\)",
                        few["not_indexed"]["join"])
    assert "not valid UTF-8; decoded as cp1252" in out["warnings"]
    broken = ls.describe(ls.tables(status="error")[0]["table_id"])
    assert broken["columns"] == [] and broken["table"]["error"]
    with pytest.raises(QueryError, match="no lake table 'no/such.csv'"):
        ls.describe("no/such.csv")


def test_describe_names_the_numerical_join_of_numbers(ls):
    numeric = ls.snapshot.read("numeric_sets", columns=["table_id", "kind", "ordinals"])
    row = numeric.filter(pc.equal(numeric["kind"], "number")).slice(0, 1).to_pylist()[0]
    col = ls.describe(row["table_id"])["columns"][row["ordinals"][0]]
    assert "numeric" in col["indexes"] and col["numeric_kinds"][0] == "number"
    assert "the numerical join takes this column" in col["not_indexed"]["join"]


def test_cli_tables_and_describe(ls, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    wh = ls.warehouse.root
    assert main(["tables", "--warehouse", wh, "--path", "finance/", "--format", "csv", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == json.loads(json.dumps(ls.tables(path="finance/", format="csv"),
                                                                        default=str))
    assert main(["tables", "--warehouse", wh, "--status", "error"]) == 0
    out = capsys.readouterr().out.splitlines()
    assert out[0].split() == ["table_id", "path", "format", "status", "rows", "cols", "bytes", "version", "reason"]
    assert out[-1] == f"{len(ls.tables(status='error'))} table(s)"
    assert main(["describe", "--warehouse", wh, "geo/legacy/staedte_umsatz.csv"]) == 0
    text = capsys.readouterr().out
    assert "warning    not valid UTF-8; decoded as cp1252" in text
    assert re.search(r"^  2 +Umsatz +string .* numeric: string values, not numbers$", text, re.M)
    assert main(["describe", "--warehouse", wh, "nope.csv"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no lake table 'nope.csv'" in err


def test_the_page_lists_and_describes_tables(ls, airflow_token, monkeypatch):
    from fastapi.testclient import TestClient
    from lakescout_ui.app import create_app

    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", ls.warehouse.root)
    client = TestClient(create_app())
    viewer = {"_token": airflow_token("ada", "viewer")}
    assert client.get("/tables").status_code == 401
    listing = client.get("/tables", params={"path": "finance/", "status": "ok"}, cookies=viewer)
    expected = ls.tables(path="finance/", status="ok")
    assert listing.status_code == 200 and f'id="table-count">{len(expected)} table(s)' in listing.text
    assert re.findall(r'<a href="/tables/(\d+)">', listing.text) == [str(r["table_id"]) for r in expected]
    page = client.get(f"/tables/{expected[0]['table_id']}", cookies=viewer)
    described = ls.describe(expected[0]["table_id"])
    assert page.status_code == 200 and all(f"<td>{c['name']}</td>" in page.text for c in described["columns"])
    by_path = client.get(f"/tables/{expected[0]['path']}", cookies=viewer)
    assert by_path.status_code == 200 and 'id="described"' in by_path.text
    missing = client.get("/tables/no/such.csv", cookies=viewer)
    assert missing.status_code == 404 and "no lake table &#39;no/such.csv&#39;" in missing.text
    found = client.get("/tables", params={"find": 'salary "hire date"'}, cookies=viewer)
    expected = ls.find(["salary", "hire date"])["results"]
    assert found.status_code == 200
    assert f'id="find-summary">{len(expected)} table(s) for salary, hire date' in found.text
    assert re.findall(r'<a href="/tables/(\d+)">', found.text) == [str(r["table_id"]) for r in expected]
    by_meaning = client.get("/tables", params={"find": "wage"}, cookies=viewer)   # no lake name is spelled so
    assert by_meaning.status_code == 200 and "wage as salary ~ " in by_meaning.text
    refused = client.get("/tables", params={"find": "2024"}, cookies=viewer)
    assert refused.status_code == 400 and "has no letters" in refused.text
