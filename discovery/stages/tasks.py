"""Per-lake-table work of the index stages.  Spark tasks call these; so do tests, with no Spark at all.

Each function takes a batch of work rows and the stage context and returns the output rows for the index table
plus counters.  They never raise for a bad lake file: the reason is recorded and the batch goes on.
"""
from __future__ import annotations

import json
from datetime import datetime, UTC

import pyarrow as pa

from ..config import Limits
from ..data.lake import LakeFileError, profile_table, read_lake_table, table_version
from ..data.lake.profile import profile_limits
from ..data.store import SCHEMAS
from .context import StageContext


def _now() -> datetime:
    return datetime.now(UTC)


def scan_batch(work: pa.Table, ctx: StageContext) -> tuple[pa.Table, dict]:
    """Catalog rows for scan work items: hash, and parse when the content is new or changed."""
    out: dict[str, list] = {k: [] for k in SCHEMAS["catalog"].names}
    counts = {"tables_added": 0, "tables_changed": 0, "tables_deleted": 0, "tables_failed": 0,
              "tables_processed": 0}
    now = _now()
    for item in work.to_pylist():
        row = {"table_id": item["table_id"], "path": item["path"], "format": item["format"], "bytes": item["bytes"],
               "mtime_ns": item["mtime_ns"], "content_hash": item["old_hash"], "rows": None, "cols": None,
               "status": "deleted", "error": None, "warnings": "[]", "encoding": None, "delimiter": None,
               "refresh_id": ctx.refresh_id, "indexed_at": now, "fingerprint": item["fingerprint"], "version": None}
        if item["action"] == "deleted":
            counts["tables_deleted"] += 1
        else:
            row.update(_scan_file(item, ctx, counts))
        for k in out:
            out[k].append(row[k])
    return pa.table(out, schema=SCHEMAS["catalog"]), counts


def _failed(item: dict, reason: str, digest: str | None, counts: dict) -> dict:
    """The catalog row of a table that cannot be read now.  A table indexed before (ok or stale) turns stale: it
    keeps its last indexed rows and the catalog fields they were built from, so queries still find it, with the
    reason; its old fingerprint stays, so every refresh reads it again until it reads or disappears."""
    counts["tables_failed"] += 1
    if item["old_status"] in ("ok", "stale") and item["old_row"]:
        kept = {k: v for k, v in item["old_row"].items() if k != "refresh_id"}
        return {**kept, "status": "stale", "error": reason, "content_hash": item["old_hash"]}
    return {"status": "error", "error": reason, "content_hash": digest}


def _scan_file(item: dict, ctx: StageContext, counts: dict) -> dict:
    try:
        digest, version = table_version(ctx.lake, item["path"], item["format"], item["fingerprint"])
    except LakeFileError as exc:
        return _failed(item, str(exc), None, counts)
    except OSError as exc:
        return _failed(item, f"cannot read: {exc}", None, counts)
    if item["action"] == "check" and digest == item["old_hash"] and not ctx.full and item["old_status"] != "stale":
        # Touched but not changed: keep what the last parse found (rows or error), with the new listing fields.
        kept = {k: v for k, v in item["old_row"].items() if k not in ("bytes", "mtime_ns", "fingerprint")}
        return {**kept, "status": item["old_status"], "content_hash": digest, "version": version}
    counts["tables_added" if item["action"] == "new" else "tables_changed"] += 1
    counts["tables_processed"] += 1
    try:
        parsed = read_lake_table(ctx.lake, item["path"], item["format"], item["bytes"], ctx.config.limits)
    except LakeFileError as exc:
        return _failed(item, str(exc), digest, counts)
    except OSError as exc:
        return _failed(item, f"cannot read: {exc}", digest, counts)
    except Exception as exc:  # a reader bug must not stop the refresh; the reason still reaches the catalog
        return _failed(item, f"unexpected {type(exc).__name__}: {exc}", digest, counts)
    return {"status": "ok", "content_hash": digest, "rows": parsed.num_rows, "cols": len(parsed.names),
            "warnings": json.dumps(parsed.warnings), "encoding": parsed.encoding, "delimiter": parsed.delimiter,
            "version": version, "error": None}


def read_work_tables(work: pa.Table, ctx: StageContext, counts: dict, limits: Limits | None = None):
    """(work row, parsed table) for every readable table of a stage's work, counting ``tables_processed`` and
    ``tables_failed``.  A table unreadable now changed after the scan; the next refresh's scan records its new state,
    so a later stage skips it instead of failing the batch."""
    counts.setdefault("tables_processed", 0)
    counts.setdefault("tables_failed", 0)
    for item in work.to_pylist():
        try:
            parsed = read_lake_table(ctx.lake, item["path"], item["format"], item["bytes"],
                                     limits or ctx.config.limits)
        except (LakeFileError, OSError):
            counts["tables_failed"] += 1
            continue
        counts["tables_processed"] += 1
        yield item, parsed


def profile_batch(work: pa.Table, ctx: StageContext) -> tuple[pa.Table, dict]:
    """``columns`` rows for catalog rows (status ok) that need profiling."""
    out: dict[str, list] = {k: [] for k in SCHEMAS["columns"].names}
    counts: dict = {}
    limits = profile_limits(ctx.config.limits, ctx.config.profile)
    for item, parsed in read_work_tables(work, ctx, counts, limits):
        for prof in profile_table(parsed, ctx.config.profile):
            prof.update(table_id=item["table_id"], content_hash=item["content_hash"])
            for k in out:
                out[k].append(prof[k])
    return pa.table(out, schema=SCHEMAS["columns"]), counts
