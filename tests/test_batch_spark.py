"""Query batches on Spark (``spark_jobs.query_batch``) record exactly the rows of the in-process run.

The sample lake's index (``indexed_lake``) is copied, so batches of union, semantic-join and n-ary queries can be
recorded without touching the session's warehouse; each batch runs once in process and once on the session's
local Spark, and their ``query_results`` rows must be equal but for the batch id.  A batch with a failing query
fails the same way on both paths and records nothing.
"""
from __future__ import annotations

import json
import os
import pickle
import shutil
import subprocess
import sys

import pyarrow.compute as pc
import pytest

from discovery.config import Config
from discovery.data.store import Warehouse
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.surfaces.batch import BatchError, batch_results, parse_spec, recorded_batch, run_batch
from discovery.surfaces.batch_share import BatchShare
from spark_jobs.query_batch import run_batch_spark
from sessions import session

pytestmark = [pytest.mark.spark]

BIN = os.path.dirname(sys.executable)


@pytest.fixture(scope="module")
def batch_env(indexed_lake, tmp_path_factory):
    lake, warehouse = indexed_lake
    root = tmp_path_factory.mktemp("spark-batch")
    wh = str(root / "wh")
    shutil.copytree(warehouse, wh)
    gt = load_ground_truth(lake)
    union = sorted({r["query_table"] for r in gt["union"]})[:6]
    join = gt["join"][0]
    nary = gt["nary"][0]
    numeric = gt["numeric"][0]
    outside = root / "mine.csv"          # a file of the driver's machine, outside the lake
    shutil.copy2(os.path.join(lake, union[0]), outside)
    queries = [{"id": f"u{i}", "kind": "union", "query": q, "k": 4} for i, q in enumerate(union)]
    queries.append({"id": "u-exact", "kind": "union", "query": union[1], "k": 3, "method": "exact"})
    queries.append({"id": "u-file", "kind": "union", "query": str(outside), "k": 4})
    queries.append({"id": "j", "kind": "join", "query": join["query_table"], "column": join["query_column"]})
    # a numerical join with no tau: each path takes the default of the numerical join, not the semantic join's
    queries.append({"id": "jn", "kind": "join", "query": numeric["query_table"],
                    "column": ",".join(numeric["query_columns"])})
    queries.append({"id": "n", "kind": "nary", "query": nary["query_table"], "key": list(nary["query_columns"]),
                    "k": 4})
    return {"lake": lake, "warehouse": wh, "queries": queries, "union": union}


def _rows(wh: str, batch_id: str) -> list[dict]:
    return [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}
            for r in batch_results(Warehouse(wh), batch_id).to_pylist()]


def test_a_batch_on_spark_records_the_rows_of_the_in_process_run(batch_env, spark):
    wh, spec = batch_env["warehouse"], {"name": "mixed", "queries": batch_env["queries"]}
    mine = run_batch(session(wh), spec, batch_id="in-process")
    version = Warehouse(wh).version("query_results")
    theirs = run_batch_spark(spark, session(wh), spec, batch_id="on-spark")
    assert Warehouse(wh).version("query_results") == version + 1       # one commit for the whole batch
    assert theirs["spark_tasks"] >= 2 and "spark_tasks" not in mine
    expected = _rows(wh, "in-process")
    assert {r["query_id"] for r in expected} == {q["id"] for q in batch_env["queries"]}
    assert _rows(wh, "on-spark") == expected
    results = batch_results(Warehouse(wh), "on-spark")
    assert len(set(results.column("created_at").to_pylist())) == 1
    strip = lambda s: [{k: v for k, v in q.items() if k != "stats"} for q in s["queries"]]  # noqa: E731
    assert strip(theirs) == strip(mine) and theirs["results"] == mine["results"]
    # the same batch id again: the recorded summary, nothing run or committed
    assert run_batch_spark(spark, session(wh), spec, batch_id="on-spark") == recorded_batch(Warehouse(wh), "on-spark")
    assert Warehouse(wh).version("query_results") == version + 1


@pytest.mark.parametrize("bad, reason", [
    ({"kind": "union", "query": "no/such/table.csv"}, "field 'query'"),
    ({"kind": "nary", "query": None, "key": ["no_such_column"]}, "field 'key'"),
    ({"kind": "union", "query": 999999}, "no lake table with id 999999"),
])
def test_a_failing_query_fails_both_paths_alike_and_records_nothing(batch_env, spark, bad, reason):
    wh = batch_env["warehouse"]
    queries = [dict(q) for q in batch_env["queries"][:4]]
    bad = dict(bad, id="bad")
    if bad["query"] is None:
        bad["query"] = batch_env["union"][2]
    queries.insert(2, bad)
    before = (Warehouse(wh).version("query_results"), Warehouse(wh).version("query_batches"))
    with pytest.raises(BatchError) as here:
        run_batch(session(wh), queries, batch_id="fails-here")
    with pytest.raises(BatchError) as there:
        run_batch_spark(spark, session(wh), queries, batch_id="fails-there")
    assert str(there.value) == str(here.value)
    assert str(here.value).startswith("query 2 (id 'bad')") and reason in str(here.value)
    assert (Warehouse(wh).version("query_results"), Warehouse(wh).version("query_batches")) == before


def test_a_share_brings_the_drivers_storage_settings_to_the_task(monkeypatch):
    """As the refresh's StageContext: unpickled in a task, the share puts the driver's ``AWS_*`` into the task's
    environment before anything opens the warehouse."""
    batch = parse_spec([{"kind": "union", "query": 1}])
    share = BatchShare("s3://bucket/wh", 1, "b", None, batch.queries, Config(),
                       storage_env={"AWS_ENDPOINT_URL": "http://127.0.0.1:1", "AWS_REGION": "test-1"})
    data = pickle.dumps(share)
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    monkeypatch.setenv("AWS_REGION", "elsewhere")
    assert pickle.loads(data) == share
    assert os.environ["AWS_ENDPOINT_URL"] == "http://127.0.0.1:1" and os.environ["AWS_REGION"] == "test-1"


@pytest.mark.slow
def test_batch_command_with_a_master_runs_large_batches_on_spark(batch_env, tmp_path):
    """``lakescout batch --master``: a batch of at least ``[batch] spark_min_queries`` queries goes to a spark-submit
    application, a smaller one stays in process; both record what the in-process run records."""
    wh = batch_env["warehouse"]
    config = tmp_path / "lakescout.toml"
    config.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read() + "\n[batch]\nspark_min_queries = 3\n")
    env = dict(os.environ, PATH=BIN + os.pathsep + os.environ.get("PATH", ""), PYSPARK_PYTHON=sys.executable,
               LAKESCOUT_CONFIG=str(config))
    queries = [q for q in batch_env["queries"] if q["kind"] == "union"][:4]
    run_batch(session(wh), queries, batch_id="cli-reference")
    for name, qs in (("cli-spark", queries), ("cli-small", queries[:2])):
        spec = tmp_path / f"{name}.json"
        spec.write_text(json.dumps({"queries": qs}))
        proc = subprocess.run([os.path.join(BIN, "lakescout"), "batch", "--warehouse", wh, "--spec", str(spec),
                               "--batch-id", name, "--master", "local[2]", "--json"],
                              capture_output=True, text=True, env=env, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        summary = json.loads(proc.stdout)
        assert ("spark_tasks" in summary) == (name == "cli-spark")
        ids = [q["id"] for q in qs]
        reference = [r for r in _rows(wh, "cli-reference") if r["query_id"] in ids]
        assert _rows(wh, name) == reference
    spec = tmp_path / "bad.json"
    spec.write_text(json.dumps({"queries": [*queries, {"kind": "union", "query": "missing.csv"}]}))
    bad = subprocess.run([os.path.join(BIN, "lakescout"), "batch", "--warehouse", wh, "--spec", str(spec),
                          "--master", "local[2]"], capture_output=True, text=True, env=env, timeout=600)
    assert bad.returncode == 2 and "query 4" in bad.stderr and "Traceback" not in bad.stderr, bad.stderr[-3000:]
    results = Warehouse(wh).read("query_results", columns=["batch_id"])
    assert pc.sum(pc.starts_with(results["batch_id"], "batch-")).as_py() in (None, 0)


def test_a_numerical_join_on_spark_answers_with_the_drivers_configuration(batch_env, spark, tmp_path):
    """The executors' files (``$LAKESCOUT_CONFIG``) say the defaults; the driver's session a wider tau (the query
    joins coordinates: ``tau_metres``): the Spark batch answers as the driver does in process, not as the executors'
    files would."""
    from discovery.config import load_config
    from discovery.data.store import Session

    wh = batch_env["warehouse"]
    query = next(q for q in batch_env["queries"] if q["id"] == "jn")
    run_batch(session(wh), [query], batch_id="numeric-default")
    driver = tmp_path / "driver.toml"
    driver.write_text(open(os.environ["LAKESCOUT_CONFIG"]).read() + "\n[numjoin]\ntau_metres = 1000.0\n")
    drivers = Session.at(wh, load_config(str(driver)))
    here = run_batch(drivers, [query], batch_id="numeric-here")
    there = run_batch_spark(spark, drivers, [query], batch_id="numeric-there")
    assert _rows(wh, "numeric-there") == _rows(wh, "numeric-here")
    assert _rows(wh, "numeric-here") != _rows(wh, "numeric-default")  # the configuration changes the answer
    assert there["results"] == here["results"]
