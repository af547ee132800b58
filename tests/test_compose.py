"""docker-compose.yaml and the images: validated by `docker compose config` where Compose is installed, and by
reading the resolved file for what the cluster needs (no container engine runs in the tests)."""
from __future__ import annotations

import json
import os
import shutil
import subprocess

import pytest
import yaml

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
COMPOSE = os.path.join(ROOT, "docker-compose.yaml")


def _compose_command() -> list[str] | None:
    if shutil.which("docker"):
        probe = subprocess.run(["docker", "compose", "version"], capture_output=True, text=True)
        if probe.returncode == 0:
            return ["docker", "compose"]
    if shutil.which("docker-compose"):
        return ["docker-compose"]
    return None


def test_docker_compose_config_validates():
    command = _compose_command()
    if command is None:
        pytest.skip("Docker Compose is not installed (neither `docker compose` nor `docker-compose`)")
    proc = subprocess.run([*command, "-f", COMPOSE, "config", "--quiet"], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)
    assert proc.returncode == 0, proc.stderr


@pytest.fixture(scope="module")
def compose() -> dict:
    with open(COMPOSE) as fh:
        return yaml.safe_load(fh)


def test_airflow_services_share_one_postgres_metadata_db_and_local_executor(compose):
    services = compose["services"]
    for name in ("airflow-apiserver", "airflow-scheduler", "airflow-dag-processor", "airflow-triggerer"):
        env = services[name]["environment"]
        assert env["AIRFLOW__CORE__EXECUTOR"] == "LocalExecutor"
        assert env["AIRFLOW__DATABASE__SQL_ALCHEMY_CONN"].startswith("postgresql+psycopg2://")
        assert services[name]["depends_on"]["airflow-init"]["condition"] == "service_completed_successfully"
        conn = json.loads(env["AIRFLOW_CONN_SPARK_DEFAULT"])
        assert conn["host"] == "spark://spark-master" and conn["port"] == 7077
        assert "./dags:/opt/lakescout/dags:ro" in services[name]["volumes"]
        assert "./plugins:/opt/lakescout/plugins:ro" in services[name]["volumes"]
    assert services["postgres"]["image"].startswith("postgres:")


def test_spark_cluster_shares_lake_and_warehouse_volumes_with_airflow(compose):
    services = compose["services"]
    for name in ("spark-master", "spark-worker", "airflow-scheduler"):
        assert {"lake:/data/lake", "warehouse:/data/warehouse"} <= set(services[name]["volumes"])
    assert "spark://spark-master:7077" in services["spark-worker"]["command"]
    assert services["spark-master"]["build"]["dockerfile"] == "docker/spark/Dockerfile"
    assert services["spark-worker"]["image"] == services["spark-master"]["image"]


def test_spark_image_bakes_the_delta_jars_into_the_official_image():
    with open(os.path.join(ROOT, "docker", "spark", "Dockerfile")) as fh:
        text = fh.read()
    assert "ARG SPARK_IMAGE=apache/spark:4.0.1" in text and "FROM ${SPARK_IMAGE}" in text
    assert "/opt/spark/jars" in text and "delta-spark_${SCALA_BINARY}" in text and "delta-storage" in text
    with open(os.path.join(ROOT, "requirements.txt")) as fh:
        pins = dict(line.strip().split("==") for line in fh if "==" in line and not line.startswith("#"))
    assert f"DELTA_VERSION={pins['delta-spark']}" in text      # the jars match the pinned delta-spark
    assert pins["pyspark"] in text                              # and the image's Spark matches pyspark
