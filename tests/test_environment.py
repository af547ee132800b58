"""The installed environment: full pyspark (not pyspark-client) with a working spark-submit, and the pinned stack."""
from __future__ import annotations

import importlib.metadata as md
import os
import subprocess
import sys
import textwrap

BIN = os.path.dirname(sys.executable)


def test_full_pyspark_not_pyspark_client():
    names = {d.metadata["Name"].lower() for d in md.distributions()}
    assert "pyspark" in names and "pyspark-client" not in names
    assert md.version("pyspark").startswith("4.0.")
    assert md.version("delta-spark").startswith(md.version("pyspark").rsplit(".", 1)[0])
    assert md.version("apache-airflow-providers-apache-spark").startswith("5.")
    assert md.version("torch").startswith("2.13.0")
    import pyspark

    # pyspark-client ships no jars; a full pyspark has the JVM side spark-submit needs.
    assert os.path.isdir(os.path.join(os.path.dirname(pyspark.__file__), "jars"))


def test_spark_submit_runs_a_python_job_with_map_in_arrow(tmp_path):
    job = tmp_path / "job.py"
    job.write_text(textwrap.dedent("""
        import pyarrow as pa
        from pyspark.sql import SparkSession
        spark = SparkSession.builder.appName("env-check").getOrCreate()
        def double(batches):
            for b in batches:
                yield pa.RecordBatch.from_pydict({"x": pa.compute.multiply(b.column(0), 2)})
        total = spark.range(100).mapInArrow(double, "x long").groupBy().sum("x").collect()[0][0]
        print("RESULT", total)
        spark.stop()
    """))
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    proc = subprocess.run([os.path.join(BIN, "spark-submit"), "--master", "local[2]", str(job)],
                          capture_output=True, text=True, env=env, timeout=300)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "RESULT 9900" in proc.stdout
