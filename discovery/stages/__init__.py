"""The refresh's stage kit: what every stage of a refresh shares, whichever index it builds.

A stage's context (:mod:`.context`: the warehouse, the run, the report a stage returns), the plans that say which
tables a stage reads (:mod:`.plan`), the per-table tasks that read and profile lake tables (:mod:`.tasks`) and the
progress a stage reports (:mod:`.progress`).  The indexes build on this floor; the refresh that runs the stages and
publishes their snapshot (:mod:`discovery.orchestration.refresh`) sits above them.

The names below are imported from their modules when first used (PEP 562): what needs only a light module of this
package (the CLI's :mod:`.progress`, before its first line) does not load the lake readers and pandas with it.
"""
from importlib import import_module

#: Public name -> the module of this package that defines it.
_EXPORTS = {
    "StageContext": "context", "StageReport": "context",
    "DerivedPlan": "plan", "ScanPlan": "plan", "indexed_ids": "plan", "plan_derived": "plan", "plan_scan": "plan",
    "profile_batch": "tasks", "read_work_tables": "tasks", "scan_batch": "tasks",
}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
