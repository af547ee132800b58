"""Stage ``pivots``: the PEXESO index of the value vectors (pivot mapping, grid cells, JSD partitions).

The model is fitted on the driver from a bounded random sample of value vectors (a sample, never the table), then
every value vector of a new or changed table is mapped in Spark tasks by ``discovery.indexes.join.stage.mapping_batch``.
|P| and m not set in ``[join]`` are chosen by the cost model (``discovery.indexes.join.cost``) on that sample.  Pivots
are reselected, and every mapping rebuilt, on the first build, ``full_rebuild``, a new join encoder, or when the lake
outgrew its partitions: the partition count is recomputed on every refresh from the lake's value vectors and
``memory_budget_mb``.  After mapping, the stored partitions are settled on the lake's full column sizes (columns
moved out of over-full partitions, their tables mapped again with that placement); only a lake that cannot be settled
is refitted.
"""
from __future__ import annotations

import sys
import time
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.data.store import save_model
from discovery.indexes.join.cost import CANDIDATES, MIN_VECTORS, SMALL_LAKE, choose_parameters
from discovery.indexes.join.partitioning import partition_capacity, partition_count, settle
from discovery.indexes.join.stage import (COLUMN_KEY_BASE, MODEL, Histograms, column_keys, current_model,
                                          fit_pivot_model, mapping_batch)
from discovery.stages import StageContext, StageReport, plan_derived
from spark_jobs.common import run_stage
from spark_jobs.fanout import replace_tables, sample_index_rows

STAGE = "pivots"
#: Refits a refresh may make to bring an over-full partition within the budget.
REBALANCES = 3


def _sample(spark, ctx: StageContext, n_rows: int):
    """Sampled vectors, their column keys, and the mean UTF-8 length of the sampled value strings."""
    cfg = ctx.config.join
    rate = min(1.0, 1.2 * cfg.sample / max(n_rows, 1))
    rows = sample_index_rows(spark, ctx, "value_vectors", ["table_id", "ordinal", "vector", "value"], rate,
                             cfg.seed, per_row=True).slice(0, cfg.sample)
    if rows.num_rows == 0:
        return np.zeros((0, 0), np.float32), column_keys(np.zeros(0, np.int64), np.zeros(0, np.int64)), 0.0
    flat = rows.column("vector").combine_chunks()
    vectors = flat.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(len(flat), -1)
    keys = column_keys(rows.column("table_id").to_numpy(), rows.column("ordinal").to_numpy())
    value_bytes = pc.binary_length(rows.column("value").cast(pa.binary()))
    return vectors, keys, float(pc.mean(value_bytes).as_py())


def _capacity(model, budget: int) -> int:
    return partition_capacity(budget, model.pivots.shape[1], len(model.pivots), model.grid.levels,
                              model.choice.get("value_bytes", 32.0))


def stored_columns(wh, model):
    """(column keys, vector counts, stored partition, divergence plus price to every centre) of the whole lake, from
    the stored ``pivot_mappings`` keys, cells and partitions (a few integer columns, never the vectors), read a batch
    at a time: each batch is reduced to its columns' histograms (:meth:`PivotModel.histograms`) and placements
    before the next is read, so the driver never holds a row of every value vector."""
    parts, placed_keys, placed = [], [], []
    for batch in wh.parquet_dataset("pivot_mappings").to_batches(columns=["table_id", "ordinal", "cell", "partition"]):
        keys = column_keys(batch.column(0).to_numpy(), batch.column(1).to_numpy())
        parts.append(model.histograms(batch.column(2).to_numpy(), keys))
        distinct, first = np.unique(keys, return_index=True)
        placed_keys.append(distinct)
        placed.append(batch.column(3).to_numpy()[first])
    if not parts:
        parts = [model.histograms(np.zeros(0, np.int64), np.zeros(0, np.int64))]
    columns, sizes, dist = model.divergences_of(Histograms.merge(parts))
    partition = np.zeros(len(columns), dtype=np.int64)
    if placed:
        partition[np.searchsorted(columns, np.concatenate(placed_keys))] = np.concatenate(placed)
    return columns, sizes, partition, dist + model.prices


def _over_budget(wh, model, budget: int) -> str | None:
    """Why a stored partition breaks the budget, or None.  A partition holding a single column larger than the
    capacity is within the bound ("the budget or the largest column")."""
    _, sizes, partition, _ = stored_columns(wh, model)
    loads = np.bincount(partition, weights=sizes, minlength=model.n_partitions)
    counts = np.bincount(partition, minlength=model.n_partitions)
    over = np.flatnonzero((loads > _capacity(model, budget)) & (counts > 1))
    if over.size:
        j = int(over[np.argmax(loads[over])])
        return f"partition {j} holds {int(loads[j])} value vectors, over the memory budget"
    return None


def _settle(spark, ctx: StageContext, model, budget: int, source: pa.Table, stage: str) -> str:
    """Move columns out of over-full stored partitions on the lake's full column sizes (:func:`settle`) and map the
    tables of the moved columns again with their placement; returns what it did for the stage message."""
    wh = ctx.store
    columns, sizes, partition, cost = stored_columns(wh, model)
    cap = _capacity(model, budget)
    placed = settle(cost, sizes, partition, cap)
    moved = placed != partition
    loads = np.bincount(placed, weights=sizes, minlength=model.n_partitions)
    if not moved.any():
        return f"largest partition {int(loads.max(initial=0))} of {cap} value vectors"
    tables = np.unique(columns[moved] // COLUMN_KEY_BASE)
    rewrite = np.isin(columns // COLUMN_KEY_BASE, tables)  # every column of those tables keeps its placement
    ids = pa.array(tables, pa.int64())
    subset = source.filter(pc.is_in(source["table_id"], ids))
    done = ctx.store.pairs("pivot_mappings")
    plan = plan_derived(subset, done.filter(pc.is_in(done["table_id"], ids)), True)
    order = np.argsort(columns[rewrite], kind="stable")
    batch = partial(mapping_batch, model=model, files=wh.files("value_vectors"),
                    placed=(columns[rewrite][order], placed[rewrite][order]))
    replace_tables(spark, "pivot_mappings", plan.work, plan.remove_ids, batch, ctx, stage)
    return (f"settled on full column sizes: {int(moved.sum())} column(s) of {tables.size} table(s) moved; "
            f"largest partition {int(loads.max())} of {cap} value vectors")


def _outgrown(model, n_rows: int, budget: int) -> str | None:
    """Why the current model has too few partitions for the lake within the budget, or None.  (Stored partitions
    over the budget with enough of them are settled after mapping, not refitted: :func:`_settle`.)"""
    need = partition_count(n_rows, model.pivots.shape[1], len(model.pivots), model.grid.levels, budget,
                           model.choice.get("value_bytes", 32.0))
    if need > model.n_partitions:
        return f"the lake grew to {n_rows} value vectors: {need} partition(s) needed, {model.n_partitions} built"
    return None


def _refit(spark, ctx: StageContext, encoder_version: str, n_rows: int, budget: int, reason: str,
           at_least: int = 1, stage: str = STAGE):
    """Fit, save and publish a new pivot model on a fresh sample; returns it and the stage message.  ``stage``
    names the commit of its ``pivots`` rows (a rebalance within one refresh commits under its own name)."""
    wh, cfg = ctx.store, ctx.config.join
    started = time.time()
    vectors, keys, value_bytes = _sample(spark, ctx, n_rows)
    if cfg.n_pivots and cfg.levels:
        n_pivots, levels, choice = cfg.n_pivots, cfg.levels, {"by": "configuration"}
    elif n_rows < MIN_VECTORS:
        n_pivots, levels = cfg.n_pivots or SMALL_LAKE[0], cfg.levels or SMALL_LAKE[1]
        choice = {"by": f"small lake (under {MIN_VECTORS} value vectors)"}
    else:
        pinned = [(p, m) for p, m in CANDIDATES if cfg.n_pivots in (0, p) and cfg.levels in (0, m)]
        n_pivots, levels, choice = choose_parameters(vectors, keys, n_rows, cfg.tau, cfg.metric, cfg.seed,
                                                     pinned or [(cfg.n_pivots or 7, cfg.levels or 3)])
    n_parts = max(partition_count(n_rows, vectors.shape[1], n_pivots, levels, budget, value_bytes), at_least)
    model = fit_pivot_model(vectors, keys, encoder_version, n_pivots, levels, cfg.metric, n_parts, cfg.seed,
                            choice={**choice, "value_bytes": value_bytes})
    save_model(wh, MODEL, model.version, model.params(), model.payload(), refresh_id=ctx.refresh_id,
               attempt=ctx.attempt)
    old = wh.files("pivots").column("path").to_pylist()
    wh.append_rows("pivots", model.rows(), refresh_id=ctx.refresh_id, stage=stage, attempt=ctx.attempt,
                   replace_paths=old)
    cap = _capacity(model, budget)
    return model, (f"pivots reselected ({reason}) from {len(vectors)} of {n_rows} value vectors in "
                   f"{time.time() - started:.1f} s: {model.version}; |P| = {n_pivots}, m = {levels} "
                   f"({choice['by']}); {model.n_partitions} partition(s) of at most {cap} value vectors "
                   f"(budget {cfg.memory_budget_mb} MiB)")


def run(spark, ctx: StageContext) -> StageReport:
    wh = ctx.store
    if wh.committed("pivot_mappings", STAGE, ctx.refresh_id):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    cfg = ctx.config.join
    vv_pairs = ctx.store.pairs("value_vectors")
    # Work is defined by the value vectors (only join-candidate columns have any), not by the catalog.
    source = vv_pairs.append_column("status", pa.repeat(pa.scalar("ok", pa.string()), vv_pairs.num_rows))
    done = ctx.store.pairs("pivot_mappings")
    versions = wh.distinct("value_vectors", "encoder_version")
    if len(versions) > 1:
        raise RuntimeError(f"value vectors carry {len(versions)} encoder versions; the embed stage of this refresh "
                           "did not finish rebuilding them")
    model = current_model(wh)
    built_with = wh.distinct("pivot_mappings", "model_version")
    reason = None
    if versions and model is None:
        reason = "first build"
    elif versions and ctx.full:
        reason = "full rebuild"
    elif versions and model.encoder_version != next(iter(versions)):
        reason = "new join encoder"
    n_rows = wh.count_rows("value_vectors")
    budget = int(cfg.memory_budget_mb * (1 << 20))
    if reason is None and versions and model is not None:
        reason = _outgrown(model, n_rows, budget)
    message = f"model {model.version}" if model else "no value vectors"
    if reason is not None:
        model, message = _refit(spark, ctx, next(iter(versions)), n_rows, budget, reason)
    rebuild_all = reason is not None or bool(model and built_with - {model.version})
    plan = plan_derived(source, done, rebuild_all)
    batch = partial(mapping_batch, model=model, files=wh.files("value_vectors"))
    _, counts, rows = replace_tables(spark, "pivot_mappings", plan.work, plan.remove_ids, batch, ctx, STAGE)
    if model is not None and versions and model.n_partitions > 1:
        message = f"{message}; {_settle(spark, ctx, model, budget, source, f'{STAGE}_settle')}"
    for attempt in range(1, REBALANCES + 1):
        # The bound is checked on the stored partitions, not only estimated: new tables mapped under the current
        # prices may crowd one partition, and prices fitted on a sample's histograms balance the sample, not the
        # lake; the settling pass then moves columns on their full sizes.  Only a lake it cannot settle (no room left
        # in any partition) is refitted (on a sample holding the new tables; with one more partition after a refit of
        # this refresh) and every table mapped again, each round its own commit.  Should an attempt stop in between,
        # the next refresh settles the stored partitions after its own mapping.
        over = _over_budget(wh, model, budget) if model is not None and versions else None
        if over is None:
            break
        stage = f"{STAGE}_rebalance_{attempt}"
        model, again = _refit(spark, ctx, next(iter(versions)), n_rows, budget, over,
                              model.n_partitions + (reason is not None or attempt > 1), stage)
        message = f"{message}; then {again}"
        plan = plan_derived(source, ctx.store.pairs("pivot_mappings"), True)
        batch = partial(mapping_batch, model=model, files=wh.files("value_vectors"))
        _, counts, rows = replace_tables(spark, "pivot_mappings", plan.work, plan.remove_ids, batch, ctx, stage)
        message = f"{message}; {_settle(spark, ctx, model, budget, source, f'{stage}_settle')}"
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_processed=counts.get("tables_processed", 0), rows_written=rows, message=message)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
