"""Finding lake tables by name through ``Lakescout.find`` and ``lakescout find`` on the indexed sample lake: the
ranking equals a plain re-computation of its definition, planted tables are found by their own names written
differently, values are matched when asked, and bad terms are refused in one line."""
from __future__ import annotations

import json

import numpy as np
import pytest

from discovery.api import Lakescout
from discovery.cli import main
from discovery.demo_lake import load_ground_truth
from discovery.encoders.header import header_vectors
from discovery.find import MIN_SIMILARITY, table_name
from discovery.params import ParameterError
from discovery.query import QueryError
from discovery.vectors import snapshot_encoders


@pytest.fixture(scope="module")
def lake(indexed_lake):
    path, warehouse = indexed_lake
    return {"ls": Lakescout(warehouse), "truth": load_ground_truth(path), "warehouse": warehouse}


def brute_force(ls: Lakescout, terms: list[str]) -> list[tuple[int, float, float]]:
    """(table id, score, coverage) of every table matching a term, by the definition, one table at a time."""
    encoder = snapshot_encoders(ls.snapshot).column
    cfg = encoder.column
    vec = lambda names: header_vectors(names, cfg.header_dim, seed=cfg.seed)  # noqa: E731
    q = vec(terms)
    columns = ls.snapshot.read("columns", columns=["table_id", "name"]).to_pylist()
    out = []
    for t in ls.tables(status=["ok", "stale"]):
        names = [c["name"] for c in columns if c["table_id"] == t["table_id"]]
        sims = q @ vec(names).T if names else np.zeros((len(terms), 0))
        own = q @ vec([table_name(t["path"])])[0]
        best, matched = [], set()
        for i in range(len(terms)):
            hits = [s for s in sims[i] if s >= MIN_SIMILARITY] + ([own[i]] if own[i] >= MIN_SIMILARITY else [])
            best.append(max(hits, default=0.0))
            matched |= {j for j, s in enumerate(sims[i]) if s >= MIN_SIMILARITY}
        if any(best):
            out.append((t["table_id"], sum(best) / len(terms), len(matched) / max(len(names), 1)))
    return out


@pytest.mark.parametrize("terms", [["salary", "department"], ["Company_Name", "LINE-OF-BUSINESS", "town"],
                                   ["population", "year"]])
def test_the_ranking_is_its_definition(lake, terms):
    ls = lake["ls"]
    got = ls.find(terms, k=1000)["results"]
    expected = brute_force(ls, terms)
    assert len(got) == len(expected) > 0
    by_id = {t: (s, c) for t, s, c in expected}
    for r in got:
        score, cover = by_id[r["table_id"]]
        assert r["score"] == pytest.approx(score, abs=1e-4) and r["coverage"] == pytest.approx(cover, abs=1e-4)
    for a, b in zip(got, got[1:]):         # by score, then coverage, then table id (scores equal to 1e-5 tie)
        (sa, ca), (sb, cb) = by_id[a["table_id"]], by_id[b["table_id"]]
        assert sa > sb - 1e-5
        if abs(sa - sb) < 1e-5:
            assert ca >= cb and (ca > cb or a["table_id"] < b["table_id"])
    assert [r["rank"] for r in got] == list(range(1, len(got) + 1))
    top = ls.find(terms, k=3)["results"]
    assert [r["table_id"] for r in top] == [r["table_id"] for r in got[:3]]
    for r in got[:5]:                      # each match names a column of the table (or the table) and a term
        assert {m["term"] for m in r["matches"]} <= set(terms)
        names = {c["name"] for c in ls.describe(r["table_id"])["columns"]}
        assert all(m.get("column") in names or m.get("table_name") for m in r["matches"])


def test_planted_tables_are_found_by_their_own_names_written_differently(lake):
    ls, truth = lake["ls"], lake["truth"]
    columns: dict[str, list[str]] = {}
    for r in truth["union_columns"]:
        columns.setdefault(r["table"], []).append(r["column"])
    indexed = {r["path"] for r in ls.tables()}
    tables = sorted(t for t in columns if t in indexed)[:40]
    styles = (str.upper, lambda n: n.lower().replace(" ", "_"), lambda n: n.title().replace(" ", "-"))
    found = 0
    for i, table in enumerate(tables):
        names = [styles[(i + j) % 3](n) for j, n in enumerate(columns[table])]
        found += table in [r["path"] for r in ls.find(names, k=5)["results"]]
    assert found == len(tables)


def test_values_are_matched_when_asked(lake):
    ls = lake["ls"]
    row = next(r for r in lake["truth"]["join_values"] if any(c.isalpha() for c in r["lake_value"]))
    value = row["lake_value"]
    by_name = ls.find([value])["results"]
    with_values = ls.find([value], values=True)["results"]
    hits = [r for r in with_values if any("value" in m for m in r["matches"])]
    assert hits and row["lake_table"] in [r["path"] for r in hits]
    assert all(m["similarity"] == 1.0 for r in hits for m in r["matches"] if "value" in m)
    assert len(with_values) >= len(by_name)


def test_bad_terms_are_refused(lake, capsys):
    ls = lake["ls"]
    with pytest.raises(QueryError, match="give one or more words"):
        ls.find([" ", ""])
    with pytest.raises(QueryError, match="term '2024' has no letters"):
        ls.find(["2024"])
    with pytest.raises(ParameterError, match="k must be"):
        ls.find(["salary"], k=0)
    with pytest.raises(ParameterError, match="words must be a list of strings"):
        ls.find([3])
    assert main(["find", "--warehouse", lake["warehouse"], "2024"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "has no letters" in err


def test_cli_find(lake, capsys, monkeypatch):
    monkeypatch.delenv("COLUMNS", raising=False)
    ls = lake["ls"]
    assert main(["find", "--warehouse", lake["warehouse"], "salary", "hire date", "-k", "3", "--json"]) == 0
    assert json.loads(capsys.readouterr().out) == ls.find(["salary", "hire date"], k=3)
    assert main(["find", "--warehouse", lake["warehouse"], "salary", "-k", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[1].split() == ["rank", "score", "table_id", "path", "matches"] and len(lines) == 5
    assert "salary ~ " in lines[3]
