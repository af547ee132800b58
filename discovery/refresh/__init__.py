"""Refresh orchestration shared by the Spark drivers, the CLI and the DAG: planning, per-table tasks, bookkeeping."""
from .context import StageContext, StageReport
from .plan import DerivedPlan, ScanPlan, indexed_ids, plan_derived, plan_scan
from .runs import begin_refresh, failed_tables, publish_snapshot, record_stage
from .tasks import profile_batch, read_work_tables, scan_batch

__all__ = ["StageContext", "StageReport", "DerivedPlan", "ScanPlan", "indexed_ids", "plan_derived", "plan_scan",
           "begin_refresh", "failed_tables", "publish_snapshot", "record_stage", "profile_batch", "read_work_tables", "scan_batch"]
