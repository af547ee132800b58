"""What a refresh and a query batch read and write, as OpenLineage datasets for Airflow's OpenLineage provider.

With ``apache-airflow-providers-openlineage`` installed (the ``lineage`` extra) and a transport configured (the
provider is off otherwise), the provider emits an event for every task run; a task gives it inputs and outputs
through its operator's ``get_openlineage_facets_on_complete`` (:func:`report_lineage`, which the DAGs wire):

* ``lake_refresh.publish``: inputs, the lake tables this refresh read and indexed (catalog rows it changed that are
  ``ok``, each with its columns and inferred types as a schema facet); outputs, the index tables whose Delta version
  this refresh moved, and ``snapshots``.  The refresh is reported once, when its snapshot is published: the stages
  before it are Spark applications whose work becomes visible only then, and a failed refresh publishes nothing.
* ``query_batch.run``: inputs, the lake tables the batch's queries name and those its results name (the answers are
  about them); outputs, ``query_results`` and ``query_batches``.

Datasets are named by :func:`discovery.storage.dataset_name`, the naming spec's file and object-store rules, so a
lake file read by another job (a Spark job that writes it, a dbt model over it) is the same dataset in the catalog.
The imports are inside the functions: DAG files import this module every time Airflow parses them, and nothing here
is needed until a task asks whether the provider is configured (nothing is read when it is not).
"""
from __future__ import annotations

import functools
import logging
from typing import TYPE_CHECKING
from collections.abc import Callable

if TYPE_CHECKING:
    from ..data.store import Snapshot, Warehouse

log = logging.getLogger(__name__)


def _lake_tables(snapshot: Snapshot, table_ids: list[int]) -> list[dict]:
    """``{"location", "columns": [(name, type)]}`` of lake tables, by path."""
    import pyarrow as pa
    import pyarrow.compute as pc

    from ..data.lake.source import join_lake_path

    if not table_ids:
        return []
    ids = pa.array(sorted(set(table_ids)), pa.int64())
    catalog = snapshot.read("catalog", columns=["table_id", "path"], filter=pc.field("table_id").isin(ids))
    columns = snapshot.read("columns", columns=["table_id", "ordinal", "name", "type"],
                            filter=pc.field("table_id").isin(ids)).sort_by([("table_id", "ascending"),
                                                                            ("ordinal", "ascending")])
    fields: dict[int, list[tuple[str, str]]] = {}
    for t, name, kind in zip(*(columns.column(c).to_pylist() for c in ("table_id", "name", "type"))):
        fields.setdefault(t, []).append((name, kind))
    rows = sorted(zip(catalog.column("path").to_pylist(), catalog.column("table_id").to_pylist()))
    return [{"location": join_lake_path(snapshot.lake, path), "columns": fields.get(t, [])} for path, t in rows]


def refresh_datasets(wh: Warehouse, refresh_id: int) -> dict:
    """Inputs and outputs of the refresh ``refresh_id`` (see the module docstring); empty when it published
    nothing."""
    import pyarrow.compute as pc

    from ..data.store import list_snapshots

    snaps = list_snapshots(wh)
    mine = [i for i, s in enumerate(snaps) if s.refresh_id == refresh_id]
    if not mine:
        return {"inputs": [], "outputs": []}
    snap = snaps[mine[0]]
    before = snaps[mine[0] - 1].versions if mine[0] else {}
    read = snap.read("catalog", columns=["table_id"],
                     filter=(pc.field("refresh_id") == refresh_id) & (pc.field("status") == "ok"))
    written = sorted(name for name, version in snap.versions.items() if before.get(name) != version)
    return {"inputs": _lake_tables(snap, read.column("table_id").to_pylist()),
            "outputs": [{"location": wh.table_uri(name)} for name in written + ["snapshots"]]}


def batch_datasets(wh: Warehouse, summary: dict) -> dict:
    """Inputs and outputs of a recorded query batch given its summary (see the module docstring)."""
    import pyarrow.compute as pc

    from ..query.resolve import catalog_entry
    from ..data.store import load_snapshot

    snap = load_snapshot(wh, summary["snapshot_id"])
    ids = []
    for q in summary.get("queries", []):
        entry = catalog_entry(snap, q["query"])
        if entry is not None:
            ids.append(entry["table_id"])
    results = wh.read("query_results", columns=["table_id"], filter=pc.field("batch_id") == summary["batch_id"])
    ids += [t for t in results.column("table_id").to_pylist() if t is not None]
    return {"inputs": _lake_tables(snap, ids),
            "outputs": [{"location": wh.table_uri(name)} for name in ("query_results", "query_batches")]}


def operator_lineage(datasets: dict):
    """The provider's ``OperatorLineage`` of ``datasets`` (inputs with a schema facet of their columns)."""
    from airflow.providers.common.compat.openlineage.facet import (Dataset, DatasetFacet, SchemaDatasetFacet,
                                                                    SchemaDatasetFacetFields)
    from airflow.providers.openlineage.extractors import OperatorLineage

    from .. import storage

    def dataset(d: dict) -> Dataset:
        namespace, name = storage.dataset_name(d["location"])
        facets: dict[str, DatasetFacet] = {}
        if d.get("columns"):
            facets["schema"] = SchemaDatasetFacet(fields=[SchemaDatasetFacetFields(name=n, type=t)
                                                          for n, t in d["columns"]])
        return Dataset(namespace=namespace, name=name, facets=facets)

    return OperatorLineage(inputs=[dataset(d) for d in datasets["inputs"]],
                           outputs=[dataset(d) for d in datasets["outputs"]])


def lineage_enabled() -> bool:
    """Whether Airflow's OpenLineage provider is installed and configured to emit (it is off without a transport)."""
    try:
        from airflow.providers.openlineage.conf import is_disabled
    except ImportError:
        return False
    return not is_disabled()


def report_lineage(operator, datasets: Callable[[dict], dict]) -> None:
    """Give a ``@task`` operator the method through which the OpenLineage provider asks a task for its inputs and
    outputs when it ends: ``datasets(return_value)`` of what the task's function returned.

    The provider calls the method in a process forked from the task's, where the warehouse cannot be read (delta-rs's
    runtime does not survive a fork) and the task's XCom is out of reach; so the datasets are read in the task itself
    as its function returns, only when the provider is configured, and kept on the operator for the fork to send.  A
    task that failed returned nothing and names no dataset; a warehouse that cannot be read for lineage is logged and
    never fails the task.
    """
    run = operator.python_callable

    @functools.wraps(run)
    def remembering(*args, **kwargs):
        value = run(*args, **kwargs)
        if value is not None and lineage_enabled():
            try:
                operator.lineage_datasets = datasets(value)
            except Exception as exc:  # noqa: BLE001 - lineage is reported, never a reason for a task to fail
                log.warning("no OpenLineage datasets for %s: %s", operator.task_id, exc)
        return value

    def get_openlineage_facets_on_complete(task_instance):
        return operator_lineage(getattr(operator, "lineage_datasets", None) or {"inputs": [], "outputs": []})

    operator.python_callable = remembering
    operator.get_openlineage_facets_on_complete = get_openlineage_facets_on_complete
