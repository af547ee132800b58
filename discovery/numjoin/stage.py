"""The ``numeric`` stage's per-table work and the snapshot's numerical join indexes built from its rows.

``numeric_batch`` (a Spark task's work, :mod:`spark_jobs.numeric_sets`) reads each new or changed lake table once and
writes one ``numeric_sets`` row per column group (:func:`.columns.column_groups`) holding the group's distinct
values; a table without any group gets one ``kind = "none"`` row, so the stage knows it is done and does not read it
again.  Publishing builds one :class:`~.index.NumericIndex` per *family* -- every set of one metric and dimension:
``absolute`` (number columns), ``haversine`` (coordinates), ``euclidean-<d>`` and ``angular-<d>`` (vector columns of
length d) -- from those rows (:func:`build_families`), and :mod:`.arrays` stores them beside the Delta tables.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..store import SCHEMAS
from .columns import KIND_METRICS, MAX_VALUES, column_groups
from .index import NumericIndex

#: Unit of each kind's values and spread (a vector group searched under the angular metric is in radians).
UNITS = {"number": "column units", "coordinates": "metres", "vector": "vector units"}
#: What a set of a family is, in the order of the family's set ids.
SET_FIELDS = ("table_id", "set_no", "kind", "names", "ordinals", "spread", "total")


def numeric_batch(work: pa.Table, ctx, max_values: int = MAX_VALUES) -> tuple[pa.Table, dict]:
    """``numeric_sets`` rows of the tables of ``work`` (catalog rows with status ok)."""
    from ..refresh.tasks import read_work_tables  # the refresh imports this package to publish

    out = {k: [] for k in SCHEMAS["numeric_sets"].names}
    counts: dict = {"numeric_groups": 0}

    def add(item, set_no, kind, ordinals, names, values, total, spread):
        row = {"table_id": item["table_id"], "content_hash": item["content_hash"], "set_no": set_no, "kind": kind,
               "ordinals": ordinals, "names": names, "dim": int(values.shape[1]), "size": int(values.shape[0]),
               "total": total, "spread": spread, "unit": UNITS.get(kind), "values": values.reshape(-1)}
        for k in out:
            out[k].append(row[k])

    for item, parsed in read_work_tables(work, ctx, counts):
        groups = column_groups(parsed.names, parsed.columns, max_values)
        for no, g in enumerate(groups):
            add(item, no, g.kind, g.ordinals, g.names, g.values, g.total, g.spread)
        if not groups:
            add(item, -1, "none", [], [], np.zeros((0, 0)), 0, 0.0)
        counts["numeric_groups"] += len(groups)
    return pa.table(out, schema=SCHEMAS["numeric_sets"]), counts


def family_name(metric: str, dim: int) -> str:
    return metric if metric in ("absolute", "haversine") else f"{metric}-{dim}"


def family_of(kind: str, dim: int) -> list[str]:
    return [family_name(m, dim) for m in KIND_METRICS[kind]]


@dataclass
class Family:
    """The sets of one family: what each set is (:data:`SET_FIELDS`, by set id) and their values."""

    name: str
    metric: str
    sets: dict            # field -> list, by set id
    values: list          # per set id: (n, dim) float64

    def build(self, seed: int = 0) -> NumericIndex:
        return NumericIndex.build(self.values, self.metric, seed=seed)


def _drop_zero(values: np.ndarray) -> np.ndarray:
    return values[np.einsum("ij,ij->i", values, values) > 0]


def families(rows: pa.Table) -> dict[str, Family]:
    """The families of ``numeric_sets`` rows, their sets ordered by (table id, set number)."""
    rows = rows.filter(pc.not_equal(rows["kind"], "none")).sort_by([("table_id", "ascending"),
                                                                   ("set_no", "ascending")])
    out: dict[str, Family] = {}
    flat = rows.column("values").combine_chunks() if rows.num_rows else None
    for i, r in enumerate(rows.select(list(SET_FIELDS) + ["dim"]).to_pylist()):
        dim = int(r["dim"])
        values = flat[i].values.to_numpy(zero_copy_only=False).reshape(-1, dim)
        for metric in KIND_METRICS[r["kind"]]:
            name = family_name(metric, dim)
            v = _drop_zero(values) if metric == "angular" else values
            if v.shape[0] == 0:
                continue
            fam = out.setdefault(name, Family(name, metric, {f: [] for f in SET_FIELDS}, []))
            for f in SET_FIELDS:
                fam.sets[f].append(r[f])
            fam.values.append(v)
    return out
