"""Freshness: how soon a table landing in the lake is answerable, and what the lake watcher costs while nothing changes.

Run: ``python benchmarks/freshness.py [--watch] [--landing] [--tables 1000] [--checks 20] [--landings 10]
[--delta-versions 3] [--small-plan-tables 20] [--s3] [--workdir DIR]`` (no flag: both).
Writes ``benchmarks/results/freshness.json``.

* ``watch``: a lake of ``--tables`` tables (sample lakes of 250 tables with consecutive seeds: CSV, Parquet, JSON,
  Delta, Iceberg, partitioned folders, broken files) indexed by ``lakescout refresh``; then ``--checks`` checks of the
  lake watcher (:class:`discovery.orchestration.refresh.watch.Watch`, what the trigger runs in the triggerer) while
  nothing changes: CPU and wall seconds a check, and how many fired (the DAG runs it would start).  The same lake on the
  S3 server (``scripts/s3_server.py``, which counts the requests it answers by bucket): the requests a check makes to
  the lake's bucket, against a warehouse with no snapshot yet (the listing is the same whatever the index holds).
* ``landing``: a real Airflow (``airflow standalone``: api-server, scheduler, dag-processor and triggerer; SQLite)
  over a copy of the sample lake and its warehouse, ``lake_refresh`` unpaused with the watcher on.  ``--landings``
  times a new CSV lands in the lake (one at a time); the seconds until ``discovery.open(warehouse).union(path)``
  answers from a published snapshot are measured.  Then ``--delta-versions`` appends to the lake's Delta table,
  each timed until the latest snapshot's catalog holds its new version.  ``--small-plan-tables 0`` measures the
  same with every stage in its own Spark application (the baseline of ``[refresh] small_plan_tables``).  With
  ``--s3`` the lake is a bucket on the S3 server (the sample lake uploaded, its warehouse built from there by
  ``lakescout refresh``): the CSVs land as objects and the Delta versions are committed to the bucket, Airflow's
  processes (the watcher in the triggerer, the tasks) reach it with the server's ``AWS_*`` variables.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request

import harness
from harness import print_table, write_result

PART = 250
TOWNS = "town,population,region\n" + "".join(f"Town {i},{1000 + 37 * i},Region {i % 7}\n" for i in range(40))


def _lake(work: str, tables: int) -> str:
    lake = os.path.join(work, f"lake-{tables}")
    if not os.path.isdir(lake):
        for i in range(tables // PART):
            part = harness.sample_lake(os.path.join(work, "_parts", f"p{i:03d}"), seed=1000 + i, n_tables=PART)
            shutil.copytree(part, os.path.join(lake, f"p{i:03d}"), ignore=shutil.ignore_patterns("_*"))
    return lake


def _checks(watch, n: int) -> dict:
    cpu, wall, fired = [], [], 0
    for _ in range(n):
        c0, w0 = time.process_time(), time.perf_counter()
        fired += watch.check() is not None
        cpu.append(time.process_time() - c0)
        wall.append(time.perf_counter() - w0)
    return {"checks": n, "fired": fired, "cpu_s_median": statistics.median(cpu), "cpu_s_max": max(cpu),
            "wall_s_median": statistics.median(wall), "wall_s_max": max(wall)}


def watch_cost(args) -> dict:
    from discovery.orchestration.refresh.watch import Watch
    from discovery.data.store import Warehouse
    from s3_server import S3Server

    lake = _lake(args.workdir, args.tables)
    wh = os.path.join(args.workdir, f"wh-{args.tables}")
    harness.build(lake, wh, via="cli")
    watch = Watch(lake, Warehouse(wh))
    watch.check()  # the first check reads the snapshot's catalog
    local = _checks(watch, args.checks)
    local["listed"] = json.load(open(os.path.join(wh, "watch", "state.json")))["changes"]["listed"]
    with S3Server() as server:
        os.environ.update(server.env)
        bucket = server.create_bucket("watched-lake")
        import boto3

        s3 = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                          aws_access_key_id="lakescout", aws_secret_access_key="lakescout")
        objects = 0
        for folder, _, files in os.walk(lake):
            for f in files:
                path = os.path.join(folder, f)
                s3.upload_file(path, "watched-lake", os.path.relpath(path, lake))
                objects += 1
        remote = Watch(f"{bucket}/", Warehouse(os.path.join(args.workdir, "wh-s3-empty")))
        remote.check()
        server.requests(reset=True)
        s3_run = _checks(remote, args.checks)
        counts = server.requests(bucket="watched-lake")
        s3_run.update(objects=objects, requests_per_check={k: v / args.checks for k, v in counts.items()})
    out = {"tables": args.tables, "local": local, "s3": s3_run}
    print_table([{"where": "local", **local}, {"where": "s3", **s3_run}],
                ["where", "checks", "fired", "cpu_s_median", "cpu_s_max", "wall_s_median"])
    print("S3 requests a check to the lake's bucket:", s3_run["requests_per_check"], f"({objects} objects)")
    return out


# -- a real Airflow --------------------------------------------------------------------------------------------------
def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _airflow(work: str, lake: str, wh: str, config: str, extra: dict | None = None) -> tuple[subprocess.Popen, dict]:
    port = _free_port()
    env = dict(os.environ, **(extra or {}), AIRFLOW_HOME=os.path.join(work, "airflow"), LAKESCOUT_CONFIG=config,
               AIRFLOW__CORE__DAGS_FOLDER=os.path.join(harness.ROOT, "dags"),
               AIRFLOW__CORE__PLUGINS_FOLDER=os.path.join(harness.ROOT, "plugins"),
               AIRFLOW__CORE__LOAD_EXAMPLES="False", AIRFLOW__API__PORT=str(port),
               AIRFLOW__CORE__EXECUTION_API_SERVER_URL=f"http://localhost:{port}/execution/",
               AIRFLOW__DAG_PROCESSOR__REFRESH_INTERVAL="5",
               AIRFLOW_CONN_SPARK_DEFAULT=json.dumps({"conn_type": "spark", "host": "local[2]"}),
               LAKESCOUT_WAREHOUSE=wh, LAKESCOUT_LAKE=lake, PYSPARK_PYTHON=sys.executable,
               PATH=os.path.dirname(sys.executable) + os.pathsep + os.environ.get("PATH", ""))
    airflow = os.path.join(os.path.dirname(sys.executable), "airflow")
    log = open(os.path.join(work, "standalone.log"), "w")
    proc = subprocess.Popen([airflow, "standalone"], env=env, cwd=work, stdout=log, stderr=subprocess.STDOUT,
                            start_new_session=True)
    deadline = time.time() + 300
    while time.time() < deadline:
        try:
            urllib.request.urlopen(f"http://localhost:{port}/api/v2/monitor/health", timeout=5)
            break
        except OSError:
            time.sleep(2)
    while time.time() < deadline:  # the DAG is parsed and stored: unpause it (its watcher then starts)
        done = subprocess.run([airflow, "dags", "unpause", "lake_refresh"], env=env, capture_output=True, text=True)
        if done.returncode == 0 and "lake_refresh" in done.stdout:
            return proc, env
        time.sleep(3)
    raise RuntimeError("Airflow did not come up with lake_refresh within 5 minutes")


def _until(predicate, timeout: float, every: float = 0.5) -> float | None:
    start = time.time()
    while time.time() - start < timeout:
        if predicate():
            return time.time() - start
        time.sleep(every)
    return None


def _answerable(wh: str, path: str) -> bool:
    import discovery

    try:
        discovery.open(wh).union(path, k=1)
        return True
    except Exception:  # noqa: BLE001 - not in the latest snapshot yet (or no snapshot): not answerable
        return False


def _delta_version(wh: str, path: str) -> str | None:
    import pyarrow.compute as pc

    import discovery

    cat = discovery.open(wh).snapshot.read("catalog", columns=["path", "version"])
    hit = cat.filter(pc.equal(cat["path"], path))
    return hit["version"][0].as_py() if hit.num_rows else None


class _LocalLake:
    """A lake folder the benchmark changes: files written, Delta versions appended."""

    def __init__(self, root: str):
        self.root = root

    def write(self, path: str, text: str) -> None:
        os.makedirs(os.path.dirname(os.path.join(self.root, path)), exist_ok=True)
        with open(os.path.join(self.root, path), "w") as fh:
            fh.write(text)

    def append(self, delta: str) -> int:
        """Five rows of the Delta table at ``delta`` appended again; its new version."""
        from deltalake import DeltaTable, write_deltalake

        uri, options = self.delta_uri(delta)
        extra = DeltaTable(uri, storage_options=options).to_pyarrow_table().slice(0, 5)
        write_deltalake(uri, extra, mode="append", storage_options=options)
        return DeltaTable(uri, storage_options=options).version()

    def delta_uri(self, delta: str) -> tuple[str, dict | None]:
        return os.path.join(self.root, delta), None


class _BucketLake(_LocalLake):
    """The same lake as objects under ``s3://<bucket>/lake`` on the S3 server."""

    def __init__(self, server, bucket: str):
        import boto3

        self.server, self.bucket = server, bucket
        super().__init__(f"s3://{bucket}/lake")
        self.client = boto3.client("s3", endpoint_url=server.endpoint, region_name="us-east-1",
                                   aws_access_key_id="lakescout", aws_secret_access_key="lakescout")

    def upload(self, folder: str) -> None:
        for parent, _, files in os.walk(folder):
            for f in files:
                path = os.path.join(parent, f)
                self.client.upload_file(path, self.bucket, "lake/" + os.path.relpath(path, folder))

    def write(self, path: str, text: str) -> None:
        self.client.put_object(Bucket=self.bucket, Key="lake/" + path, Body=text.encode())

    def delta_uri(self, delta: str) -> tuple[str, dict | None]:
        from discovery.storage.credentials import credentials

        return f"{self.root}/{delta}", credentials().delta_options()


def landing(args) -> dict:
    source_lake = harness.sample_lake(os.path.join(args.workdir, "sample_lake"), lakehouse=True)
    work = os.path.join(args.workdir, "landing-s3" if args.s3 else "landing")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(work)
    wh = os.path.join(work, "wh")
    delta = next(os.path.relpath(d, source_lake) for d, subs, _ in os.walk(source_lake) if "_delta_log" in subs)
    server = None
    if args.s3:
        from s3_server import S3Server

        server = S3Server().start()
        os.environ.update(server.env)        # this process's reads, the CLI refresh and Airflow's processes
        server.create_bucket("landing-lake")
        lake = _BucketLake(server, "landing-lake")
        lake.upload(source_lake)
        harness.build(lake.root, wh, via="cli")
    else:
        source_wh = harness.build(source_lake, os.path.join(args.workdir, "sample_wh")).warehouse
        lake = _LocalLake(os.path.join(work, "lake"))
        shutil.copytree(source_lake, lake.root)  # copy2 keeps mtimes: the copy is the indexed lake
        shutil.copytree(source_wh, wh)
    config = harness.config_file(work, "lakescout", f"[refresh]\nsmall_plan_tables = {args.small_plan_tables}\n")
    proc, _ = _airflow(work, lake.root, wh, config, server.env if server else None)
    rows = []
    try:
        time.sleep(30)                       # the watcher's first checks, a first scheduled run if one is due
        _until(lambda: _lease_free(wh), 600, 2)
        for i in range(args.landings):
            path = f"landed/towns_{i:02d}.csv"
            landed = time.time()
            lake.write(path, TOWNS.replace("Town ", f"Town{i} "))
            seconds = _until(lambda path=path: _answerable(wh, path), 600)
            rows.append({"change": f"csv {path}", "seconds": seconds, "landed": landed})
            print(f"  {path}: answerable after {seconds} s", flush=True)
            _until(lambda: _lease_free(wh), 600, 1)
        for _ in range(args.delta_versions):
            before = _delta_version(wh, delta)
            version = lake.append(delta)
            landed = time.time()
            seconds = _until(lambda before=before: _delta_version(wh, delta) not in (None, before), 600)
            rows.append({"change": f"delta {delta} version {version}", "seconds": seconds, "landed": landed})
            print(f"  {rows[-1]['change']}: in the snapshot after {seconds} s", flush=True)
            _until(lambda: _lease_free(wh), 600, 1)
    finally:
        os.killpg(proc.pid, signal.SIGTERM)
        try:
            proc.wait(60)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
        if server is not None:
            server.stop()
    csv_s = [r["seconds"] for r in rows if r["change"].startswith("csv") and r["seconds"] is not None]
    delta_s = [r["seconds"] for r in rows if r["change"].startswith("delta") and r["seconds"] is not None]
    out = {"small_plan_tables": args.small_plan_tables, "lake": "s3" if args.s3 else "local", "rows": rows,
           "csv_median_s": statistics.median(csv_s) if csv_s else None,
           "csv_max_s": max(csv_s) if csv_s else None, "csv_missed": len([r for r in rows if r["seconds"] is None]),
           "delta_median_s": statistics.median(delta_s) if delta_s else None}
    print_table(rows, ["change", "seconds"])
    print(f"median CSV landing -> answerable {out['csv_median_s']} s; Delta version -> indexed "
          f"{out['delta_median_s']} s")
    return out


def _lease_free(wh: str) -> bool:
    from discovery.data.store.lease import holder

    return holder(wh) is None


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--watch", action="store_true")
    ap.add_argument("--landing", action="store_true")
    ap.add_argument("--tables", type=int, default=1000)
    ap.add_argument("--checks", type=int, default=20)
    ap.add_argument("--landings", type=int, default=10)
    ap.add_argument("--delta-versions", type=int, default=3)
    ap.add_argument("--small-plan-tables", type=int, default=20,
                    help="landing: [refresh] small_plan_tables of the Airflow run (0: every stage its own application)")
    ap.add_argument("--s3", action="store_true", help="landing: the lake is a bucket on the S3 server")
    ap.add_argument("--workdir", default=None)
    args = ap.parse_args(argv)
    parts = [p for p in ("watch", "landing") if getattr(args, p)] or ["watch", "landing"]
    tmp = None
    if args.workdir is None:
        tmp = args.workdir = tempfile.mkdtemp(prefix="lakescout-bench-freshness-")
    out = {}
    try:
        if "watch" in parts:
            out["watch"] = watch_cost(args)
        if "landing" in parts:
            out[f"landing_small_plan_{args.small_plan_tables}" + ("_s3" if args.s3 else "")] = landing(args)
    finally:
        if tmp:
            shutil.rmtree(tmp, ignore_errors=True)
    kept = ("watch", "landing_small_plan_0", "landing_small_plan_20", "landing_small_plan_20_s3")
    write_result("freshness", {**harness.previous_result("freshness", kept), **out})
    return 0


if __name__ == "__main__":
    sys.exit(main())
