"""Semantic-join latency on a 1M-vector lake through the user's path: top-10 of a 2,000-value column, PEXESO and exact.

Run: ``python benchmarks/join_latency.py [--tables 250] [--values 2000] [--queries 10] [--workdir DIR]
[--warehouse DIR] [--default-config]``.

The lake is ``benchmarks/join_memory.py``'s: ``--tables`` tables of two string columns of ``--values`` distinct made-up
names each (``2 x tables x values`` value vectors, 1M by default), refreshed once with the real pipeline
(``join_memory.refresh``, one partition) and that script's configuration, whose join encoder trains 30 steps (quick to
build, badly separated value vectors: the worst case for verification); ``--default-config`` refreshes it with the
project's default configuration instead (up to ``[embed] join_steps`` within ``train_seconds``), what a user's refresh
builds.  The build is printed before the queries: the join encoder's steps trained and planned, the cost model's |P|, m
and partitions, and the refresh's stage seconds.  One process opens it with ``discovery.open(...)`` and asks
``join(table, column, top_k=10)`` of ``--queries`` query columns (``name`` and ``partner`` of tables spread over the
lake), each with ``pexeso`` and then ``exact``; the first query also loads the index, which is then kept in the
process's index cache, so it is reported apart and the medians are over the others.  Per query: process CPU seconds and
wall seconds of each method, and the seconds of the phases the search reports (query encoding, index load, blocking
and verification counts, the witness pass that links each matched value to its nearest lake value, context); the run
checks that both methods return the same columns with the same match counts.  The machine's load average is printed
with the figures: on a shared machine the CPU seconds are the comparable figure.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time

import harness
from harness import print_table, write_result
from join_memory import refresh, write_lake

METHODS = ("pexeso", "exact")
STATS = ("candidate_pairs", "candidate_vectors", "lemma1_filtered", "distance_computations", "keys_verified",
         "columns_verified", "early_rejects", "witness_distances", "witness_seconds", "context_columns",
         "context_seconds")


def timed_join(ls, table: str, column: str, method: str, top_k: int) -> dict:
    """One ``join`` call: its answer (table, column, matched), process CPU and wall seconds, and the search stats."""
    c0, t0 = time.process_time(), time.perf_counter()
    out = ls.join(table, column, top_k=top_k, method=method)
    cpu, wall = time.process_time() - c0, time.perf_counter() - t0
    return {"answer": [(r["table_id"], r["column"], r["matched"]) for r in out["results"]], "cpu": cpu, "wall": wall,
            "stats": {k: out["stats"].get(k) for k in STATS + ("query_values", "held_bytes_max")}}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=250)
    ap.add_argument("--values", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=10, help="query columns after the first (which loads the index)")
    ap.add_argument("--top-k", type=int, default=10)
    ap.add_argument("--workdir", default=None, help="keep the lake and warehouse here (reused when present)")
    ap.add_argument("--warehouse", default=None, help="an already refreshed warehouse of that lake")
    ap.add_argument("--default-config", action="store_true",
                    help="refresh with the project's default configuration, not join_memory.py's 30-step encoder")
    args = ap.parse_args(argv)

    import discovery

    work = args.workdir or tempfile.mkdtemp(prefix="lakescout-join-latency-")
    os.makedirs(work, exist_ok=True)
    lake = os.path.join(work, f"lake_{args.tables}x{args.values}")
    warehouse = args.warehouse or os.path.join(work, f"wh_{'default' if args.default_config else 'one'}_"
                                                     f"{args.tables}x{args.values}")
    refresh_seconds = None
    if not os.path.isdir(warehouse):
        if not os.path.isdir(lake):
            write_lake(lake, args.tables, args.values)
        refresh_seconds = refresh(lake, warehouse, None, work, default_config=args.default_config)
    build = harness.join_build(warehouse)
    enc = build["join_encoder"]
    print(f"build: refresh {refresh_seconds or 0:.0f} s (0: reused), stages {build['stage_seconds']}; join encoder "
          f"{enc['steps']} of {enc['planned_steps']} steps in {enc['seconds']} s; {build['value_vectors']} value "
          f"vectors, |P| = {build['n_pivots']}, m = {build['levels']} ({build['chosen_by']}), "
          f"{build['partitions']} partition(s)", flush=True)
    ls = discovery.open(warehouse)
    n = args.queries + 1
    step = max(1, args.tables // n)
    queries = [(f"t{t:04d}.csv", ("name", "partner")[i % 2]) for i, t in enumerate(range(0, args.tables, step))][:n]
    rows, same = [], []
    for i, (table, column) in enumerate(queries):
        got = {m: timed_join(ls, table, column, m, args.top_k) for m in METHODS}
        same.append(got["pexeso"]["answer"] == got["exact"]["answer"])
        rows.append({"query": f"{table}:{column}", "first": i == 0, "identical": same[-1],
                     **{f"{m} cpu s": got[m]["cpu"] for m in METHODS},
                     **{f"{m} wall s": got[m]["wall"] for m in METHODS},
                     **{k: got["pexeso"]["stats"][k] for k in STATS}})
        print(f"{table}:{column}: " + ", ".join(f"{m} {got[m]['cpu']:.2f} s CPU / {got[m]['wall']:.2f} s wall"
                                              for m in METHODS) + f", identical {same[-1]}", flush=True)
    load = os.getloadavg()
    warm = [r for r in rows if not r["first"]]
    medians = {f"{m} {k}": statistics.median(r[f"{m} {k} s"] for r in warm) for m in METHODS for k in ("cpu", "wall")}
    print_table(rows, ["query", "first", "identical", "pexeso cpu s", "exact cpu s", "pexeso wall s", "exact wall s",
                       "candidate_vectors", "distance_computations", "keys_verified", "witness_seconds",
                       "context_seconds"])
    print(f"\n{len(warm)} top-{args.top_k} queries of {args.values}-value columns after the first (which loaded the "
          f"index): median pexeso {medians['pexeso cpu']:.2f} s CPU / {medians['pexeso wall']:.2f} s wall, exact "
          f"{medians['exact cpu']:.2f} s CPU / {medians['exact wall']:.2f} s wall; of pexeso's wall, the witness pass "
          f"{statistics.median(r['witness_seconds'] or 0 for r in warm):.3f} s and context "
          f"{statistics.median(r['context_seconds'] or 0 for r in warm):.3f} s (medians); "
          f"answers identical: {all(same)}; "
          f"load average {load[0]:.1f} {load[1]:.1f} {load[2]:.1f}")
    write_result("join_latency", {"tables": args.tables, "values_per_column": args.values, "top_k": args.top_k,
                                  "queries": rows, "medians_after_first": medians, "answers_identical": all(same),
                                  "load_average": load, "refresh_seconds": refresh_seconds, "warehouse": warehouse,
                                  "default_config": args.default_config, "build": build})
    return 0 if all(same) else 1


if __name__ == "__main__":
    sys.exit(main())
