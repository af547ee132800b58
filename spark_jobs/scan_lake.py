"""Stage ``scan``: list the lake, find added / changed / deleted tables, hash and parse them, write ``catalog``."""
from __future__ import annotations

import sys

import numpy as np

from discovery.data.lake import list_lake
from discovery.stages import StageContext, StageReport, plan_scan, scan_batch
from spark_jobs.common import run_stage
from spark_jobs.fanout import replace_tables

STAGE = "scan"


def run(spark, ctx: StageContext) -> StageReport:
    wh = ctx.store
    wh.ensure()
    listing = list_lake(ctx.lake, *ctx.patterns())
    plan = plan_scan(listing, wh.read("catalog"), ctx.full)
    remove = np.asarray(plan.work.column("table_id").to_numpy(), dtype=np.int64)
    version, counts, rows = replace_tables(spark, "catalog", plan.work, remove, scan_batch, ctx, STAGE,
                                           merge=True)
    if version is None and plan.work.num_rows:
        return StageReport(STAGE, status="ok", message="already committed by an earlier attempt of this refresh")
    return StageReport(STAGE, rows_written=rows, message=f"{len(listing)} files listed, {plan.unchanged} unchanged",
                       **counts)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
