"""The refresh: one run over the lake, its stages in order under the lease, and the snapshot it publishes.

Shared by the Spark drivers, the CLI and the DAG.  What every stage uses (its context, plans and per-table tasks) is
the floor below, :mod:`discovery.stages`; this package begins a run, records each stage and publishes the snapshot
(:mod:`.runs`), runs one stage as an Airflow task (:mod:`.stage_task`), watches the lake (:mod:`.trigger`,
:mod:`.watch`) and shows a run (:mod:`.display`).

The names below are imported from their modules when first used (PEP 562): what needs only a light module of this
package (the stage task's operator and the lake watcher's trigger, loaded by Airflow's processes; the CLI's
:mod:`.display`, before its first line) does not load the lake readers and pandas with it.
"""
from importlib import import_module

#: Public name -> the module of this package that defines it.
_EXPORTS = {"begin_refresh": "runs", "failed_tables": "runs", "publish_snapshot": "runs", "record_stage": "runs"}
__all__ = list(_EXPORTS)


def __getattr__(name: str):
    if name not in _EXPORTS:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    return getattr(import_module(f".{_EXPORTS[name]}", __name__), name)
