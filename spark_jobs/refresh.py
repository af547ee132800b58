"""Every stage of a refresh in one Spark application (the CLI path; the DAG submits the stages one by one)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from discovery.config import load_config
from discovery.data.store import Lease, LeaseHeld, Session, new_attempt_token, release_refresh
from discovery.orchestration.refresh import begin_refresh, failed_tables, publish_snapshot
from discovery.stages import StageContext
from discovery.stages.progress import note
from spark_jobs.common import add_pattern_args, execute, flat_patterns, spark_session
from spark_jobs.stages import STAGES

#: Exit code of a refresh refused because another run holds the warehouse lease (the CLI's code for bad input).
REFUSED = 2


def refresh(spark, warehouse: str, lake: str, full: bool = False, config_path: str | None = None,
            run: str = "cli", include: tuple = (), exclude: tuple = ()) -> dict:
    """Run every stage, then publish; the result lists each stage's seconds and CPU utilisation (``stages``).
    ``include`` / ``exclude``: lake path patterns that replace the config's (``[lake]``).

    The refresh holds the warehouse lease throughout, renewed from a background thread, and releases it when it
    publishes or fails; :class:`~discovery.data.store.LeaseHeld` is raised when another run holds it."""
    session = Session.at(warehouse, load_config(config_path))
    note("taking the warehouse lease, checking the index tables")
    refresh_id = begin_refresh(session, run)
    usage: list[dict] = []
    try:
        with Lease.join(warehouse, refresh_id).kept_alive() as lease:
            for module in (importlib.import_module(f"spark_jobs.{m}") for m in STAGES.values()):
                ctx = StageContext(session.root, lake, refresh_id, new_attempt_token(), full, session.config,
                                   tuple(include), tuple(exclude))
                lease.check()
                if execute(spark, module.STAGE, module.run, ctx, usage) != 0:
                    return {"refresh_id": refresh_id, "published": False, "failed_stage": module.STAGE,
                            "stages": usage}
            lease.check()
            # the lake as the stages resolved it (absolute)
            return {**publish_snapshot(session.warehouse, refresh_id, ctx.lake), "stages": usage,
                    "failed_tables": failed_tables(session.warehouse, refresh_id)}
    finally:
        release_refresh(warehouse, refresh_id)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.refresh")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--lake", required=True)
    p.add_argument("--full", action="store_true")
    p.add_argument("--config", default=None)
    add_pattern_args(p)
    args = p.parse_args(argv)
    spark = spark_session("lakescout-refresh")
    note(f"Spark started ({spark.sparkContext.master}, {spark.sparkContext.defaultParallelism} cores)")
    try:
        out = refresh(spark, args.warehouse, args.lake, args.full, args.config,
                      include=flat_patterns(args.include), exclude=flat_patterns(args.exclude))
    except LeaseHeld as exc:
        print("LAKESCOUT_RESULT " + json.dumps({"refused": str(exc)}))
        return REFUSED
    print("LAKESCOUT_RESULT " + json.dumps(out, default=str))
    return 1 if "failed_stage" in out else 0


if __name__ == "__main__":
    sys.exit(main())
