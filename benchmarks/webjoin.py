"""Semantic join on web-table shapes: recall@5 of the right column on a lake written from public-domain facts.

Run: ``python benchmarks/webjoin.py [--workdir DIR] [--config FILE] [--master local[2]]``.

The lake (:func:`generate_lake`, deterministic, no download) holds 27 CSV tables written from the facts of
``benchmarks/webjoin_facts.py`` (US presidents, vice presidents, presidential elections and their parties, the fifty
states and their capitals), each entity set in several tables whose cells take the shapes web tables and spreadsheets
give them:

* office holders with dates in the cell (``George Washington; April 30 1789 – March 4 1797; (born 1732);``,
  ``John Adams; 1789 – 1797``), with a span or a party in brackets (``Abraham Lincoln (1861 - 1865)``,
  ``Abraham Lincoln (Republican)``), as "Last, First" (``Washington, George``) and plain;
* places with coordinates (``Maine; 44°19′N 69°47′W``), with a comma qualifier (``Augusta, Maine``), glued
  (``NewJersey``, ``SaltLakeCity``) and plain;
* party columns repeated across many tables: the candidates of every election 1789-2020 (25 parties), the same
  candidacies in a second table with other cell shapes that lacks some rows (among them the one candidacy of each of
  three minor parties: it joins 22 of the 25 parties), a table of the parties, and twelve ``ballot_access_NN``
  tables that pair state abbreviations with parties and years (recombinations of the typed vocabularies, not facts):
  six hold every party, so their party columns tie with the right one or lead it by 3 of 25 on joinability (the
  category case of ``[join] category_margin``), and two of those six take
  their years from the election years, so that a second column of theirs also joins the query's.

Vice presidents beside presidents, and capitals beside states (Jackson, Lincoln, Madison), are the similar-looking
distractors.  Each query is a (table, column); its right answers are known by construction (:func:`right_answers`):
the other columns of the same kind (a person, a state, a capital) holding at least half the query's entities (or
half of theirs), and for a party column only the party column of the other table of the same rows (the same
candidacies), since every party column holds about the same parties.  Columns the refresh does not index as join
candidates (fewer than ``[embed] join_min_distinct`` distinct values) are no right answer.

The lake is refreshed with the real pipeline (``lakescout refresh``; the project's default configuration unless
``--config`` names a file, e.g. fewer join encoder steps for a quick run); a copy of that warehouse is refreshed again
with ``[embed] join_segments = 0`` (the same encoders: the setting only decides which value vectors are encoded).
Queries go through ``discovery.open(W).join(table, column, top_k=5)``.  Scored: recall@5 of the right columns
(|right in top 5| / min(5, |right|)), per query and per shape, with

* the defaults (segments; context orders exact ties, ``[join] context_margin`` 0, and for a category query column
  the columns within ``category_margin`` 0.2 of the query values);
* ``category_margin = 0`` (context orders exact ties only, whatever the column; set through ``LAKESCOUT_CONFIG``
  for the query, as the next);
* ``context_margin = 0.05`` (context also orders columns within 5 % of the query values);
* no context ordering: the service the API calls (``discovery.indexes.join.service.join_search``) on the same snapshot
  with ``context_margin=None`` (joinability, then column id; the configuration cannot say "none");
* ``join_segments = 0`` (whole-cell vectors only), on the second warehouse;

and ``exact`` against ``pexeso`` on the defaults: the same columns with the same match counts.
"""
from __future__ import annotations

import argparse
import csv
import os
import random
import re
import shutil
import sys
import tempfile

import harness
from harness import load_average, print_table, write_result
from webjoin_facts import ELECTIONS, PARTIES, PRESIDENTS, STATES, VICE_PRESIDENTS, rows

TOP_K = 5
#: Minor parties whose one candidacy the ``nominees`` table lacks.
LEFT_OUT = ("Liberty", "Greenback", "Reform")
#: A column with fewer distinct values is no join candidate (``[embed] join_min_distinct``'s default).
MIN_DISTINCT = 10
#: Parties, as kinds whose right answer is decided by the rows of the table, not by the values.
ROW_KINDS = ("party",)
ORDINALS = {1: "st", 2: "nd", 3: "rd"}


def _col(name, cells, kind=None, keys=None):
    """A column: header, cells, the kind of entity it names (None: no key) and each cell's entity."""
    return {"name": name, "cells": list(cells), "kind": kind, "keys": list(keys if keys is not None else cells)}


def _last_first(name: str) -> str:
    """``Washington, George``; ``Van Buren, Martin``; ``La Follette, Robert M.``."""
    words = name.split(" ")
    cut = next((i for i, w in enumerate(words[1:], 1) if w in ("Van", "La")), len(words) - 1)
    return f"{' '.join(words[cut:])}, {' '.join(words[:cut])}"


def _dms(value: float, pos: str, neg: str) -> str:
    minutes = round(abs(value) * 60)
    return f"{minutes // 60}\u00b0{minutes % 60:02d}\u2032{pos if value >= 0 else neg}"


def _glued(name: str) -> str:
    return name.replace(" ", "")


def _ordinal(n: int) -> str:
    return f"{n}{'th' if 10 <= n % 100 <= 20 else ORDINALS.get(n % 10, 'th')}"


def _shuffled(items, rng):
    items = list(items)
    rng.shuffle(items)
    return items


def generate_lake(seed: int = 0) -> list[dict]:
    """The tables of the lake: name, the entity set its rows are (``rows_of``) and its columns (:func:`_col`)."""
    rng = random.Random(seed)
    pres = rows(PRESIDENTS)
    vps = rows(VICE_PRESIDENTS)
    states = rows(STATES)
    parties = [p for p, _ in rows(PARTIES)]
    el = rows(ELECTIONS)
    cands = [(year, *c.split(":"), "won" if i == 0 else "lost") for year, *cs in el for i, c in enumerate(cs)]
    t = []

    order = _shuffled(range(len(pres)), rng)
    p = [pres[i] for i in order]
    t.append({"name": "presidents_terms", "rows_of": "presidents", "columns": [
        _col("No.", [str(i + 1) for i in order]),
        _col("President", [f"{n}; {a} \u2013 {b}; (born {born});" for n, _, born, _, a, b in p], "person",
             [r[0] for r in p]),
        _col("Party", [r[1] for r in p], "party"),
        _col("Term", [f"{a[-4:]} - {b[-4:]}" for *_, a, b in p])]})
    t.append({"name": "presidents", "rows_of": "presidents", "columns": [
        _col("Name", [r[0] for r in pres], "person"), _col("Party", [r[1] for r in pres], "party"),
        _col("Born", [r[2] for r in pres]), _col("Died", [r[3] for r in pres])]})
    p = _shuffled(pres, rng)
    t.append({"name": "presidents_directory", "rows_of": "presidents", "columns": [
        _col("Name", [_last_first(r[0]) for r in p], "person", [r[0] for r in p]),
        _col("Born", [r[2] for r in p]), _col("Died", [r[3] for r in p])]})
    t.append({"name": "presidents_spans", "rows_of": "presidents", "columns": [
        _col("President", [f"{r[0]} ({r[4][-4:]} - {r[5][-4:]})" for r in pres], "person", [r[0] for r in pres]),
        _col("Order", [_ordinal(i + 1) for i in range(len(pres))])]})

    t.append({"name": "vice_presidents", "rows_of": "vice_presidents", "columns": [
        _col("Vice President", [f"{n}; {a} \u2013 {b}" for n, _, a, b in vps], "person", [r[0] for r in vps]),
        _col("Party", [r[1] for r in vps], "party")]})
    v = _shuffled(vps, rng)
    t.append({"name": "vp_directory", "rows_of": "vice_presidents", "columns": [
        _col("Name", [_last_first(r[0]) for r in v], "person", [r[0] for r in v]),
        _col("Party", [r[1] for r in v], "party"), _col("Took office", [r[2] for r in v])]})

    t.append({"name": "candidates", "rows_of": "candidacies", "columns": [
        _col("Year", [c[0] for c in cands]), _col("Candidate", [c[1] for c in cands], "person"),
        _col("Party", [c[2] for c in cands], "party"), _col("Result", [c[3] for c in cands])]})
    # the same candidacies, a fifth of the two big parties' rows and three minor parties' one candidacy left out
    # (a table drawn from another source), in another order and other shapes
    kept = [c for i, c in enumerate(cands)
            if (c[2] not in ("Democratic", "Republican") or i % 5) and c[2] not in LEFT_OUT]
    kept = _shuffled(kept, rng)
    t.append({"name": "nominees", "rows_of": "candidacies", "columns": [
        _col("Election", [c[0] for c in kept]),
        _col("Nominee", [_last_first(c[1]) for c in kept], "person", [c[1] for c in kept]),
        _col("Party", [c[2] for c in kept], "party"),
        _col("Outcome", ["elected" if c[3] == "won" else "defeated" for c in kept])]})
    t.append({"name": "elections", "rows_of": "elections", "columns": [
        _col("Year", [e[0] for e in el]),
        _col("Winner", [f"{w.split(':')[0]} ({w.split(':')[1]})" for _, w, *_ in el], "person",
             [w.split(":")[0] for _, w, *_ in el]),
        _col("Runner-up", [f"{o[0].split(':')[0]} ({o[0].split(':')[1]})" if o else "" for _, _, *o in el],
             "person", [o[0].split(":")[0] if o else "" for _, _, *o in el])]})
    t.append({"name": "parties", "rows_of": "parties", "columns": [
        _col("Party", parties, "party"), _col("Founded", [f for _, f in rows(PARTIES)])]})
    years = [e[0] for e in el]
    for k in range(12):
        chosen = parties if k % 2 == 0 else rng.sample(parties, 12 + k % 5)
        since = (lambda: rng.choice(years)) if k in (0, 2) else (lambda: str(rng.randint(1789, 2020)))
        ballot = [(s[1], party, since()) for party in chosen for s in rng.sample(states, 2)]
        ballot = _shuffled(ballot, rng)
        t.append({"name": f"ballot_access_{k + 1:02d}", "rows_of": f"ballot_{k + 1:02d}", "columns": [
            _col("State", [b[0] for b in ballot]), _col("Party", [b[1] for b in ballot], "party"),
            _col("Since", [b[2] for b in ballot])]})

    s = _shuffled(states, rng)
    t.append({"name": "states_coordinates", "rows_of": "states", "columns": [
        _col("State", [f"{r[0]}; {_dms(float(r[3]), 'N', 'S')} {_dms(float(r[4]), 'E', 'W')}" for r in s], "state",
             [r[0] for r in s]),
        _col("Capital", [r[2] for r in s], "capital"), _col("Admitted", [r[5] for r in s])]})
    t.append({"name": "states", "rows_of": "states", "columns": [
        _col("State", [r[0] for r in states], "state"), _col("Abbreviation", [r[1] for r in states]),
        _col("Capital", [r[2] for r in states], "capital"), _col("Region", [r[6] for r in states])]})
    s = _shuffled(states, rng)
    t.append({"name": "states_glued", "rows_of": "states", "columns": [
        _col("State", [_glued(r[0]) for r in s], "state", [r[0] for r in s]), _col("Region", [r[6] for r in s]),
        _col("Admitted", [r[5] for r in s])]})
    s = _shuffled(states, rng)
    t.append({"name": "capitals_glued", "rows_of": "states", "columns": [
        _col("Capital", [_glued(r[2]) for r in s], "capital", [r[2] for r in s]), _col("State", [r[1] for r in s])]})
    s = _shuffled(states, rng)
    t.append({"name": "capitals_located", "rows_of": "states", "columns": [
        _col("Capital", [f"{r[2]}, {r[0]}" for r in s], "capital", [r[2] for r in s]),
        _col("Latitude", [r[3] for r in s]), _col("Longitude", [r[4] for r in s])]})
    return t


#: (table, column, shape) of every query.
QUERIES = [
    ("presidents_terms", "President", "dates in the cell"),
    ("vice_presidents", "Vice President", "dates in the cell"),
    ("presidents_spans", "President", "span or party in brackets"),
    ("elections", "Winner", "span or party in brackets"),
    ("presidents_directory", "Name", "Last, First"),
    ("vp_directory", "Name", "Last, First"),
    ("nominees", "Nominee", "Last, First"),
    ("states_coordinates", "State", "coordinates / comma qualifier"),
    ("capitals_located", "Capital", "coordinates / comma qualifier"),
    ("states_glued", "State", "glued words"),
    ("capitals_glued", "Capital", "glued words"),
    ("candidates", "Party", "party (near ties)"),
    ("nominees", "Party", "party (ties)"),
    ("presidents", "Name", "plain"),
    ("states", "State", "plain"),
    ("states", "Capital", "plain"),
]


def _distinct(column: dict) -> int:
    return len({c.strip().lower() for c in column["cells"] if c.strip()})


def right_answers(tables: list[dict], table: str, column: str) -> set[tuple[str, str]]:
    """The (table, column) pairs a query should find (the rule of the module docstring)."""
    by_name = {t["name"]: t for t in tables}
    q_table = by_name[table]
    q = next(c for c in q_table["columns"] if c["name"] == column)
    q_keys = set(q["keys"]) - {""}
    out = set()
    for t in tables:
        if t["name"] == table:
            continue
        for c in t["columns"]:
            if c["kind"] != q["kind"] or _distinct(c) < MIN_DISTINCT:
                continue
            if q["kind"] in ROW_KINDS:
                if t["rows_of"] == q_table["rows_of"]:
                    out.add((t["name"], c["name"]))
                continue
            keys = set(c["keys"]) - {""}
            if len(q_keys & keys) >= 0.5 * min(len(q_keys), len(keys)):
                out.add((t["name"], c["name"]))
    return out


def write_lake(tables: list[dict], lake: str) -> None:
    os.makedirs(lake, exist_ok=True)
    for t in tables:
        with open(os.path.join(lake, f"{t['name']}.csv"), "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow([c["name"] for c in t["columns"]])
            w.writerows(zip(*(c["cells"] for c in t["columns"])))


def refresh(lake: str, warehouse: str, config_text: str, workdir: str, master: str, name: str) -> dict:
    """``lakescout refresh`` of ``lake`` into ``warehouse`` with a configuration file holding ``config_text`` (empty:
    the defaults); its wall seconds and the peak resident set of the largest process it ran."""
    built = harness.refresh_cli(lake, warehouse, config=harness.config_file(workdir, name, config_text), master=master)
    return {"seconds": built.seconds, "max_rss_mb": built.peak_rss_mb}


def segments_off(config_text: str) -> str:
    """``config_text`` with ``[embed] join_segments = 0`` (added under its ``[embed]`` table when it has one)."""
    if re.search(r"^\[embed\]\s*$", config_text, re.MULTILINE):
        return re.sub(r"^\[embed\]\s*$", "[embed]\njoin_segments = 0", config_text, count=1, flags=re.MULTILINE)
    return config_text + "\n[embed]\njoin_segments = 0\n"


def _ask(ls, path: str, column: str, mode: str, method: str = "pexeso") -> dict:
    """One top-5 join of the opened warehouse ``ls`` in one of the modes of the module docstring."""
    if mode == "no context":
        from discovery.config import load_config
        from discovery.indexes.join.service import join_search

        return join_search(ls.snapshot, path, column, tau=load_config().join.tau, top_k=TOP_K, method=method,
                           context_margin=None)
    return ls.join(path, column, top_k=TOP_K, method=method)


def score(warehouse: str, tables: list[dict], mode: str, method: str = "pexeso") -> list[dict]:
    """Per query: recall@5 of its right answers, the rank of the first right answer, the best right answer's
    joinability and the answer itself."""
    import discovery

    ls = discovery.open(warehouse)
    out = []
    for table, column, shape in QUERIES:
        right = right_answers(tables, table, column)
        res = _ask(ls, f"{table}.csv", column, mode, method)
        answer = [(r["path"].removesuffix(".csv"), r["column"], r["matched"]) for r in res["results"]]
        ranks = [i + 1 for i, (t, c, _) in enumerate(answer) if (t, c) in right]
        out.append({"query": f"{table}.{column}", "shape": shape, "right": len(right),
                    "recall@5": len(ranks) / min(TOP_K, len(right)), "first_right": ranks[0] if ranks else None,
                    "right_joinability": max((r["joinability"] for r in res["results"]
                                              if (r["path"].removesuffix(".csv"), r["column"]) in right),
                                             default=0.0),
                    "context": [[r["path"], r["column"], r.get("context_score"), r.get("context")]
                                for r in res["results"]],
                    "answer": answer})
    return out


def _summary(runs: dict[str, list[dict]]) -> list[dict]:
    """Mean recall@5 per shape and overall, one column per run."""
    shapes = list(dict.fromkeys(s for _, _, s in QUERIES))
    rows_ = []
    for shape in shapes + ["all"]:
        row = {"shape": shape, "queries": sum(1 for q in QUERIES if shape in ("all", q[2]))}
        for name, per_query in runs.items():
            sel = [q["recall@5"] for q in per_query if shape in ("all", q["shape"])]
            row[name] = round(sum(sel) / len(sel), 3)
        rows_.append(row)
    return rows_


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--workdir", default=None, help="lake and warehouses here (kept; an existing warehouse is reused)")
    ap.add_argument("--config", default=None, help="TOML file for the refresh (default: the project's defaults)")
    ap.add_argument("--master", default="local[2]")
    args = ap.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="webjoin-")
    os.makedirs(workdir, exist_ok=True)
    lake, wh, wh0 = (os.path.join(workdir, d) for d in ("lake", "warehouse", "warehouse_segments0"))
    config_text = open(args.config).read() if args.config else ""
    tables = generate_lake()
    write_lake(tables, lake)
    builds = {}
    load_before = load_average()
    if not harness.published(wh):
        builds["default"] = refresh(lake, wh, config_text, workdir, args.master, "default")
    done = os.path.join(workdir, "segments0.done")  # the copy is published before its own refresh: a marker
    if not os.path.exists(done):
        shutil.rmtree(wh0, ignore_errors=True)
        shutil.copytree(wh, wh0)
        builds["segments0"] = refresh(lake, wh0, segments_off(config_text), workdir, args.master, "segments0")
        open(done, "w").close()
    built = {name: harness.join_build(w) for name, w in (("default", wh), ("segments0", wh0))}
    print(f"lake: {len(tables)} tables, {len(QUERIES)} queries; refresh seconds and peak RSS: {builds}; "
          f"load {load_before}")
    for name, info in built.items():
        print(f"{name}: join encoder {info['join_encoder']}, {info['value_vectors']} value vectors, "
              f"|P| = {info['n_pivots']}, m = {info['levels']}, stages {info['stage_seconds']}")

    saved = os.environ.pop("LAKESCOUT_CONFIG", None)
    runs = {"defaults": score(wh, tables, "defaults"),
            "no context": score(wh, tables, "no context"),
            "segments 0": score(wh0, tables, "defaults")}
    for name, text in (("category 0", "category_margin = 0.0"), ("margin 5%", "context_margin = 0.05")):
        path = os.path.join(workdir, name.replace(" ", "_").replace("%", "") + ".toml")
        with open(path, "w") as fh:
            fh.write(f"[join]\n{text}\n")
        os.environ["LAKESCOUT_CONFIG"] = path
        try:
            runs[name] = score(wh, tables, "defaults")
        finally:
            os.environ.pop("LAKESCOUT_CONFIG")
    if saved is not None:
        os.environ["LAKESCOUT_CONFIG"] = saved
    exact = score(wh, tables, "defaults", "exact")
    identical = all(a["answer"] == b["answer"] for a, b in zip(runs["defaults"], exact))

    print_table([{"query": q["query"], "shape": q["shape"], "right": q["right"],
                  **{name: f"{runs[name][i]['recall@5']:.2f}/{runs[name][i]['first_right'] or '-'}"
                     for name in runs}} for i, q in enumerate(runs["defaults"])],
                ["query", "shape", "right", *runs])
    print("\n(recall@5 / rank of the first right column)\n")
    summary = _summary(runs)
    print_table(summary, ["shape", "queries", *runs])
    for q in runs["defaults"]:
        if q["shape"].startswith("party"):
            print(f"\n{q['query']} top-{TOP_K} with defaults (table, column, matched, context score, context):")
            for (t, c, m), (_, _, score_, text) in zip(q["answer"], q["context"]):
                print(f"  {t}.{c}  {m}  {score_}  {text}")
    print(f"\npexeso and exact identical answers: {identical}; load average {load_average()}")
    write_result("webjoin", {"workdir": workdir, "config": config_text, "builds": builds, "built": built,
                             "summary": summary,
                             "runs": runs, "exact_identical": identical, "load_average": load_average(),
                             "load_before": load_before})
    return 0


if __name__ == "__main__":
    sys.exit(main())
