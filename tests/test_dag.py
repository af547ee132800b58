"""The real lake_refresh DAG, run by Airflow (`airflow dags test`, SQLite metadata DB) with SparkSubmitOperator, and
the OpenLineage events it emits through Airflow's provider (file transport) when one is configured."""
from __future__ import annotations

import importlib.metadata
import json
import os
import re
import subprocess
import sys
import tomllib

import pyarrow.compute as pc
import pytest

from airflow_env import airflow_env, datasets, lineage_events, openlineage_env

from discovery.data.store import Warehouse, load_snapshot
from soak_run import catalog_rows
from spark_jobs.refresh import refresh
from spark_jobs.stages import STAGES

pytestmark = [pytest.mark.airflow, pytest.mark.slow]

BIN = os.path.dirname(sys.executable)
ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_dag_imports_without_errors(tmp_path):
    """Every DAG imports, and every DAG that opens the warehouse takes it and the ``aws_conn_id`` connection alike:
    the configured warehouse, and no connection (the workers' own ``AWS_*``) unless a run names one."""
    env = airflow_env(str(tmp_path / "airflow"), str(tmp_path / "wh"), str(tmp_path / "lake"))
    code = ("import json; from airflow.models.dagbag import DagBag; b = DagBag(include_examples=False); "
            "assert not b.import_errors, b.import_errors; "
            "print(json.dumps({i: d.params.dump() for i, d in b.dags.items()}, default=str))")
    proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    params = json.loads(proc.stdout.splitlines()[-1])
    assert {"lake_refresh", "lakescout_maintenance", "materialize", "query_batch", "standing_queries"} <= set(params)
    for dag_id, given in params.items():
        assert (given["warehouse"], given["aws_conn_id"]) == (str(tmp_path / "wh"), ""), dag_id
    assert set(params["lakescout_maintenance"]) == {"warehouse", "aws_conn_id", "keep_snapshots"}


WATCHED = ("import json; from airflow.models.dagbag import DagBag; "
           "from airflow.serialization.serialized_objects import SerializedDAG; "
           "d = DagBag(include_examples=False).dags['lake_refresh']; SerializedDAG.to_dict(d); "
           "assets = [a for _, a in d.timetable.asset_condition.iter_assets()]; "
           "print(json.dumps({'summary': d.timetable.summary, 'assets': [a.name for a in assets], "
           "'watchers': [w.trigger.serialize() for a in assets for w in a.watchers]}))")


def test_lake_refresh_runs_on_its_time_table_or_when_the_lake_watcher_fires(tmp_path):
    """The schedule is the time table or the ``lakescout_lake`` asset, whose watcher polls the configured lake
    against the configured warehouse; the DAG serialises as the scheduler stores it; ``watch_seconds = 0`` leaves
    the asset without a watcher (an upstream DAG can still emit it)."""
    env = airflow_env(str(tmp_path / "airflow"), str(tmp_path / "wh"), str(tmp_path / "lake"))
    out = []
    for watch in ("", "[refresh]\nwatch_seconds = 0\n"):
        config = tmp_path / f"c{len(out)}.toml"
        config.write_text(open(env["LAKESCOUT_CONFIG"]).read() + watch)
        proc = subprocess.run([sys.executable, "-c", WATCHED], env={**env, "LAKESCOUT_CONFIG": str(config)},
                              capture_output=True, text=True, timeout=300)
        assert proc.returncode == 0, proc.stderr[-3000:]
        out.append(json.loads(proc.stdout.splitlines()[-1]))
    watched, unwatched = out
    assert watched["summary"] == "Asset or 0 0 * * *" and watched["assets"] == ["lakescout_lake"]
    (classpath, kwargs), = watched["watchers"]
    assert classpath == "discovery.orchestration.refresh.trigger.LakeWatchTrigger"
    assert kwargs == {"lake": str(tmp_path / "lake"), "warehouse": str(tmp_path / "wh"), "poll_seconds": 10.0,
                      "include": [], "exclude": []}
    assert unwatched["assets"] == ["lakescout_lake"] and unwatched["watchers"] == []


def test_maintenance_dag_reaches_a_bucket_with_the_keys_of_its_connection(tmp_path, s3_server):
    """A workers' environment without ``AWS_*``: maintenance of a warehouse in a bucket reaches it through the run's
    ``aws_conn_id`` connection (endpoint, keys, region), as the other DAGs do, and holds and releases its lease
    there."""
    from discovery.data.store.lease import current

    wh = s3_server.create_bucket("maintained") + "/wh"
    Warehouse(wh).ensure()
    env = {k: v for k, v in airflow_env(str(tmp_path / "airflow"), wh).items() if not k.startswith("AWS_")}
    env["AIRFLOW_CONN_LAKESCOUT_S3"] = json.dumps({
        "conn_type": "aws", "login": s3_server.env["AWS_ACCESS_KEY_ID"],
        "password": s3_server.env["AWS_SECRET_ACCESS_KEY"],
        "extra": {"endpoint_url": s3_server.endpoint, "region_name": s3_server.env["AWS_REGION"]}})
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    s3_server.requests(reset=True)
    proc = subprocess.run([airflow, "dags", "test", "lakescout_maintenance", "-c",
                           json.dumps({"aws_conn_id": "lakescout_s3"})], env=env, capture_output=True, text=True,
                          timeout=600)
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0 and 'maintenance: {"status": "ok"' in out, out[-4000:]
    assert s3_server.requests(bucket="maintained").get("PUT", 0) > 0
    lease = current(wh)
    assert (lease.purpose, lease.state) == ("maintenance", "released"), lease
    assert lease.run.startswith("lakescout_maintenance "), lease


def test_lake_refresh_dag_run_publishes_a_snapshot_and_its_lineage_and_a_small_change_in_one_application(
        tmp_path, small_lake, spark):
    home, wh = str(tmp_path / "airflow"), str(tmp_path / "wh")
    events = str(tmp_path / "openlineage.jsonl")
    env = openlineage_env(airflow_env(home, wh, small_lake), events)
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    proc = subprocess.run([airflow, "dags", "test", "lake_refresh"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    snap = load_snapshot(Warehouse(wh))
    assert snap.counts["tables_ok"] > 0 and snap.counts["tables_error"] > 0
    stages = {r["stage"] for r in Warehouse(wh).read("refresh_runs").to_pylist() if r["status"] == "ok"}
    assert {"scan", "profile", "publish"} <= stages
    # the publish task names the lake tables this refresh read (the ok ones: an error table was never indexed) and
    # every index table it wrote; the other tasks name none
    completed = lineage_events(events)
    publish = completed["lake_refresh.publish"]
    catalog = snap.read("catalog", filter=(pc.field("refresh_id") == snap.refresh_id))
    ok = catalog.filter(pc.equal(catalog["status"], "ok")).column("path").to_pylist()
    assert datasets(publish, "inputs") == {("file", os.path.join(small_lake, p)) for p in ok}
    assert datasets(publish, "outputs") == {("file", f"{wh}/{name}") for name in [*snap.versions, "snapshots"]}
    first = next(d for d in publish["inputs"] if d["name"] == os.path.join(small_lake, sorted(ok)[0]))
    columns = snap.read("columns", filter=pc.field("table_id") == catalog.filter(
        pc.equal(catalog["path"], sorted(ok)[0]))["table_id"][0]).sort_by("ordinal").to_pylist()
    assert [(f["name"], f["type"]) for f in first["facets"]["schema"]["fields"]] == [
        (c["name"], c["type"]) for c in columns]
    for job in ("lake_refresh.begin", "lake_refresh.scan", "lake_refresh.release"):
        assert not datasets(completed[job], "inputs") | datasets(completed[job], "outputs"), job

    # a table lands: a small plan, so the scan task's application runs every stage and the later tasks start no Spark
    with open(os.path.join(small_lake, "landed_towns.csv"), "w") as fh:
        fh.write("town,population\nOslo,709000\nBergen,291000\nTrondheim,212000\nStavanger,144000\n")
    proc = subprocess.run([airflow, "dags", "test", "lake_refresh"], env=env, capture_output=True, text=True,
                          timeout=1200)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    second = load_snapshot(Warehouse(wh))
    assert second.snapshot_id > snap.snapshot_id
    runs = [r for r in Warehouse(wh).read("refresh_runs").to_pylist() if r["refresh_id"] == second.refresh_id]
    assert sorted(r["stage"] for r in runs if r["status"] == "ok") == sorted([*STAGES, "publish"])
    assert next(r for r in runs if r["stage"] == "scan")["tables_added"] == 1
    for r in runs:   # the plan says which path each stage took, and why
        said = "run in the scan task's application: a small plan (1 of at most 20 tables added, changed or deleted"
        assert (said in (r["message"] or "")) == (r["stage"] in STAGES and r["stage"] != "scan"), r
    output = proc.stdout + proc.stderr
    assert output.count("is done already (a small plan runs it in the scan task's application)") == len(STAGES) - 1
    # what it indexed is what a fresh full build of the lake as it is now indexes (the catalog: no trained model in it)
    fresh = str(tmp_path / "fresh")
    assert refresh(spark, fresh, small_lake)["published"]
    assert catalog_rows(wh, set()) == catalog_rows(fresh, set())


def test_lineage_is_an_optional_extra_off_unless_configured(tmp_path):
    """The provider pinned in the ``lineage`` extra is the one requirements-lineage.txt installs, and it emits
    nothing until a transport is configured."""
    with open(os.path.join(ROOT, "pyproject.toml"), "rb") as fh:
        extra = tomllib.load(fh)["project"]["optional-dependencies"]["lineage"]
    with open(os.path.join(ROOT, "requirements-lineage.txt"), encoding="utf-8") as fh:
        pinned = {n.lower(): v for n, v in re.findall(r"^([\w.-]+)==(\S+)$", fh.read(), re.M)}
    name, version = extra[0].split("==")
    assert pinned[name] == version == importlib.metadata.version(name)
    code = "from airflow.providers.openlineage.conf import is_disabled; print(is_disabled())"
    base = airflow_env(str(tmp_path / "airflow"), str(tmp_path / "wh"))
    for env, disabled in ((base, "True"), (openlineage_env(base, str(tmp_path / "events.jsonl")), "False")):
        env = {k: v for k, v in env.items() if not k.startswith(("OPENLINEAGE", "AIRFLOW__OPENLINEAGE__"))
               or k == "AIRFLOW__OPENLINEAGE__TRANSPORT" and disabled == "False"}
        proc = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=300)
        assert proc.stdout.strip().splitlines()[-1] == disabled, proc.stderr[-2000:]
