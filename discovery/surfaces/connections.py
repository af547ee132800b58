"""What the DAGs share with Airflow: a task's session, connections as object-storage settings, the snapshot asset.

A DAG task takes the id of an Airflow AWS connection (its ``aws_conn_id`` param) and puts its keys, endpoint and
region into its environment as the ``AWS_*`` variables the storage wing reads (:mod:`discovery.storage.credentials`).
Airflow is imported only here and in :mod:`discovery.surfaces.submit`, at the top of the house, so nothing below needs
it.
"""
from __future__ import annotations

import os

from .. import storage

#: What the DAGs' ``aws_conn_id`` param means, as their trigger forms show it.
AIRFLOW_CONN_HELP = ("Airflow connection (AWS type) with the object-storage keys, endpoint and region; empty: the "
                     "workers' own AWS_* environment")


def connection_env(login: str | None, password: str | None, extra: dict | None) -> dict[str, str]:
    """The ``AWS_*`` variables of an Airflow AWS connection (login: access key id, password: secret key; extra:
    ``endpoint_url``, ``region_name``, ``aws_session_token``)."""
    extra = extra or {}
    pairs = {"AWS_ACCESS_KEY_ID": login, "AWS_SECRET_ACCESS_KEY": password,
             "AWS_SESSION_TOKEN": extra.get("aws_session_token"),
             "AWS_ENDPOINT_URL": extra.get("endpoint_url") or extra.get("host"),
             "AWS_REGION": extra.get("region_name")}
    return {k: str(v) for k, v in pairs.items() if v}


def airflow_connection_env(conn_id: str) -> dict[str, str]:
    """The ``AWS_*`` variables of Airflow connection ``conn_id`` (none for an empty id)."""
    if not conn_id:
        return {}
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    return connection_env(conn.login, conn.password, conn.extra_dejson)


def use_airflow_connection(params: dict) -> None:
    """Put a DAG run's object-storage credentials (its ``aws_conn_id`` param) into this task's environment."""
    os.environ.update(airflow_connection_env(params.get("aws_conn_id") or ""))


def task_session(params: dict, default: str):
    """A DAG task's :class:`~discovery.data.store.Session`, built once as the task starts: its run's object-storage
    credentials in its environment (:func:`use_airflow_connection`), the warehouse its ``warehouse`` param names
    (checked against the allowed roots, :func:`discovery.orchestration.allowed_roots.check_location`; ``default`` the
    DAG's) and the worker's configuration, resolved here and handed to every service the task calls."""
    from ..config import load_config
    from ..orchestration.allowed_roots import check_location
    from ..data.store import Session

    use_airflow_connection(params)
    return Session.at(check_location("warehouse", params["warehouse"], default), load_config())


def warehouse_params(warehouse: str, spark: str = "") -> dict:
    """The params of every DAG that opens the warehouse, said once: ``warehouse``, ``aws_conn_id`` and, when ``spark``
    says what the master does for the DAG, ``spark_conn_id``."""
    from airflow.sdk import Param

    out = {"warehouse": Param(warehouse, type="string", description="Warehouse folder or URI of the Delta index"),
           "aws_conn_id": Param("", type="string", description=AIRFLOW_CONN_HELP)}
    if spark:
        out["spark_conn_id"] = Param("spark_default", type="string", description=spark)
    return out


def lake_asset(lake: str, warehouse: str, poll_seconds: float, include=(), exclude=()):
    """The Airflow asset a change of the lake updates, watched by the lake watcher every ``poll_seconds``
    (:mod:`discovery.orchestration.refresh.trigger`); 0 watches nothing (the asset still starts ``lake_refresh`` when an
    upstream DAG that writes lake tables names it as an outlet)."""
    from airflow.sdk import Asset, AssetWatcher

    watchers = []
    if poll_seconds > 0:
        from ..orchestration.refresh.trigger import LakeWatchTrigger

        watchers.append(AssetWatcher(name="lake_watcher", trigger=LakeWatchTrigger(
            lake, warehouse, poll_seconds, list(include), list(exclude))))
    return Asset(name="lakescout_lake", uri=storage.file_uri(lake), watchers=watchers)


def snapshot_asset(warehouse: str):
    """The Airflow asset a published snapshot updates: ``lake_refresh`` lists it as the outlet of ``publish`` and
    ``standing_queries`` is scheduled on it, so both must name it alike (a remote warehouse by its own URI)."""
    from airflow.sdk import Asset

    return Asset(name="lakescout_snapshot", uri=storage.file_uri(storage.join(warehouse, "snapshots")))
