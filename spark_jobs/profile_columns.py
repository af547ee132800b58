"""Stage ``profile``: column types, distinct and null counts, key candidates of new and changed tables."""
from __future__ import annotations

import sys

from discovery.stages import StageContext, StageReport, plan_derived, profile_batch
from spark_jobs.common import run_stage
from spark_jobs.fanout import replace_tables

STAGE = "profile"


def run(spark, ctx: StageContext) -> StageReport:
    plan = plan_derived(ctx.store.read("catalog"), ctx.store.pairs("columns"), ctx.full)
    version, counts, rows = replace_tables(spark, "columns", plan.work, plan.remove_ids, profile_batch, ctx, STAGE,
                                           merge=True)
    if version is None and (plan.work.num_rows or len(plan.remove_ids)):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_failed=counts.get("tables_failed", 0),
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
