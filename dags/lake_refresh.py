"""lake_refresh: bring the Lakescout index up to date with the lake and publish a snapshot.

Stages run as spark-submit applications on the connection ``spark_default`` (``local[*]`` by default; point it at a
standalone, YARN or Kubernetes master to scale out).  Every stage is incremental and idempotent: it works out from the
catalog what changed, commits once per refresh (a retried task does not commit twice) and leaves the published
snapshot untouched until the final ``publish`` task, which emits the ``lakescout_snapshot`` asset that query DAGs can
be scheduled on.  ``max_active_runs=1`` keeps this DAG to one run at a time; the warehouse lease, taken by ``begin``,
renewed by every stage and released by ``publish`` (or the ``release`` teardown after a failure), keeps the DAG, a
CLI refresh and maintenance from writing at once (``discovery.data.store.lease``).  With the OpenLineage provider
configured, ``publish`` reports the lake tables the refresh read and the index tables it wrote
(``discovery.orchestration.lineage``).
"""
from __future__ import annotations

import os
from datetime import datetime, timedelta

from airflow.sdk import Param, dag, task

from discovery import storage

from discovery.surfaces import connections
from discovery.config import default_warehouse, load_config
from discovery.orchestration.lineage import refresh_datasets, report_lineage
from discovery.surfaces.submit import stage_operator
from spark_jobs.stages import STAGES

LAKE = os.environ.get("LAKESCOUT_LAKE", os.path.abspath("sample_lake"))
WAREHOUSE = default_warehouse()
SNAPSHOT_ASSET = connections.snapshot_asset(WAREHOUSE)
CONFIG = load_config()
LAKE_ASSET = connections.lake_asset(LAKE, WAREHOUSE, CONFIG.refresh.watch_seconds, CONFIG.lake.include,
                                    CONFIG.lake.exclude)


def refresh_schedule(cron: str, lake_asset):
    """On the time table ``cron`` *or* when the lake asset is updated (by the lake watcher or an upstream DAG);
    the asset alone when ``cron`` is empty."""
    if not cron:
        return [lake_asset]
    from airflow.timetables.assets import AssetOrTimeSchedule
    from airflow.timetables.trigger import CronTriggerTimetable

    return AssetOrTimeSchedule(timetable=CronTriggerTimetable(cron, timezone="UTC"), assets=[lake_asset])


def _lineage(out: dict) -> dict:
    """What the finished run read and wrote, for the lineage backend (the store imported here, not at parse)."""
    from discovery.data.store import Warehouse

    return refresh_datasets(Warehouse(out["warehouse"]), out["refresh_id"])


@dag(
    dag_id="lake_refresh",
    description="Incremental refresh of the Lakescout index (scan, profile, ...) and snapshot publication",
    schedule=refresh_schedule(CONFIG.refresh.schedule, LAKE_ASSET),
    start_date=datetime(2026, 1, 1),
    catchup=False,
    max_active_runs=1,
    default_args={"retries": 1, "retry_delay": timedelta(seconds=30)},
    params={
        "lake": Param(LAKE, type="string", description="Lake folder or URI to index"),
        "full_rebuild": Param(False, type="boolean", description="Rebuild every index table and retrain models"),
        "include": Param([], type="array", items={"type": "string"},
                         description="Index only lake tables matching these gitignore-style patterns (empty: the "
                                     "config's [lake] include, else every table)"),
        "exclude": Param([], type="array", items={"type": "string"},
                         description="Leave out lake tables matching these patterns (empty: the config's)"),
        **connections.warehouse_params(WAREHOUSE),
    },
    tags=["lakescout"],
)
def lake_refresh():
    @task
    def begin(params=None, run_id=None) -> int:
        """Check where the run points, take the warehouse lease, create missing index tables, clean files no retained
        version references, allocate the refresh id.  Another run holding the lease (a CLI refresh, maintenance, a
        run on another machine) fails the task without retries: retrying would only be refused again."""
        from airflow.exceptions import AirflowFailException

        from discovery.orchestration.allowed_roots import check_location
        from discovery.orchestration.refresh import begin_refresh
        from discovery.data.store import LeaseHeld

        work = connections.task_session(params, WAREHOUSE)
        storage.check(check_location("lake", params["lake"], LAKE), "lake")
        storage.check(work.root, "warehouse")
        try:
            return begin_refresh(work, run=f"lake_refresh {run_id}", scope="run")  # the stage tasks join it
        except LeaseHeld as exc:
            raise AirflowFailException(str(exc)) from None

    refresh_id = begin()
    previous = refresh_id
    for stage, module in STAGES.items():
        op = stage_operator(stage, module, [
            "--warehouse", "{{ params.warehouse }}", "--lake", "{{ params.lake }}",
            "--refresh-id", "{{ ti.xcom_pull(task_ids='begin') }}", "--full", "{{ params.full_rebuild }}",
            "--include", "{{ params.include | tojson }}", "--exclude", "{{ params.exclude | tojson }}",
        ])
        previous >> op
        previous = op

    @task(outlets=[SNAPSHOT_ASSET])
    def publish(refresh_id: int, params=None) -> dict:
        """Publish the snapshot only now that every stage succeeded."""
        from discovery.orchestration.refresh import publish_snapshot

        work = connections.task_session(params, WAREHOUSE)
        out = publish_snapshot(work.warehouse, refresh_id, params["lake"])
        return {"snapshot_id": out["snapshot_id"], "refresh_id": refresh_id, "warehouse": work.root}

    @task
    def release(params=None, ti=None) -> bool:
        """Teardown: release the lease when a stage failed and ``publish`` (which releases it) did not run, so the
        next refresh need not wait for the lease to expire."""
        from discovery.data.store import release_refresh

        connections.use_airflow_connection(params)  # a warehouse in a bucket whose keys only the connection holds
        refresh_id = ti.xcom_pull(task_ids="begin")
        return refresh_id is not None and release_refresh(params["warehouse"], int(refresh_id))

    done = publish(refresh_id)
    report_lineage(done.operator, _lineage)
    previous >> done
    done >> release().as_teardown(setups=refresh_id)


lake_refresh()
