"""The Python workers and driver JVM of Lakescout's Spark applications: the worker daemon (``spark_jobs.worker``)
takes Spark's archives off the workers' path and preloads the stage helpers; sessions get the defaults they need."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pyarrow as pa
import pytest

from discovery.surfaces.submit import COMPILER, driver_java_options, environment, spark_submit, submit_env
from spark_jobs.archives import spark_archives


@pytest.mark.spark
def test_workers_import_pyspark_installed_with_the_stage_helpers_preloaded(spark):
    def view(batches):  # defined here, so that it travels by value (no test module in the workers)
        import gc

        import pyspark
        import pyspark.daemon

        for batch in batches:
            yield pa.RecordBatch.from_pylist([{"payload": json.dumps({
                "path": sys.path, "pyspark": pyspark.__file__,
                "preloaded": {"spark_jobs.common", "spark_jobs.fanout"} <= set(sys.modules),
                "frozen": gc.get_freeze_count() > 0, "collector": getattr(pyspark.daemon.gc, "__name__", "gc"),
            })} for _ in batch.column(0).to_pylist()])

    rows = spark.range(0, 2, numPartitions=2).mapInArrow(view, "payload string").collect()
    seen = [json.loads(r["payload"]) for r in rows]
    for view in seen:
        assert spark_archives(view["path"]) == ([], [])
        assert ".zip" not in view["pyspark"] and view["pyspark"].startswith(sys.prefix)
        assert view["preloaded"] and view["frozen"] and view["collector"] == "YoungCollection"
    conf = spark.sparkContext.getConf()
    assert conf.get("spark.python.daemon.module") == "spark_jobs.worker"
    assert conf.get("spark.ui.enabled") == "false" and conf.get("spark.driver.host") == "127.0.0.1"


def test_a_submitted_driver_imports_pyspark_installed(tmp_path):
    """spark-submit puts Spark's ``pyspark.zip`` first on its driver's path; importing ``spark_jobs`` takes it off, so
    an application's driver imports PySpark from the installed package (compiled once) instead of from the zip."""
    app = ("import json, sys\nbefore = list(sys.path)\nimport spark_jobs\nimport pyspark\n"
           "print('SEEN ' + json.dumps({'before': before, 'after': sys.path, 'pyspark': pyspark.__file__}))\n")
    (tmp_path / "app.py").write_text(app)
    proc = subprocess.run([spark_submit(), "--master", "local[1]", str(tmp_path / "app.py")], env=environment(),
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    seen = json.loads(next(line for line in proc.stdout.splitlines() if line.startswith("SEEN "))[len("SEEN "):])
    assert spark_archives(seen["before"])[1]  # spark-submit put the zips there
    assert spark_archives(seen["after"]) == ([], [])
    assert ".zip" not in seen["pyspark"] and seen["pyspark"].startswith(sys.prefix)


def test_spark_archives_are_the_bundled_zips_and_spark_jars():
    path = ["/work", "/spark/python/lib/pyspark.zip", "/spark/python/lib/py4j-0.10.9.9-src.zip",
            "/spark/jars/spark-core_2.13-4.0.1.jar", "/other/lib.zip", "/site-packages"]
    assert spark_archives(path) == (["/spark/jars/spark-core_2.13-4.0.1.jar"],
                                    ["/spark/python/lib/pyspark.zip", "/spark/python/lib/py4j-0.10.9.9-src.zip"])


def test_driver_options_lead_and_the_submitters_win(tmp_path):
    archive = tmp_path / "classes.jsa"
    assert driver_java_options(str(archive)) == COMPILER  # no archive: nothing to map
    archive.write_bytes(b"x")
    assert f"-XX:SharedArchiveFile={archive}" in driver_java_options(str(archive))
    env = submit_env({"SPARK_SUBMIT_OPTS": "-Xmx2g"})
    assert env["SPARK_SUBMIT_OPTS"].startswith(COMPILER) and env["SPARK_SUBMIT_OPTS"].endswith(" -Xmx2g")
    assert submit_env(env) == env  # applied once, however often a task process asks
    assert env["SPARK_LAUNCHER_OPTS"] == COMPILER  # spark-submit's command-line builder: C1 only
    assert submit_env({"SPARK_LAUNCHER_OPTS": "-Xmx64m"})["SPARK_LAUNCHER_OPTS"] == "-Xmx64m"
    assert "SPARK_SUBMIT_OPTS" not in os.environ or COMPILER not in os.environ["SPARK_SUBMIT_OPTS"]
