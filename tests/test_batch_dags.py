"""The query_batch, standing_queries and lakescout_maintenance DAGs run by Airflow (`airflow dags test`, SQLite)."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from airflow_env import airflow_env, datasets, lineage_events, openlineage_env
from discovery.api import Lakescout
from discovery.data.store import Warehouse, list_snapshots
from discovery.surfaces.standing import save_standing, standing_changes
from sessions import session

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

BIN = os.path.dirname(sys.executable)
AIRFLOW = os.path.join(BIN, "airflow")


@pytest.fixture(scope="module")
def env(spark, demo_lake, tmp_path_factory):
    from test_batch import nary_lake, refresh_for_nary

    root = tmp_path_factory.mktemp("dags")
    lake = nary_lake(demo_lake, str(root / "lake"))
    warehouse = str(root / "wh")
    refresh_for_nary(spark, warehouse, lake["lake"])
    proc_env = airflow_env(str(root / "airflow"), warehouse, lake["lake"], LAKESCOUT_OUTPUT_ROOT=str(root / "outputs"))
    subprocess.run([AIRFLOW, "db", "migrate"], env=proc_env, check=True, capture_output=True, timeout=600)
    return {**lake, "warehouse": warehouse, "env": proc_env}


def _dags_test(env: dict, dag_id: str, conf: dict | None = None) -> subprocess.CompletedProcess:
    cmd = [AIRFLOW, "dags", "test", dag_id]
    if conf is not None:
        cmd += ["-c", json.dumps(conf)]
    return subprocess.run(cmd, env=env["env"], capture_output=True, text=True, timeout=600)


def test_query_batch_dag_records_results_and_their_lineage(env, tmp_path):
    conf = {"name": "dag-batch", "queries": [
        {"id": "stores", "kind": "nary", "query": env["query"], "key": env["key"], "k": 4}]}
    events = str(tmp_path / "openlineage.jsonl")
    proc = _dags_test({**env, "env": openlineage_env(env["env"], events)}, "query_batch", conf)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    batches = Warehouse(env["warehouse"]).read("query_batches").to_pylist()
    mine = [b for b in batches if b["name"] == "dag-batch"]
    assert len(mine) == 1 and mine[0]["batch_id"].startswith("dag-") and mine[0]["results"] == 4
    results = Warehouse(env["warehouse"]).read("query_results").to_pylist()
    mine_rows = [r for r in results if r["batch_id"] == mine[0]["batch_id"]]
    assert sorted(r["rank"] for r in mine_rows) == [1, 2, 3, 4]
    # the run task names the lake tables the batch touched (its query and its results) and what it wrote
    run = lineage_events(events)["query_batch.run"]
    touched = {env["query"]} | {r["path"] for r in mine_rows}
    assert datasets(run, "inputs") == {("file", os.path.join(env["lake"], p)) for p in touched}
    written = ("query_results", "query_batches")
    assert datasets(run, "outputs") == {("file", f"{env['warehouse']}/{t}") for t in written}
    assert not datasets(lineage_events(events)["query_batch.validate"], "inputs")


def test_query_batch_dag_fails_on_a_bad_query_before_writing(env):
    before = Warehouse(env["warehouse"]).read("query_results").num_rows
    conf = {"queries": [{"kind": "nary", "query": env["query"], "key": ["country", "no_such_column"]}]}
    proc = _dags_test(env, "query_batch", conf)
    out = proc.stdout + proc.stderr
    assert "query 0 (id 'q1'): field 'key'" in out and "no_such_column" in out, out[-4000:]
    assert "failed" in out.lower()
    assert Warehouse(env["warehouse"]).read("query_results").num_rows == before


def test_query_batch_dag_runs_a_large_batch_on_spark(env, tmp_path):
    """With ``[batch] spark_min_queries`` reached, ``run`` answers on the master of ``spark_default`` (local[2]):
    the rows of the in-process run, one commit; a failing query fails the run naming it, and records nothing."""
    from discovery.surfaces.batch import batch_results, run_batch

    config = tmp_path / "lakescout.toml"
    config.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read() + "\n[batch]\nspark_min_queries = 3\n")
    spark_env = {**env, "env": {**env["env"], "LAKESCOUT_CONFIG": str(config)}}
    queries = [{"id": f"q{k}", "kind": "nary", "query": env["query"], "key": env["key"], "k": k} for k in (2, 3, 4)]
    queries.append({"id": "exhaustive", "kind": "nary", "query": env["query"], "key": env["key"], "k": 4,
                    "method": "exhaustive"})
    wh = Warehouse(env["warehouse"])
    version = wh.version("query_results")
    proc = _dags_test(spark_env, "query_batch", {"name": "dag-spark", "queries": queries})
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "batch runs on Spark master local[2]" in out, out[-4000:]
    assert wh.version("query_results") == version + 1
    mine = [b for b in wh.read("query_batches").to_pylist() if b["name"] == "dag-spark"]
    assert len(mine) == 1 and json.loads(mine[0]["summary"])["spark_tasks"] >= 1
    run_batch(session(env["warehouse"]), queries, batch_id="dag-spark-reference", served=True)
    strip = lambda t: [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}  # noqa: E731
                       for r in t.to_pylist()]
    assert strip(batch_results(Warehouse(env["warehouse"]), mine[0]["batch_id"])) == \
        strip(batch_results(Warehouse(env["warehouse"]), "dag-spark-reference"))

    before = (wh.version("query_results"), wh.version("query_batches"))
    bad = [*queries[:3], {"id": "bad", "kind": "nary", "query": env["query"], "key": ["country", "no_such_column"]}]
    proc = _dags_test(spark_env, "query_batch", {"queries": bad})
    out = proc.stdout + proc.stderr
    assert "query 3 (id 'bad'): field 'key'" in out and "no_such_column" in out, out[-4000:]
    assert "failed" in out.lower()
    assert (wh.version("query_results"), wh.version("query_batches")) == before


def test_standing_queries_dag_records_the_diff_then_maintenance_keeps_it_queryable(env):
    save_standing(session(env["warehouse"]), "stores",
                  [{"kind": "nary", "query": env["query"], "key": env["key"], "k": 6}])
    proc = _dags_test(env, "standing_queries")
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    changes = standing_changes(Warehouse(env["warehouse"]), "stores").to_pylist()
    assert len(changes) == 6 and {c["change"] for c in changes} == {"new"}

    snapshots = [s.snapshot_id for s in list_snapshots(Warehouse(env["warehouse"]))]
    proc = _dags_test(env, "lakescout_maintenance")
    out = proc.stdout + proc.stderr
    assert proc.returncode == 0, out[-4000:]
    assert "maintenance:" in out
    assert [s.snapshot_id for s in list_snapshots(Warehouse(env["warehouse"]))] == snapshots
    assert Lakescout(env["warehouse"]).nary(env["query"], env["key"], k=6)["results"]


def test_a_dag_run_pointed_outside_the_allowed_locations_fails_before_touching_it(env, tmp_path):
    """A trigger may name another warehouse only under LAKESCOUT_ALLOWED_ROOTS: the run fails naming the param, and
    the location is neither created nor written."""
    elsewhere = tmp_path / "elsewhere"
    conf = {"warehouse": str(elsewhere), "queries": [
        {"kind": "nary", "query": env["query"], "key": env["key"], "k": 4}]}
    proc = _dags_test(env, "query_batch", conf)
    out = proc.stdout + proc.stderr
    assert proc.returncode != 0 or "failed" in out.lower(), out[-4000:]
    assert "param 'warehouse': a run may use only the configured warehouse" in out, out[-4000:]
    assert not elsewhere.exists()


def test_materialize_dag_writes_a_recorded_answer_and_emits_its_asset(env, tmp_path):
    """A query_batch answer written by the materialize DAG (two join results added one after the other, counts and
    aggregates) is the table the API writes for the same results; the run emits ``lakescout_output`` naming it."""
    import sqlite3

    from deltalake import DeltaTable

    conf = {"name": "to-write", "queries": [{"id": "stores", "kind": "nary", "query": env["query"],
                                             "key": env["key"], "k": 3}]}
    assert _dags_test(env, "query_batch", conf).returncode == 0
    batch = next(b for b in Warehouse(env["warehouse"]).read("query_batches").to_pylist() if b["name"] == "to-write")
    from pathlib import Path

    outputs = Path(env["env"]["LAKESCOUT_OUTPUT_ROOT"])
    menv = env
    run = {"batch_id": batch["batch_id"], "query_id": "stores", "ranks": [1, 2], "output": "stores_joined",
           "fan_out": "aggregate"}
    proc = _dags_test(menv, "materialize", run)
    assert proc.returncode == 0, (proc.stdout + proc.stderr)[-4000:]
    written = DeltaTable(str(outputs / "stores_joined")).to_pyarrow_table()
    ls = Lakescout(env["warehouse"])
    ranked = ls.nary(env["query"], env["key"], k=2)["results"]
    once = ls.augment(env["query"], key=env["key"], table=ranked[0]["table_id"], fan_out="aggregate")
    twice = ls.augment(once, key=env["key"], table=ranked[1]["table_id"], fan_out="aggregate")
    assert written.column_names == twice.column_names and written.num_rows == twice.num_rows > 0
    assert written.to_pylist() == twice.replace_schema_metadata(None).to_pylist()
    db = sqlite3.connect(os.path.join(env["env"]["AIRFLOW_HOME"], "airflow.db"))
    extras = [json.loads(e) for (e,) in db.execute(
        "SELECT e.extra FROM asset_event e JOIN asset a ON a.id = e.asset_id WHERE a.name = 'lakescout_output'")]
    assert {"path": str(outputs / "stores_joined"), "rows": written.num_rows}.items() <= extras[-1].items()

    refused = _dags_test(menv, "materialize", {**run, "output": str(tmp_path / "elsewhere")})
    out = refused.stdout + refused.stderr
    assert refused.returncode != 0 and "param 'output'" in out, out[-3000:]
    assert not (tmp_path / "elsewhere").exists()


def test_materialize_dag_writes_on_spark_the_table_it_writes_in_the_task(env, fast_config, tmp_path):
    """With ``spark_conn_id`` and lake tables of at least ``[materialize] spark_min_bytes`` (0 here), the ``write``
    task runs the join as a Spark job on the connection's master (``local[2]``); the table is the one the task writes
    itself without a connection, row for row, and says which engine wrote it."""
    from pathlib import Path

    import pyarrow.parquet as pq

    from discovery.surfaces.materialize import METADATA_KEY

    conf = {"name": "to-join", "queries": [{"id": "stores", "kind": "nary", "query": env["query"],
                                            "key": env["key"], "k": 2}]}
    assert _dags_test(env, "query_batch", conf).returncode == 0
    batch = next(b for b in Warehouse(env["warehouse"]).read("query_batches").to_pylist() if b["name"] == "to-join")
    config = tmp_path / "lakescout.toml"
    config.write_text(Path(fast_config).read_text() + "\n[materialize]\nspark_min_bytes = 0\n")
    run = {"batch_id": batch["batch_id"], "query_id": "stores", "ranks": [1], "output": "joined_on_spark.parquet",
           "format": "parquet", "fan_out": "all", "spark_conn_id": "spark_default"}
    on_spark = _dags_test({**env, "env": {**env["env"], "LAKESCOUT_CONFIG": str(config)}}, "materialize", run)
    assert on_spark.returncode == 0, (on_spark.stdout + on_spark.stderr)[-4000:]
    in_task = _dags_test(env, "materialize", {**run, "output": "joined_in_task.parquet", "spark_conn_id": ""})
    assert in_task.returncode == 0, (in_task.stdout + in_task.stderr)[-4000:]
    outputs = Path(env["env"]["LAKESCOUT_OUTPUT_ROOT"])
    there, here = (pq.read_table(outputs / f"{name}.parquet") for name in ("joined_on_spark", "joined_in_task"))
    described = [json.loads(t.schema.metadata[METADATA_KEY]) for t in (there, here)]
    assert [d["engine"] for d in described] == ["spark", "local"] and described[0]["matched_rows"] > 0
    assert there.num_rows == described[0]["rows"] > 0
    assert there.replace_schema_metadata(None).equals(here.replace_schema_metadata(None))
