"""Stage ``pivots``: the PEXESO index of the value vectors (pivot mapping, grid cells, JSD partitions).

The model is fitted on the driver from a bounded random sample of value vectors (a sample, never the table), then
every value vector of a new or changed table is mapped in Spark tasks by ``discovery.join.stage.mapping_batch``.
Pivots are reselected, and every mapping rebuilt, on the first build, ``full_rebuild`` or a new join encoder.
"""
from __future__ import annotations

import sys
import time

import numpy as np
import pyarrow as pa

from discovery.join import partitions_for_budget
from discovery.join.stage import MODEL, column_keys, current_model, fit_pivot_model, mapping_batch
from discovery.refresh import StageContext, StageReport, plan_derived
from discovery.store import save_model
from spark_jobs.common import replace_tables, run_stage
from spark_jobs.profile_columns import done_pairs

STAGE = "pivots"


def _sample(spark, ctx: StageContext, n_rows: int):
    cfg = ctx.config.join
    files = ctx.store.file_uris("value_vectors")
    df = spark.read.parquet(*files).select("table_id", "ordinal", "vector")
    fraction = min(1.0, 1.2 * cfg.sample / max(n_rows, 1))
    rows = df.sample(withReplacement=False, fraction=fraction, seed=cfg.seed).limit(cfg.sample).collect()
    vectors = np.asarray([r["vector"] for r in rows], dtype=np.float32)
    keys = column_keys(np.array([r["table_id"] for r in rows]), np.array([r["ordinal"] for r in rows]))
    return vectors, keys


def run(spark, ctx: StageContext) -> StageReport:
    wh = ctx.store
    if wh.committed("pivot_mappings", STAGE, ctx.refresh_id):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    cfg = ctx.config.join
    vv_pairs = done_pairs(ctx, "value_vectors")
    # Work is defined by the value vectors (only join-candidate columns have any), not by the catalog.
    source = vv_pairs.append_column("status", pa.array(["ok"] * vv_pairs.num_rows, pa.string()))
    done = done_pairs(ctx, "pivot_mappings")
    versions = set(wh.read("value_vectors", columns=["encoder_version"]).column("encoder_version").to_pylist())
    if len(versions) > 1:
        raise RuntimeError(f"value vectors carry {len(versions)} encoder versions; the embed stage of this refresh "
                           "did not finish rebuilding them")
    model = current_model(wh)
    built_with = set(wh.read("pivot_mappings", columns=["model_version"]).column("model_version").to_pylist())
    reason = None
    if versions and model is None:
        reason = "first build"
    elif versions and ctx.full:
        reason = "full rebuild"
    elif versions and model.encoder_version != next(iter(versions)):
        reason = "new join encoder"
    message = f"model {model.version}" if model else "no value vectors"
    if reason is not None:
        started = time.time()
        n_rows = sum(wh.files("value_vectors").column("num_records").to_pylist())
        vectors, keys = _sample(spark, ctx, n_rows)
        budget = int(cfg.memory_budget_mb * (1 << 20))
        n_parts = partitions_for_budget(n_rows, vectors.shape[1], cfg.n_pivots, budget)
        model = fit_pivot_model(vectors, keys, next(iter(versions)), cfg.n_pivots, cfg.levels, cfg.metric, n_parts,
                                cfg.seed)
        save_model(wh, MODEL, model.version, model.params(), model.payload(), refresh_id=ctx.refresh_id,
                   attempt=ctx.attempt)
        old = wh.files("pivots").column("path").to_pylist()
        wh.append_rows("pivots", model.rows(), refresh_id=ctx.refresh_id, stage=STAGE, attempt=ctx.attempt,
                       replace_paths=old)
        message = (f"pivots reselected ({reason}) from {len(vectors)} of {n_rows} value vectors in "
                   f"{time.time() - started:.1f} s: {model.version}, {model.n_partitions} partition(s)")
    rebuild_all = reason is not None or bool(model and built_with - {model.version})
    plan = plan_derived(source, done, rebuild_all)
    _, counts, rows = replace_tables(spark, "pivot_mappings", plan.work, plan.remove_ids, mapping_batch, ctx, STAGE)
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows, message=message)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
