"""The ``numeric`` stage's per-table work and the snapshot's numerical join indexes built from its rows.

``numeric_batch`` (a Spark task's work, :mod:`spark_jobs.numeric_sets`) reads each new or changed lake table once and
writes one ``numeric_sets`` row per column group (:func:`.columns.column_groups`) holding the group's distinct
values; a table without any group gets one ``kind = "none"`` row, so the stage knows it is done and does not read it
again.  Publishing builds one :class:`~.index.NumericIndex` per *family* -- every set of one metric and dimension:
``absolute`` (number columns), ``haversine`` (coordinates), ``euclidean-<d>`` and ``angular-<d>`` (vector columns of
length d) -- from those rows (:func:`build_families`), and :mod:`.arrays` stores them beside the Delta tables.
"""
from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ...data.store import SCHEMAS
from ...stages.plan import DerivedPlan, indexed_ids, plan_derived
from .columns import GROUP_RULE, KIND_METRICS, MAX_VALUES, column_groups
from .index import NumericIndex

#: Unit of each kind's values and spread (a vector group searched under the angular metric is in radians).
UNITS = {"number": "column units", "coordinates": "metres", "vector": "vector units"}
#: What a set of a family is, in the order of the family's set ids.
SET_FIELDS = ("table_id", "set_no", "kind", "names", "ordinals", "spread", "total", "quantity")


def numeric_batch(work: pa.Table, ctx, max_values: int = MAX_VALUES) -> tuple[pa.Table, dict]:
    """``numeric_sets`` rows of the tables of ``work`` (catalog rows with status ok)."""
    from ...stages.tasks import read_work_tables  # the refresh imports this package to publish

    out: dict[str, list] = {k: [] for k in SCHEMAS["numeric_sets"].names}
    counts: dict = {"numeric_groups": 0}

    def add(item, set_no, kind, ordinals, names, values, total, spread, quantity):
        row = {"table_id": item["table_id"], "content_hash": item["content_hash"], "set_no": set_no, "kind": kind,
               "ordinals": ordinals, "names": names, "dim": int(values.shape[1]), "size": int(values.shape[0]),
               "total": total, "spread": spread, "unit": UNITS.get(kind), "values": values.reshape(-1),
               "quantity": quantity, "rule": GROUP_RULE}
        for k in out:
            out[k].append(row[k])

    for item, parsed in read_work_tables(work, ctx, counts):
        groups = column_groups(parsed.names, parsed.columns, max_values)
        for no, g in enumerate(groups):
            add(item, no, g.kind, g.ordinals, g.names, g.values, g.total, g.spread, g.quantity)
        if not groups:
            add(item, -1, "none", [], [], np.zeros((0, 0)), 0, 0.0, "")
        counts["numeric_groups"] += len(groups)
    return pa.table(out, schema=SCHEMAS["numeric_sets"]), counts


def plan_numeric(catalog: pa.Table, rows: pa.Table, full: bool) -> DerivedPlan:
    """The stage's work: :func:`~discovery.stages.plan_derived` over the rows written under the current
    :data:`~.columns.GROUP_RULE`, so a table whose rows another version of the rules wrote is read again (and those
    rows replaced), as is one whose content changed.  ``rows``: (table_id, content_hash, rule) of ``numeric_sets``."""
    current = rows.filter(pc.fill_null(pc.equal(rows["rule"], GROUP_RULE), False))
    plan = plan_derived(catalog, current.select(["table_id", "content_hash"]), full)
    all_ids = np.unique(rows.column("table_id").to_numpy()) if rows.num_rows else np.empty(0, np.int64)
    work_ids = plan.work.column("table_id").to_numpy()
    stale = np.union1d(np.intersect1d(all_ids, work_ids), np.setdiff1d(all_ids, indexed_ids(catalog)))
    return replace(plan, remove_ids=np.union1d(plan.remove_ids, stale).astype(np.int64))


def family_name(metric: str, dim: int) -> str:
    return metric if metric in ("absolute", "haversine") else f"{metric}-{dim}"


def family_of(kind: str, dim: int) -> list[str]:
    return [family_name(m, dim) for m in KIND_METRICS[kind]]


@dataclass
class Family:
    """The sets of one family, columnar: what each set is (an Arrow table of :data:`SET_FIELDS`, row i = set id i)
    and their values, flat (set i is rows ``offsets[i]:offsets[i + 1]`` of ``values``).

    Columnar because a published lake's numeric sets number about one per table: a Python object per set would make
    the refresh's driver hold the whole lake as objects.
    """

    name: str
    metric: str
    sets: pa.Table
    values: np.ndarray    # (n, input dim) float64
    offsets: np.ndarray   # (n_sets + 1,) int64

    def build(self, seed: int = 0) -> NumericIndex:
        return NumericIndex.from_flat(self.values, self.offsets, self.metric, seed=seed)


def _members(rows: pa.Table, metric: str, dim: int) -> tuple[pa.Table, np.ndarray, np.ndarray]:
    """The sets (descriptions, flat values, offsets) of ``rows`` (one kind, one dim) under ``metric``; the angular
    metric drops zero vectors (they have no direction) and then any set left empty."""
    values = pc.list_flatten(rows.column("values")).to_numpy().reshape(-1, dim)
    sizes = pc.list_value_length(rows.column("values")).to_numpy() // dim
    if metric == "angular":
        keep = np.einsum("ij,ij->i", values, values) > 0
        sizes = np.bincount(np.repeat(np.arange(sizes.size), sizes)[keep], minlength=sizes.size)
        values = values[keep]
    sets = rows.select(list(SET_FIELDS)).filter(pa.array(sizes > 0))
    return sets, np.ascontiguousarray(values), np.r_[0, np.cumsum(sizes[sizes > 0])].astype(np.int64)


def families(rows: pa.Table) -> Iterator[Family]:
    """The families of ``numeric_sets`` rows, one at a time by name, their sets ordered by (table id, set number)."""
    rows = rows.filter(pc.not_equal(rows["kind"], "none")).sort_by([("table_id", "ascending"),
                                                                   ("set_no", "ascending")])
    shapes = rows.group_by(["kind", "dim"]).aggregate([]).to_pylist()   # a handful: one per kind and dimension
    named = sorted((family_name(m, int(s["dim"])), m, s["kind"], int(s["dim"]))
                   for s in shapes for m in KIND_METRICS[s["kind"]])
    for name, metric, kind, dim in named:
        part = rows.filter(pc.and_(pc.equal(rows["kind"], kind), pc.equal(rows["dim"], dim)))
        sets, values, offsets = _members(part.combine_chunks(), metric, dim)
        if sets.num_rows:
            yield Family(name, metric, sets, values, offsets)
