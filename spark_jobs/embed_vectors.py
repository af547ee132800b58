"""Stage ``embed``: column, table and value vectors of new and changed tables, and the encoders trained on the lake.

1. Encoders.  The column encoder comes from ``[embed]``.  The ``join`` and TACTUS ``table`` encoders are (re)trained
   on the first build, a full rebuild, a changed setting (or column encoder, for the table encoder), or when the lake
   grew past ``retrain_growth`` since their last training.  Training runs in Spark tasks, one per encoder, so the two
   trainings run side by side on two cores, each task reads its bounded sample straight from the lake (no lake rows
   pass through the driver) and writes its model row straight into ``models`` (and, on a local warehouse, the plain
   copy of the weights that the encoding tasks map: :func:`~discovery.transforms.encoders.stored.keep_payload_file`);
   the driver only commits.  The versions used are recorded as the ``embed.encoders`` model, which the snapshot
   pins for queries.
2. Vectors.  ``column_vectors``, ``table_vectors`` and ``value_vectors`` are replaced per lake table: only added
   and changed tables are encoded, unless an output's stored ``encoder_version`` differs from the encoder now in use,
   in which case every table is re-encoded for that output in this refresh.  One Spark job reads each lake table
   once and writes files of all three outputs; each output is then committed once with the stage's application
   transaction (value and table vectors before column vectors: ``column_vectors`` is what the next attempt plans
   from, so it is committed last and a retry after a partial commit redoes exactly the missing outputs).
"""
from __future__ import annotations

import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.data.store import DataFile, write_data_file
from discovery.query.vectors import OUTPUTS, EmbedSpec, EncoderRefs, embed_batch
from discovery.stages import StageContext, StageReport, indexed_ids, plan_derived
from discovery.transforms.encoders.lake_training import (join_config, join_requires, read_sample, sample_tables,
                                                         table_config, table_requires, train_join_model,
                                                         train_table_model)
from discovery.transforms.encoders.stored import (COLUMN_MODEL, JOIN_MODEL, SET_MODEL, TABLE_MODEL, column_encoder,
                                                  column_requires, keep_payload_file, latest_row, model_table,
                                                  model_version, needs_training, usable)
from spark_jobs.common import run_stage
from spark_jobs.fanout import (collect, file_record, from_ipc, merge_small, rewrite_tasks, run_tasks, to_ipc,
                               work_tasks)

STAGE = "embed"
#: Commit order: ``column_vectors`` last (see the module docstring).
COMMIT_ORDER = ("value_vectors", "table_vectors", "column_vectors")
_SHOWN = 10
#: The kinds of note an embed task reports (:func:`discovery.query.vectors.embed_batch`).
_NOTE_KINDS = ("capped", "failed")


def _validate(ctx: StageContext) -> None:
    cfg = ctx.config.embed
    if cfg.join_min_distinct < 2:
        raise ValueError("[embed] join_min_distinct must be at least 2")
    if cfg.join_max_values < 1 or cfg.column_values < 1 or cfg.train_tables < 2:
        raise ValueError("[embed] join_max_values and column_values must be positive, train_tables at least 2")
    budget = cfg.train_seconds
    if isinstance(budget, bool) or not isinstance(budget, (int, float)) or not 0 <= budget < float("inf"):
        raise ValueError(f"[embed] train_seconds must be a number of seconds >= 0 (0: no budget), got {budget!r}")
    join_config(cfg)
    table_config(cfg)


def choose_encoders(spark, ctx: StageContext, ok: pa.Table) -> tuple[EncoderRefs, list[str]]:
    """Train what needs training (Spark tasks), store new model versions, return the versions to encode with."""
    wh, cfg, rid = ctx.store, ctx.config.embed, ctx.refresh_id
    agreement = ctx.config.profile.type_agreement
    spec = EmbedSpec(agreement, cfg.join_min_distinct, cfg.join_max_values, cfg.join_segments)
    if wh.committed("models", STAGE, rid):
        return EncoderRefs.from_params(latest_row(wh, SET_MODEL).params), ["encoders chosen by an earlier attempt"]
    column = column_encoder(cfg)
    col_payload = column.to_bytes()
    col_version = model_version(column.kind, col_payload, column_requires(agreement))
    j_req, t_req = join_requires(cfg, agreement), table_requires(cfg, col_version)
    rows = {name: latest_row(wh, name) for name in (COLUMN_MODEL, JOIN_MODEL, TABLE_MODEL, SET_MODEL)}
    n_ok = ok.num_rows
    jobs = []
    if n_ok:
        reason = needs_training(rows[JOIN_MODEL], j_req, n_ok, ctx.full, cfg.retrain_growth)
        if reason:
            jobs.append(("join", reason))
    if n_ok >= max(cfg.table_min_tables, 2):
        reason = needs_training(rows[TABLE_MODEL], t_req, n_ok, ctx.full, cfg.retrain_growth)
        if reason:
            jobs.append(("table", reason))
    trained = _train(spark, ctx, ok, jobs, col_version, {n: r.version for n, r in rows.items() if r}, n_ok)

    notes, files = [], [DataFile(**t["file"]) for t in trained.values() if t.get("file")]
    chosen = {}
    for kind, name, req in (("join", JOIN_MODEL, j_req), ("table", TABLE_MODEL, t_req)):
        if kind in trained and trained[kind].get("version"):
            t = trained[kind]
            chosen[kind] = t["version"]
            notes.append(f"{kind} encoder {t['version']} trained in {t['seconds']:.1f} s ({t['params']['reason']}; "
                         f"{t['params']['sample_tables']} tables, "
                         + (f"{t['params']['values']} values, " if kind == "join" else "")
                         + _steps_text(t["params"], cfg.train_seconds) + ")")
        elif usable(rows[name], req):
            chosen[kind] = rows[name].version
            notes.append(f"{kind} encoder {rows[name].version}")
        else:
            chosen[kind] = None
            notes.append("no join encoder (no join-candidate values)" if kind == "join" else
                         f"table vectors are means of column vectors (fewer than {cfg.table_min_tables} ok tables)")
    refs = EncoderRefs(col_version, chosen["table"], chosen["join"], spec)
    set_params = refs.to_params()
    set_version = model_version("set", b"", set_params)
    for name, version, params, data in (
            (COLUMN_MODEL, col_version, {"requires": column_requires(agreement), "encoder_version": column.version},
             col_payload),
            (SET_MODEL, set_version, set_params, b"")):
        if rows[name] is None or rows[name].version != version:
            files.append(write_data_file(wh.table_uri("models"), model_table(name, version, params, data, rid),
                                         rid, STAGE, ctx.attempt))
    if files:
        wh.commit("models", files, [], refresh_id=rid, stage=STAGE, attempt=ctx.attempt)
    return refs, notes


def _steps_text(params: dict, budget: float) -> str:
    """``234 steps``, or ``117 of 234 steps (train_seconds 150)`` when the time budget cut them, or ``75 of 234 steps
    (held-out loss flat)`` when training stopped as the held-out loss no longer fell."""
    if params["steps"] < params["planned_steps"]:
        why = f"train_seconds {budget:g}" if params.get("stopped") == "time budget" else "held-out loss flat"
        return f"{params['steps']} of {params['planned_steps']} steps ({why})"
    return f"{params['steps']} steps"


def _train(spark, ctx: StageContext, ok: pa.Table, jobs: list[tuple[str, str]], col_version: str,
           latest: dict[str, str], n_ok: int) -> dict[str, dict]:
    """Run one Spark task per encoder to train; each writes its model row file unless that version is the latest."""
    if not jobs:
        return {}
    cfg, lake, limits, rid, attempt = ctx.config.embed, ctx.lake, ctx.config.limits, ctx.refresh_id, ctx.attempt
    agreement = ctx.config.profile.type_agreement
    wh = ctx.store
    models_uri = wh.table_uri("models")
    sample = to_ipc(sample_tables(ok, cfg.train_tables, cfg.seed).select(["table_id", "path", "format", "bytes"]))

    def task(i: int):
        kind, reason = jobs[i]
        tables = read_sample(from_ipc(sample), lake, limits, agreement)
        if kind == "join":
            model = train_join_model(tables, cfg, agreement, n_ok, reason)
        else:
            model = train_table_model(tables, cfg, column_encoder(cfg), col_version, n_ok, reason)
        if model is None:
            yield {"kind": kind}
            return
        rec = {"kind": kind, "version": model.version, "seconds": model.seconds, "params": model.params}
        if latest.get(model.name) != model.version:
            rows = model_table(model.name, model.version, model.params, model.payload, rid)
            rec["file"] = write_data_file(models_uri, rows, rid, STAGE, attempt).to_dict()
        keep_payload_file(wh, model.version, model.payload)
        yield rec

    return {r["kind"]: r for r in run_tasks(spark, (len(jobs), task))}


def plan_outputs(ctx: StageContext, catalog: pa.Table, refs: EncoderRefs):
    """Work rows (catalog rows with one flag per output), ids to remove per output, the base plan and which
    outputs are rebuilt in full."""
    ok = catalog.filter(pc.equal(catalog["status"], "ok"))
    ok_ids = ok.column("table_id").to_numpy()
    present = {name: ctx.store.pairs(name) for name in OUTPUTS}
    expected = {"column_vectors": refs.column, "table_vectors": refs.table_vector_version,
                "value_vectors": refs.value_vector_version}
    stale = {name: bool(t.num_rows) and (expected[name] is None or bool(
        ctx.store.distinct(name, "encoder_version") - {expected[name]})) for name, t in present.items()}
    done = present["column_vectors"]
    base_full = ctx.full or stale["column_vectors"]
    base = plan_derived(catalog, done, base_full)
    base_ids = base.work.column("table_id").to_numpy()
    flags, removes, rebuilt = {}, {}, []
    for name in OUTPUTS:
        ids = np.unique(present[name].column("table_id").to_numpy()).astype(np.int64)
        if ctx.store.committed(name, STAGE, ctx.refresh_id):
            flags[name], removes[name] = np.zeros(ok.num_rows, dtype=bool), np.empty(0, np.int64)
        elif base_full or stale[name]:
            flags[name], removes[name] = np.ones(ok.num_rows, dtype=bool), ids
            rebuilt.append(name)
        else:
            flags[name] = np.isin(ok_ids, base_ids)
            # also the rows this output already holds for a table it is about to get again: a refresh killed between
            # the outputs' commits leaves an added table in value_vectors, say, but not in column_vectors (the base)
            again = np.intersect1d(base_ids, ids)
            removes[name] = np.union1d(np.union1d(base.remove_ids, again),
                                       np.setdiff1d(ids, indexed_ids(catalog))).astype(np.int64)
    for name in OUTPUTS:
        ok = ok.append_column(f"do_{name}", pa.array(flags[name]))
    any_flag = np.logical_or.reduce([flags[n] for n in OUTPUTS])
    return ok.filter(pa.array(any_flag)).sort_by("table_id"), removes, base, rebuilt


def run(spark, ctx: StageContext) -> StageReport:
    _validate(ctx)
    wh = ctx.store
    catalog = wh.read("catalog")
    ok = catalog.filter(pc.equal(catalog["status"], "ok"))
    refs, notes = choose_encoders(spark, ctx, ok)
    work, removes, base, rebuilt = plan_outputs(ctx, catalog, refs)

    uris = {name: wh.table_uri(name) for name in OUTPUTS}
    rid, attempt = ctx.refresh_id, ctx.attempt

    def piece(rows: pa.Table):
        out, counts, found = embed_batch(rows, ctx, refs)
        yield {"counts": counts, "notes": _notes(found)}
        for name, vectors in out.items():
            if vectors.num_rows:
                yield file_record(name, uris[name], vectors, ctx, STAGE)

    records = run_tasks(spark, *(rewrite_tasks(spark, name, removes[name], ctx, STAGE) for name in OUTPUTS),
                        work_tasks(spark, work, ctx, piece))
    got = collect(records)
    found: dict[str, dict] = {kind: {"n": 0, "shown": []} for kind in _NOTE_KINDS}
    for rec in records:
        for kind, note in rec.get("notes", {}).items():
            found[kind]["n"] += note["n"]
            found[kind]["shown"] = (found[kind]["shown"] + note["shown"])[:_SHOWN]
    for name in COMMIT_ORDER:
        if got.files[name] or got.removes[name]:
            wh.commit(name, got.files[name], got.removes[name], refresh_id=rid, stage=STAGE, attempt=attempt)
    merge_small(ctx, "table_vectors", STAGE)  # one row per lake table: see Warehouse.merge_small_files
    return StageReport(STAGE, tables_added=base.added, tables_changed=base.changed, tables_deleted=base.deleted,
                       tables_failed=got.counts.get("tables_failed", 0),
                       tables_processed=got.counts.get("tables_processed", 0), rows_written=got.written,
                       message=_message(notes, rebuilt, found, ctx))


def _notes(found: list[dict]) -> dict[str, dict]:
    """A task's notes as the stage message uses them: per kind, how many and the first :data:`_SHOWN` (a full build
    caps a column of every large table; the driver need not hold them all)."""
    out = {}
    for kind in _NOTE_KINDS:
        mine = [f for f in found if kind in f]
        out[kind] = {"n": len(mine), "shown": mine[:_SHOWN]}
    return out


def _message(notes: list[str], rebuilt: list[str], found: dict[str, dict], ctx: StageContext) -> str:
    parts = list(notes)
    if rebuilt:
        parts.append("rebuilt in full: " + ", ".join(rebuilt))
    capped = found["capped"]
    if capped["n"]:
        shown = ", ".join(f"{f['capped']}:{f['column']} ({f['distinct']})" for f in capped["shown"])
        more = f" and {capped['n'] - len(capped['shown'])} more" if capped["n"] > len(capped["shown"]) else ""
        parts.append(f"{capped['n']} columns hit the cap of {ctx.config.embed.join_max_values} value vectors: "
                     f"{shown}{more}")
    failed = found["failed"]
    if failed["n"]:
        parts.append(f"{failed['n']} tables could not be read: "
                     + ", ".join(f"{f['failed']} ({f['error']})" for f in failed["shown"]))
    return "; ".join(parts)


if __name__ == "__main__":
    sys.exit(run_stage(STAGE, run))
