"""Writing answers: are the written tables right on real lakes, what does a large one cost, what is it worth.

Run: ``python benchmarks/materialize.py [--sample] [--autofj] [--scale] [--downstream] [--workdir DIR]
[--master local[2]]`` (no flag: all four).  Prints tables and writes ``benchmarks/results/materialize.json``.  Every
figure goes through what a user calls: lakes built by the real refresh, tables written by ``discovery.open(...)``'s
``augment`` / ``stack`` (the large one by ``lakescout augment --master``).

* ``sample``: the sample lake (``lakescout demo-lake``).  For every planted join (``join.csv``: text columns whose
  values the lake writes as variants, ``join_values.csv`` the intended pairs), the query augmented with the planted
  lake table through the planted column (``table=``, ``lake_column=``) at the default tau and a sweep: per query row,
  ``right`` (it got a lake row of its entity, or no row when it has none), ``missed`` (it has a partner, none
  joined), ``wrong`` (a lake row of another entity, or any row when it has none).  The planted n-ary joins: distinct
  key tuples joined against ``joinable_tuples``.  For every planted union (``union.csv``), the written union of the
  query with its unionable lake tables: the share of the aligned cells written under a query column of the same
  attribute (``union_columns.csv``), weighted by the rows each table wrote.
* ``autofj``: the 50 AutoFJ datasets (``../shared/benchmarks/autofj``) as one lake; each right table augmented with
  its left table's ``title`` through the default join: precision and recall of the added titles against ``gt.csv``.
* ``scale``: a lake table of ``--rows`` rows (10M; a Parquet folder of 20 files) and a query of ``--query-rows``
  (100k) names, half of them written differently; ``lakescout augment --master local[2]`` writes the join on Spark.
  Driver peak RSS (the Spark application's Python driver) against the same run on a table a tenth the size, and
  the seconds against a pandas merge of the same value mapping (pandas reads the lake table whole).
* ``downstream``: a task whose target depends on a column only a lake table holds (a city's population, the cities
  written differently in the query): least squares on the query's own feature against the augmented table's.
"""
from __future__ import annotations

import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import json  # noqa: E402
import shutil  # noqa: E402
import subprocess  # noqa: E402
import tempfile  # noqa: E402
import time  # noqa: E402
from collections import defaultdict  # noqa: E402
from pathlib import Path  # noqa: E402

import numpy as np  # noqa: E402
import pyarrow as pa  # noqa: E402
import pyarrow.csv as pacsv  # noqa: E402
import pyarrow.parquet as pq  # noqa: E402

import discovery  # noqa: E402
from discovery.materialize import PlanError  # noqa: E402
from benchmarks.common import RESULTS, autofj_warehouse, print_table, refresh_lake, shared_path, write_result  # noqa: E402,E501

TAUS = (0.02, 0.04, 0.06, 0.08, 0.1)
#: The pandas baseline of ``scale``, in a process of its own so its peak RSS is its own: the lake table read whole,
#: both sides normalised as the index normalises, two merges through the mapping (first lake row per value).
PANDAS_MERGE = """
import resource, time
import pandas as pd, pyarrow as pa
from discovery.normalize import normalize_array
t0 = time.perf_counter()
lake = pd.read_parquet("{lake}")
lake["__v"] = normalize_array(pa.array(lake["supplier"])).to_pylist()
q = pd.read_csv("{query}")
q["__v"] = normalize_array(pa.array(q["vendor"])).to_pylist()
m = pd.read_parquet("{mapping}")
out = q.merge(m, left_on="__v", right_on="query_value", how="left")
out = out.merge(lake.drop_duplicates("__v"), left_on="lake_value", right_on="__v", how="left")
print(time.perf_counter() - t0, resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def _rows_of(path: str, lake: str) -> list[dict]:
    import csv

    with open(os.path.join(lake, "_ground_truth", path), newline="", encoding="utf-8") as fh:
        return list(csv.DictReader(fh))


def _sample_warehouse(workdir: Path) -> tuple[str, str]:
    lake, wh = workdir / "sample_lake", workdir / "sample_wh"
    if not lake.exists():
        from discovery.demo_lake import generate_demo_lake

        generate_demo_lake(str(lake), seed=7, lakehouse=True)
    if not (wh / "snapshots").exists():
        out, _ = refresh_lake(str(lake), str(wh), "lakescout-bench-materialize")
        assert out.get("published"), out
    return str(lake), str(wh)


def _joins(ls, lake: str) -> list[dict]:
    from discovery.materialize.naming import short_name

    partners = defaultdict(set)
    for r in _rows_of("join_values.csv", lake):
        partners[(r["query_table"], r["query_column"], r["query_value"])].add(r["lake_value"])
    out = []
    for j in _rows_of("join.csv", lake):
        for tau in TAUS:
            t = ls.augment(j["query_table"], j["query_column"], table=j["lake_table"], lake_column=j["lake_column"],
                           columns=[j["lake_column"]], tau=tau)
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
            out.append({"query": j["query_table"], "column": j["query_column"], "kind": j["kind"], "tau": tau,
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


def _table_id(ls, path: str) -> int:
    import pyarrow.compute as pc

    cat = ls.snapshot.cached("catalog", ["table_id", "path"])
    return int(cat.filter(pc.equal(cat["path"], path)).column("table_id")[0].as_py())


def sample(args) -> dict:
    lake, wh = _sample_warehouse(Path(args.workdir))
    ls = discovery.open(wh)
    joins = _joins(ls, lake)
    print_table(joins, ["query", "column", "kind", "tau", "rows", "right", "missed", "wrong", "right_share"])
    nary = _nary(ls, lake)
    print_table(nary, ["query", "lake", "joined_tuples", "planted_tuples"])
    unions = _unions(ls, lake)
    print(f"\nunion: {unions['aligned_cells']} aligned cells, {unions['right_share']:.4f} under the right column")
    default = load_default_tau()
    at = [j for j in joins if j["tau"] == default]
    return {"joins": joins, "nary": nary, "unions": unions,
            "joins_at_default_tau": {"tau": default, "rows": sum(j["rows"] for j in at),
                                     "right_share": sum(j["right"] for j in at) / sum(j["rows"] for j in at),
                                     "worst": min(j["right_share"] for j in at)}}


def _untimed(workdir) -> str:
    """The default configuration but for ``[embed] train_seconds``: no time budget, so a shared machine trains the
    encoders the steps an idle one does (the budget otherwise stops a loaded machine's training early)."""
    path = Path(workdir) / "untimed.toml"
    path.write_text("[embed]\ntrain_seconds = 0.0\n")
    return str(path)


def load_default_tau() -> float:
    from discovery.config import Config

    return Config().join.tau


def autofj(args) -> dict | None:
    import pandas as pd

    root = shared_path("autofj")
    if root is None:
        return None
    names = sorted(d.name for d in Path(root).iterdir() if (d / "gt.csv").is_file())
    wh, _ = autofj_warehouse(root, names, Path(args.workdir) / "autofj", args.master, _untimed(args.workdir))
    ls = discovery.open(wh)
    tp = added = gold = 0
    per = []
    for n in names:
        gt = pd.read_csv(Path(root) / n / "gt.csv", dtype=str, keep_default_na=False)
        truth = dict(zip(gt["title_r"], gt["title_l"]))
        t = ls.augment(f"{n}_right.csv", "title", table=f"{n}_left.csv", lake_column="title", columns=["title"])
        right, left = t.column("title").to_pylist(), t.column(f"{n}_left.title").to_pylist()
        hits = sum(1 for r, got in zip(right, left) if got is not None and truth.get(r) == got)
        n_added = sum(got is not None for got in left)
        tp, added, gold = tp + hits, added + n_added, gold + len(truth)
        per.append({"dataset": n, "added": n_added, "right": hits, "gold": len(truth)})
    p, r = tp / added, tp / gold
    out = {"datasets": len(names), "added": added, "right": tp, "gold": gold, "precision": p, "recall": r,
           "f1": 2 * p * r / (p + r), "per_dataset": per}
    print(f"\nAutoFJ augmentation: precision {p:.3f}, recall {r:.3f}, F1 {out['f1']:.3f} ({tp} of {added} added "
          f"titles right, {gold} gold pairs)")
    return out


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


def _driver_peak(cmd: list[str], env: dict) -> tuple[dict, float, float]:
    """Run ``cmd`` (a ``lakescout augment --master ... --json``); (its JSON, wall seconds, peak RSS in MiB of the
    Spark application's Python driver, read from /proc while it runs)."""
    import psutil

    t0 = time.perf_counter()
    proc = subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    peak = 0
    while proc.poll() is None:
        try:
            for child in psutil.Process(proc.pid).children(recursive=True):
                if "materialize.py" in " ".join(child.cmdline()) and "python" in child.name():
                    peak = max(peak, child.memory_info().rss)
        except psutil.Error:
            pass
        time.sleep(0.2)
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise RuntimeError(err[-3000:])
    return json.loads(out), time.perf_counter() - t0, peak / 2 ** 20


def scale(args) -> dict:
    from discovery.demo_lake import entities as E
    from discovery.demo_lake import vocab as V
    from discovery.demo_lake.variants import vary

    rng = np.random.default_rng(0)
    work = Path(args.workdir) / "scale"
    names = E.unique(rng, args.query_rows, lambda r: f"{E.company(r)} {E.pick(r, V.FIRST_NAMES)}")
    query = work / "query.csv"
    figures = []
    for rows in (args.rows // 10, args.rows):
        lake, wh = work / f"lake-{rows}", work / f"wh-{rows}"
        if not lake.exists():
            _scale_lake(lake / "suppliers", rows, names, rng)
        if not (wh / "snapshots").exists():
            refresh_lake(str(lake), str(wh), "lakescout-bench-scale", _untimed(args.workdir))
        if not query.exists():
            written = [vary(n, "company", rng)[0] if rng.random() < 0.5 and vary(n, "company", rng) else n
                       for n in names]
            pacsv.write_csv(pa.table({"vendor": written}), str(query))
        out = str(work / f"out-{rows}.parquet")
        if os.path.exists(out):
            os.unlink(out)
        config = work / "spark.toml"
        config.write_text("[materialize]\nspark_min_bytes = 0\n")
        env = dict(os.environ, LAKESCOUT_CONFIG=str(config))
        cmd = [os.path.join(os.path.dirname(sys.executable), "lakescout"), "augment", "--warehouse", str(wh),
               "--query", str(query), "--column", "vendor", "--table", "suppliers", "--lake-column", "supplier",
               "--output", out, "--master", args.master, "--json"]
        described, seconds, peak = _driver_peak(cmd, env)
        figures.append({"lake_rows": rows, "seconds": seconds, "driver_peak_mib": peak,
                        "matched_rows": described["matched_rows"], "engine": described["engine"]})
    big = figures[-1]
    ls = discovery.open(str(work / f"wh-{args.rows}"))
    pairs = ls.pairs(str(query), "vendor", table="suppliers", lake_column="supplier").to_pandas()
    mapping = work / "mapping.parquet"
    pq.write_table(pa.Table.from_pandas(pairs[["query_value", "lake_value"]]), mapping)
    merge = PANDAS_MERGE.format(lake=work / f"lake-{args.rows}" / "suppliers", query=query, mapping=mapping)
    done = subprocess.run([sys.executable, "-c", merge], capture_output=True, text=True, check=True)
    pandas_seconds, pandas_peak = (float(x) for x in done.stdout.split())
    out = {"figures": figures, "pandas_seconds": pandas_seconds, "pandas_process_peak_mib": pandas_peak,
           "spark_over_pandas": big["seconds"] / pandas_seconds, "mapping_pairs": len(pairs),
           "driver_peak_ratio": big["driver_peak_mib"] / figures[0]["driver_peak_mib"],
           "query_rows": args.query_rows}
    print_table(figures, ["lake_rows", "seconds", "driver_peak_mib", "matched_rows", "engine"])
    print(f"pandas merge of the same mapping: {pandas_seconds:.1f} s (process peak {pandas_peak:.0f} MiB)")
    return out


def downstream(args) -> dict:
    """Population of a city, held only by a lake table; the query names its cities differently."""
    from discovery.demo_lake.variants import vary

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
    if not (wh / "snapshots").exists():
        refresh_lake(str(lake), str(wh), "lakescout-bench-downstream", _untimed(args.workdir))
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
    for part in ("sample", "autofj", "scale", "downstream"):
        ap.add_argument(f"--{part}", action="store_true")
    ap.add_argument("--workdir", default=None, help="keep lakes and warehouses here (default: a temp dir)")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--query-rows", type=int, default=100_000)
    args = ap.parse_args(argv)
    parts = [p for p in ("sample", "autofj", "scale", "downstream") if getattr(args, p)] or \
        ["sample", "autofj", "scale", "downstream"]
    tmp = None
    if args.workdir is None:
        tmp = args.workdir = tempfile.mkdtemp(prefix="lakescout-bench-materialize-")
    out = {}
    try:
        for part in parts:
            out[part] = globals()[part](args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    write_result("materialize", {**_previous(), **out})
    return 0


def _previous() -> dict:
    """The parts of the last run's results this run did not measure again (each part keeps its own)."""
    path = os.path.join(RESULTS, "materialize.json")
    if not os.path.exists(path):
        return {}
    with open(path) as fh:
        old = json.load(fh)
    return {k: v for k, v in old.items() if k in ("sample", "autofj", "scale", "downstream")}


if __name__ == "__main__":
    sys.exit(main())
