"""Query batches in one process against the same batches on Spark local[2]: throughput, ratio, equal answers.

Run: ``python benchmarks/batches.py [--queries 100 800] [--k 10] [--workdir DIR]``.

The sample lake (``discovery.demo_lake``, seed 7) is written and indexed with the real refresh on local[2] into a
warehouse under ``--workdir`` (a temporary folder by default; a published warehouse there is reused).  A batch of N
union queries (the lake's ok tables by id, in id order, repeated as needed; ``k`` results each, the default method)
is then run twice per N, each as users run it, in a fresh ``lakescout batch`` process:

* **process**: ``lakescout batch`` answers every query in its own process;
* **spark**: ``lakescout batch --master local[2]`` hands the batch to a ``spark-submit`` application whose tasks
  answer the queries (``[batch] spark_min_queries`` is set to 1 for the run so that every N goes to Spark).

Reported per N: wall time from spawn to exit, queries per second, the CPU time of the in-process run (of the Spark
run it would miss the executors' Python workers, which their daemon reaps, so it is not reported), the batch's own
``seconds`` (from the snapshot being opened to the commit, without process and Spark
start), and the ratio of the two throughputs (spark / process), all measured in the same run; and whether both
batches recorded identical ``query_results`` rows.  The machine may be shared: the load average is recorded.
Writes ``benchmarks/results/batches.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time

if __package__ in (None, ""):
    sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import print_table, refresh_lake, write_result

LAKESCOUT = os.path.join(os.path.dirname(sys.executable), "lakescout")


def build_warehouse(workdir: str) -> tuple[str, float | None]:
    """(warehouse, refresh seconds or None when reused): the sample lake indexed by the real refresh."""
    from discovery.demo_lake import generate_demo_lake

    lake, warehouse = os.path.join(workdir, "lake"), os.path.join(workdir, "warehouse")
    if os.path.isdir(os.path.join(warehouse, "snapshots")):
        return warehouse, None
    generate_demo_lake(lake, seed=7)
    out, seconds = refresh_lake(lake, warehouse, "lakescout-bench-batches")
    assert out.get("published"), out
    from pyspark.sql import SparkSession

    active = SparkSession.getActiveSession()
    if active is not None:
        active.stop()   # the benchmark's runs start their own processes; keep the cores for them
    return warehouse, seconds


def union_queries(warehouse: str, n: int, k: int) -> list[dict]:
    """``n`` union queries over the snapshot's ok lake tables, by id, in id order (repeated when n is larger)."""
    import pyarrow.compute as pc

    from discovery.store import Warehouse, load_snapshot

    catalog = load_snapshot(Warehouse(warehouse)).read("catalog", columns=["table_id", "status"])
    ids = sorted(catalog.filter(pc.equal(catalog["status"], "ok")).column("table_id").to_pylist())
    return [{"id": f"q{i}", "kind": "union", "query": ids[i % len(ids)], "k": k} for i in range(n)]


def run_cli(args: list[str], env: dict) -> tuple[dict, float, float]:
    """(summary, wall seconds, CPU seconds of the process and the processes it waited for)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    proc = subprocess.run([LAKESCOUT, *args, "--json"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        raise SystemExit(f"lakescout {' '.join(args)} failed:\n{proc.stderr[-3000:]}")
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return json.loads(proc.stdout), wall, cpu


def result_rows(warehouse: str, batch_id: str) -> list[dict]:
    from discovery.batch import batch_results

    return [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}
            for r in batch_results(warehouse, batch_id).to_pylist()]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, nargs="+", default=[100, 800], help="batch sizes N")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--workdir", default=None, help="folder of the sample lake and its warehouse (default: temporary)")
    args = p.parse_args(argv)
    workdir = args.workdir or tempfile.mkdtemp(prefix="lakescout-bench-batches-")
    os.makedirs(workdir, exist_ok=True)
    warehouse, refresh_seconds = build_warehouse(workdir)
    config = os.path.join(workdir, "batches.toml")
    with open(config, "w") as fh:
        fh.write("[batch]\nspark_min_queries = 1\n")
    env = dict(os.environ, LAKESCOUT_CONFIG=config, PYSPARK_PYTHON=sys.executable,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    stamp = time.strftime("%Y%m%dT%H%M%S")
    rows = []
    for n in args.queries:
        spec = os.path.join(workdir, f"batch-{n}.json")
        with open(spec, "w") as fh:
            json.dump({"name": f"bench-{n}", "queries": union_queries(warehouse, n, args.k)}, fh)
        runs = {}
        for mode, extra in (("process", []), ("spark", ["--master", "local[2]"])):
            batch_id = f"bench-{stamp}-{n}-{mode}"
            summary, wall, cpu = run_cli(["batch", "--warehouse", warehouse, "--spec", spec, "--batch-id",
                                          batch_id, *extra], env)
            runs[mode] = {"batch_id": batch_id, "wall_s": wall, "batch_s": summary["seconds"],
                          "qps": n / wall, "results": summary["results"], "tasks": summary.get("spark_tasks")}
            if mode == "process":
                runs[mode]["cpu_s"] = cpu
        identical = result_rows(warehouse, runs["process"]["batch_id"]) == result_rows(warehouse,
                                                                                         runs["spark"]["batch_id"])
        rows.append({"queries": n, **{f"{m}_{k}": v for m, r in runs.items() for k, v in r.items()
                                      if k not in ("batch_id", "results", "tasks")},
                     "spark_tasks": runs["spark"]["tasks"],
                     "results": runs["process"]["results"],
                     "ratio_qps": runs["spark"]["qps"] / runs["process"]["qps"],
                     "ratio_batch": runs["process"]["batch_s"] / runs["spark"]["batch_s"],
                     "identical": identical, "load": os.getloadavg()[0]})
        print_table(rows[-1:], ["queries", "process_wall_s", "spark_wall_s", "process_qps", "spark_qps", "ratio_qps",
                                "process_batch_s", "spark_batch_s", "ratio_batch", "spark_tasks", "identical"])
    print()
    print_table(rows, ["queries", "process_wall_s", "process_cpu_s", "spark_wall_s", "process_qps",
                       "spark_qps", "ratio_qps", "ratio_batch", "spark_tasks", "identical", "load"])
    write_result("batches", {"k": args.k, "method": "pgtus++", "refresh_s": refresh_seconds, "rows": rows})
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
