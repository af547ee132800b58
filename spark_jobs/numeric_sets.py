"""Stage ``numeric``: the column groups of the numerical join (numbers, coordinates, vectors) of new and changed
tables, with their distinct values, in ``numeric_sets``; the rows of replaced and deleted tables go in the same
commit.  The indexes queries search are built from these rows when the snapshot is published
(``discovery.indexes.numjoin.arrays``)."""
from __future__ import annotations

import sys
from functools import partial

from discovery.indexes.numjoin.stage import numeric_batch, plan_numeric
from discovery.stages import StageContext, StageReport
from spark_jobs.common import run_stage
from spark_jobs.fanout import replace_tables

STAGE = "numeric"


def run(spark, ctx: StageContext) -> StageReport:
    rows = ctx.store.read("numeric_sets", columns=["table_id", "content_hash", "rule"])
    plan = plan_numeric(ctx.store.read("catalog"), rows, ctx.full)
    batch = partial(numeric_batch, max_values=ctx.config.numjoin.max_values)
    version, counts, rows = replace_tables(spark, "numeric_sets", plan.work, plan.remove_ids, batch, ctx, STAGE)
    if version is None and (plan.work.num_rows or len(plan.remove_ids)):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_failed=counts.get("tables_failed", 0),
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows,
                       message=f"{counts.get('numeric_groups', 0)} column group(s) indexed")


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
