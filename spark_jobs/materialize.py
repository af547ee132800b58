"""Materialising an answer on Spark: large lake tables read on the executors, unit by unit; the driver never holds
one.

The plan comes whole from :mod:`discovery.surfaces.materialize.plan` (lake tables pinned to their indexed versions, the
value mapping, the query's rows); the steps are :mod:`discovery.surfaces.materialize`'s, the same the in-process engine
runs, so both write the same table; the units are spread over Spark tasks by the one fan-out
(:mod:`spark_jobs.fanout`):

* **union**: each unit of a lake table (:func:`discovery.data.lake.pinned.units`: a Delta version's or a
  dataset's data files, else the table) reads it, places its columns
  (:func:`~discovery.surfaces.materialize.union.unit_rows`) and writes them as one part into the staging folder
  (:func:`~discovery.surfaces.materialize.output.staging`); a column whose cells are not of their planned kind is
  reported instead, and the driver plans again and reruns.  With ``dedupe`` a second pass hashes every row
  (:func:`~discovery.surfaces.materialize.union.row_hashes`), Spark keeps the least position per hash, and each part is
  rewritten with its kept rows.  The driver then commits the parts to Delta in one commit, or streams them, in order,
  into the one output file (:func:`~discovery.surfaces.materialize.output.finish_parts`).
* **join**: each unit returns its reduced matches (:func:`~discovery.surfaces.materialize.augment.unit_partial`: per
  lake value the first row, or the counts and aggregates, or the rows of ``all``); the driver combines them and
  adds them to the query's rows, which are the size of the query, not of the lake table.

A failure removes the staged parts: no partial file, no commit.  Entry points: :func:`run_plan_spark` (a session in
hand), :func:`run_plan_on_master` (the ``materialize`` DAG) and ``spark-submit spark_jobs/materialize.py --plan DIR``
(what ``lakescout stack`` / ``augment`` run with ``--master``), which prints ``LAKESCOUT_RESULT {description}`` or
``{"refused": message}``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
import uuid

import numpy as np
import pyarrow as pa

from discovery import storage
from discovery.config import Limits
from discovery.data.lake import LakeFileError
from discovery.data.lake.pinned import units
from discovery.surfaces.materialize.augment import ROW_BITS, FanOutError, combine, finish, unit_partial
from discovery.surfaces.materialize.execute import METADATA_KEY, Materialized, describe
from discovery.surfaces.materialize.output import (check_target, finish_parts, read_part, remove_parts, staging,
                                                   write_part, write_table)
from discovery.surfaces.materialize.plan import JoinPlan, UnionPlan, load_plan, plan_limits
from discovery.surfaces.materialize.union import (plan_layout, query_rows, replan_observed, row_hashes, type_notes,
                                                  unit_rows)
from spark_jobs.common import spark_session
from spark_jobs.fanout import cores, from_ipc, items_frame, map_groups, map_items, task_count, to_ipc

ORDER = "__order"


def _shared(broadcast) -> dict:
    """A task's view of the broadcast plan, with the driver's object-storage settings in its environment (Python
    workers outlive tasks and were started before them)."""
    value = broadcast.value
    os.environ.update(value["env"])
    return value


def _with_order(table: pa.Table, part: int) -> pa.Table:
    order = (np.int64(part) << ROW_BITS) + np.arange(table.num_rows, dtype=np.int64)
    return table.append_column(ORDER, pa.array(order))


def _union_parts(spark, plan: UnionPlan, work: list, layout, planned, limits: Limits, folder: str, token: str):
    """One pass of the union over every unit: the parts written (in unit order) and what the columns turned out to
    be where they surprised."""
    shared = spark.sparkContext.broadcast({"work": work, "layout": layout, "sources": planned, "limits": limits,
                                           "folder": folder, "token": token, "order": plan.dedupe,
                                           "env": storage.client_env()})

    def unit(i: int):
        s = _shared(shared)
        si, ui, piece = s["work"][i]
        try:
            tables, seen = unit_rows(s["sources"][si], piece, s["layout"], s["limits"])
        except ValueError as exc:  # a lake table unreadable now: the driver refuses, naming it
            yield {"i": i, "error": str(exc)}
            return
        info = {"i": i, "observed": {k: sorted(v) for k, v in seen.items()}}
        if not seen:
            table = pa.concat_tables(tables) if tables else s["layout"].schema.empty_table()
            if s["order"]:
                table = _with_order(table, i + 1)
            info.update(write_part(table, s["folder"], f"part-materialize-{s['token']}-{i + 1:06d}.parquet"))
        yield info

    try:
        infos = map_items(spark, len(work), unit)
    finally:
        shared.unpersist()
    failed = [x for x in infos if "error" in x]
    if failed:
        remove_parts(folder, [x["name"] for x in infos if "name" in x])
        raise LakeFileError(failed[0]["error"])
    observed: dict[tuple[int, str], set[str]] = {}
    for info in infos:
        si = work[info["i"]][0]
        for lake, kinds in info["observed"].items():
            observed.setdefault((planned[si].table.table_id, lake), set()).update(kinds)
    return [x for x in infos if "name" in x], observed


def _dedupe_parts(spark, folder: str, parts: list[dict], columns: list[str], token: str) -> list[dict]:
    """The parts without repeated rows (the first, by ``__order``, kept): hashes go through Spark, rows do not."""
    from pyspark.sql import functions as F

    names = [p["name"] for p in parts]
    env = storage.client_env()

    def hashes(i: int):
        os.environ.update(env)
        table = read_part(folder, names[i])
        h = row_hashes(table, columns).view(np.int64)
        yield pa.RecordBatch.from_arrays([pa.array(h[:, 0]), pa.array(h[:, 1]), table.column(ORDER).combine_chunks()],
                                         names=["h1", "h2", "o"])

    found = items_frame(spark, len(names), hashes, "h1 long, h2 long, o long")
    kept = found.groupBy("h1", "h2").agg(F.min("o").alias("o")).withColumn("part", F.shiftright("o", ROW_BITS))
    by_part = {int(n.split("-")[-1].split(".")[0]): n for n in names}

    def rewrite(batches):
        os.environ.update(env)
        orders: dict[int, list[np.ndarray]] = {}
        for batch in batches:
            part, o = batch.column(1).to_numpy(), batch.column(0).to_numpy()
            for p in np.unique(part):
                orders.setdefault(int(p), []).append(o[part == p])
        for p, kept_orders in orders.items():
            table = read_part(folder, by_part[p])
            keep = np.isin(table.column(ORDER).to_numpy(), np.concatenate(kept_orders))
            table = table.filter(pa.array(keep)).drop_columns([ORDER])
            info = write_part(table, folder, f"part-materialize-{token}-d{p:06d}.parquet")
            yield {"p": p, **info}

    rewritten = map_groups(kept.select("o", "part"), "part", task_count(len(names), cores(spark)), rewrite)
    remove_parts(folder, names)
    return sorted(rewritten, key=lambda x: x["p"])


def _union_spark(spark, plan: UnionPlan, output: str, fmt: str, overwrite: bool, limits: Limits) -> dict:
    started = time.perf_counter()
    check_target(output, fmt, overwrite)
    token = uuid.uuid4().hex[:12]
    folder = staging(output, fmt, token)
    work = [(si, ui, unit) for si, s in enumerate(plan.sources) for ui, unit in enumerate(units(s.table))]
    columns = [c.combine_chunks() for c in plan.query.columns]
    planned, attempt, parts = plan.sources, 0, []
    try:
        while True:
            layout = plan_layout(plan.query.column_names, [c.type for c in columns], f"query {plan.query_label!r}",
                                 planned, plan.snapshot_id)
            parts, observed = _union_parts(spark, plan, work, layout, planned, limits, folder, token)
            if not observed:
                break
            remove_parts(folder, [p["name"] for p in parts])
            attempt += 1
            planned = replan_observed(planned, observed, attempt)
        if plan.include_query:
            mine = query_rows(columns, plan.query_label, layout, plan.query_id, plan.query_version)
            parts.insert(0, write_part(_with_order(mine, 0) if plan.dedupe else mine, folder,
                                       f"part-materialize-{token}-{0:06d}.parquet"))
        if plan.dedupe:
            parts = _dedupe_parts(spark, folder, parts, list(layout.query_names), token)
        out = describe(plan, layout.schema, sum(p["rows"] for p in parts), planned,
                       type_notes(plan.sources, planned) + list(layout.warnings), "spark", started)
        schema = layout.schema.with_metadata({METADATA_KEY: json.dumps(out, default=str).encode()})
        size = finish_parts(folder, parts, schema, output, fmt, overwrite)
    except BaseException:
        remove_parts(folder, [p["name"] for p in parts], whole=fmt != "delta")
        raise
    if fmt != "delta":
        remove_parts(folder, [p["name"] for p in parts], whole=True)
    out["output"] = {"path": output, "format": fmt, "bytes": size, "parts": len(parts)}
    return out


def _join_spark(spark, plan: JoinPlan, output: str, fmt: str, overwrite: bool, limits: Limits) -> dict:
    started = time.perf_counter()
    work = units(plan.source.table)
    shared = spark.sparkContext.broadcast({"source": plan.source, "fan_out": plan.fan_out, "work": work,
                                           "limits": limits, "env": storage.client_env()})

    def unit(i: int):
        s = _shared(shared)
        try:
            part = to_ipc(unit_partial(s["source"], i, s["work"][i], s["fan_out"], s["limits"]))
        except ValueError as exc:  # unreadable now, or a fan-out over its bound: the driver refuses
            yield {"payload": None, "error": str(exc), "fan_out": isinstance(exc, FanOutError)}
            return
        yield {"payload": part, "error": None, "fan_out": False}

    try:
        rows = map_items(spark, len(work), unit)
    finally:
        shared.unpersist()
    failed = [r for r in rows if r["error"]]
    if failed:
        raise (FanOutError if failed[0]["fan_out"] else LakeFileError)(failed[0]["error"])
    reduced = combine([from_ipc(r["payload"]) for r in rows], plan.source, plan.fan_out)
    table, notes, matched = finish(plan.keys, plan.base, plan.source, reduced, plan.fan_out)
    m = Materialized(table, describe(plan, table.schema, table.num_rows, plan.sources, notes, "spark", started,
                                     matched))
    size = write_table(m.with_metadata(), output, fmt, overwrite)
    m.description["output"] = {"path": output, "format": fmt, "bytes": size}
    return m.description


def run_plan_spark(spark, plan: UnionPlan | JoinPlan, output: str, fmt: str, limits: Limits,
                   overwrite: bool = False) -> dict:
    """Materialise ``plan`` on ``spark`` into ``output``, its lake tables read under ``limits`` (the planning
    session's); returns the description of what was written."""
    if isinstance(plan, UnionPlan):
        return _union_spark(spark, plan, output, fmt, overwrite, limits)
    return _join_spark(spark, plan, output, fmt, overwrite, limits)


def run_plan_on_master(master: str, plan, output: str, fmt: str, limits: Limits, overwrite: bool = False) -> dict:
    """:func:`run_plan_spark` in a session on ``master`` started for it (and stopped after), unless this process
    already runs one."""
    from pyspark.sql import SparkSession

    had = SparkSession.getActiveSession() is not None
    spark = spark_session("lakescout-materialize", master=master)
    try:
        return run_plan_spark(spark, plan, output, fmt, limits, overwrite)
    finally:
        if not had:
            spark.stop()


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.materialize", description="Write a Lakescout answer on Spark")
    p.add_argument("--plan", required=True, help="folder of the plan (discovery.surfaces.materialize.plan)")
    p.add_argument("--output", required=True)
    p.add_argument("--format", required=True, choices=("parquet", "csv", "delta"))
    p.add_argument("--overwrite", action="store_true")
    args = p.parse_args(argv)
    try:
        spark = spark_session("lakescout-materialize")
        spark.sparkContext.setLogLevel("ERROR")
        out = run_plan_spark(spark, load_plan(args.plan), args.output, args.format, plan_limits(args.plan),
                             args.overwrite)
    except (LakeFileError, ValueError) as exc:
        print("LAKESCOUT_RESULT " + json.dumps({"refused": str(exc).splitlines()[0]}))
        return 2
    print("LAKESCOUT_RESULT " + json.dumps(out, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
