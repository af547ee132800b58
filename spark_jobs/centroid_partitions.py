"""Stage ``centroids``: k-means over the column vectors (Spark MLlib) and PGTUS Algorithm 1 partitions per table.

The model is fitted with MLlib ``KMeans`` on a bounded seeded sample of the column vectors read straight from the
``column_vectors`` files (:func:`fit_kmeans`); MLlib has no warm start, so between retrains new columns are assigned
to the stored centroids by the nearest-centroid step of ``discovery.union`` inside the Spark tasks, which are handed
the model and the file list by the driver.  Retraining (and rebuilding every partition) happens on the first
build, a full rebuild, a new column-encoder version, or quantisation-error drift (see ``discovery.config.UnionConfig``).
"""
from __future__ import annotations

import math
import sys
import time
from functools import partial

import numpy as np

from discovery.refresh import StageContext, StageReport, plan_derived
from discovery.store import save_model
from discovery.union.stage import MODEL, CentroidModel, current_model, drifted, partition_batch, quantisation_batch
from spark_jobs.common import fan_out, replace_tables, run_stage
from spark_jobs.profile_columns import done_pairs

STAGE = "centroids"


def fit_sample(spark, ctx: StageContext):
    """(DataFrame of ``features``, number of column vectors): a seeded sample of about ``[union] fit_columns`` of the
    current ``column_vectors`` version (all of them when there are fewer), in as many partitions as the application
    has cores.  Read straight from the files it would have one partition per file, and every one of the ~20 jobs of
    a fit would run that many tasks."""
    from pyspark.ml.functions import array_to_vector

    cfg = ctx.config.union
    if cfg.fit_columns < 2:
        raise ValueError(f"[union] fit_columns must be at least 2, got {cfg.fit_columns}")
    n = int(sum(ctx.store.files("column_vectors").column("num_records").to_pylist()))
    df = spark.read.parquet(*ctx.store.file_uris("column_vectors")).select("vector")
    if n > cfg.fit_columns:
        df = df.sample(withReplacement=False, fraction=cfg.fit_columns / n, seed=cfg.seed)
    parts = max(spark.sparkContext.defaultParallelism, 1)
    return df.coalesce(parts).select(array_to_vector("vector").alias("features")), n


def fit_kmeans(spark, ctx: StageContext, encoder_version: str) -> CentroidModel:
    """MLlib k-means with k about sqrt(#columns) of the whole lake, fitted on :func:`fit_sample`, which bounds the
    cost of a fit (points x k per iteration) as the lake grows."""
    from pyspark.ml.clustering import KMeans

    cfg = ctx.config.union
    df, n = fit_sample(spark, ctx)
    df = df.cache()
    try:
        m = df.count()
        k = max(1, min(cfg.k or max(2, round(math.sqrt(n))), m))
        km = KMeans(k=k, maxIter=cfg.max_iter, seed=cfg.seed, featuresCol="features").fit(df)
        centers = np.asarray(km.clusterCenters(), dtype=np.float32)
        cost = float(km.summary.trainingCost)
    finally:
        df.unpersist()
    return CentroidModel.fit_result(centers, encoder_version, cost / max(m, 1), n)


def run(spark, ctx: StageContext) -> StageReport:
    wh = ctx.store
    if wh.committed("centroid_partitions", STAGE, ctx.refresh_id):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    catalog = wh.read("catalog")
    done = done_pairs(ctx, "centroid_partitions")
    versions = set(wh.read("column_vectors", columns=["encoder_version"]).column("encoder_version").to_pylist())
    if not versions:  # nothing embedded (yet): nothing to partition, and no stale partitions may stay
        replace_tables(spark, "centroid_partitions", catalog.slice(0, 0), done.column("table_id").to_numpy(),
                                 partition_batch, ctx, STAGE)
        return StageReport(STAGE, message="no column vectors")
    if len(versions) > 1:
        raise RuntimeError(f"column vectors carry {len(versions)} encoder versions; the embed stage of this refresh "
                           "did not finish rebuilding them")
    encoder_version = versions.pop()
    model = current_model(wh)
    built_with = set(wh.read("centroid_partitions", columns=["model_version"]).column("model_version").to_pylist())
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
                                     partial(partition_batch, model=model, files=vector_files), ctx, STAGE)
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows, message=message)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
