"""Query batches in one process against the same batches on Spark: throughput, ratios, equal answers.

Run: ``python benchmarks/batches.py [--queries 100 800] [--k 10] [--cluster 1 2] [--workdir DIR]``.

The sample lake (``discovery.orchestration.demo_lake``, seed 7) is written and indexed with the real refresh on local[2]
into a warehouse under ``--workdir`` (a temporary folder by default; a published warehouse there is reused).  A batch of
N union queries (the lake's ok tables by id, in id order, repeated as needed; ``k`` results each, the default method)
is then run once per mode and N, each as users run it, in a fresh ``lakescout batch`` process:

* **process**: ``lakescout batch`` answers every query in its own process;
* **spark**: ``lakescout batch --master local[2]`` hands the batch to a ``spark-submit`` application whose tasks
  answer the queries (``[batch] spark_min_queries`` is set to 1 for the run so that every N goes to Spark);
* with ``--cluster W [W ...]``, instead of local[2]: **Ww**, the same on a Spark standalone cluster of one master
  and W one-core workers, each its own JVM on 127.0.0.1, started for the run by ``scripts/spark_cluster.py`` (the
  starter the cluster tests use) and stopped after it, whatever ends the run.  A worker's one core is what Spark
  schedules on it (one task at a time), not a CPU limit: on a 2-core machine two workers are the whole machine.

Reported per N: wall time from spawn to exit, queries per second, the CPU time of the in-process run (of a Spark
run it would miss the executors' Python workers, which their daemon reaps, so it is not reported), the batch's own
``seconds`` (from the snapshot being opened to the commit: without the process's start, but on Spark with the
Python workers' start and imports), each Spark mode's
throughput against the in-process run's and, with two cluster sizes, the larger's against the smaller's; whether
every Spark run recorded the in-process run's ``query_results`` rows; the 1-minute load average sampled every 5 s
during each run (the machine may be shared); and on a cluster, which workers ran tasks.  ``OMP_NUM_THREADS`` of
the run is recorded: Spark sets it in its Python workers to their executor's cores (one on these workers), so
OpenBLAS runs one thread there, and one per CPU in a process started without it, which on a loaded machine costs
CPU time that one thread would not (export ``OMP_NUM_THREADS=1`` to compare like with like).
Writes ``benchmarks/results/batches.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import signal
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

import harness
from harness import LoadSampler, print_table, write_result


def build_warehouse(workdir: str) -> tuple[str, float | None]:
    """(warehouse, refresh seconds or None when reused): the sample lake indexed by the real refresh."""
    lake = harness.sample_lake(os.path.join(workdir, "lake"))
    built = harness.build(lake, os.path.join(workdir, "warehouse"))
    harness.stop_spark()   # the benchmark's runs start their own processes; keep the cores for them
    return built.warehouse, built.seconds


def union_queries(warehouse: str, n: int, k: int) -> list[dict]:
    """``n`` union queries over the snapshot's ok lake tables, by id, in id order (repeated when n is larger)."""
    import pyarrow.compute as pc

    from discovery.data.store import Warehouse, load_snapshot

    catalog = load_snapshot(Warehouse(warehouse)).read("catalog", columns=["table_id", "status"])
    ids = sorted(catalog.filter(pc.equal(catalog["status"], "ok")).column("table_id").to_pylist())
    return [{"id": f"q{i}", "kind": "union", "query": ids[i % len(ids)], "k": k} for i in range(n)]


def run_cli(args: list[str], env: dict) -> tuple[dict, float, float, dict]:
    """(summary, wall seconds, CPU seconds of the process and the processes it waited for, load during the run)."""
    with LoadSampler() as load:
        done = harness.cli(*args, "--json", env=env)
    return done.json(), done.wall, done.cpu, load.summary()


def _terminated(signum, frame):
    raise SystemExit(128 + signum)


@contextmanager
def standalone_cluster(folder: str, workers: int):
    """A master and ``workers`` one-core workers started by ``scripts/spark_cluster.py`` (free ports), stopped on
    leaving, also when the run fails or is interrupted (SIGTERM too: the daemons lead their own process groups and
    would outlive this process)."""
    import spark_cluster

    previous = signal.signal(signal.SIGTERM, _terminated)
    try:
        yield spark_cluster.up(Path(folder), 0, 0, workers, 1, "2g", 180.0)
    finally:
        spark_cluster.stop(Path(folder))
        signal.signal(signal.SIGTERM, previous)


def workers_that_ran(folder: str) -> list[str]:
    """Worker folders in which an executor ran at least one task (one application per cluster)."""
    return sorted({log.parts[-4] for log in Path(folder).glob("worker-*/*/*/stderr")
                  if "Running task" in log.read_text(errors="replace")})


def result_rows(warehouse: str, batch_id: str) -> list[dict]:
    from discovery.surfaces.batch import batch_results
    from discovery.data.store import Warehouse

    return [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}
            for r in batch_results(Warehouse(warehouse), batch_id).to_pylist()]


def run_mode(mode: str, master: str | None, n: int, warehouse: str, spec: str, stamp: str, env: dict) -> dict:
    batch_id = f"bench-{stamp}-{n}-{mode}"
    extra = ["--master", master] if master else []
    summary, wall, cpu, load = run_cli(["batch", "--warehouse", warehouse, "--spec", spec, "--batch-id", batch_id,
                                        *extra], env)
    run = {"batch_id": batch_id, "wall_s": wall, "batch_s": summary["seconds"], "qps": n / wall,
           "results": summary["results"], "tasks": summary.get("spark_tasks"), "load": load}
    if master is None:
        run["cpu_s"] = cpu
    print(f"  {mode}: {wall:.1f} s, {n / wall:.2f} queries/s, load {load['min']:.1f}-{load['max']:.1f}", flush=True)
    return run


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--queries", type=int, nargs="+", default=[100, 800], help="batch sizes N")
    p.add_argument("--k", type=int, default=10)
    p.add_argument("--cluster", type=int, nargs="+", default=None, metavar="WORKERS",
                   help="run the Spark batches on a standalone cluster of this many one-core workers (each count in "
                        "turn, started here on 127.0.0.1) instead of local[2]")
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
    spark_modes = [f"{w}w" for w in args.cluster] if args.cluster else ["spark"]
    stamp = time.strftime("%Y%m%dT%H%M%S")
    rows = []
    for n in args.queries:
        spec = os.path.join(workdir, f"batch-{n}.json")
        with open(spec, "w") as fh:
            json.dump({"name": f"bench-{n}", "queries": union_queries(warehouse, n, args.k)}, fh)
        print(f"N = {n}", flush=True)
        runs = {"process": run_mode("process", None, n, warehouse, spec, stamp, env)}
        for mode in spark_modes:
            if mode == "spark":
                runs[mode] = run_mode(mode, "local[2]", n, warehouse, spec, stamp, env)
                continue
            folder = os.path.join(workdir, f"cluster-{stamp}-{n}-{mode}")
            with standalone_cluster(folder, int(mode[:-1])) as state:
                runs[mode] = run_mode(mode, state["master"], n, warehouse, spec, stamp, env)
            runs[mode]["workers_ran"] = workers_that_ran(folder)
        reference = result_rows(warehouse, runs["process"]["batch_id"])
        row = {"queries": n, "results": runs["process"]["results"]}
        for mode, run in runs.items():
            row.update({f"{mode}_{k}": v for k, v in run.items() if k not in ("batch_id", "results", "load")})
            row[f"{mode}_load"] = f"{run['load']['min']:.1f}-{run['load']['max']:.1f}"
            row[f"{mode}_load_mean"] = run["load"]["mean"]
        for mode in spark_modes:
            row[f"{mode}_ratio_qps"] = runs[mode]["qps"] / runs["process"]["qps"]
            row[f"{mode}_identical"] = result_rows(warehouse, runs[mode]["batch_id"]) == reference
        if len(spark_modes) == 2 and args.cluster:
            row["ratio_workers_qps"] = runs[spark_modes[1]]["qps"] / runs[spark_modes[0]]["qps"]
        row["identical"] = all(row[f"{m}_identical"] for m in spark_modes)
        rows.append(row)
        columns = ["queries", "process_wall_s", "process_cpu_s", "process_qps", "process_load"]
        for mode in spark_modes:
            columns += [f"{mode}_wall_s", f"{mode}_qps", f"{mode}_ratio_qps", f"{mode}_batch_s", f"{mode}_tasks",
                        f"{mode}_load", f"{mode}_identical"]
        print_table(rows[-1:], columns + (["ratio_workers_qps"] if "ratio_workers_qps" in row else []))
    write_result("batches", {"k": args.k, "method": "pgtus++", "refresh_s": refresh_seconds,
                             "spark": "standalone, one-core workers: " + ", ".join(spark_modes) if args.cluster
                             else "local[2]", "cpus": os.cpu_count(),
                             "omp_num_threads": os.environ.get("OMP_NUM_THREADS"), "rows": rows})
    return 0 if all(r["identical"] for r in rows) else 1


if __name__ == "__main__":
    sys.exit(main())
