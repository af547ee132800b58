"""Shared fixtures: one SparkSession per test session, the sample lake generated once, small lakes on demand."""
from __future__ import annotations

import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.path.join(os.path.dirname(ROOT), "shared")


@pytest.fixture(scope="session")
def spark():
    """A real local SparkSession (two cores), shared by every test that needs Spark."""
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["LAKESCOUT_SPARK_MASTER"] = "local[2]"
    from spark_jobs.common import spark_session

    session = spark_session("lakescout-tests")
    session.sparkContext.setLogLevel("ERROR")
    yield session
    session.stop()


@pytest.fixture(scope="session")
def demo_lake(tmp_path_factory):
    """The deterministic sample lake (300 files, with ground truth), generated once per session."""
    from discovery.orchestration.demo_lake import generate_demo_lake

    path = tmp_path_factory.mktemp("demo") / "lake"
    generate_demo_lake(path, seed=7)
    return str(path)


@pytest.fixture
def small_lake(tmp_path, demo_lake):
    """A copy of part of the sample lake (every broken file plus a slice of the good ones) that tests may modify."""
    from discovery.orchestration.demo_lake import load_ground_truth
    from discovery.data.lake import list_lake

    gt = load_ground_truth(demo_lake)
    broken = {r["path"] for r in gt["broken"]}
    good = [f.path for f in list_lake(demo_lake) if f.path not in broken][::10]
    dest = tmp_path / "lake"
    for rel in sorted(broken) + good:
        target = dest / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), target)
    return str(dest)


#: Settings that keep encoder training to seconds in tests (the behaviour under test does not depend on quality).
FAST_CONFIG = """
[embed]
join_steps = 30
table_epochs = 2
train_tables = 64
"""


@pytest.fixture(scope="session", autouse=True)
def fast_config(tmp_path_factory) -> str:
    """The test configuration, also exported as ``LAKESCOUT_CONFIG`` so refreshes started in subprocesses (CLI,
    spark-submit, Airflow) use it; tests about configuration pass their own file."""
    path = tmp_path_factory.mktemp("config") / "lakescout.toml"
    path.write_text(FAST_CONFIG)
    os.environ["LAKESCOUT_CONFIG"] = str(path)
    return str(path)


@pytest.fixture(scope="session")
def indexed_lake(spark, demo_lake, fast_config, tmp_path_factory):
    """(lake, warehouse) of the whole sample lake indexed once by every refresh stage; tests must not modify it."""
    from spark_jobs.refresh import refresh

    warehouse = str(tmp_path_factory.mktemp("indexed") / "warehouse")
    out = refresh(spark, warehouse, demo_lake, config_path=fast_config)
    assert out.get("published"), out
    return demo_lake, warehouse


@pytest.fixture(scope="session")
def s3_server():
    """A real S3-compatible server (moto's) on 127.0.0.1 in a child process, with the ``AWS_*`` variables that point
    every client at it (s3fs, delta-rs, Spark workers and subprocesses inherit them) set for the whole session."""
    sys.path.insert(0, os.path.join(ROOT, "scripts"))
    from s3_server import S3Server

    server = S3Server().start()
    saved = {k: os.environ.get(k) for k in server.env}
    os.environ.update(server.env)
    yield server
    for k, v in saved.items():
        if v is None:
            os.environ.pop(k, None)
        else:
            os.environ[k] = v
    server.stop()


@pytest.fixture(scope="session")
def airflow_token():
    """``token(user, role)``: a JWT from Airflow's configured auth manager, as its login gives one."""
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    manager = create_auth_manager()
    return lambda user, role: manager.generate_jwt(SimpleAuthManagerUser(username=user, role=role))
