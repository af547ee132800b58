"""Refresh cost against lake size (``benchmarks/refresh.py --scale 1000,4000,16000``).

Each lake is made of sample lakes of ``PART`` tables written by the sample-lake generator with consecutive seeds (so
every table has its own content and hash; the generator's planted joins and families stay inside a part), in
``pNNN/`` folders, broken files included.  Each lake is built with the real refresh (:func:`spark_jobs.refresh.refresh`)
in one SparkSession, then refreshed again after ``changed`` of its tables got a new row.  Stage seconds are read from
the warehouse's own run records through ``discovery.open(...).status()`` and shown per listed table; encoder training
is bounded by steps, not by the lake, so it is shown apart (its seconds come from the trained models' records) and
taken out of ``embed``.  A union query through the API checks each build serves.

The linearity figure is the largest over stages of (s/table at the largest scale) / (s/table at the smallest);
the incremental figure is incremental / full wall seconds at each scale.  The driver's peak resident memory (the
Python process and its JVM, each its kernel high-water mark) is read after each scale: the driver plans from
columnar tables and must not grow with the lake the way per-table Python objects would.  It covers the process's
life so far, so each scale's figure includes the smaller scales' (run first).
"""
from __future__ import annotations

import json
import os
import shutil

import discovery
import harness
from discovery.data.lake import list_lake
from discovery.data.store import Warehouse
from harness import print_table
from spark_jobs.stages import STAGES as REFRESH_STAGES

#: Tables per generated part: the largest size the generator's name space allows with room to spare.
PART = 250
#: The refresh's stages (one list, :data:`spark_jobs.stages.STAGES`) and the publish step that ends it.
STAGES = (*REFRESH_STAGES, "publish")


def parse_scales(text: str) -> list[int]:
    """``"1000,4000"`` -> [1000, 4000]; every scale a positive multiple of :data:`PART`."""
    try:
        scales = sorted({int(s) for s in text.split(",") if s.strip()})
    except ValueError:
        raise ValueError(f"--scale: expected comma-separated table counts, got {text!r}") from None
    if not scales or any(s < PART or s % PART for s in scales):
        raise ValueError(f"--scale: every table count must be a positive multiple of {PART}, got {text!r}")
    return scales


def build_parts(work: str, n_parts: int) -> list[str]:
    """Generate ``n_parts`` sample lakes of :data:`PART` tables (seeds 1000, 1001, ...) under ``work/_parts``."""
    return [harness.sample_lake(os.path.join(work, "_parts", f"p{i:03d}"), seed=1000 + i, n_tables=PART)
            for i in range(n_parts)]


def assemble(work: str, parts: list[str], n_tables: int) -> str:
    """A fresh lake folder holding the first ``n_tables / PART`` parts (ground truth left out)."""
    lake = os.path.join(work, f"lake-{n_tables}")
    shutil.rmtree(lake, ignore_errors=True)
    for i, part in enumerate(parts[:n_tables // PART]):
        shutil.copytree(part, os.path.join(lake, f"p{i:03d}"), ignore=shutil.ignore_patterns("_*"))
    return lake


def training_seconds(warehouse: str, refresh_id: int) -> float:
    """The longest encoder training of a refresh (the encoders train side by side), from the models' records."""
    models = Warehouse(warehouse).read("models", columns=["refresh_id", "params"]).to_pylist()
    spent = [json.loads(m["params"]).get("seconds", 0.0) for m in models if m["refresh_id"] == refresh_id]
    return max(spent, default=0.0)


def _per_table(seconds: dict[str, float], train: float, n: int) -> dict[str, float]:
    row = {f"{s}_s_per_table": seconds.get(s, 0.0) / n for s in STAGES}
    row["embed_s_per_table"] = max(seconds.get("embed", 0.0) - train, 0.0) / n
    return row


def cpu_per_table(usage: list[dict], cores: int, n: int) -> dict[str, float]:
    """CPU seconds of the Spark application per listed table and stage (utilisation x wall x cores, as the refresh
    measured them): on a machine shared with other work, wall seconds stretch with the load and CPU seconds do not.
    Embed's include its encoder training."""
    return {f"{u['stage']}_cpu_s_per_table": u["cpu"] * u["seconds"] * cores / n for u in usage
            if u.get("cpu") is not None}


def bench_scale(spark, work: str, parts: list[str], n_tables: int, fraction: float, change,
                config: str | None = None) -> dict:
    """Full build and one incremental refresh of the ``n_tables`` lake; per-stage s/table and the ratio."""
    lake = assemble(work, parts, n_tables)
    listed = len(list_lake(lake))
    wh = os.path.join(work, f"wh-{n_tables}")
    shutil.rmtree(wh, ignore_errors=True)
    first = harness.refresh(lake, wh, config=config, spark=spark)
    changed = change(lake, fraction, seed=n_tables)
    again = harness.refresh(lake, wh, config=config, spark=spark)
    (full, t_full), (inc, t_inc) = (first.result, first.seconds), (again.result, again.seconds)
    if not (full.get("published") and inc.get("published")):
        raise RuntimeError(f"refresh of the {n_tables}-table lake did not publish: {full} {inc}")
    api = discovery.open(wh)
    first = api.snapshot.read("catalog", columns=["table_id", "status"]).to_pylist()
    answered = len(api.union(next(r["table_id"] for r in first if r["status"] == "ok"), k=10)["results"])
    full_s, inc_s = harness.stage_seconds(wh, full["refresh_id"]), harness.stage_seconds(wh, inc["refresh_id"])
    train = training_seconds(wh, full["refresh_id"])
    shutil.rmtree(lake, ignore_errors=True)
    shutil.rmtree(wh, ignore_errors=True)
    return {"tables": listed, "ok_tables": full["counts"]["tables_ok"], "full_s": t_full, "train_s": train,
            **_per_table(full_s, train, listed),
            **cpu_per_table(full.get("stages", []), spark.sparkContext.defaultParallelism, listed),
            "stages_full_s": full_s, "changed": len(changed),
            "incremental_s": t_inc, "stages_incremental_s": inc_s, "incremental_ratio": t_inc / t_full,
            "union_answers": answered, **harness.driver_peak_rss(spark)}


def slopes(rows: list[dict]) -> dict[str, float]:
    """Per stage: s/table at the largest scale over s/table at the smallest (1.0 = linear)."""
    lo, hi = rows[0], rows[-1]
    return {s: hi[f"{s}_s_per_table"] / lo[f"{s}_s_per_table"] for s in STAGES if lo[f"{s}_s_per_table"] > 0}


def run_scale(spark, scales: list[int], fraction: float, work: str, change, config: str | None = None) -> dict:
    """Every scale in ascending order in one SparkSession; prints the per-stage table and returns the result."""
    parts = build_parts(work, scales[-1] // PART)
    rows = []
    for n in scales:
        rows.append(bench_scale(spark, work, parts, n, fraction, change, config))
        print(json.dumps({k: v for k, v in rows[-1].items() if not k.startswith("stages_")}), flush=True)
    print_table(rows, ["tables", "full_s", "train_s", *(f"{s}_s_per_table" for s in STAGES), "changed",
                       "incremental_s", "incremental_ratio", "driver_peak_mb"])
    print_table(rows, ["tables", *(f"{s}_cpu_s_per_table" for s in STAGES if s != "publish")])
    ratio = slopes(rows)
    print("s/table at the largest scale over the smallest: "
          + ", ".join(f"{s} {r:.2f}" for s, r in ratio.items()))
    return {"part_tables": PART, "changed_fraction": fraction, "config": config, "results": rows, "slope": ratio,
            "targets": {"slope_max": 1.3, "incremental_ratio_max": 0.05}}
