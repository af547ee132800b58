"""What a user waits for on a small lake: a refresh by the CLI and by the DAG, and cold queries.

    .venv/bin/python benchmarks/startup.py [--parts cli,dag,queries] [--lakes small,sample] [--runs 1]
        [--query-runs 5] [--baseline DIR] [--work DIR]

Lakes: ``small``, 20 fivethirtyeight tables of 4 to 30 KB (the first 20 such CSV files by path, 0.29 MB), and
``sample``, the sample lake (``lakescout demo-lake``, 300 tables).  Parts, each a fresh process as a user starts it:

* ``cli``: ``lakescout refresh`` into a new warehouse;
* ``dag``: ``airflow dags test lake_refresh`` with the Makefile's environment (a project-local ``AIRFLOW_HOME`` whose
  database is migrated first, untimed; ``spark_default`` on ``local[*]``); task seconds from its database;
* ``queries``: on the sample lake's warehouse (one built by each checkout), ``lakescout --help``, ``status``, a
  union, an n-ary, a text join and a coordinate join (``make demo``'s queries), ``--query-runs`` times each after
  one untimed run.

Each run reports wall seconds, seconds to its first line of output, the CPU seconds of its whole process tree (every
process sampled every 0.1 s: the JVM, the Python driver and workers, Airflow's task processes), and for queries the
peak resident memory.  With ``--baseline DIR`` (a checkout of another commit, e.g. ``git worktree add DIR d7300e3``)
every run is made by both, baseline first, interleaved, with this environment's packages and the baseline's code
first on ``PYTHONPATH``, so that the ratios compare the code under the same load.  CPU seconds are what a loaded
machine changes least; the load average is recorded.  Bytecode is cached as a user's processes cache it: each
checkout's modules are compiled once before the runs and ``PYTHONDONTWRITEBYTECODE`` is dropped from every run's
environment (set, every process of a refresh, the driver and each Python worker, compiles the project again: several
CPU seconds a run that no user pays).  Writes ``benchmarks/results/startup.json``.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sqlite3
import statistics
import subprocess
import sys
import threading
import time

from harness import ROOT, print_table, shared_path, write_result

BIN = os.path.join(ROOT, ".venv", "bin")
#: make demo's queries on the sample lake, as ``lakescout`` arguments after ``--warehouse W``.
QUERIES = {
    "help": ["--help"],
    "status": ["status"],
    "union": ["union", "--query", "finance/registers/firms.tsv", "-k", "5"],
    "nary": ["nary", "--query", "retail/stores/store_locations_q1.csv", "--key", "country,city"],
    "text join": ["join", "--query", "partners/vendor_master.csv", "--column", "Vendor"],
    "coordinate join": ["join", "--query", "geo/weather_stations.csv", "--column", "lat,lng"],
}


def timed(cmd: list[str], env: dict, cwd: str) -> dict:
    """Run ``cmd``: wall and first-output seconds, CPU seconds of its process tree, its peak RSS, its output."""
    import psutil

    started = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env, cwd=cwd)
    root, cpu, peak, stop = psutil.Process(proc.pid), {}, {}, threading.Event()

    def sample():
        while not stop.is_set():
            try:
                procs = [root, *root.children(recursive=True)]
            except psutil.Error:
                procs = []
            for p in procs:
                try:
                    with p.oneshot():
                        key, times = (p.pid, p.create_time()), p.cpu_times()
                        cpu[key], peak[key] = times.user + times.system, max(peak.get(key, 0), p.memory_info().rss)
                except psutil.Error:
                    continue
            stop.wait(0.1)

    watcher = threading.Thread(target=sample, daemon=True)
    watcher.start()
    first, lines = None, []
    for line in proc.stdout:
        first = time.perf_counter() - started if first is None else first
        lines.append(line)
    proc.wait()
    wall = time.perf_counter() - started
    stop.set()
    watcher.join()
    return {"wall_s": wall, "first_output_s": first, "cpu_s": sum(cpu.values()), "rc": proc.returncode,
            "peak_rss_mb": peak.get((root.pid, root.create_time()), 0) / 2 ** 20 if cpu else None,
            "output": "".join(lines), "load": os.getloadavg()[0]}


def env_for(code: str) -> dict:
    """The environment of a run of the checkout at ``code`` (this one: no ``PYTHONPATH`` change)."""
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYSPARK_PYTHON=sys.executable)
    env.pop("LAKESCOUT_CONFIG", None)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    if os.path.realpath(code) != os.path.realpath(ROOT):
        env["PYTHONPATH"] = code + os.pathsep + env.get("PYTHONPATH", "")
    return env


def small_lake(work: str) -> str | None:
    """The 20-table lake (see the module docstring), copied under ``work``."""
    source = shared_path("fivethirtyeight")
    if source is None:
        return None
    lake = os.path.join(work, "small")
    if not os.path.isdir(lake):
        picked = sorted(os.path.relpath(os.path.join(d, f), source) for d, _, files in os.walk(source) for f in files
                        if f.endswith(".csv") and 4096 < os.path.getsize(os.path.join(d, f)) < 30 * 1024)[:20]
        for rel in picked:
            os.makedirs(os.path.dirname(os.path.join(lake, rel)), exist_ok=True)
            shutil.copy2(os.path.join(source, rel), os.path.join(lake, rel))
    return lake


def sample_lake(work: str) -> str:
    lake = os.path.join(work, "sample")
    if not os.path.isdir(lake):
        subprocess.run([os.path.join(BIN, "lakescout"), "demo-lake", lake], check=True, stdout=subprocess.DEVNULL)
    return lake


def cli_refresh(code: str, lake: str, warehouse: str) -> dict:
    shutil.rmtree(warehouse, ignore_errors=True)
    out = timed([os.path.join(BIN, "lakescout"), "refresh", "--lake", lake, "--warehouse", warehouse],
                env_for(code), code)
    stages = [json.loads(line) for line in out["output"].splitlines() if line.startswith('{"stage"')]
    out["stages"] = {s["stage"]: s["seconds"] for s in stages}
    return out


def dag_refresh(code: str, lake: str, warehouse: str, home: str) -> dict:
    """``airflow dags test lake_refresh`` as ``make demo`` runs it (the Makefile's exports)."""
    shutil.rmtree(warehouse, ignore_errors=True)
    shutil.rmtree(home, ignore_errors=True)
    env = dict(env_for(code), AIRFLOW_HOME=home, AIRFLOW__CORE__DAGS_FOLDER=os.path.join(code, "dags"),
               AIRFLOW__CORE__PLUGINS_FOLDER=os.path.join(code, "plugins"), AIRFLOW__CORE__LOAD_EXAMPLES="False",
               AIRFLOW__CORE__UNIT_TEST_MODE="False", LAKESCOUT_LAKE=lake, LAKESCOUT_WAREHOUSE=warehouse,
               AIRFLOW_CONN_SPARK_DEFAULT='{"conn_type": "spark", "host": "local[*]"}')
    subprocess.run([os.path.join(BIN, "airflow"), "db", "migrate"], env=env, cwd=code, check=True,
                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    out = timed([os.path.join(BIN, "airflow"), "dags", "test", "lake_refresh"], env, code)
    with sqlite3.connect(os.path.join(home, "airflow.db")) as db:
        tasks = db.execute("select task_id, duration from task_instance order by start_date").fetchall()
    out["tasks"] = {task: seconds for task, seconds in tasks}
    out["output"] = out["output"][-3000:]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--parts", default="cli,dag,queries")
    ap.add_argument("--lakes", default="small,sample")
    ap.add_argument("--runs", type=int, default=1, help="refreshes per lake, part and checkout")
    ap.add_argument("--query-runs", type=int, default=5)
    ap.add_argument("--baseline", default=None, help="checkout of the commit to compare with, run in the same run")
    ap.add_argument("--work", default="/tmp/lakescout-bench-startup")
    args = ap.parse_args()
    os.makedirs(args.work, exist_ok=True)
    codes = {"baseline": os.path.abspath(args.baseline)} if args.baseline else {}
    codes["this"] = ROOT
    for code in codes.values():  # bytecode cached before the first timed run (see the module docstring)
        subprocess.run([sys.executable, "-m", "compileall", "-q", "discovery", "spark_jobs", "dags", "plugins"],
                       cwd=code, env=env_for(code), check=True, stdout=subprocess.DEVNULL)
    lakes = {name: (small_lake if name == "small" else sample_lake)(args.work) for name in args.lakes.split(",")}
    parts, rows, result = args.parts.split(","), [], {"load_start": os.getloadavg(), "codes": codes, "runs": []}
    for name, lake in lakes.items():
        if lake is None:
            continue
        for part in ("cli", "dag"):
            if part not in parts:
                continue
            for run in range(args.runs):
                for who, code in codes.items():
                    wh = os.path.join(args.work, f"wh-{part}-{name}-{who}")
                    out = (cli_refresh(code, lake, wh) if part == "cli" else
                           dag_refresh(code, lake, wh, os.path.join(args.work, f"airflow-{who}")))
                    out.update(part=part, lake=name, code=who, run=run)
                    result["runs"].append({k: v for k, v in out.items() if k != "output"})
                    rows.append(out)
                    print(f"{part} {name} {who}: {out['wall_s']:.1f} s wall, first line {out['first_output_s']:.2f} "
                          f"s, {out['cpu_s']:.1f} CPU s, exit {out['rc']}, load {out['load']:.1f}", flush=True)
    if "queries" in parts:
        # Each checkout queries a warehouse it built: a stored model of one commit need not load in another.
        warehouses = {who: os.path.join(args.work, f"wh-queries-{who}") for who in codes}
        for who, code in codes.items():
            if not os.path.isdir(os.path.join(warehouses[who], "snapshots")):
                cli_refresh(code, sample_lake(args.work), warehouses[who])

        def command(kind: str, who: str) -> list[str]:
            return [os.path.join(BIN, "lakescout"), *QUERIES[kind]] + (
                [] if kind == "help" else ["--warehouse", warehouses[who]])

        for kind in QUERIES:
            for who, code in codes.items():
                timed(command(kind, who), env_for(code), code)
            runs = {who: [] for who in codes}
            for _ in range(args.query_runs):
                for who, code in codes.items():
                    runs[who].append(timed(command(kind, who), env_for(code), code))
            for who, outs in runs.items():
                row = {"part": "query", "lake": kind, "code": who,
                       **{k: statistics.median(o[k] for o in outs) for k in ("wall_s", "cpu_s", "peak_rss_mb")},
                       "rc": max(o["rc"] for o in outs), "load": statistics.mean(o["load"] for o in outs)}
                result["runs"].append(row)
                rows.append(row)
    print_table(rows, ["part", "lake", "code", "wall_s", "first_output_s", "cpu_s", "peak_rss_mb", "rc", "load"])
    for part, name in sorted({(r["part"], r["lake"]) for r in rows}):
        mine = [r for r in rows if (r["part"], r["lake"]) == (part, name)]
        both = {code: {k: statistics.median(r[k] for r in mine if r["code"] == code) for k in ("wall_s", "cpu_s")}
                for code in {r["code"] for r in mine}}
        if len(both) == 2:  # medians over the runs of each checkout
            b, t = both["baseline"], both["this"]
            print(f"{part} {name}: median wall {t['wall_s'] / b['wall_s']:.2f}x, CPU {t['cpu_s'] / b['cpu_s']:.2f}x "
                  f"of the baseline")
    result["load_end"] = os.getloadavg()
    write_result("startup", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
