"""``lakescout batch``: validate and run a batch of queries, in this process or on Spark; results to query_results."""
from __future__ import annotations

import json
import os

from ..submit import run_job
from .common import UsageError, add_common, add_warehouse, session
from .output import table


def cmd_batch(args) -> int:
    from ..batch import run_batch

    try:
        with open(args.spec, encoding="utf-8") as fh:
            spec = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read batch spec {args.spec!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"batch spec {args.spec!r} is not UTF-8 text (byte {exc.start})") from None
    summary = None
    work = session(args)
    if args.master:
        summary = _batch_on_spark(args, work, spec)   # a failed application: JobFailed, exit code 1
    if summary is None:
        summary = run_batch(work, spec, batch_id=args.batch_id, snapshot_id=args.snapshot)
    if args.json:
        print(json.dumps(summary, default=str))
    else:
        print_summary(summary)
    return 0


def print_summary(summary: dict) -> None:
    """A batch as a table: one row per query with its result count and its best result with that result's score
    (``--json``: every field)."""
    where = f" on {summary['spark_tasks']} Spark tasks" if summary.get("spark_tasks") else ""
    n = len(summary["queries"])
    print(f"batch {summary['batch_id']}" + (f" ({summary['name']})" if summary.get("name") else "")
          + f"  snapshot {summary['snapshot_id']}  {n} quer{'y' if n == 1 else 'ies'}, {summary['results']} results "
          f"in {summary['seconds']:.1f} s{where}, recorded in query_results")
    rows = []
    for q in summary["queries"]:
        top = (q.get("top") or [{}])[0]
        best = top.get("path", "")
        if best and top.get("column"):
            best += f" [{top['column']}]"
        rows.append({"id": q["id"], "kind": q["kind"], "query": q["query"], "results": q["results"],
                     "score": "" if top.get("score") is None else f"{top['score']:.3g}", "best": best})
    print(table(rows, ["id", "kind", "query", "results", "score", "best"], flexible=("query", "best")))


def _batch_on_spark(args, work, spec: str) -> dict | None:
    """The summary of a batch answered by a ``spark-submit`` application on ``--master`` (``spark_jobs.query_batch``),
    or None when the batch is smaller than ``[batch] spark_min_queries`` and runs in this process instead."""
    from ..batch import batch_snapshot, open_batch, parse_spec

    batch = parse_spec(spec)
    if len(batch.queries) < work.config.batch.spark_min_queries:
        return None
    batch_id, done = open_batch(work.warehouse, args.batch_id)
    if done is not None:
        return done
    batch_snapshot(work.warehouse, batch, args.snapshot)  # a missing snapshot is refused before Spark starts
    args_ = ["--warehouse", args.warehouse, "--spec", os.path.abspath(args.spec), "--batch-id", batch_id]
    if args.snapshot is not None:
        args_ += ["--snapshot", str(args.snapshot)]
    if args.config is not None:
        args_ += ["--config", os.path.abspath(args.config)]
    return run_job("query_batch", args.master, args_, f"batch {batch_id}", "nothing was recorded")


def register(sub) -> None:
    b = sub.add_parser("batch", help="validate and run a batch of queries; results go to the query_results table")
    add_warehouse(b)
    b.add_argument("--spec", required=True, metavar="FILE",
                   help='JSON file: {"queries": [{"kind": "union|join|nary", "query": ...}]}')
    b.add_argument("--batch-id", default=None, help="idempotency key: a batch already recorded is not run again")
    b.add_argument("--snapshot", type=int, default=None, metavar="ID",
                   help="snapshot id (default: the spec's, else the latest)")
    b.add_argument("--master", default=None,
                   help="Spark master (e.g. local[4], spark://host:7077) that answers a batch of at least "
                        "[batch] spark_min_queries queries (default: every batch runs in this process)")
    add_common(b, cmd_batch)
