"""Stage ``xash``: MATE's inverted index with XASH super keys (``xash_postings``) and its versioned model.

Pass 1 runs over the added and changed tables (all tables on a first build or ``--full``): each Spark task reads its
tables once and returns their statistics rows (character counts, distinct-value sketch) and, when a model exists,
writes their postings built with it; the removal of replaced and deleted tables' postings runs in the same job.  The
driver merges the statistics of every indexed table into a candidate model and refits when the model is missing,
on a full rebuild, when ``[xash] bits`` changed, or when the corpus drifted past ``[xash] drift_threshold``.  On a
refit the files of pass 1 are discarded, the model is saved, and pass 2 rebuilds every table's postings with it,
replacing all postings in one commit.  ``xash_stats`` (one row per table, recording the model its postings were
built with) is committed last: it is the stage's done marker, so a refresh that died half way is finished by the
next one.
"""
from __future__ import annotations

import base64
import sys
from functools import partial

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.data.store import DataFile, latest_model, save_model
from discovery.data.store.files import resolve
from discovery.indexes.nary.stage import (MODEL_NAME, fit_model, model_from_stored, model_payload, refit_reason,
                                          stored_version, truncated_tables, xash_batch)
from discovery.stages import StageContext, StageReport, indexed_ids, plan_derived
from spark_jobs.common import run_stage
from spark_jobs.fanout import Tasks, collect, file_record, from_ipc, rewrite_tasks, run_tasks, to_ipc, work_tasks

STAGE = "xash"


def _build_tasks(spark, work: pa.Table, ctx: StageContext, model, version, with_stats: bool) -> Tasks:
    """Tasks over chunks of ``work``: statistics rows in the returned records, postings written as files."""
    uri = ctx.store.table_uri("xash_postings")
    batch = partial(xash_batch, model=model, model_version=version, with_stats=with_stats)

    def piece(rows: pa.Table):
        postings, stats, counts = batch(rows, ctx)
        yield {"counts": counts,
               "stats": base64.b64encode(to_ipc(stats)).decode("ascii") if stats.num_rows else None}
        if postings.num_rows:
            yield file_record("xash_postings", uri, postings, ctx, STAGE)

    return work_tasks(spark, work, ctx, piece)


def _run(spark, *fan_outs: Tasks) -> tuple[list[DataFile], list[str], dict, list[pa.Table]]:
    """Run ``fan_outs`` as one Spark job: the postings files written and removed, the counters, the statistics."""
    records = run_tasks(spark, *fan_outs)
    stats = [from_ipc(base64.b64decode(r["stats"])) for r in records if r.get("stats")]
    got = collect(records)
    return got.files["xash_postings"], got.removes["xash_postings"], got.counts, stats


def _discard(ctx: StageContext, files: list[DataFile]) -> None:
    """Delete files written by this attempt that will not be committed."""
    fs, root = resolve(ctx.store.table_uri("xash_postings"))
    for f in files:
        fs.delete_file(f"{root}/{f.path}")


def run(spark, ctx: StageContext) -> StageReport:
    wh, cfg = ctx.store, ctx.config.xash
    if wh.committed("xash_stats", STAGE, ctx.refresh_id):
        return StageReport(STAGE, message="already committed by an earlier attempt of this refresh")
    stored = latest_model(wh, MODEL_NAME)
    current = model_from_stored(stored) if stored is not None else None
    catalog = wh.read("catalog")
    old_stats = wh.read("xash_stats")
    done = old_stats.filter(pc.equal(old_stats["model_version"], stored.version)) if stored else old_stats.slice(0, 0)
    certain_refit = current is None or ctx.full or current.bits != cfg.bits
    plan = plan_derived(catalog, done.select(["table_id", "content_hash"]), certain_refit)
    # every posting of a rebuilt or vanished table goes, whatever model its stats row names
    gone = np.setdiff1d(old_stats.column("table_id").to_numpy(), indexed_ids(catalog))
    remove_ids = np.union1d(np.union1d(plan.remove_ids, plan.work.column("table_id").to_numpy()), gone)

    build_now = not certain_refit
    parts = [_build_tasks(spark, plan.work, ctx, current if build_now else None,
                          stored.version if build_now else None, True)]
    if build_now:
        parts.insert(0, rewrite_tasks(spark, "xash_postings", remove_ids, ctx, STAGE))
    files, removes, counts, new_stats = _run(spark, *parts)
    kept = old_stats.filter(pc.invert(pc.is_in(old_stats["table_id"], pa.array(remove_ids, pa.int64()))))
    stats = pa.concat_tables([kept.cast(new_stats[0].schema) if new_stats else kept] + new_stats)
    reason = refit_reason(current, stats, cfg.bits, cfg.drift_threshold, ctx.full)

    processed, message = counts.get("tables_processed", 0), []
    if reason is None:
        version = stored.version
    else:
        _discard(ctx, files)
        model = fit_model(stats, cfg.bits)
        version = stored_version(model, ctx.refresh_id)
        save_model(wh, MODEL_NAME, version, {"bits": model.bits, "alpha": model.alpha, "reason": reason},
                   model_payload(model), refresh_id=ctx.refresh_id, attempt=ctx.attempt)
        everything = catalog.filter(pc.is_in(catalog["table_id"], stats.column("table_id")))
        files, _, rebuilt, _ = _run(spark, _build_tasks(spark, everything, ctx, model, version, False))
        removes = wh.files("xash_postings").column("path").to_pylist()
        processed += rebuilt.get("tables_processed", 0)
        counts["tables_failed"] = counts.get("tables_failed", 0) + rebuilt.get("tables_failed", 0)
        message.append(f"XASH model refitted ({reason}): {version}, {model.bits} bits, alpha {model.alpha}; "
                       "all postings rebuilt")
    result = wh.commit("xash_postings", files, removes, refresh_id=ctx.refresh_id, stage=STAGE, attempt=ctx.attempt)
    if result.version is None:
        _discard(ctx, files)
    stats = stats.set_column(stats.schema.get_field_index("model_version"), "model_version",
                             pa.repeat(pa.scalar(version, pa.string()), stats.num_rows))
    wh.append_rows("xash_stats", stats, refresh_id=ctx.refresh_id, stage=STAGE, attempt=ctx.attempt,
                   replace_paths=wh.files("xash_stats").column("path").to_pylist())
    cut = truncated_tables(stats)
    if cut:
        shown = ", ".join(map(str, cut[:20])) + (" ..." if len(cut) > 20 else "")
        message.append(f"{len(cut)} table(s) indexed only up to max_rows_per_table={cfg.max_rows_per_table} rows "
                       f"(table ids {shown})")
    return StageReport(STAGE, tables_added=plan.added, tables_changed=plan.changed, tables_deleted=plan.deleted,
                       tables_failed=counts.get("tables_failed", 0), tables_processed=processed,
                       rows_written=sum(f.rows for f in files), message="; ".join(message))


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
