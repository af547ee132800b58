"""Stage ``centroids``: k-means over the column vectors and PGTUS Algorithm 1 partitions per table.

The model is fitted by ``discovery.indexes.union.centroids.kmeans`` in the driver on a bounded seeded sample of the
column vectors, drawn by Spark from the ``column_vectors`` files (:func:`fit_kmeans`); between retrains new columns are
assigned to the stored centroids by the nearest-centroid step of ``discovery.indexes.union`` inside the Spark tasks,
which are handed the model and the file list by the driver.  Retraining (and rebuilding every partition) happens on the
first build, a full rebuild, a new column-encoder version, or quantisation-error drift (see
``discovery.config.UnionConfig``).
"""
from __future__ import annotations

import math
import sys
import time
from functools import partial

import numpy as np

from discovery.data.store import save_model
from discovery.indexes.union.centroids import assign_to_centroids, kmeans
from discovery.indexes.union.stage import (MODEL, CentroidModel, current_model, drifted, partition_batch,
                                           quantisation_batch)
from discovery.stages import StageContext, StageReport, plan_derived
from spark_jobs.common import run_stage
from spark_jobs.fanout import fan_out, replace_tables, sample_index_rows

STAGE = "centroids"


def fit_sample(spark, ctx: StageContext) -> tuple[np.ndarray, int]:
    """(vectors (m, d) float32, number of column vectors n): about ``[union] fit_columns`` of the current
    ``column_vectors`` version (all of them when there are fewer), in (table_id, ordinal) order.

    A column is drawn when a seeded hash of its (table_id, ordinal) falls below the sampling rate, so the same
    columns are drawn however the files are split into tasks: a local and a cluster build fit the same model.  Only
    the sample reaches the driver, at most about ``fit_columns`` x d floats whatever the lake's size."""
    cfg = ctx.config.union
    if cfg.fit_columns < 2:
        raise ValueError(f"[union] fit_columns must be at least 2, got {cfg.fit_columns}")
    n = ctx.store.count_rows("column_vectors")
    rows = sample_index_rows(spark, ctx, "column_vectors", ["table_id", "ordinal", "vector"],
                             cfg.fit_columns / max(n, 1), cfg.seed)
    flat = rows.column("vector").combine_chunks()
    dim = len(flat[0]) if len(flat) else 0
    return flat.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dim), n


def fit_kmeans(spark, ctx: StageContext, encoder_version: str) -> CentroidModel:
    """Lloyd's k-means with k about sqrt(#columns) of the whole lake, fitted in the driver on :func:`fit_sample`.

    The sample is bounded, so one fit costs ``fit_columns * k * d`` per iteration as the lake grows, which numpy's
    BLAS does on every core of the driver in seconds; MLlib's distributed k-means ran about twenty Spark jobs per fit
    whose scheduling, not arithmetic, took most of the stage (34.8 s of UGEN-V1's 56 s centroids stage)."""
    cfg = ctx.config.union
    sample, n = fit_sample(spark, ctx)
    k = max(1, min(cfg.k or max(2, round(math.sqrt(n))), len(sample)))
    centers = kmeans(sample, k, seed=cfg.seed, iterations=cfg.max_iter)
    err = float(np.sum((sample - centers[assign_to_centroids(sample, centers)]) ** 2))
    return CentroidModel.fit_result(centers, encoder_version, err / max(len(sample), 1), n)


def run(spark, ctx: StageContext) -> StageReport:
    wh = ctx.store
    if wh.committed("centroid_partitions", STAGE, ctx.refresh_id):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    catalog = wh.read("catalog")
    done = ctx.store.pairs("centroid_partitions")
    versions = wh.distinct("column_vectors", "encoder_version")
    if not versions:  # nothing embedded (yet): nothing to partition, and no stale partitions may stay
        replace_tables(spark, "centroid_partitions", catalog.slice(0, 0), done.column("table_id").to_numpy(),
                                 partition_batch, ctx, STAGE)
        return StageReport(STAGE, message="no column vectors")
    if len(versions) > 1:
        raise RuntimeError(f"column vectors carry {len(versions)} encoder versions; the embed stage of this refresh "
                           "did not finish rebuilding them")
    encoder_version = versions.pop()
    model = current_model(wh)
    built_with = wh.distinct("centroid_partitions", "model_version")
    reason = None
    if model is None:
        reason = "first build"
    elif ctx.full:
        reason = "full rebuild"
    elif model.encoder_version != encoder_version:
        reason = "new column encoder"
    rebuild_all = reason is not None or bool(built_with - {model.version})
    plan = plan_derived(catalog, done, rebuild_all)
    vector_files = wh.files("column_vectors")
    if not rebuild_all and plan.work.num_rows:
        _, counts = fan_out(spark, plan.work, partial(quantisation_batch, model=model, files=vector_files),
                            "centroid_partitions", ctx, STAGE)
        if drifted(model, counts.get("sq_error_sum", 0.0), counts.get("columns", 0), ctx.config.union.drift_threshold):
            reason = "quantisation error drift"
    message = f"model {model.version}" if model else ""
    if reason is not None:
        started = time.time()
        model = fit_kmeans(spark, ctx, encoder_version)
        save_model(wh, MODEL, model.version, model.params(), model.payload(), refresh_id=ctx.refresh_id,
                   attempt=ctx.attempt)
        old = wh.files("centroids").column("path").to_pylist()
        wh.append_rows("centroids", model.rows(), refresh_id=ctx.refresh_id, stage=STAGE, attempt=ctx.attempt,
                       replace_paths=old)
        plan = plan_derived(catalog, done, True)
        message = (f"retrained ({reason}): k={len(model.centroids)} on {model.n_columns} columns in "
                   f"{time.time() - started:.1f} s, model {model.version}")
    _, counts, rows = replace_tables(spark, "centroid_partitions", plan.work, plan.remove_ids,
                                     partial(partition_batch, model=model, files=vector_files), ctx, STAGE, merge=True)
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows, message=message)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
