"""A refresh stage as an Airflow task: Airflow's ``SparkSubmitOperator``, which first asks whether its stage is done.

On a small plan the scan task's application runs every later stage (``spark_jobs.common.rest_in_this_application``):
their tasks then only confirm it from ``refresh_runs`` and end, each showing in its log where its stage ran, instead
of paying a spark-submit (5 to 8 s) to find nothing to do.  The Airflow UI keeps one task per stage, and the scan
task's log holds the stages' own lines.
"""
from __future__ import annotations

from airflow.providers.apache.spark.operators.spark_submit import SparkSubmitOperator

from ...data.store import Warehouse
from .runs import stage_done


def _arg(args: list[str], name: str) -> str:
    return args[args.index(name) + 1]


class StageOperator(SparkSubmitOperator):
    """``SparkSubmitOperator`` for one stage of ``lake_refresh``; its rendered ``application_args`` name the
    warehouse and the refresh id."""

    def execute(self, context):
        # pre_execute (discovery.surfaces.submit._before_submit) put the run's storage credentials in this process's
        # environment: a warehouse in a bucket only the run's connection opens is read here
        args = [str(a) for a in self.application_args or []]
        warehouse, refresh_id = _arg(args, "--warehouse"), int(_arg(args, "--refresh-id"))
        if stage_done(Warehouse(warehouse), refresh_id, self.task_id):
            self.log.info("stage %s of refresh %s is done already (a small plan runs it in the scan task's "
                          "application): no Spark application started", self.task_id, refresh_id)
            return None
        return super().execute(context)
