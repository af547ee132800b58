"""Context breaks ties in the semantic join: the order rule on random inputs (joinability order kept beyond the
margin), and a lake where a ``Party`` column ties across tables and the table sharing the query's other columns is
lifted to first, through ``discovery.open(...).join`` and the CLI, with its evidence; the page shows it."""
from __future__ import annotations

import csv
import json
import os
import subprocess
import sys

import numpy as np
import pyarrow as pa
import pytest

import discovery
from discovery.indexes.join.context import (QueryContext, context_groups, context_order, is_category, is_row_number,
                                            table_context)
from discovery.indexes.join.service import join_search

PARTIES = ["Democratic", "Republican", "Federalist", "Whig", "Democratic-Republican", "National Republican",
           "Anti-Masonic", "Free Soil", "Know Nothing", "Constitutional Union", "Progressive", "Populist"]
OFFICES = ["President", "Vice President", "Secretary of State", "Treasury Secretary", "Attorney General"]


# -- the order rule -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(40))
def test_context_reorders_only_within_the_margin(seed):
    """Random counts and context scores: the result is a permutation; a result never passes one whose count exceeds
    its own by more than the slack; with slack 0 only ties move; without scores nothing moves."""
    rng = np.random.default_rng(seed)
    n, slack = int(rng.integers(1, 40)), int(rng.integers(0, 4))
    matches = sorted(rng.integers(1, 30, n).tolist(), reverse=True)
    scores = [None if rng.random() < 0.2 else float(rng.random() * 3) for _ in range(n)]
    order = context_order(matches, scores, slack)
    assert sorted(order) == list(range(n))
    for a in range(n):
        for b in range(a + 1, n):  # order[a] ranks above order[b]
            assert matches[order[b]] - matches[order[a]] <= slack
    groups = context_groups(matches, slack)
    assert [groups[i] for i in order] == sorted(groups)  # groups keep their order
    assert context_order(matches, [None] * n, slack) == list(range(n))
    ties = context_order(matches, scores, 0)
    assert [matches[i] for i in ties] == matches


def test_row_numbers_are_no_evidence():
    assert is_row_number(np.arange(5), ["0", "1", "2", "3", "4"])
    assert is_row_number(np.arange(3), ["1", "2", "3"])
    assert not is_row_number(np.arange(3), ["1789", "1790", "1791"])
    assert not is_row_number(np.array([0, 0, 1]), ["0", "0", "1"])
    assert not is_row_number(np.arange(3), ["a", "b", "c"])


def test_table_context_counts_column_pairs_and_agreeing_rows():
    """Query (Name, Party, Year); lake rows of (party, year, name): Year ~ year and Name ~ name join; a query row
    agrees when the lake row holding its matched party also holds its year or name."""
    q = QueryContext(["Name", "Party", "Year"], [pa.array(["ann", "bob", "cy", "dee"]),
                                                 pa.array(["Whig", "Whig", "Free Soil", "Whig"]),
                                                 pa.array(["1800", "1804", "1808", "1900"])], key=1)
    q.add_values(["whig", "free soil"])
    lake = [("whig", "1800", "ann"), ("whig", "1804", "bob"), ("free soil", "1808", "zed"), ("whig", "1812", "eve")]
    cells = [(c, r, v) for r, row in enumerate(lake) for c, v in enumerate(row)]
    postings = pa.table({"table_id": [7] * len(cells), "column": pa.array([c for c, _, _ in cells], pa.int32()),
                         "row": [r for _, r, _ in cells], "value": [v for _, _, v in cells]})
    ctx = table_context(q, postings, 0, {"whig": "whig", "free soil": "free soil"}, {0: "party", 1: "year", 2: "name"})
    assert [(a, b) for a, b, _ in ctx.pairs] == [("Name", "name"), ("Year", "year")]
    assert ctx.pairs[0][2] == 0.5 and ctx.pairs[1][2] == 0.75
    assert ctx.rows == 0.75  # ann, bob, cy agree (on year); dee's year 1900 is no whig row's
    assert ctx.score == pytest.approx(0.5 + 0.75 + 0.75)
    assert ctx.text().startswith("Name ~ name, Year ~ year; rows 0.75 (Year ~ year")


def _brute_force_context(query, postings, lake_column, link, lake_names):
    """The context by its definition, one set per (query column, lake column)."""
    col = postings.column("column").to_pylist()
    row = postings.column("row").to_pylist()
    code = query.code(postings.column("value")).tolist()
    key_of = {r: v for c, r, v in zip(col, row, code) if c == lake_column}
    cells = [(c, r, v) for c, r, v in zip(col, row, code) if c != lake_column and v >= 0]
    lake_cols = sorted({c for c, _, _ in cells})
    pairs = []
    for j in query.others:
        dj = set(query.distinct[j].tolist())
        best = max(((len(dj & {v for c2, _, v in cells if c2 == c}), c) for c in lake_cols), default=(0, -1))
        if best[0] >= 2 and best[0] / len(dj) >= 0.5:
            pairs.append((query.names[j], lake_names[best[1]], best[0] / len(dj)))
    linked = query.links(link).tolist()
    agree_any, row_pairs = set(), []
    for c in lake_cols:
        held = {(key_of[r], v) for c2, r, v in cells if c2 == c and key_of.get(r, -1) >= 0}
        for j in query.others:
            qc = query.codes[j].tolist()
            agree = {r for r in range(len(linked)) if linked[r] >= 0 and qc[r] >= 0 and (linked[r], qc[r]) in held}
            if agree:
                row_pairs.append((query.names[j], lake_names[c], len(agree)))
                agree_any |= agree
    n_linked = sum(x >= 0 for x in linked)
    rows = len(agree_any) / n_linked if n_linked else 0.0
    row_pairs.sort(key=lambda p: -p[2])
    return pairs, rows, row_pairs


@pytest.mark.parametrize("seed", range(30))
def test_table_context_equals_its_definition_on_random_tables(seed):
    """Random query and lake tables over a small vocabulary (many ties, repeated pairs, empty cells): the column pairs,
    the agreeing rows and the evidence, in order, equal a set-by-set computation of the definition."""
    rng = np.random.default_rng(seed)
    words = [f"w{i}" for i in range(int(rng.integers(2, 12)))]
    n_q, n_cols, n_lake = int(rng.integers(1, 30)), int(rng.integers(2, 5)), int(rng.integers(1, 40))

    def column(n):
        return pa.array([None if rng.random() < 0.1 else str(rng.choice(words)) for _ in range(n)], pa.string())

    key = int(rng.integers(0, n_cols))
    q = QueryContext([f"Q{j}" for j in range(n_cols)], [column(n_q) for _ in range(n_cols)], key=key)
    lake_cols = int(rng.integers(1, 6))
    lake_column = int(rng.integers(0, lake_cols))
    cells = [(c, r, str(rng.choice(words))) for r in range(n_lake) for c in range(lake_cols) if rng.random() < 0.9]
    link = {v: str(rng.choice(words)) for v in q.key_values.drop_null().to_pylist() if rng.random() < 0.8}
    q.add_values(list(link.values()))
    postings = pa.table({"table_id": [3] * len(cells), "column": pa.array([c for c, _, _ in cells], pa.int32()),
                         "row": pa.array([r for _, r, _ in cells], pa.int64()),
                         "value": pa.array([v for _, _, v in cells], pa.string())})
    names = {c: f"c{c}" for c in range(lake_cols)}
    ctx = table_context(q, postings, lake_column, link, names)
    if not q.others or not cells:
        assert ctx.score == 0.0
        return
    pairs, rows, row_pairs = _brute_force_context(q, postings, lake_column, link, names)
    assert ctx.pairs == pairs
    assert ctx.rows == round(rows, 6)
    assert ctx.row_pairs == row_pairs
    assert ctx.score == round(rows + sum(s for _, _, s in pairs), 6)


def test_a_category_repeats_its_values_counted_as_the_index_normalises_them():
    """Distinct values at most half the non-empty cells; null tokens and empty cells are no cells; case and spacing
    as the index normalises them."""
    assert is_category(pa.array(["Whig", "whig ", "Federalist", "FEDERALIST"]))
    assert not is_category(pa.array(["Whig", "Federalist", "Democratic"]))
    assert is_category(pa.chunked_array([["a", None, "", "n/a"], ["A", "a"]]))     # 3 cells of one value
    assert not is_category(pa.array(["a", None, "", "-"]))                          # one cell: no repetition to see
    assert is_category(pa.array(["1", "2", "1", "2", "1"])) and not is_category(pa.array(["x", "y", "z", "x"]))


# -- a lake where Party ties ----------------------------------------------------------------------------------------
def _write(path, header, rows):
    with open(path, "w", newline="", encoding="utf-8") as fh:
        w = csv.writer(fh)
        w.writerow(header)
        w.writerows(rows)


def _party_lake(root: str) -> str:
    """Five tables with a Party column holding all 12 parties (joinability 1 for each), named so that the right one
    (``z_officeholders.csv``, the query's rows among others) has the highest table id, and ``e_chairs.csv``, the rows
    of ``chairs.csv`` (a second query) without those of two parties; the query files outside."""
    rng = np.random.default_rng(5)
    lake = os.path.join(root, "lake")
    os.makedirs(lake)
    people = [f"Holder {chr(65 + i // 26)}{chr(65 + i % 26)}son" for i in range(80)]
    holders = [(people[i], PARTIES[i % len(PARTIES)], str(1789 + 4 * i), OFFICES[i % len(OFFICES)]) for i in range(60)]
    _write(os.path.join(lake, "z_officeholders.csv"), ["Name", "Party", "Year", "Office"], holders)
    _write(os.path.join(lake, "a_senators.csv"), ["Senator", "Party", "State"],
           [(people[(i * 7) % 80] + " Jr", PARTIES[i % 12], f"State {i % 15}") for i in range(48)])
    _write(os.path.join(lake, "b_governors.csv"), ["Governor", "Party", "Term start"],
           [(f"Gov {i}", PARTIES[i % 12], str(1900 + int(rng.integers(0, 100)))) for i in range(36)])
    _write(os.path.join(lake, "c_parties.csv"), ["Party", "Founded", "Ideology"],
           [(p, str(1790 + 10 * i), f"ideology {i}") for i, p in enumerate(PARTIES)])
    _write(os.path.join(lake, "d_mayors.csv"), ["Mayor", "City", "Party"],
           [(f"Mayor {i}", f"City {i % 20}", PARTIES[(i * 5) % 12]) for i in range(40)])
    chairs = [(f"Chair {i}", PARTIES[i % 12], str(1800 + 2 * i)) for i in range(48)]  # other people, even years
    _write(os.path.join(lake, "e_chairs.csv"), ["Name", "Party", "Year"],
           [c for c in chairs if c[1] not in PARTIES[10:]])  # the same rows but those of two parties: 10 of 12
    query = os.path.join(root, "query.csv")
    picked = [holders[i] for i in range(0, 60, 2)]  # 30 rows, every party
    _write(query, ["President", "Party", "Year", "Office"], picked)
    _write(os.path.join(root, "chairs.csv"), ["Chair", "Party", "Year"], chairs)
    return lake, query


@pytest.fixture(scope="module")
def party_lake(spark, fast_config, tmp_path_factory):
    from spark_jobs.refresh import refresh

    root = str(tmp_path_factory.mktemp("party"))
    lake, query = _party_lake(root)
    wh = os.path.join(root, "warehouse")
    assert refresh(spark, wh, lake, config_path=fast_config).get("published")
    return wh, query


@pytest.mark.spark
def test_context_lifts_the_table_that_shares_the_other_columns(party_lake):
    wh, query = party_lake
    ls = discovery.open(wh)
    out = ls.join(query, "Party")
    first = out["results"][0]
    assert first["path"] == "z_officeholders.csv" and first["column"] == "Party"
    tied = [r for r in out["results"] if r["joinability"] == 1.0]
    assert len(tied) == 5  # every Party column matches every party: joinability ties and stays the score
    assert first["context_score"] > max(r["context_score"] for r in tied[1:])
    assert "President ~ Name" in first["context"] and "Year ~ Year" in first["context"]
    assert "rows 1.00" in first["context"]
    # the same search without context: the same columns and joinabilities, ties by column id (the right one last)
    plain = join_search(ls.snapshot, query, "Party", tau=out["tau"], top_k=out["top_k"], context_margin=None)
    assert [r["path"] for r in plain["results"]][:5] != [r["path"] for r in out["results"]][:5]
    assert plain["results"][4]["path"] == "z_officeholders.csv"
    key = lambda r: (r["path"], r["column"], r["matched"], r["joinability"])  # noqa: E731
    assert sorted(map(key, plain["results"])) == sorted(map(key, out["results"]))
    assert all("context_score" not in r for r in plain["results"])
    # every method links each matched value through its nearest lake value: the same order, context and evidence
    for method in ("pexeso-h", "exact"):
        assert ls.join(query, "Party", method=method)["results"] == out["results"], method


@pytest.mark.spark
def test_context_read_once_answers_as_read_afresh(party_lake):
    """The lake tables' postings and values a join reads for context and evidence are kept per snapshot and table
    once read: a search after them answers as the first did, reading none again, and a table's kept rows are its
    rows in the files."""
    from discovery.indexes.join.service import table_postings
    from discovery.data.store.cache import INDEXES

    wh, query = party_lake
    ls = discovery.open(wh)
    root, sid = ls.snapshot.warehouse.root, ls.snapshot.snapshot_id
    INDEXES.drop(lambda key: key[0] in ("join-postings", "join-values") and key[1:3] == (root, sid))
    cold = ls.join(query, "Party")
    tables = sorted({r["table_id"] for r in cold["results"] if r["context_score"] is not None})
    assert len(tables) >= 5 and all(("join-postings", root, sid, t) in INDEXES for t in tables)
    assert ls.join(query, "Party")["results"] == cold["results"]
    kept = table_postings(ls.snapshot, tables)
    assert kept.to_pylist() == ls.snapshot.read("xash_postings", columns=kept.column_names).sort_by(
        "table_id").filter(pa.compute.is_in(pa.compute.field("table_id"), pa.array(tables))).to_pylist()
    assert table_postings(ls.snapshot, []).num_rows == 0


@pytest.mark.spark
def test_a_category_column_is_joined_by_its_rows_within_the_category_margin(party_lake):
    """``chairs.csv``'s Party (12 parties on 48 rows: a category): its right partner ``e_chairs.csv`` joins 10 of 12,
    five party columns of other rows join 12; within ``[join] category_margin`` (0.2: 2 of 12) context puts the table
    of the same rows first, joinability stays the reported score; a margin of 0 keeps joinability's order, and so
    does a column of distinct values (the query's names), whatever the margin."""
    wh, query = party_lake
    chairs = os.path.join(os.path.dirname(query), "chairs.csv")
    ls = discovery.open(wh)
    out = ls.join(chairs, "Party")
    assert out["stats"]["category"] == 1 and out["stats"]["context_slack"] == 2
    first = out["results"][0]
    assert (first["path"], first["column"], first["matched"]) == ("e_chairs.csv", "Party", 10)
    assert first["joinability"] == pytest.approx(10 / 12)
    assert "Chair ~ Name" in first["context"] and "rows 1.00" in first["context"]
    assert [r["matched"] for r in out["results"][1:6]] == [12] * 5
    for method in ("pexeso-h", "exact"):
        assert ls.join(chairs, "Party", method=method)["results"] == out["results"], method
    ties_only = join_search(ls.snapshot, chairs, "Party", tau=out["tau"], top_k=out["top_k"], context_margin=0.0,
                            category_margin=0.0)
    assert ties_only["stats"]["category"] == 0
    assert [r["matched"] for r in ties_only["results"][:6]] == [12] * 5 + [10]
    key = lambda r: (r["path"], r["column"], r["matched"], r["joinability"])  # noqa: E731
    assert sorted(map(key, ties_only["results"])) == sorted(map(key, out["results"]))
    names = ls.join(chairs, "Chair")
    assert names["stats"].get("category", 0) == 0


@pytest.mark.spark
def test_the_cli_shows_which_context_lifted_a_table(party_lake):
    wh, query = party_lake
    exe = os.path.join(os.path.dirname(sys.executable), "lakescout")
    env = {k: v for k, v in os.environ.items() if k != "COLUMNS"}  # explicit: a library of this process may have
    # set COLUMNS in the C environment a child inherits (seen on a terminal), and a width cuts the context cell
    text = subprocess.run([exe, "join", "--warehouse", wh, "--query", query, "--column", "Party"],
                          capture_output=True, text=True, timeout=300, env=env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    header = next(i for i, ln in enumerate(lines) if ln.strip().startswith("rank"))
    assert "context" in lines[header]
    assert "z_officeholders.csv" in lines[header + 2] and "President ~ Name" in lines[header + 2]
    js = subprocess.run([exe, "join", "--warehouse", wh, "--query", query, "--column", "Party", "--json"],
                        capture_output=True, text=True, timeout=300)
    first = json.loads(js.stdout)["results"][0]
    assert first["path"] == "z_officeholders.csv" and first["context_score"] > 0 and "Year ~ Year" in first["context"]


def test_the_page_leads_a_join_result_with_its_context():
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins"))
    from lakescout_ui.data import evidence_text

    evidence = json.dumps({"matched": 12, "matches": [["whig", "whig", 0.0]] * 5, "context_score": 3.5,
                           "context": "President ~ Name, Year ~ Year; rows 1.00 (Year ~ Year)"})
    assert evidence_text(evidence).startswith("context 3.50: President ~ Name, Year ~ Year; rows 1.00")
    plain = json.dumps({"matched": 12, "context_score": None, "context": ""})
    assert evidence_text(plain) == "matched: 12"
