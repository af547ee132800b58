"""A materialisation plan, whole: what a Spark application needs to write the table without the index.

The plan is made where the index is (the answer's snapshot, its value mapping, the query typed for writing), and
handed to a Spark application as a folder: ``plan.json`` (the lake tables pinned to their versions, alignments or
join columns, policy) and Arrow IPC files for the tables (the query's rows, the value mapping, the query's join keys).
The application reads lake tables and writes output; it opens no index table.
"""
from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, field

import pyarrow as pa

from ...config import Limits
from ...data.lake.pinned import PinnedTable
from .augment import FanOut, JoinSource
from .union import UnionSource


@dataclass
class UnionPlan:
    snapshot_id: int
    query_label: str
    query: pa.Table                  # the query's columns, typed for writing (:func:`.coerce.query_columns`)
    sources: list[UnionSource]
    include_query: bool = True
    dedupe: bool = False
    notes: list[str] = field(default_factory=list)
    query_id: int | None = None      # the query's lake table id and indexed version, when it is a lake table
    query_version: str | None = None

    kind = "union"


@dataclass
class JoinPlan:
    snapshot_id: int
    query_label: str
    base: pa.Table                   # the query's rows, typed for writing
    keys: pa.Array                   # each query row's join key
    source: JoinSource
    fan_out: FanOut
    join_columns: list[str]
    notes: list[str] = field(default_factory=list)
    result: dict = field(default_factory=dict)

    kind = "join"

    @property
    def sources(self) -> list[JoinSource]:
        return [self.source]


def _write_arrow(folder: str, name: str, table: pa.Table) -> None:
    with pa.OSFile(os.path.join(folder, f"{name}.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def _read_arrow(folder: str, name: str) -> pa.Table:
    with pa.memory_map(os.path.join(folder, f"{name}.arrow")) as source:
        return pa.ipc.open_file(source).read_all()


def save_plan(plan: UnionPlan | JoinPlan, folder: str, limits: Limits) -> None:
    """Write ``plan`` into the (existing, empty) local ``folder``, with the ``limits`` its lake tables are read
    under: the planning session's, so the Spark job reads as the session that planned it, whatever configuration
    its own machine has (:func:`plan_limits`)."""
    head = {"kind": plan.kind, "snapshot_id": plan.snapshot_id, "query_label": plan.query_label,
            "notes": plan.notes, "limits": asdict(limits)}
    if isinstance(plan, UnionPlan):
        head.update(include_query=plan.include_query, dedupe=plan.dedupe, query_id=plan.query_id,
                    query_version=plan.query_version,
                    sources=[{"table": s.table.to_dict(), "aligned": [list(a) for a in s.aligned],
                              "kinds": list(s.kinds), "rank": s.rank, "score": s.score,
                              "left_out": list(s.left_out)} for s in plan.sources])
        _write_arrow(folder, "query", plan.query)
    else:
        s = plan.source
        head.update(join_columns=plan.join_columns, result=plan.result,
                    fan_out={"mode": plan.fan_out.mode, "max_matches": plan.fan_out.max_matches},
                    source={"table": s.table.to_dict(), "kind": s.kind, "lake_columns": list(s.lake_columns),
                            "added": list(s.added), "kinds": list(s.kinds), "dim": s.dim, "evidence": s.evidence})
        _write_arrow(folder, "base", plan.base)
        _write_arrow(folder, "keys", pa.table({"key": plan.keys}))
        _write_arrow(folder, "mapping", s.mapping)
    with open(os.path.join(folder, "plan.json"), "w", encoding="utf-8") as fh:
        json.dump(head, fh, default=str)


def _head(folder: str) -> dict:
    with open(os.path.join(folder, "plan.json"), encoding="utf-8") as fh:
        return json.load(fh)


def plan_limits(folder: str) -> Limits:
    """The limits :func:`save_plan` wrote with the plan in ``folder``."""
    return Limits(**_head(folder)["limits"])


def load_plan(folder: str) -> UnionPlan | JoinPlan:
    """The plan :func:`save_plan` wrote into ``folder``."""
    head = _head(folder)
    if head["kind"] == "union":
        sources = [UnionSource(PinnedTable(**s["table"]), tuple(tuple(a) for a in s["aligned"]), tuple(s["kinds"]),
                               s["rank"], s["score"], tuple(s["left_out"])) for s in head["sources"]]
        return UnionPlan(head["snapshot_id"], head["query_label"], _read_arrow(folder, "query"), sources,
                         head["include_query"], head["dedupe"], head["notes"], head["query_id"], head["query_version"])
    s = head["source"]
    source = JoinSource(PinnedTable(**s["table"]), s["kind"], tuple(s["lake_columns"]), tuple(s["added"]),
                        tuple(s["kinds"]), _read_arrow(folder, "mapping"), s["dim"], s["evidence"])
    keys = _read_arrow(folder, "keys").column("key").combine_chunks()
    return JoinPlan(head["snapshot_id"], head["query_label"], _read_arrow(folder, "base"), keys, source,
                    FanOut(**head["fan_out"]), head["join_columns"], head["notes"], head["result"])
