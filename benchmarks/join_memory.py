"""Join memory bound: a query holds at most ``[join] memory_budget_mb`` of index, answers unchanged.

Run: ``python benchmarks/join_memory.py [--tables 250] [--values 4000] [--workdir DIR] [--queries 5]``.

A generated lake of ``--tables`` tables, each with two string columns of ``--values`` distinct made-up names (so the
lake has ``2 x tables x values`` value vectors), is refreshed twice with the real pipeline (``lakescout refresh``):
once with a budget large enough for one partition, once with a quarter of that index's estimated size.  Queries go
through ``discovery.open(...).join`` in child processes, each measured by its peak resident set (the kernel's
high-water mark, as the harness reads it for a child); the fixed
overhead is the peak of the same child answering the same queries on a one-table warehouse whose query columns have
as many values (interpreter, libraries, the join encoder and the query's own encoding: everything but the lake's
index).  The result: peak RSS of the partitioned query against budget + fixed overhead, the bytes each query held
(``held_bytes_max``), the largest stored partition against its capacity, and whether every answer equals the
one-partition index's.
"""
from __future__ import annotations

import argparse
import csv
import json
import os
import shutil
import sys
import tempfile

import numpy as np

import harness
from harness import print_table, write_result

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "sa", "ti", "vo", "ber", "dan", "fel", "gor", "hal", "jin", "kor", "lem",
             "mar", "nor", "pel", "quin", "ros", "stan", "tor", "ul", "vin", "wel", "yor", "zan"]
def _names(rng: np.random.Generator, n: int, domain: int) -> list[str]:
    """``n`` distinct made-up names of a domain (a domain prefix syllable keeps domains apart in the vector space)."""
    out: set[str] = set()
    head = SYLLABLES[domain % len(SYLLABLES)].title()
    while len(out) < n:
        k = rng.integers(2, 5, n)
        for row in range(n):
            parts = rng.choice(SYLLABLES, int(k[row]))
            out.add(f"{head}{''.join(parts)} {SYLLABLES[int(rng.integers(len(SYLLABLES)))].title()}"
                    f"{int(rng.integers(100))}")
            if len(out) == n:
                break
    return sorted(out)


def write_lake(root: str, tables: int, values: int, seed: int = 0) -> None:
    """``tables`` CSV files of two name columns (``values`` distinct values each) and a row number."""
    rng = np.random.default_rng(seed)
    os.makedirs(root, exist_ok=True)
    for t in range(tables):
        a, b = _names(rng, values, t % 7), _names(rng, values, 7 + t % 5)
        rng.shuffle(b)
        with open(os.path.join(root, f"t{t:04d}.csv"), "w", newline="", encoding="utf-8") as fh:
            w = csv.writer(fh)
            w.writerow(["name", "partner", "row"])
            w.writerows(zip(a, b, range(values)))


def refresh(lake: str, warehouse: str, budget_mb: float | None, workdir: str, default_config: bool = False) -> float:
    """Seconds of ``lakescout refresh`` of ``lake`` into ``warehouse`` with :data:`harness.QUICK_TRAINING` (a
    30-step join encoder, quick to build), or with ``default_config`` the project's defaults; ``budget_mb`` sets
    ``[join] memory_budget_mb``."""
    text = ("" if default_config else harness.QUICK_TRAINING) \
        + (f"\n[join]\nmemory_budget_mb = {budget_mb!r}\n" if budget_mb is not None else "")
    config = harness.config_file(workdir, f"{'default' if default_config else 'budget'}_{budget_mb}", text)
    return harness.refresh_cli(lake, warehouse, config=config).seconds


CHILD = """
import json, sys, resource
import discovery
ls = discovery.open(sys.argv[1])
out = []
for query, column in json.loads(sys.argv[2]):
    r = ls.join(query, column, top_k=10)
    out.append({"answer": [[x["table_id"], x["column"], x["matched"], x["matches"]] for x in r["results"]],
                "held": r["stats"].get("held_bytes_max"), "partitions": r["stats"].get("partitions")})
print(json.dumps(out))
"""


def query_child(warehouse: str, queries: list[tuple[str, str]]) -> dict:
    """Answers and peak RSS (bytes) of a fresh process querying ``warehouse`` through ``discovery.open(...).join``."""
    done = harness.python(CHILD, warehouse, json.dumps(queries), env=dict(os.environ, LAKESCOUT_CACHE_MB="0"))
    return {"vmhwm": int(done.peak_rss_mb * 2 ** 20), "queries": done.json()}


def _partition_loads(warehouse: str, model, budget: float):
    """Stored value vectors per partition, and the capacity the pivots stage sized them for."""
    import discovery
    from discovery.indexes.join.partitioning import partition_capacity

    stored = discovery.open(warehouse).snapshot.read("pivot_mappings", columns=["partition"]).column("partition")
    capacity = partition_capacity(budget, model.pivots.shape[1], len(model.pivots), model.grid.levels,
                                  model.choice.get("value_bytes", 32.0))
    return np.bincount(stored.to_numpy(), minlength=model.n_partitions), capacity


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tables", type=int, default=250)
    ap.add_argument("--values", type=int, default=2000)
    ap.add_argument("--queries", type=int, default=5)
    ap.add_argument("--workdir", default=None, help="keep the lake and warehouses here (reused when present)")
    ap.add_argument("--lake", default=None, help="an already generated lake (default: <workdir>/lake_<T>x<V>)")
    ap.add_argument("--warehouse", default=None, help="its one-partition warehouse, if already refreshed")
    args = ap.parse_args(argv)

    work = args.workdir or tempfile.mkdtemp(prefix="lakescout-join-memory-")
    os.makedirs(work, exist_ok=True)
    lake = args.lake or os.path.join(work, f"lake_{args.tables}x{args.values}")
    tiny = os.path.join(work, f"tiny_lake_{args.values}")
    whole, parts, small = (os.path.join(work, f"wh_{n}_{args.tables}x{args.values}")
                           for n in ("one", "quarter", "tiny"))
    whole = args.warehouse or whole
    seconds = {}
    if not os.path.isdir(lake):
        write_lake(lake, args.tables, args.values)
    if not os.path.isdir(tiny):
        write_lake(tiny, 1, args.values, seed=1)
    if not os.path.isdir(whole):
        seconds["refresh_one_partition"] = refresh(lake, whole, None, work)
    if not os.path.isdir(small):
        seconds["refresh_tiny"] = refresh(tiny, small, None, work)
    model, n_vectors = harness.join_model(whole)
    if model.n_partitions != 1:
        raise SystemExit(f"{whole} has {model.n_partitions} partitions; the reference must be one partition")
    queries = [(f"t{t:04d}.csv", column) for t in range(0, args.tables, max(1, args.tables // args.queries))
               for column in ("name", "partner")][:args.queries]
    runs = {"tiny": query_child(small, [("t0000.csv", column) for column in ("name", "partner")]),
            "one_partition": query_child(whole, queries)}
    index_bytes = max(q["held"] for q in runs["one_partition"]["queries"])  # rows read + index, as measured
    budget_mb = index_bytes / 4 / (1 << 20)
    # the same warehouse refreshed under the smaller budget: the pivots stage re-partitions
    if not os.path.isdir(parts):
        shutil.copytree(whole, parts)
        seconds["refresh_quarter_budget"] = refresh(lake, parts, budget_mb, work)
    pmodel, _ = harness.join_model(parts)
    loads, capacity = _partition_loads(parts, pmodel, budget_mb * (1 << 20))
    runs["quarter_budget"] = query_child(parts, queries)
    strip = [[[a[:3] for a in q["answer"]] for q in runs[k]["queries"]] for k in ("one_partition", "quarter_budget")]
    overhead = runs["tiny"]["vmhwm"]
    peak = runs["quarter_budget"]["vmhwm"]
    budget = budget_mb * (1 << 20)
    rows = [{"warehouse": name, "partitions": (pmodel if name == "quarter_budget" else model).n_partitions
             if name != "tiny" else 1, "peak_rss_mb": r["vmhwm"] / 2 ** 20,
             "held_mb_max": max((q["held"] or 0) for q in r["queries"]) / 2 ** 20} for name, r in runs.items()]
    print(f"lake: {args.tables} tables, {n_vectors} value vectors; |P| = {len(model.pivots)}, m = {model.grid.levels} "
          f"({model.choice.get('by')}); one-partition index as loaded {index_bytes / 2 ** 20:.0f} MiB, "
          f"budget {budget_mb:.1f} MiB "
          f"(a quarter), {pmodel.n_partitions} partitions")
    print_table(rows, ["warehouse", "partitions", "peak_rss_mb", "held_mb_max"])
    print(f"largest partition {loads.max()} value vectors, capacity {capacity} (the budget's estimate)")
    same = [a == b for a, b in zip(*strip)]
    print(f"answers identical per query: {same}")
    ok = peak <= budget + overhead
    print(f"peak RSS {peak / 2 ** 20:.0f} MiB vs budget + fixed overhead {(budget + overhead) / 2 ** 20:.0f} MiB: "
          f"{'within' if ok else 'OVER'}; answers identical to the one-partition index: {strip[0] == strip[1]}")
    write_result("join_memory", {
        "tables": args.tables, "values_per_column": args.values, "value_vectors": n_vectors,
        "n_pivots": len(model.pivots), "levels": model.grid.levels, "choice": model.choice,
        "index_bytes_as_loaded": index_bytes, "budget_bytes": budget, "partitions": pmodel.n_partitions,
        "largest_partition_vectors": int(loads.max()), "partition_capacity_vectors": capacity,
        "partition_loads": loads.tolist(), "answers_identical_per_query": same,
        "fixed_overhead_bytes": overhead, "peak_rss_bytes": {k: r["vmhwm"] for k, r in runs.items()},
        "held_bytes_max": {k: max((q["held"] or 0) for q in r["queries"]) for k, r in runs.items()},
        "within_budget_plus_overhead": ok, "answers_identical": strip[0] == strip[1], "queries": queries,
        "refresh_seconds": seconds, "workdir": work})
    return 0 if ok and strip[0] == strip[1] else 1


if __name__ == "__main__":
    sys.exit(main())
