"""Every stage of a refresh in one Spark application (the CLI path; the DAG submits the stages one by one)."""
from __future__ import annotations

import argparse
import importlib
import json
import sys

from discovery.config import load_config
from discovery.refresh import StageContext, begin_refresh, publish_snapshot
from discovery.store import new_attempt_token
from spark_jobs.common import add_pattern_args, execute, flat_patterns, spark_session
from spark_jobs.stages import STAGES


def refresh(spark, warehouse: str, lake: str, full: bool = False, config_path: str | None = None,
            include: tuple = (), exclude: tuple = ()) -> dict:
    """Run every stage, then publish; the result lists each stage's seconds and CPU utilisation (``stages``).
    ``include`` / ``exclude``: lake path patterns that replace the config's (``[lake]``)."""
    refresh_id = begin_refresh(warehouse)
    config = load_config(config_path)
    usage: list[dict] = []
    for module in (importlib.import_module(f"spark_jobs.{m}") for m in STAGES.values()):
        ctx = StageContext(warehouse, lake, refresh_id, new_attempt_token(), full, config, tuple(include),
                           tuple(exclude))
        if execute(spark, module.STAGE, module.run, ctx, usage) != 0:
            return {"refresh_id": refresh_id, "published": False, "failed_stage": module.STAGE, "stages": usage}
    # the lake as the stages resolved it (absolute)
    return {**publish_snapshot(warehouse, refresh_id, ctx.lake), "stages": usage}


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.refresh")
    p.add_argument("--warehouse", required=True)
    p.add_argument("--lake", required=True)
    p.add_argument("--full", action="store_true")
    p.add_argument("--config", default=None)
    add_pattern_args(p)
    args = p.parse_args(argv)
    out = refresh(spark_session("lakescout-refresh"), args.warehouse, args.lake, args.full, args.config,
                  flat_patterns(args.include), flat_patterns(args.exclude))
    print("LAKESCOUT_RESULT " + json.dumps(out, default=str))
    return 1 if "failed_stage" in out else 0


if __name__ == "__main__":
    sys.exit(main())
