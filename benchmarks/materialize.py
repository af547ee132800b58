"""Writing answers: are the written tables right on real lakes, what does a large one cost, what is it worth.

Run: ``python benchmarks/materialize.py [--sample] [--autofj] [--webtables] [--programs] [--scale] [--values]
[--downstream] [--workdir DIR] [--master local[2]]`` (no flag: all seven).
Prints tables and writes ``benchmarks/results/materialize.json``.  Every
figure goes through what a user calls: lakes built by the real refresh, tables written by ``discovery.open(...)``'s
``augment`` / ``stack`` (the large one by ``lakescout augment --master``).

* ``sample``: the sample lake (``lakescout demo-lake``).  For every planted join (``join.csv``: text columns whose
  values the lake writes as variants, ``join_values.csv`` the intended pairs), the query augmented with the planted
  lake table through the planted column (``table=``, ``lake_column=``) by the two-table matcher at three precision
  targets and by the search's pairs at five taus: per query row,
  ``right`` (it got a lake row of its entity, or no row when it has none), ``missed`` (it has a partner, none
  joined), ``wrong`` (a lake row of another entity, or any row when it has none).  The planted n-ary joins: distinct
  key tuples joined against ``joinable_tuples``.  For every planted union (``union.csv``), the written union of the
  query with its unionable lake tables: the share of the aligned cells written under a query column of the same
  attribute (``union_columns.csv``), weighted by the rows each table wrote; and the tables ``stack`` writes from the
  search's top 10, by default and with no column floor, planted unionable or not.
* ``autofj``: the 50 AutoFJ datasets (``../shared/benchmarks/autofj``) as one lake; each right table augmented with
  its left table's ``title`` by each matcher: precision and recall of the added titles against ``gt.csv``, beside
  skrub's ``fuzzy_join``, the ``autofj`` package and splink on the same pairs (``--skrub-python``,
  ``--autofj-python``, ``--splink-python``: interpreters of ``benchmarks/requirements-skrub.txt``,
  ``requirements-autofj.txt`` and ``requirements-splink.txt``).
* ``webtables``: the web-table shapes of ``benchmarks/webjoin.py`` (27 tables written from public-domain facts: a
  person, a state or a capital written plain, with dates or a party after it, as ``Last, First``, glued, with a
  comma qualifier), refreshed as one lake; every column of a kind augmented with every other table's column of the
  same kind by the two-table matcher (default target) and by the search's pairs.  A query row is ``right`` when it
  got a lake cell of its own entity (or none when the lake column lacks it), ``missed`` when it got none although
  the lake column has it, ``wrong`` otherwise; each cell's entity is known by construction.
* ``programs``: the 400 people of fivethirtyeight's ``most-common-name`` list (``FirstName``, ``Surname``: the
  commonest US first names with the commonest surnames, so many people share an initial and a surname) as the
  query; four account tables, one per user-name convention (``jsmith``, ``james.smith``, ``smithj``,
  ``james_smith@corp.example``), each holding a seeded 70% of the people (the first of two people with one user
  name owns it); every table augmented through ``FirstName,Surname`` (the programs), and, as a user would before,
  through a ``name`` column of the two joined by a space (the values matched as one).  Per query row ``right`` (its
  own account, or none when it has none), ``missed``, ``wrong`` (another person's account), by construction.
* ``scale``: a lake table of ``--rows`` rows (10M; a Parquet folder of 20 files) and a query of ``--query-rows``
  (100k) names, half of them written differently; ``lakescout augment --master local[2]`` pairs the column's values
  (the two-table matcher on Spark) and writes the join on Spark.  Peak RSS of the two applications' Python drivers,
  of the command's own process and of it with the children it waited for (the Spark JVMs, executors included in
  local mode), against the same run on a table a tenth the size; the same join written in one process (the
  command pairs the values itself): its seconds, its peak, and whether it wrote the same rows; and the seconds
  against a pandas merge of the same value mapping (pandas reads the lake table whole).
* ``values``: a lake column of ``--lake-values`` (300k) distinct supplier names, one row each, and a query of
  ``--values-query`` (10k) of them, half written differently; the join written on Spark (``--master``) and in one
  process, against the same at a tenth of the values: seconds, peak RSS of the command and of the Spark drivers, and
  whether both wrote the same rows.
* ``downstream``: a task whose target depends on a column only a lake table holds (a city's population, the cities
  written differently in the query): least squares on the query's own feature against the augmented table's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

import discovery
import harness
from discovery.surfaces.materialize import PlanError
from harness import print_table, shared_path, write_result

#: How the planted joins are written: the two-table matcher at three precision targets (0.95 the default), and the
#: search's own pairs at five taus (0.04 the default).
MATCHERS = [(f"auto {p}", {"precision": p}) for p in (0.9, 0.95, 0.99)] + \
    [(f"search tau {t}", {"matcher": "search", "tau": t}) for t in (0.02, 0.04, 0.06, 0.08, 0.1)]
#: The parts of the benchmark, each run alone with its flag (all when none is given); a run keeps the parts of the
#: last result file it does not measure again.
PARTS = ("sample", "autofj", "webtables", "programs", "scale", "values", "downstream")
#: The pandas baseline of ``scale``, in a process of its own so its peak RSS is its own: the lake table read whole,
#: both sides normalised as the index normalises, two merges through the mapping (first lake row per value).
PANDAS_MERGE = """
import time
import pandas as pd, pyarrow as pa
from discovery.ground.normalize import normalize_array
t0 = time.perf_counter()
lake = pd.read_parquet("{lake}")
lake["__v"] = normalize_array(pa.array(lake["supplier"])).to_pylist()
q = pd.read_csv("{query}")
q["__v"] = normalize_array(pa.array(q["vendor"])).to_pylist()
m = pd.read_parquet("{mapping}")
out = q.merge(m, left_on="__v", right_on="query_value", how="left")
out = out.merge(lake.drop_duplicates("__v"), left_on="lake_value", right_on="__v", how="left")
print(time.perf_counter() - t0)
"""


def _rows_of(path: str, lake: str) -> list[dict]:
    import csv

    with open(os.path.join(lake, "_ground_truth", path), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _sample_warehouse(workdir: Path) -> tuple[str, str]:
    lake = harness.sample_lake(str(workdir / "sample_lake"), lakehouse=True)
    return lake, harness.build(lake, str(workdir / "sample_wh")).warehouse


def _joins(ls, lake: str) -> list[dict]:
    from discovery.surfaces.materialize.naming import short_name

    partners = defaultdict(set)
    for r in _rows_of("join_values.csv", lake):
        partners[(r["query_table"], r["query_column"], r["query_value"])].add(r["lake_value"])
    out = []
    for j in _rows_of("join.csv", lake):
        for matcher, params in MATCHERS:
            t = ls.augment(j["query_table"], j["query_column"], table=j["lake_table"], lake_column=j["lake_column"],
                           columns=[j["lake_column"]], **params)
            added = t.column(f"{short_name(j['lake_table'])}.{j['lake_column']}").to_pylist()
            right = missed = wrong = joined = 0
            for value, got in zip(t.column(j["query_column"]).to_pylist(), added):
                want = partners.get((j["query_table"], j["query_column"], value), set())
                joined += got is not None
                if got is None:
                    right, missed = right + (not want), missed + bool(want)
                elif got in want:
                    right += 1
                else:
                    wrong += 1
            out.append({"query": j["query_table"], "column": j["query_column"], "kind": j["kind"], "matcher": matcher,
                        "rows": t.num_rows, "right": right, "missed": missed, "wrong": wrong,
                        "right_share": right / t.num_rows, "joined": joined,
                        "joined_right_share": (joined - wrong) / joined if joined else None})
    return out


def _nary(ls, lake: str) -> list[dict]:
    out = []
    for r in _rows_of("nary.csv", lake):
        if r["planted"] != "1":
            continue
        key = r["query_columns"].split("|")
        t = ls.augment(r["query_table"], key=key, table=r["lake_table"], lake_key=r["lake_columns"].split("|"))
        dist = t.column(t.column_names[-1]).to_pylist()
        tuples = {tuple(v) for v, d in zip(zip(*(t.column(c).to_pylist() for c in key)), dist) if d is not None}
        out.append({"query": r["query_table"], "lake": r["lake_table"], "joined_tuples": len(tuples),
                    "planted_tuples": int(r["joinable_tuples"])})
    return out


def _unions(ls, lake: str) -> dict:
    attribute = {(r["table"], r["column"]): r["attribute"] for r in _rows_of("union_columns.csv", lake)}
    planted = defaultdict(list)
    for r in _rows_of("union.csv", lake):
        if r["unionable"] == "1":
            planted[r["query_table"]].append(r["lake_table"])
    cells = right = 0
    per_query = []
    unaligned = 0
    for query, tables in sorted(planted.items()):
        while True:  # a planted table that aligns no column at tau is a miss of the union search, not of the write
            try:
                t = ls.stack(query, tables=tables, query_rows=False)
                break
            except PlanError as exc:
                miss = int(str(exc).split()[2])
                unaligned += 1
                tables = [x for x in tables if _table_id(ls, x) != miss]
        described = json.loads(t.schema.metadata[b"lakescout"])
        names = t.column_names
        sources = t.column("lakescout_source").to_pylist()
        rows = {s: sources.count(s) for s in set(sources)}
        q_cells = q_right = 0
        for s in described["sources"]:
            for qi, lake_col, _ in s["alignment"]:
                n = rows.get(s["path"], 0)
                q_cells += n
                q_right += n * (attribute.get((query, names[qi])) == attribute.get((s["path"], lake_col)))
        cells, right = cells + q_cells, right + q_right
        per_query.append({"query": query, "tables": len(tables), "aligned_cells": q_cells,
                          "right_share": q_right / q_cells if q_cells else None})
    return {"aligned_cells": cells, "right_share": right / cells if cells else None, "unaligned_tables": unaligned,
            "queries": per_query}


def _stacked(ls, lake: str) -> list[dict]:
    """For each planted union query, the tables ``stack`` writes from the search's top 10 by default and with no
    column floor: how many of them are planted unionable (``union.csv``) and how many are not."""
    planted, queries = defaultdict(set), set()
    for r in _rows_of("union.csv", lake):
        queries.add(r["query_table"])
        if r["unionable"] == "1":
            planted[r["query_table"]].add(r["lake_table"])
    out = []
    for floor in (None, 0.0):
        unionable = other = 0
        for query in sorted(queries):
            try:
                t = ls.stack(query, k=10, min_columns=floor, query_rows=False)
            except PlanError:
                continue
            for s in json.loads(t.schema.metadata[b"lakescout"])["sources"]:
                unionable, other = unionable + (s["path"] in planted[query]), other + (s["path"] not in planted[query])
        out.append({"min_columns": "default" if floor is None else floor, "queries": len(queries),
                    "unionable_tables": unionable, "other_tables": other})
    return out


def _table_id(ls, path: str) -> int:
    import pyarrow.compute as pc

    cat = ls.snapshot.cached("catalog", ["table_id", "path"])
    return int(cat.filter(pc.equal(cat["path"], path)).column("table_id")[0].as_py())


def sample(args) -> dict:
    lake, wh = _sample_warehouse(Path(args.workdir))
    ls = discovery.open(wh)
    joins = _joins(ls, lake)
    nary = _nary(ls, lake)
    print_table(nary, ["query", "lake", "joined_tuples", "planted_tuples"])
    unions = _unions(ls, lake)
    print(f"\nunion: {unions['aligned_cells']} aligned cells, {unions['right_share']:.4f} under the right column")
    summary = []
    for matcher, _ in MATCHERS:
        at = [j for j in joins if j["matcher"] == matcher]
        rows, right, wrong, joined = (sum(j[k] for j in at) for k in ("rows", "right", "wrong", "joined"))
        summary.append({"matcher": matcher, "rows": rows, "right": right, "right_share": right / rows,
                        "missed": sum(j["missed"] for j in at), "wrong": wrong,
                        "precision": (joined - wrong) / joined if joined else None,
                        "worst": min(j["right_share"] for j in at)})
    print_table(summary, ["matcher", "rows", "right", "right_share", "missed", "wrong", "precision", "worst"])
    stacked = _stacked(ls, lake)
    print_table(stacked, ["min_columns", "queries", "unionable_tables", "other_tables"])
    return {"joins": joins, "nary": nary, "unions": unions, "planted_joins": summary, "stacked": stacked}


def _untimed(workdir) -> str:
    """The default configuration but for ``[embed] train_seconds``: no time budget, so a shared machine trains the
    encoders the steps an idle one does (the budget otherwise stops a loaded machine's training early)."""
    path = Path(workdir) / "untimed.toml"
    path.write_text("[embed]\ntrain_seconds = 0.0\n")
    return str(path)


#: The third-party matchers run on the same AutoFJ pairs, each in the interpreter of its own environment
#: (``benchmarks/requirements-skrub.txt``, ``requirements-autofj.txt``: autofj 0.0.6 needs pandas 1.x): a program
#: printing, per dataset, the left title each right title got (or null).
SKRUB = """
import json, sys, pandas as pd
from skrub import fuzzy_join
root, names, cap = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3])
out = {}
for n in names:
    right, left = pd.read_csv(f"{root}/{n}/right.csv"), pd.read_csv(f"{root}/{n}/left.csv")
    joined = fuzzy_join(right, left, on="title", suffix="_l", max_dist=cap)
    out[n] = [None if pd.isna(v) else v for v in joined["title_l"]]
print(json.dumps(out))
"""
AUTOFJ = """
import json, sys, pandas as pd
from autofj import AutoFJ
root, names, target = sys.argv[1], sys.argv[2].split(","), float(sys.argv[3])
out = {}
for n in names:
    right, left = pd.read_csv(f"{root}/{n}/right.csv"), pd.read_csv(f"{root}/{n}/left.csv")
    pairs = AutoFJ(precision_target=target, verbose=False, n_jobs=1).join(left, right, id_column="id")
    got = dict(zip(pairs["title_r"], pairs["title_l"]))
    out[n] = [got.get(t) for t in right["title"]]
print(json.dumps(out))
"""
#: splink as its tutorials link two tables on one column: a comparison of Jaro-Winkler levels on the lower-cased
#: title, predictions blocked on its first three letters, first word or last word, the prior from exact titles
#: (recall 0.7), u by random sampling and, with ``em``, m by expectation maximisation blocked on the first and on
#: the last word; each right title takes its most probable left title at or above the threshold.
SPLINK = """
import json, logging, sys, warnings
import pandas as pd
warnings.filterwarnings("ignore"); logging.disable(logging.WARNING)
import splink.comparison_library as cl
from splink import DuckDBAPI, Linker, SettingsCreator, block_on
root, names, mode = sys.argv[1], sys.argv[2].split(","), sys.argv[3].split(":")
threshold, em = float(mode[0]), "em" in mode
out = {}
for n in names:
    right, left = pd.read_csv(f"{root}/{n}/right.csv"), pd.read_csv(f"{root}/{n}/left.csv")
    frames = []
    for df, side in ((left, "l"), (right, "r")):
        t = df["title"].astype(str).str.lower()
        frames.append(pd.DataFrame({"unique_id": [f"{side}{i}" for i in range(len(df))], "title": t,
                                    "prefix": t.str[:3], "first_token": t.str.split().str[0],
                                    "last_token": t.str.split().str[-1]}))
    settings = SettingsCreator(link_type="link_only",
                               comparisons=[cl.JaroWinklerAtThresholds("title", [0.95, 0.88, 0.7])],
                               blocking_rules_to_generate_predictions=[block_on("prefix"), block_on("first_token"),
                                                                       block_on("last_token")])
    linker = Linker(frames, settings, db_api=DuckDBAPI())
    linker.training.estimate_probability_two_random_records_match([block_on("title")], recall=0.7)
    linker.training.estimate_u_using_random_sampling(max_pairs=1e6)
    if em:
        for rule in ("first_token", "last_token"):
            linker.training.estimate_parameters_using_expectation_maximisation(block_on(rule))
    pred = linker.inference.predict(threshold_match_probability=threshold).as_pandas_dataframe()
    got = {}
    for _, row in pred.sort_values("match_probability", ascending=False).iterrows():
        a, b = row["unique_id_l"], row["unique_id_r"]
        l, r = (a, b) if a.startswith("l") else (b, a)
        got.setdefault(int(r[1:]), int(l[1:]))
    out[n] = [None if i not in got else left["title"][got[i]] for i in range(len(right))]
print(json.dumps(out))
"""


def _scored(predicted: dict[str, list], truths: dict[str, dict], rights: dict[str, list]) -> dict:
    """Precision, recall and F1 of added titles: a right row is counted when it got a left title, right when that
    title is its ``gt.csv`` partner; recall over the right rows that have one."""
    tp = added = gold = 0
    for n, truth in truths.items():
        for r, got in zip(rights[n], predicted[n]):
            added += got is not None
            tp += got is not None and truth.get(r) == got
        gold += len(truth)
    p, r = (tp / added if added else 0.0), tp / gold
    return {"added": added, "right": tp, "gold": gold, "precision": p, "recall": r,
            "f1": 2 * p * r / (p + r) if p + r else 0.0}


def autofj(args) -> dict | None:
    import pandas as pd

    root = shared_path("autofj")
    if root is None:
        return None
    names = sorted(d.name for d in Path(root).iterdir() if (d / "gt.csv").is_file())
    wh = harness.autofj_warehouse(root, names, Path(args.workdir) / "autofj", master=args.master,
                                  config=_untimed(args.workdir)).warehouse
    ls = discovery.open(wh)
    truths, rights = {}, {}
    for n in names:
        gt = pd.read_csv(Path(root) / n / "gt.csv", dtype=str, keep_default_na=False)
        truths[n] = dict(zip(gt["title_r"], gt["title_l"]))
        rights[n] = pd.read_csv(Path(root) / n / "right.csv", dtype=str, keep_default_na=False)["title"].tolist()
    rows = []
    for label, params in [(f"lakescout auto, precision {p}", {"precision": p}) for p in (0.9, 0.95, 0.99)] + \
            [("lakescout search pairs (tau 4%)", {"matcher": "search"})]:
        predicted, started = {}, time.perf_counter()
        for n in names:
            t = ls.augment(f"{n}_right.csv", "title", table=f"{n}_left.csv", lake_column="title", columns=["title"],
                           **params)
            assert t.column("title").to_pylist() == rights[n]
            predicted[n] = t.column(f"{n}_left.title").to_pylist()
        rows.append({"matcher": label, **_scored(predicted, truths, rights),
                     "seconds": time.perf_counter() - started})
    # skrub uncapped, and capped where its precision passes 0.8 and 0.9 (its rescaled distance, swept 0.3 to 0.8)
    baselines = [(f"skrub fuzzy_join, max_dist {cap}", args.skrub_python, SKRUB, cap) for cap in ("inf", "0.6", "0.4")]
    baselines.append(("autofj, precision 0.9", args.autofj_python, AUTOFJ, "0.9"))
    baselines += [(f"splink, {label}", args.splink_python, SPLINK, mode) for label, mode in (
        ("m untrained, probability >= 0.5", "0.5"), ("m untrained, best title", "0"),
        ("m by EM, probability >= 0.5", "0.5:em"), ("m by EM, best title", "0:em"))]
    for label, python, program, arg in baselines:
        if not python:
            continue
        done = harness.run([python, "-c", program, str(root), ",".join(names), arg], cwd=args.workdir)
        rows.append({"matcher": label, **_scored(json.loads(done.stdout.splitlines()[-1]), truths, rights),
                     "seconds": done.wall})
    print_table(rows, ["matcher", "added", "right", "precision", "recall", "f1", "seconds"])
    return {"datasets": len(names), "gold": rows[0]["gold"], "matchers": rows}


def webtables(args) -> dict:
    from discovery.surfaces.materialize.naming import short_name
    from webjoin import generate_lake, write_lake

    tables = generate_lake()
    lake = str(Path(args.workdir) / "webtables_lake")
    write_lake(tables, lake)
    wh = harness.build(lake, str(Path(args.workdir) / "webtables_wh"), config=_untimed(args.workdir),
                       via="cli", master=args.master).warehouse
    ls = discovery.open(wh)
    columns = [(t["name"], c) for t in tables for c in t["columns"] if c["kind"] in ("person", "state", "capital")]
    rows = []
    for matcher, params in (("auto 0.95", {}), ("search tau 0.04", {"matcher": "search"})):
        pairs = []
        for (tq, q), (tl, lc) in ((a, b) for a in columns for b in columns if a[0] != b[0] and a[1]["kind"] ==
                                  b[1]["kind"]):
            t = ls.augment(f"{tq}.csv", q["name"], table=f"{tl}.csv", lake_column=lc["name"], columns=[lc["name"]],
                           **params)
            assert t.num_rows == len(q["keys"]), (tq, q["name"], tl, lc["name"])
            entity = defaultdict(set)
            for cell, key in zip(lc["cells"], lc["keys"]):
                entity[cell].add(key)
            there = set(lc["keys"]) - {""}  # an empty cell (no runner-up) names no entity
            right = missed = wrong = joined = partnered = 0
            for key, got in zip(q["keys"], t.column(f"{short_name(tl)}.{lc['name']}").to_pylist()):
                partnered += key in there
                if got is None:
                    right, missed = right + (key not in there), missed + (key in there)
                else:
                    ok = key in entity.get(got, ())
                    joined, right, wrong = joined + 1, right + ok, wrong + (not ok)
            pairs.append({"query": f"{tq}.{q['name']}", "lake": f"{tl}.{lc['name']}", "rows": t.num_rows,
                          "right": right, "missed": missed, "wrong": wrong, "joined": joined,
                          "partnered": partnered})
        n, right, wrong, missed, joined, partnered = (sum(p[k] for p in pairs) for k in (
            "rows", "right", "wrong", "missed", "joined", "partnered"))
        rows.append({"matcher": matcher, "column_pairs": len(pairs), "rows": n, "right": right,
                     "right_share": right / n, "missed": missed, "wrong": wrong,
                     "precision": (joined - wrong) / joined if joined else None,
                     "recall": (joined - wrong) / partnered if partnered else None,
                     "worst": min(p["right"] / p["rows"] for p in pairs), "pairs": pairs})
    print_table(rows, ["matcher", "column_pairs", "rows", "right", "right_share", "missed", "wrong", "precision",
                       "recall", "worst"])
    return {"matchers": rows}


#: User-name conventions of the ``programs`` part: how an account table writes a person.
CONVENTIONS = {"initial_surname": lambda f, s: f[0] + s, "first_dot_surname": lambda f, s: f"{f}.{s}",
               "surname_initial": lambda f, s: s + f[0], "first_surname_mail": lambda f, s: f"{f}_{s}@corp.example"}


def programs(args) -> dict | None:
    import pandas as pd

    root = shared_path("fivethirtyeight")
    if root is None:
        return None
    people = pd.read_csv(Path(root) / "most-common-name" / "adjusted-name-combinations-list.csv")
    people = [(f.strip(), s.strip()) for f, s in zip(people["FirstName"], people["Surname"])]
    lake = Path(args.workdir) / "programs_lake"
    shutil.rmtree(lake, ignore_errors=True)
    (lake / "accounts").mkdir(parents=True)
    pacsv.write_csv(pa.table({"FirstName": [f for f, _ in people], "Surname": [s for _, s in people]}),
                    lake / "people.csv")
    rng = np.random.default_rng(7)
    owners = {}
    for name, write in CONVENTIONS.items():
        owner: dict[str, int] = {}
        for i in sorted(rng.choice(len(people), int(0.7 * len(people)), replace=False).tolist()):
            owner.setdefault(write(*people[i]).lower(), i)
        owners[name] = owner
        pacsv.write_csv(pa.table({"username": list(owner), "account_id": [f"a{i}" for i in owner.values()]}),
                        lake / "accounts" / f"{name}.csv")
    ls = discovery.open(harness.build(str(lake), str(Path(args.workdir) / "programs_wh"),
                                      config=_untimed(args.workdir), rebuild=True).warehouse)
    joined_as_one = pd.DataFrame({"name": [f"{f} {s}" for f, s in people]})
    rows = []
    for name, owner in owners.items():
        account = {i: f"a{i}" for i in owner.values()}
        for how, query, column in (("programs (FirstName,Surname)", "people.csv", "FirstName,Surname"),
                                   ("values (name = first + ' ' + last)", joined_as_one, "name")):
            started = time.perf_counter()
            t = ls.augment(query, column, table=f"accounts/{name}.csv", lake_column="username",
                           columns=["account_id"])
            seconds = time.perf_counter() - started
            got = t.column(f"{name}.account_id").to_pylist()
            right = sum(g == account.get(i) for i, g in enumerate(got))
            wrong = sum(g is not None and g != account.get(i) for i, g in enumerate(got))
            joined = sum(g is not None for g in got)
            rules = json.loads(t.schema.metadata[b"lakescout"])["sources"][0]
            rows.append({"convention": name, "joined_by": how, "rows": len(got), "right": right,
                         "right_share": right / len(got), "wrong": wrong, "missed": len(got) - right - wrong,
                         "precision": (joined - wrong) / joined if joined else None,
                         "recall": (joined - wrong) / len(account),
                         "estimated": rules.get("estimated_precision"), "programs": rules.get("programs"),
                         "seconds": seconds})
    print_table(rows, ["convention", "joined_by", "rows", "right", "right_share", "wrong", "missed", "precision",
                       "recall", "estimated", "programs", "seconds"])
    return {"people": len(people), "rows": rows}


def _scale_lake(folder: Path, rows: int, names: list[str], rng) -> None:
    """A Parquet folder of 20 part files: ``supplier`` (one of ``names``), ``amount``, ``region``."""
    folder.mkdir(parents=True, exist_ok=True)
    per = rows // 20
    for i in range(20):
        pick = rng.integers(len(names), size=per)
        pq.write_table(pa.table({"supplier": pa.array(names).take(pick),
                                 "amount": rng.integers(1, 100_000, per),
                                 "region": pa.array(["north", "south", "east", "west"]).take(pick % 4)}),
                       folder / f"part-{i:05d}.parquet")
    (folder / "_SUCCESS").touch()


def scale(args) -> dict:
    from discovery.orchestration.demo_lake import entities as E
    from discovery.orchestration.demo_lake import vocab as V
    from discovery.orchestration.demo_lake.variants import vary

    rng = np.random.default_rng(0)
    work = Path(args.workdir) / "scale"
    names = E.unique(rng, args.query_rows, lambda r: f"{E.company(r)} {E.pick(r, V.FIRST_NAMES)}")
    query = work / "query.csv"
    figures = []
    for rows in (args.rows // 10, args.rows):
        lake, wh = work / f"lake-{rows}", work / f"wh-{rows}"
        if not lake.exists():
            _scale_lake(lake / "suppliers", rows, names, rng)
        harness.build(str(lake), str(wh), config=_untimed(args.workdir))
        if not query.exists():
            written = [vary(n, "company", rng)[0] if rng.random() < 0.5 and vary(n, "company", rng) else n
                       for n in names]
            pacsv.write_csv(pa.table({"vendor": written}), str(query))
        out = str(work / f"out-{rows}.parquet")
        if os.path.exists(out):
            os.unlink(out)
        config = harness.config_file(str(work), "spark", "[materialize]\nspark_min_bytes = 0\n")
        common = ["augment", "--warehouse", str(wh), "--query", str(query), "--column", "vendor", "--table",
                 "suppliers", "--lake-column", "supplier", "--json"]
        # the Spark applications' Python drivers: the matcher's (spark_jobs/match.py), then the write's
        done = harness.cli(*common, "--output", out, "--master", args.master,
                           env=dict(os.environ, LAKESCOUT_CONFIG=config),
                           watch=("match.py", "materialize.py", "lakescout augment"))
        described = done.json()
        match = described["sources"][0]
        # the same join in one process: the command pairs the column's distinct values itself
        here = str(work / f"here-{rows}.parquet")
        if os.path.exists(here):
            os.unlink(here)
        local = harness.cli(*common, "--output", here, env=dict(os.environ, LAKESCOUT_CONFIG=config))
        same = pq.read_table(out).replace_schema_metadata(None).equals(
            pq.read_table(here).replace_schema_metadata(None))
        figures.append({"lake_rows": rows, "seconds": done.wall,
                        "match_driver_peak_mib": done.watched_peaks["match.py"],
                        "write_driver_peak_mib": done.watched_peaks["materialize.py"],
                        "command_peak_mib": done.watched_peaks["lakescout augment"],
                        "with_children_peak_mib": done.peak_rss_mb, "matched_rows": described["matched_rows"],
                        "engine": described["engine"], "matched_values": match.get("matched_values"),
                        "estimated_precision": match.get("estimated_precision"),
                        "in_process_seconds": local.wall, "in_process_peak_mib": local.peak_rss_mb,
                        "same_rows": same})
    big = figures[-1]
    ls = discovery.open(str(work / f"wh-{args.rows}"))
    pairs = ls.pairs(str(query), "vendor", table="suppliers", lake_column="supplier").to_pandas()
    mapping = work / "mapping.parquet"
    pq.write_table(pa.Table.from_pandas(pairs[["query_value", "lake_value"]]), mapping)
    merge = PANDAS_MERGE.format(lake=work / f"lake-{args.rows}" / "suppliers", query=query, mapping=mapping)
    done = harness.python(merge)
    pandas_seconds, pandas_peak = float(done.stdout.split()[-1]), done.peak_rss_mb
    out = {"figures": figures, "pandas_seconds": pandas_seconds, "pandas_process_peak_mib": pandas_peak,
           "spark_over_pandas": big["seconds"] / pandas_seconds, "mapping_pairs": len(pairs),
           "match_driver_peak_ratio": big["match_driver_peak_mib"] / figures[0]["match_driver_peak_mib"],
           "command_peak_ratio": big["command_peak_mib"] / figures[0]["command_peak_mib"],
           "query_rows": args.query_rows}
    print_table(figures, list(figures[0]))
    print(f"pandas merge of the same mapping: {pandas_seconds:.1f} s (process peak {pandas_peak:.0f} MiB)")
    return out


def values(args) -> dict:
    """A lake column of many distinct values: where the in-process matcher holds them all and Spark holds none."""
    from discovery.orchestration.demo_lake import entities as E
    from discovery.orchestration.demo_lake import vocab as V
    from discovery.orchestration.demo_lake.variants import vary

    rng = np.random.default_rng(2)
    work = Path(args.workdir) / "values"
    names = E.unique(rng, args.lake_values,
                     lambda r: f"{E.company(r)} {E.pick(r, V.FIRST_NAMES)} {E.pick(r, V.LAST_NAMES)}")
    query = work / "query.csv"
    if not query.exists():
        work.mkdir(parents=True, exist_ok=True)
        picked = names[:args.values_query]
        written = [vary(n, "company", rng)[0] if rng.random() < 0.5 and vary(n, "company", rng) else n for n in picked]
        pacsv.write_csv(pa.table({"vendor": written}), str(query))
    config = harness.config_file(str(work), "spark", "[materialize]\nspark_min_bytes = 0\n")
    env = dict(os.environ, LAKESCOUT_CONFIG=config)
    figures = []
    for n in (args.lake_values // 10, args.lake_values):
        lake, wh = work / f"lake-{n}", work / f"wh-{n}"
        if not (lake / "suppliers" / "_SUCCESS").exists():
            folder = lake / "suppliers"
            folder.mkdir(parents=True, exist_ok=True)
            order = rng.permutation(n)
            for i, part in enumerate(np.array_split(order, 4)):
                pq.write_table(pa.table({"supplier": pa.array(names[:n]).take(part),
                                         "amount": rng.integers(1, 100_000, len(part))}),
                               folder / f"part-{i:05d}.parquet")
            (folder / "_SUCCESS").touch()
        harness.build(str(lake), str(wh), config=_untimed(args.workdir))
        common = ["augment", "--warehouse", str(wh), "--query", str(query), "--column", "vendor", "--table",
                  "suppliers", "--lake-column", "supplier", "--json"]
        out, here = str(work / f"spark-{n}.parquet"), str(work / f"here-{n}.parquet")
        for path in (out, here):
            if os.path.exists(path):
                os.unlink(path)
        done = harness.cli(*common, "--output", out, "--master", args.master, env=env,
                           watch=("match.py", "materialize.py", "lakescout augment"))
        local = harness.cli(*common, "--output", here, env=env)
        source = done.json()["sources"][0]
        same = pq.read_table(out).replace_schema_metadata(None).equals(
            pq.read_table(here).replace_schema_metadata(None))
        figures.append({"lake_values": n, "query_values": args.values_query, "spark_seconds": done.wall,
                        "match_driver_peak_mib": done.watched_peaks["match.py"],
                        "write_driver_peak_mib": done.watched_peaks["materialize.py"],
                        "command_peak_mib": done.watched_peaks["lakescout augment"],
                        "with_children_peak_mib": done.peak_rss_mb, "in_process_seconds": local.wall,
                        "in_process_peak_mib": local.peak_rss_mb, "matched_values": source.get("matched_values"),
                        "estimated_precision": source.get("estimated_precision"), "same_rows": same})
    print_table(figures, list(figures[0]))
    return {"figures": figures}


def downstream(args) -> dict:
    """Population of a city, held only by a lake table; the query names its cities differently."""
    from discovery.orchestration.demo_lake.variants import vary

    rng = np.random.default_rng(1)
    work = Path(args.workdir) / "downstream"
    lake, wh = work / "lake", work / "wh"
    cities = [f"{a} {b}" for a in ("North", "South", "East", "West", "New", "Old", "Upper", "Lower", "Port", "Fort")
              for b in ("Haven", "Ridge", "Field", "Brook", "Dale", "Ford", "Mouth", "Bury", "Wick", "Stead",
                        "Ton", "Ville", "Mere", "Holm", "Gate", "Cliff", "Moor", "Shaw", "Worth", "Combe")]
    population = np.exp(rng.uniform(8, 14, len(cities))).round()
    if not lake.exists():
        lake.mkdir(parents=True)
        pacsv.write_csv(pa.table({"city": cities, "population": population, "area_km2": rng.uniform(5, 900,
                                                                                                       len(cities))}),
                         str(lake / "cities.csv"))
        others = rng.permutation(len(cities))[:120]
        pacsv.write_csv(pa.table({"town": [cities[i] for i in others], "mayor": [f"M{i}" for i in others]}),
                         str(lake / "mayors.csv"))
    harness.build(str(lake), str(wh), config=_untimed(args.workdir))
    n = 600
    pick = rng.integers(len(cities), size=n)
    shops = rng.uniform(0, 10, n)
    target = 3.0 * np.log(population[pick]) + 0.5 * shops + rng.normal(0, 0.5, n)
    written = []
    for i in pick:
        v = vary(cities[i], "company", rng) if rng.random() < 0.5 else None
        written.append(v[0] if v else cities[i])
    query = work / "query.csv"
    pacsv.write_csv(pa.table({"store_city": written, "shops": shops, "sales": target}), str(query))
    t = discovery.open(str(wh)).augment(str(query), "store_city", table="cities.csv", lake_column="city",
                                        columns=["population"])
    pop = np.array([np.nan if v is None else v for v in t.column("cities.population").to_pylist()], dtype=float)
    train = rng.random(n) < 0.7

    def r2(features: list[np.ndarray]) -> float:
        x = np.column_stack([np.ones(n)] + features)
        ok = np.isfinite(x).all(axis=1)
        coef, *_ = np.linalg.lstsq(x[train & ok], target[train & ok], rcond=None)
        test = ~train & ok
        resid = target[test] - x[test] @ coef
        return 1 - resid.var() / target[test].var()

    matched = np.isfinite(pop)
    fill = np.where(matched, np.log(np.where(matched, pop, 1)), np.nanmean(np.log(pop[matched])))
    out = {"rows": n, "matched_rows": int(matched.sum()), "r2_query_only": r2([shops]),
           "r2_augmented": r2([shops, fill])}
    out["r2_gain"] = out["r2_augmented"] - out["r2_query_only"]
    print(f"\ndownstream: R^2 {out['r2_query_only']:.3f} with the query's own feature, {out['r2_augmented']:.3f} with "
          f"the population the augmentation added ({out['matched_rows']} of {n} rows matched)")
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    for part in PARTS:
        ap.add_argument(f"--{part}", action="store_true")
    ap.add_argument("--workdir", default=None, help="keep lakes and warehouses here (default: a temp dir)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--query-rows", type=int, default=100_000)
    ap.add_argument("--lake-values", type=int, default=300_000, help="values: distinct values of the larger lake")
    ap.add_argument("--values-query", type=int, default=10_000, help="values: distinct values of the query")
    ap.add_argument("--skrub-python", default=None, help="autofj: an interpreter with skrub (requirements-matchers)")
    ap.add_argument("--autofj-python", default=None, help="autofj: an interpreter with autofj and pandas 1.x")
    ap.add_argument("--splink-python", default=None, help="autofj: an interpreter of requirements-splink.txt")
    args = ap.parse_args(argv)
    parts = [p for p in PARTS if getattr(args, p)] or list(PARTS)
    tmp = None
    if args.workdir is None:
        tmp = args.workdir = tempfile.mkdtemp(prefix="lakescout-bench-materialize-")
    out = {}
    try:
        for part in parts:
            out[part] = globals()[part](args)
            # each part's figures kept as it ends: a later part that fails loses only its own
            write_result("materialize", {**harness.previous_result("materialize", PARTS), **out})
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
