"""Refresh orchestration shared by the Spark drivers, the CLI and the DAG: planning, per-table tasks, bookkeeping.

The names below are imported from their modules when first used (PEP 562): what needs only a light module of this
package (the stage task's operator, :mod:`.stage_task`, and the lake watcher's trigger, :mod:`.trigger`, loaded by
Airflow's processes; the CLI's :mod:`.progress` and :mod:`.display`, before its first line) does not load the lake
readers and pandas with it.
"""
from importlib import import_module

#: Public name -> the module of this package that defines it.
_EXPORTS = {
    "StageContext": "context", "StageReport": "context",
    "DerivedPlan": "plan", "ScanPlan": "plan", "indexed_ids": "plan", "plan_derived": "plan", "plan_scan": "plan",
    "begin_refresh": "runs", "failed_tables": "runs", "publish_snapshot": "runs", "record_stage": "runs",
    "profile_batch": "tasks", "read_work_tables": "tasks", "scan_batch": "tasks",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
