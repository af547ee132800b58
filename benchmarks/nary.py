"""N-ary join discovery benchmark: MATE (XASH) vs Bloom-filter super keys vs SCR (no super key), exact top-k.

Lake: the real tables of ``../shared/benchmarks/mate_queries`` (German open data, web tables, Kaggle) plus the
generated sample lake (``discovery.orchestration.demo_lake``).  Queries, seeded:

* 2-column keys from randomly drawn mate_queries tables and 3-column keys from every mate_queries table with at least
  three non-constant columns; these query tables are held out of the lake, as query tables come from outside;
* the sample lake's n-ary queries (2 and 3 columns); their answers are checked against its ground truth.

For each hash size (128/256/512, the setting of the paper's Table 2) the script builds the model, postings and index,
then per query runs ``mate``, ``bloom``, ``scr`` and ``exhaustive`` (top-k must equal exhaustive: same tables, same
J) and once more without table pruning (k = all tables) to count the false-positive rows that pass each filter.
Speed is reported as ratios against ``mate`` measured in the same run.  Before that, the sample lake is refreshed
into a temporary warehouse (scan, profile and the ``xash`` Spark stage) and its n-ary queries are answered through
``Lakescout.nary`` (the real index, every method, each hash size) and checked against the ground truth.  Prints
tables and writes ``benchmarks/results/nary.json``.

    .venv/bin/python benchmarks/nary.py [--queries 120] [--bits 128 256 512] [--k 10] [--no-warehouse]
"""
from __future__ import annotations

import argparse
import csv
import random
import statistics
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

import pyarrow as pa

import harness
from discovery.ground.normalize import normalize_array
from discovery.ground.xash import XashModel, char_counts
from discovery.indexes.nary import NaryIndex, build_postings
from discovery.orchestration.demo_lake import load_ground_truth, read_demo_table

MATE_QUERIES = Path(harness.SHARED) / "benchmarks" / "mate_queries"
FILTERED = ("mate", "bloom", "scr")
METHODS = ("mate", "bloom", "scr", "exhaustive")


def read_csv_table(path: Path) -> tuple[list[str], list[list[str | None]]] | None:
    """Header and columns of a CSV, every cell as text (ragged rows padded with nulls)."""
    with open(path, newline="", encoding="utf-8", errors="replace") as fh:
        rows = list(csv.reader(fh))
    if len(rows) < 2 or len(rows[0]) < 2:
        return None
    header, body = rows[0], rows[1:]
    width = len(header)
    body = [r[:width] + [None] * (width - len(r)) for r in body]
    return header, [[r[c] for r in body] for c in range(width)]


def load_mate_tables() -> dict[str, tuple[list[str], list[list[str | None]]]]:
    csv.field_size_limit(1 << 30)
    tables = {}
    for path in sorted(MATE_QUERIES.rglob("*.csv")):
        table = read_csv_table(path)
        if table is not None:
            tables["mate_queries/" + path.relative_to(MATE_QUERIES).as_posix()] = table
    return tables


def load_sample_lake(folder: Path) -> tuple[dict, list[tuple[str, list[str]]], dict]:
    """Readable tables of a freshly generated sample lake, its n-ary queries and their exact answers."""
    harness.sample_lake(str(folder), n_tables=300)
    truth = load_ground_truth(folder)
    tables = {}
    for entry in truth["tables"]:
        if entry["role"] in ("union", "join", "nary"):
            tables["sample/" + entry["path"]] = read_demo_table(folder, entry["path"], truth)
    queries, answers = [], defaultdict(dict)
    for row in truth["nary"]:
        q = ("sample/" + row["query_table"], tuple(row["query_columns"]))
        if q not in answers:
            queries.append((q[0], list(q[1])))
        if row["joinable_tuples"] > 0:
            answers[q]["sample/" + row["lake_table"]] = row["joinable_tuples"]
    return tables, queries, answers


def distinct_count(values: list[str | None]) -> int:
    return len(normalize_array(pa.array(values, pa.string())).drop_null().unique())


def pick_queries(tables: dict, n_two: int, rng: random.Random) -> list[tuple[str, list[str]]]:
    """2-column keys of random tables and 3-column keys of every table with >= 3 non-constant columns."""
    names = sorted(tables)
    queries = []
    for name in rng.sample(names, min(n_two, len(names))):
        header, cols = tables[name]
        varied = [c for c in range(len(cols)) if distinct_count(cols[c]) > 1]
        if len(varied) >= 2:
            queries.append((name, [str(c) for c in sorted(rng.sample(varied, 2))]))
    for name in names:
        header, cols = tables[name]
        varied = [c for c in range(len(cols)) if distinct_count(cols[c]) > 1]
        if len(varied) >= 3:
            queries.append((name, [str(c) for c in sorted(rng.sample(varied, 3))]))
    return queries


def build(lake: dict, bits: int) -> tuple[NaryIndex, dict]:
    t0 = time.perf_counter()
    counts = char_counts(pa.chunked_array([pa.array(c, pa.string()) for _, cols in lake.values() for c in cols],
                                          type=pa.string()))
    distinct = pa.chunked_array([normalize_array(pa.array(c, pa.string())) for _, cols in lake.values()
                                 for c in cols], type=pa.string())
    model = XashModel.from_counts(counts, len(distinct.unique().drop_null()), bits=bits)
    t1 = time.perf_counter()
    ids = {name: i for i, name in enumerate(sorted(lake))}
    postings = pa.concat_tables([build_postings(ids[name], [pa.array(c, pa.string()) for c in cols], model)
                                 for name, (_, cols) in lake.items()])
    t2 = time.perf_counter()
    index = NaryIndex.from_postings(postings, model)
    t3 = time.perf_counter()
    index.value_xash()
    t4 = time.perf_counter()
    n_hashes = index.bloom_superkeys()[0]
    t5 = time.perf_counter()
    return index, {"bits": bits, "alpha": model.alpha, "bloom_hashes": n_hashes, "postings": postings.num_rows,
                   "rows": index.n_rows, "model_s": t1 - t0, "postings_s": t2 - t1, "index_s": t3 - t2,
                   "value_xash_s": t4 - t3, "bloom_keys_s": t5 - t4, "table_ids": ids}


def query_columns(tables: dict, name: str, key: list[str]) -> tuple[dict, list[str]]:
    header, cols = tables[name]
    if name.startswith("sample/"):
        return {c: pa.array(cols[header.index(c)], pa.string()) for c in key}, key
    return {f"c{c}": pa.array(cols[int(c)], pa.string()) for c in key}, [f"c{c}" for c in key]


def run_size(index: NaryIndex, info: dict, queries, tables, answers, k: int) -> dict:
    names = {i: name for name, i in info["table_ids"].items()}
    times = defaultdict(list)
    sums = defaultdict(lambda: defaultdict(int))
    mismatches, truth_errors = [], []
    for qn, (name, key) in enumerate(queries):
        cols, key_names = query_columns(tables, name, key)
        group = f"{len(key)}-col"
        found = {}
        for method in METHODS[qn % 4:] + METHODS[:qn % 4]:
            t0 = time.perf_counter()
            found[method] = index.search(cols, key_names, k=k, method=method)
            times[(group, method)].append(time.perf_counter() - t0)
        reference = [(r.table_id, r.joinability) for r in found["exhaustive"].results]
        for method in FILTERED:
            got = [(r.table_id, r.joinability) for r in found[method].results]
            if got != reference:
                mismatches.append({"query": name, "key": key, "method": method, "got": got, "expected": reference})
            stats = found[method].stats
            for field in ("candidate_rows_fetched", "rows_checked", "rows_verified", "false_positive_rows",
                          "tables_evaluated", "tables_pruned_rule1", "tables_pruned_rule2"):
                sums[(group, method)][field] += getattr(stats, field)
            unpruned = index.search(cols, key_names, k=10**9, method=method).stats
            sums[(group, method)]["filter_checked"] += unpruned.rows_checked
            sums[(group, method)]["filter_passed"] += unpruned.rows_passing_filter
            sums[(group, method)]["filter_false_positives"] += unpruned.false_positive_rows
        if name.startswith("sample/"):
            expected = answers.get((name, tuple(key)), {})
            for r in found["mate"].results:
                lake_name = names[r.table_id]
                if lake_name != name and expected.get(lake_name) != r.joinability:
                    truth_errors.append({"query": name, "table": lake_name, "J": r.joinability,
                                         "truth": expected.get(lake_name, 0)})
    groups = sorted({g for g, _ in times})
    report = {"build": {k_: v for k_, v in info.items() if k_ != "table_ids"}, "groups": {},
              "mismatches": mismatches, "ground_truth_errors": truth_errors}
    for group in groups + ["all"]:
        sel = [g for g in groups if group in ("all", g)]
        entry = {"queries": len(times[(sel[0], "mate")]) if group != "all" else len(queries)}
        for method in METHODS:
            entry[f"{method}_s"] = sum(sum(times[(g, method)]) for g in sel)
        for method in FILTERED:
            for field in next(iter(sums.values())).keys():
                entry[f"{method}_{field}"] = sum(sums[(g, method)][field] for g in sel)
            true_rows = entry[f"{method}_filter_passed"] - entry[f"{method}_filter_false_positives"]
            entry[f"{method}_precision"] = true_rows / max(entry[f"{method}_filter_passed"], 1)
        mate_t = [t for g in sel for t in times[(g, "mate")]]
        for method in ("scr", "bloom"):
            entry[f"{method}_over_mate_time"] = entry[f"{method}_s"] / max(entry["mate_s"], 1e-12)
            other = [t for g in sel for t in times[(g, method)]]
            entry[f"{method}_over_mate_median_query"] = statistics.median(o / m for o, m in zip(other, mate_t))
        entry["scr_over_mate_rows_verified"] = entry["scr_rows_verified"] / max(entry["mate_rows_verified"], 1)
        report["groups"][group] = entry
    return report


def print_report(reports: list[dict], lake_info: dict) -> None:
    print(f"\nlake: {lake_info['tables']} tables ({lake_info['mate_tables']} mate_queries, "
          f"{lake_info['sample_tables']} sample lake); queries: {lake_info['queries']}")
    print("\nbuild (s): bits  alpha  bloom H  postings   model  postings  index  value XASH  bloom keys")
    for rep in reports:
        b = rep["build"]
        print(f"          {b['bits']:>4}  {b['alpha']:>5}  {b['bloom_hashes']:>7}  {b['postings']:>8}  "
              f"{b['model_s']:6.1f}  {b['postings_s']:8.1f}  {b['index_s']:5.1f}  {b['value_xash_s']:10.1f}  "
              f"{b['bloom_keys_s']:10.1f}")
    print("\nruntime (top-k, total s) and ratios against mate measured in the same run")
    print(f"{'bits':>4} {'key':>6} {'n':>4} {'mate':>7} {'bloom':>7} {'scr':>7} {'exh':>7} "
          f"{'mate:scr:bloom (total)':>24} {'scr/mate median':>16} {'verified mate/bloom/scr':>26} {'scr/mate':>8}")
    for rep in reports:
        for group, e in rep["groups"].items():
            ratios = f"1 : {e['scr_over_mate_time']:.1f} : {e['bloom_over_mate_time']:.1f}"
            verified_rows = f"{e['mate_rows_verified']:d} / {e['bloom_rows_verified']:d} / {e['scr_rows_verified']:d}"
            print(f"{rep['build']['bits']:>4} {group:>6} {e['queries']:>4} {e['mate_s']:7.2f} {e['bloom_s']:7.2f} "
                  f"{e['scr_s']:7.2f} {e['exhaustive_s']:7.2f} "
                  f"{ratios:>24} "
                  f"{e['scr_over_mate_median_query']:16.1f} "
                  f"{verified_rows:>26}"
                  f" {e['scr_over_mate_rows_verified']:8.1f}")
    print("\nfilter quality without table pruning: false-positive rows passing the filter (precision)")
    print(f"{'bits':>4} {'key':>6} {'checked':>9} {'XASH':>16} {'Bloom':>16} {'none':>16}")
    for rep in reports:
        for group, e in rep["groups"].items():
            cells = [f"{e[f'{m}_filter_false_positives']} ({e[f'{m}_precision']:.2f})" for m in FILTERED]
            print(f"{rep['build']['bits']:>4} {group:>6} {e['mate_filter_checked']:>9} "
                  + " ".join(f"{c:>16}" for c in cells))
    for rep in reports:
        print(f"\n{rep['build']['bits']} bits: top-k mismatches vs exhaustive: {len(rep['mismatches'])}; "
              f"sample-lake ground-truth errors: {len(rep['ground_truth_errors'])}")


def run_warehouse(folder: Path, k: int, sizes: list[int]) -> dict:
    """The sample lake read through the real index: the real refresh into a temporary warehouse (its scan, profile
    and xash stages timed: what this index needs), then every ground-truth query through
    :meth:`discovery.api.Lakescout.nary` with each method and hash size."""
    from discovery.api import Lakescout

    lake = harness.sample_lake(str(folder / "lake"), n_tables=300)
    truth = load_ground_truth(lake)
    expected = defaultdict(dict)
    for row in truth["nary"]:
        if row["joinable_tuples"] > 0:
            expected[(row["query_table"], tuple(row["query_columns"]))][row["lake_table"]] = row["joinable_tuples"]
    warehouse = str(folder / "warehouse")
    harness.build(lake, warehouse, rebuild=True, spark=harness.spark_session("lakescout-bench-nary"))
    refresh_s = sum(harness.stage_seconds(warehouse, first=True)[s] for s in ("scan", "profile", "xash"))
    ls = Lakescout(warehouse)
    rows, errors = [], []
    for bits in sizes:
        ls.nary(*next(iter(expected)), k=k, bits=bits)  # load (and resize) the index once, outside the timings
        entry = {"bits": bits}
        for method in METHODS:
            seconds, verified, false_pos = 0.0, 0, 0
            for (query, key), answer in expected.items():
                t = time.perf_counter()
                out = ls.nary(query, list(key), k=k, method=method, bits=bits)
                seconds += time.perf_counter() - t
                verified += out["stats"]["rows_verified"]
                false_pos += out["stats"]["false_positive_rows"]
                for r in out["results"]:
                    if answer.get(r["path"]) != r["joinability"]:
                        errors.append({"bits": bits, "method": method, "query": query, "table": r["path"],
                                       "J": r["joinability"], "truth": answer.get(r["path"], 0)})
                best = sorted(answer.values(), reverse=True)[:k]
                if [r["joinability"] for r in out["results"]] != best:
                    errors.append({"bits": bits, "method": method, "query": query, "top_k": "differs from truth"})
            entry.update({f"{method}_s": seconds, f"{method}_rows_verified": verified,
                          f"{method}_false_positive_rows": false_pos})
        entry["scr_over_mate_time"] = entry["scr_s"] / max(entry["mate_s"], 1e-12)
        entry["bloom_over_mate_time"] = entry["bloom_s"] / max(entry["mate_s"], 1e-12)
        entry["scr_over_mate_rows_verified"] = entry["scr_rows_verified"] / max(entry["mate_rows_verified"], 1)
        rows.append(entry)
    harness.stop_spark()
    print(f"\nsample lake through the real index ({len(expected)} queries, refresh {refresh_s:.1f} s, k = {k})")
    print(f"{'bits':>4} {'mate s':>7} {'bloom s':>7} {'scr s':>7} {'exh s':>7} {'scr/mate':>8} {'bloom/mate':>10} "
          f"{'verified mate/bloom/scr':>24} {'FP rows mate/bloom/scr':>23}")
    for e in rows:
        verified_rows = f"{e['mate_rows_verified']:d} / {e['bloom_rows_verified']:d} / {e['scr_rows_verified']:d}"
        fp_rows = " / ".join(f"{e[f'{m}_false_positive_rows']:d}" for m in FILTERED)
        print(f"{e['bits']:>4} {e['mate_s']:7.3f} {e['bloom_s']:7.3f} {e['scr_s']:7.3f} {e['exhaustive_s']:7.3f} "
              f"{e['scr_over_mate_time']:8.1f} {e['bloom_over_mate_time']:10.1f} "
              f"{verified_rows:>24} "
              f"{fp_rows:>23}")
    print(f"answers differing from the ground truth: {len(errors)}")
    return {"queries": len(expected), "refresh_s": refresh_s, "sizes": rows, "ground_truth_errors": errors}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--queries", type=int, default=120, help="2-column queries drawn from mate_queries")
    parser.add_argument("--bits", type=int, nargs="+", default=[128, 256, 512])
    parser.add_argument("--k", type=int, default=10)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--out", type=Path, default=Path(harness.result_path("nary")))
    parser.add_argument("--no-warehouse", action="store_true", help="skip the sample lake read through a refresh")
    args = parser.parse_args()
    warehouse_report = None
    if not args.no_warehouse:
        with tempfile.TemporaryDirectory() as tmp:
            warehouse_report = run_warehouse(Path(tmp), args.k, args.bits)
    if not MATE_QUERIES.is_dir():
        print(f"skipped: {MATE_QUERIES} is missing (the shared benchmark data is not available)")
        return 0
    rng = random.Random(args.seed)
    mate_tables = load_mate_tables()
    queries = pick_queries(mate_tables, args.queries, rng)
    held_out = {name for name, _ in queries}
    with tempfile.TemporaryDirectory() as tmp:
        sample_tables, sample_queries, answers = load_sample_lake(Path(tmp) / "lake")
    tables = {**mate_tables, **sample_tables}
    lake = {name: t for name, t in tables.items() if name not in held_out}
    queries += sample_queries
    lake_info = {"tables": len(lake), "mate_tables": len(mate_tables) - len(held_out),
                 "sample_tables": len(sample_tables), "queries": len(queries),
                 "queries_by_key_size": {n: sum(len(k) == n for _, k in queries) for n in (2, 3)}}
    reports = []
    for bits in args.bits:
        index, info = build(lake, bits)
        reports.append(run_size(index, info, queries, tables, answers, args.k))
        print(f"{bits} bits done", flush=True)
    print_report(reports, lake_info)
    targets = {
        "mate_at_least_5x_faster_than_scr": all(r["groups"]["all"]["scr_over_mate_time"] >= 5 for r in reports),
        "rows_verified_at_most_1_20_of_scr": all(r["groups"]["all"]["scr_over_mate_rows_verified"] >= 20
                                                 for r in reports),
        "xash_fewer_false_positives_than_bloom": all(
            r["groups"]["all"]["mate_filter_false_positives"] < r["groups"]["all"]["bloom_filter_false_positives"]
            for r in reports),
        "top_k_equals_exhaustive": all(not r["mismatches"] for r in reports),
        "sample_lake_ground_truth": all(not r["ground_truth_errors"] for r in reports),
    }
    if warehouse_report is not None:
        targets["sample_lake_through_index_ground_truth"] = not warehouse_report["ground_truth_errors"]
    print("\ntargets:", ", ".join(f"{name}={'yes' if ok else 'NO'}" for name, ok in targets.items()))
    harness.write_result("nary", {"lake": lake_info, "k": args.k, "seed": args.seed, "sizes": reports,
                                  "sample_lake_index": warehouse_report, "targets": targets}, stamp=False,
                         path=args.out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
