"""Finding lake tables by name through ``Lakescout.find`` and ``lakescout find`` on the indexed sample lake: the
ranking equals a plain re-computation of its definition, planted tables are found by their own names written
differently, values are matched when asked, and bad terms are refused in one line."""
from __future__ import annotations

import json
import math
from collections import Counter
from itertools import permutations

import pytest

from discovery.api import Lakescout
from discovery.indexes.find import MIN_SIMILARITY, SYNONYM_WEIGHT, WORD_WEIGHT, table_name
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.query.params import ParameterError
from discovery.query.resolve import QueryError
from discovery.surfaces.cli import main
from discovery.transforms.encoders.header import header_words
from discovery.transforms.lexicon import lexicon


@pytest.fixture(scope="module")
def lake(indexed_lake):
    path, warehouse = indexed_lake
    return {"ls": Lakescout(warehouse), "truth": load_ground_truth(path), "warehouse": warehouse}


def features(name: str) -> Counter:
    """A name's features by the definition, in plain Python: each word (weight 2) and each character 3- and 4-gram
    of ``<its words>`` (weight 1)."""
    words = header_words(name)
    text = "<" + " ".join(words) + ">"
    out = Counter({("word", w): 0 for w in words})
    for w in words:
        out[("word", w)] += WORD_WEIGHT
    for n in (3, 4):
        for i in range(len(text) - n + 1):
            out[(n, text[i:i + n])] += 1
    return out if words else Counter()


def similarity(term: str, name: str) -> float:
    """The term's best similarity to a name by spelling or through a synonym (0 when none matches), with the
    two-letter rule."""
    best = 0.0
    words = header_words(term)
    variants = [(tuple(words), 1.0)] + [(v, SYNONYM_WEIGHT ** n) for v, _, n in lexicon().variants(words)]
    # two or three words are matched in every order
    variants = [(p, w) for v, w in variants for p in (set(permutations(v)) if 2 <= len(v) <= 3 else [v])]
    theirs = header_words(name)
    b = features(name)
    for variant, weight in variants:
        a = features(" ".join(variant))
        if not a or not b:
            continue
        short = lambda ws: bool(ws) and all(len(w) <= 2 for w in ws)  # noqa: E731
        if (short(variant) or short(theirs)) and not set(variant) & set(theirs):
            continue
        dot = sum(a[f] * b[f] for f in a)
        cos = round(dot / math.sqrt(sum(x * x for x in a.values()) * sum(x * x for x in b.values())), 6)
        if cos >= MIN_SIMILARITY:
            best = max(best, round(weight * cos, 6))
    return best


def brute_force(ls: Lakescout, terms: list[str]) -> list[tuple[int, float, float]]:
    """(table id, score, coverage) of every table matching a term, by the definition, one table at a time."""
    columns = ls.snapshot.read("columns", columns=["table_id", "name"]).to_pylist()
    out = []
    for t in ls.tables(status=["ok", "stale"]):
        names = [c["name"] for c in columns if c["table_id"] == t["table_id"]]
        best, matched = [], set()
        for term in terms:
            sims = [similarity(term, n) for n in names]
            own = similarity(term, table_name(t["path"]))
            best.append(max(sims + [own]))
            matched |= {j for j, s in enumerate(sims) if s > 0}
        if any(best):
            out.append((t["table_id"], sum(best) / len(terms), len(matched) / max(len(names), 1)))
    return out


@pytest.mark.parametrize("terms", [["salary", "department"], ["Company_Name", "LINE-OF-BUSINESS", "town"],
                                   ["population", "year"], ["wage", "dob"], ["pay"], ["to", "id"],
                                   ["name hospital", "date of hire"]])
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


def test_a_names_words_are_matched_in_any_order(lake):
    """``name_company`` finds the tables of ``Company Name`` as that name does, by spelling (similarity 1)."""
    ls = lake["ls"]
    columns = ls.snapshot.read("columns", columns=["table_id", "name"]).to_pylist()
    named = [c["name"] for c in columns if len(header_words(c["name"])) == 2][:20]
    assert named
    for name in named:
        reordered = "_".join(reversed(header_words(name)))
        holding = {c["table_id"] for c in columns if header_words(c["name"]) == header_words(name)}
        got = ls.find([reordered], k=1000)["results"]
        exact = {r["table_id"] for r in got if r["score"] == 1.0}
        assert holding <= exact, (name, reordered)


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


def test_names_are_found_by_meaning(lake):
    ls = lake["ls"]
    columns = ls.snapshot.read("columns", columns=["table_id", "name"]).to_pylist()
    paths = {t["table_id"]: t["path"] for t in ls.tables()}
    holding = lambda word: {paths[c["table_id"]] for c in columns  # noqa: E731
                            if header_words(c["name"]) == [word] and c["table_id"] in paths}
    salary, compensation = holding("salary"), holding("compensation")
    assert salary and compensation
    got = ls.find(["wage"], k=1000)["results"]           # no lake name is spelled like wage
    assert salary | compensation <= {r["path"] for r in got}
    for r in got:
        assert all(m["synonym"] and m["similarity"] <= SYNONYM_WEIGHT for m in r["matches"])
    ranked = [r["path"] for r in ls.find(["compensation"], k=1000)["results"]]
    # the term's own word first, then its synonyms
    assert set(ranked[:len(compensation)]) == compensation and salary <= set(ranked[len(compensation):])


def test_two_letters_are_a_word_not_a_spelling(lake):
    ls = lake["ls"]
    for term in ("pay", "destination"):
        for r in ls.find([term], k=1000)["results"]:
            for m in r["matches"]:
                words = header_words(m.get("column") or m.get("table_name"))
                assert not all(len(w) <= 2 for w in words), (term, m)
    got = ls.find(["to"], k=1000)["results"]
    assert got and all("to" in header_words(m["column"]) for r in got for m in r["matches"])
