"""The sample lake indexed on a real Spark standalone cluster equals the local[*] build, row for row.

``scripts/spark_cluster.py`` (what ``make cluster-up`` runs) starts Spark's own master and two one-core workers, each
its own JVM, on 127.0.0.1; executors run this venv's Python in their workers' folders.  The whole refresh goes
through ``lakescout refresh --master spark://...`` (one spark-submit application) and through the ``lake_refresh``
DAG with ``spark_default`` pointing at the master (one application per stage).  Each build must hold the same rows as
the session's local build (``indexed_lake``) in every index table, apart from when it ran, answer the same queries,
and must have run its tasks on both workers.  The CLI run is also the test of the progress a non-terminal sees.
"""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from airflow_env import airflow_env

import discovery
from discovery.data.store import INDEX_TABLES, Warehouse, load_snapshot
from discovery.stages.progress import PREFIX, Progress, read_progress
from spark_jobs.stages import STAGES
from sessions import session

pytestmark = [pytest.mark.spark, pytest.mark.slow]

ROOT = Path(__file__).resolve().parent.parent
SCRIPT = ROOT / "scripts" / "spark_cluster.py"
BIN = os.path.dirname(sys.executable)
#: Columns that record when a row was written, not what the index holds.
WHEN = {"refresh_id", "indexed_at", "created_at"}
#: The XASH model's version names the refresh that fitted it (``-r<refresh id>``), so a refit is always a new row.
REFRESH_SUFFIX = re.compile(r"-r\d+$")
QUERIES = [("union", ("finance/registers/firms.tsv",), {"k": 5}),
           ("join", ("partners/vendor_master.csv", "Vendor"), {"top_k": 5}),
           ("nary", ("retail/stores/store_locations_q1.csv", ["country", "city"]), {"k": 5})]


def _script(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, str(SCRIPT), *args], capture_output=True, text=True)


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A running master and two one-core workers (free ports), stopped with everything they spawned afterwards."""
    folder = tmp_path_factory.mktemp("spark-cluster")
    up = _script("up", "--dir", str(folder), "--port", "0", "--webui-port", "0", "--json")
    assert up.returncode == 0, up.stderr[-3000:]
    state = json.loads(up.stdout)
    yield state
    down = _script("down", "--dir", str(folder))
    assert down.returncode == 0 and "stopped 3 Spark daemon(s)" in down.stdout, down.stdout + down.stderr
    assert not any(_running(pid) for pid in state["pids"])


def _running(pid: int) -> bool:
    """True while ``pid`` runs (a stopped daemon may stay a zombie until init reaps it)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] not in "ZX"
    except OSError:
        return False


def _master(cluster) -> dict:
    with urllib.request.urlopen(cluster["webui"] + "/json/") as resp:
        return json.load(resp)


def _workers_that_ran(cluster, app_name: str) -> set[str]:
    """Worker folders in which an executor of the application ``app_name`` ran at least one task, once no such
    application is running: the CLI returns at an application's answer, and its teardown ends it a moment later."""
    deadline = time.monotonic() + 120
    while any(a["name"] == app_name for a in _master(cluster)["activeapps"]) and time.monotonic() < deadline:
        time.sleep(0.5)
    apps = [a["id"] for a in _master(cluster)["completedapps"] if a["name"] == app_name]
    busy = set()
    for app in apps:
        for log in Path(cluster["folder"]).glob(f"worker-*/{app}/*/stderr"):
            if "Running task" in log.read_text(errors="replace"):
                busy.add(log.parts[-4])
    return busy


def _index(warehouse: str) -> dict[str, list[str]]:
    """Every index table of the latest snapshot as sorted row texts, without the columns that say when it ran."""
    snap = load_snapshot(Warehouse(warehouse))
    out = {}
    for name in INDEX_TABLES:
        rows = []
        for row in snap.read(name).to_pylist():
            row = {k: v for k, v in row.items() if k not in WHEN}
            for key in ("model_version", "version"):
                if isinstance(row.get(key), str):
                    row[key] = REFRESH_SUFFIX.sub("", row[key])
            if name == "models":  # params record the training's wall-clock seconds and probed pace per step
                row["params"] = {k: v for k, v in json.loads(row["params"]).items()
                                 if k not in ("seconds", "step_seconds")}
            rows.append(repr(sorted(row.items())))
        out[name] = sorted(rows)
    return out


def _answers(warehouse: str) -> list[list[dict]]:
    ls = discovery.open(warehouse)
    return [getattr(ls, kind)(*args, **params)["results"] for kind, args, params in QUERIES]


def _assert_same_index(warehouse: str, reference: str) -> None:
    got, want = _index(warehouse), _index(reference)
    for name in INDEX_TABLES:
        assert len(got[name]) == len(want[name]), name
        assert got[name] == want[name], f"{name} differs from the local build"
    assert load_snapshot(Warehouse(warehouse)).counts == load_snapshot(Warehouse(reference)).counts
    answers = _answers(warehouse)
    assert all(answers), answers
    assert answers == _answers(reference)


def test_cluster_is_a_master_and_two_one_core_workers_in_their_own_jvms(cluster):
    status = _master(cluster)
    assert status["status"] == "ALIVE" and status["url"] == cluster["master"]
    assert [w["cores"] for w in status["workers"] if w["state"] == "ALIVE"] == [1, 1]
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0") for pid in set(cluster["pids"])]
    assert sum(b"org.apache.spark.deploy.master.Master" in c for c in commands) == 1
    assert sum(b"org.apache.spark.deploy.worker.Worker" in c for c in commands) == 2


def test_cli_batch_on_the_cluster_records_the_in_process_rows(cluster, indexed_lake, tmp_path):
    """``lakescout batch --master spark://...``: a batch past ``[batch] spark_min_queries`` is answered by tasks on
    both workers, whose Python workers each open the snapshot, and records the rows of the in-process run."""
    import shutil

    import pyarrow.compute as pc

    from discovery.surfaces.batch import batch_results, run_batch

    lake, reference = indexed_lake
    warehouse = str(tmp_path / "wh")
    shutil.copytree(reference, warehouse)
    catalog = load_snapshot(Warehouse(warehouse)).read("catalog", columns=["table_id", "status"])
    ids = sorted(catalog.filter(pc.equal(catalog["status"], "ok")).column("table_id").to_pylist())
    queries = [{"id": f"u{i}", "kind": "union", "query": ids[i * 7 % len(ids)], "k": 5} for i in range(64)]
    for kind, args, params in QUERIES:
        named = {"union": {}, "join": {"column": args[-1]}, "nary": {"key": args[-1]}}[kind]
        queries.append({"id": kind, "kind": kind, "query": args[0], **named, **params})
    spec = tmp_path / "batch.json"
    spec.write_text(json.dumps({"queries": queries}))
    config = tmp_path / "lakescout.toml"
    config.write_text(Path(os.environ["LAKESCOUT_CONFIG"]).read_text() + "\n[batch]\nspark_min_queries = 8\n")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), LAKESCOUT_CONFIG=str(config))
    proc = subprocess.run([os.path.join(BIN, "lakescout"), "batch", "--warehouse", warehouse, "--spec", str(spec),
                           "--batch-id", "on-cluster", "--master", cluster["master"], "--json"],
                          capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert json.loads(proc.stdout)["spark_tasks"] >= 2
    assert _workers_that_ran(cluster, "lakescout-query-batch") == {"worker-1", "worker-2"}
    run_batch(session(warehouse), queries, batch_id="in-process")
    strip = lambda t: [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}  # noqa: E731
                       for r in t.to_pylist()]
    rows = strip(batch_results(Warehouse(warehouse), "on-cluster"))
    answered = {r["query_id"] for r in rows}          # a lake table with no unionable table has no result rows
    assert {"union", "join", "nary"} <= answered and len(answered) > len(queries) // 2
    assert rows == strip(batch_results(Warehouse(warehouse), "in-process"))


def test_cli_refresh_on_the_cluster_equals_the_local_build(cluster, indexed_lake, tmp_path):
    lake, reference = indexed_lake
    warehouse = str(tmp_path / "wh")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""))
    proc = subprocess.run([os.path.join(BIN, "lakescout"), "refresh", "--lake", lake, "--warehouse", warehouse,
                           "--master", cluster["master"]], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
    assert _workers_that_ran(cluster, "lakescout-refresh") == {"worker-1", "worker-2"}
    _assert_same_index(warehouse, reference)

    # Not a terminal: plain progress lines, each stage's ending with every task it ran, before its summary line.
    lines = proc.stdout.splitlines()
    assert not any(PREFIX.strip() in line for line in lines)
    for stage in STAGES:
        counts = [tuple(map(int, m.groups())) for m in
                  (re.match(rf"  {stage} +(\d+)/(\d+) +tasks", line) for line in lines) if m]
        summary = next(i for i, line in enumerate(lines) if re.match(rf"  {stage} +ok ", line))
        last_progress = max(i for i, line in enumerate(lines) if re.match(rf"  {stage} +\d+/", line))
        assert counts[0] == (0, 0) and counts[-1][0] == counts[-1][1] > 0 and last_progress < summary, stage
    record = read_progress(warehouse)
    assert record.state == "published" and record.stage == "publish" and record.step == record.steps


@pytest.mark.airflow
def test_lake_refresh_dag_on_the_cluster_equals_the_local_build(cluster, indexed_lake, tmp_path):
    lake, reference = indexed_lake
    home, warehouse = str(tmp_path / "airflow"), str(tmp_path / "wh")
    env = airflow_env(home, warehouse, lake)
    env["AIRFLOW_CONN_SPARK_DEFAULT"] = json.dumps({"conn_type": "spark", "host": cluster["master"]})
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True)
    proc = subprocess.run([airflow, "dags", "test", "lake_refresh"], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    ran = {stage: _workers_that_ran(cluster, f"lakescout-{stage}") for stage in STAGES}
    assert all(ran.values()), ran    # every stage's tasks ran on the cluster's executors, none on the driver
    assert set().union(*ran.values()) == {"worker-1", "worker-2"}
    _assert_same_index(warehouse, reference)
    # The task logs show every stage's progress lines, down to its final count.
    log = (proc.stdout + proc.stderr).splitlines()
    reported = [Progress.parse(line) for line in log if PREFIX in line]
    assert {p.stage for p in reported if p.state == "done" and p.done == p.total > 0} == set(STAGES)


def test_cli_writes_on_the_cluster_what_it_writes_in_process(cluster, indexed_lake, tmp_path):
    """``lakescout stack`` and ``augment`` with ``--master spark://...`` (lake tables above ``[materialize]
    spark_min_bytes``, here 0) read the lake tables on the cluster's executors and write the files the in-process
    engine writes; the text join's values are paired there too (the two-table matcher on Spark), into the same
    rows."""
    import pyarrow.parquet as pq

    lake, warehouse = indexed_lake
    config = tmp_path / "lakescout.toml"
    config.write_text(Path(os.environ["LAKESCOUT_CONFIG"]).read_text() + "\n[materialize]\nspark_min_bytes = 0\n")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), LAKESCOUT_CONFIG=str(config))
    commands = {"stack": ["--query", "finance/registers/firms.tsv", "-k", "5", "--dedupe"],
                "augment": ["--query", "partners/vendor_master.csv", "--column", "Vendor", "--fan-out", "all"]}
    ls = discovery.open(warehouse)
    for verb, args in commands.items():
        out = str(tmp_path / f"{verb}.parquet")
        proc = subprocess.run([os.path.join(BIN, "lakescout"), verb, "--warehouse", warehouse, *args, "--output", out,
                               "--master", cluster["master"], "--json"], capture_output=True, text=True, env=env)
        assert proc.returncode == 0, proc.stdout[-2000:] + proc.stderr[-3000:]
        assert json.loads(proc.stdout)["engine"] == "spark"
        local = (ls.stack("finance/registers/firms.tsv", k=5, dedupe=True) if verb == "stack"
                 else ls.augment("partners/vendor_master.csv", "Vendor", fan_out="all"))
        assert pq.read_table(out).replace_schema_metadata(None).equals(local.replace_schema_metadata(None))
    assert _workers_that_ran(cluster, "lakescout-materialize")
    assert _workers_that_ran(cluster, "lakescout-match")
