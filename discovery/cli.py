"""``lakescout`` command line: human tables by default, ``--json`` for machines, exit code 2 on bad input."""
from __future__ import annotations

import argparse
import importlib.util
import json
import os
import shutil
import subprocess
import sys
import tempfile
import textwrap
import time

# Commands import what they use when they run: ``--help`` and the first line of a refresh come before pyarrow,
# pandas and the index store are loaded (about a second and a half of imports).


class UsageError(Exception):
    """Bad input from the user: printed as one clear line, exit code 2, never a traceback."""


class SparkFailed(Exception):
    """A Spark application that failed (not the user's input): exit code 1, with the tail of its log."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command, exit code 2, like every other bad input
    (argparse's own print the whole usage first)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} -h)\n")


def _table(rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return "  (none)"
    cells = [[str(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = lambda vals: ("  " + "  ".join(v.ljust(w) for v, w in zip(vals, widths))).rstrip()  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


# -- refresh ---------------------------------------------------------------------------------------------------------
def _spark_submit() -> str:
    local = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    found = local if os.path.exists(local) else shutil.which("spark-submit")
    if not found:
        raise UsageError("spark-submit not found: install pyspark in this environment")
    return found


def cmd_refresh(args) -> int:
    say = (lambda text: None) if args.json else (lambda text: print(f"lakescout refresh: {text}", flush=True))
    if not os.path.isdir(args.lake) and "://" not in args.lake:
        raise UsageError(f"lake folder {args.lake!r} " + ("is not a folder" if os.path.exists(args.lake)
                                                          else "does not exist"))
    say(f"checking the lake {args.lake} and the warehouse {args.warehouse}")
    from . import storage
    from .config import load_config
    from .refresh.display import RefreshDisplay, failed_text, totals, usage_text
    from .refresh.launch import submit_env
    from .refresh.progress import NOTE, Progress
    from .store.lease import holder as lease_holder

    storage.check(args.lake, "lake")
    storage.check(args.warehouse, "warehouse")
    config = load_config(args.config)
    busy = lease_holder(args.warehouse)  # checked again, atomically, when the refresh takes the lease
    if busy:
        raise UsageError(busy)
    spec = importlib.util.find_spec("spark_jobs.refresh")
    if spec is None or spec.origin is None:
        raise UsageError("the spark_jobs package is not installed next to discovery")
    master = args.master or config.spark.master
    say(f"starting Spark ({master})")
    cmd = [_spark_submit(), "--master", master, spec.origin,
           "--warehouse", args.warehouse, "--lake", args.lake]
    if args.full:
        cmd.append("--full")
    if args.config:
        cmd += ["--config", args.config]
    for name in ("include", "exclude"):
        for pattern in getattr(args, name):
            cmd += [f"--{name}", pattern]
    # Executors run LAKESCOUT_PYSPARK_PYTHON when set (a cluster's own environment), else this interpreter.
    env = submit_env(dict(os.environ, PYSPARK_PYTHON=os.environ.get("LAKESCOUT_PYSPARK_PYTHON", sys.executable),
                          PYSPARK_DRIVER_PYTHON=sys.executable))
    log = tempfile.NamedTemporaryFile("w+", prefix="lakescout-refresh-", suffix=".log", delete=False)
    started = time.time()
    result = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env) as proc, \
            RefreshDisplay(quiet=args.json) as display:
        for line in proc.stdout:
            progress = Progress.parse(line)
            if progress is not None:
                display.progress(progress)
            elif line.startswith(NOTE):
                display.note(line[len(NOTE):].rstrip())
            elif line.startswith('{"stage"'):
                display.stage_finished(json.loads(line))
            elif line.startswith("LAKESCOUT_RESULT "):
                result = json.loads(line[len("LAKESCOUT_RESULT "):])
    if result is not None and "refused" in result:
        raise UsageError(result["refused"])
    if proc.returncode != 0 or result is None or "failed_stage" in result:
        log.seek(0)
        tail = log.read()[-3000:]
        print(f"refresh failed{' in stage ' + result['failed_stage'] if result else ''}; "
              f"the last snapshot still answers queries. Spark log: {log.name}\n{tail}", file=sys.stderr)
        return 1
    result["seconds"] = round(time.time() - started, 1)
    result.update(totals(result.get("stages", [])))
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(f"published snapshot {result['snapshot_id']} (refresh {result['refresh_id']}) "
              f"in {result['seconds']} s (stages {usage_text(result['stage_seconds'], result['cpu'])})"
              + failed_text(result.get("failed_tables", {})))
    return 0


# -- status ----------------------------------------------------------------------------------------------------------
def cmd_status(args) -> int:
    from .status import warehouse_status
    from .store import Warehouse

    st = warehouse_status(Warehouse(args.warehouse))
    if args.json:
        print(json.dumps(st, default=str, indent=2))
        return 0
    snap = st["snapshot"]
    print(f"warehouse  {st['warehouse']}")
    if snap:
        print(f"snapshot   {snap['snapshot_id']} published {snap['created_at']} (refresh {snap['refresh_id']}), "
              f"{st['snapshots']} snapshot(s) in all")
        t = st["tables"]
        print(f"tables     {t.get('ok', 0)} ok, {t.get('stale', 0)} stale, {t.get('error', 0)} error, "
              f"{t.get('deleted', 0)} deleted")
        print(f"formats    {', '.join(f'{k} {v}' for k, v in st.get('formats', {}).items()) or 'none'}")
        rows = ", ".join(f"{k} {v}" for k, v in st.get("index_rows", {}).items() if v)
        print(f"index      {rows or 'empty'}")
    else:
        print("snapshot   none published yet")
    print(f"\nfailed and stale tables ({len(st['errors'])}; a stale table's last indexed rows still answer):")
    print(_table(st["errors"], ["table_id", "path", "format", "status", "reason"]))
    if st["warnings"]:
        print(f"\ntables indexed with warnings ({len(st['warnings'])}):")
        print(_table([{**w, "warnings": "; ".join(w["warnings"])} for w in st["warnings"]],
                     ["table_id", "path", "warnings"]))
    print("\nrecent refreshes:")
    for r in st["refreshes"]:
        published = f"snapshot {r['snapshot_id']}" if r["snapshot_id"] else "not published"
        print(f"  refresh {r['refresh_id']} started {r['started_at']}: {published}")
        print(textwrap.indent(_table([{**s, "seconds": f"{s['seconds']:.1f}"} for s in r["stages"]],
                                     ["stage", "status", "seconds", "tables_processed", "tables_added",
                                      "tables_changed", "tables_deleted", "tables_failed", "rows_written"]), "  "))
    return 0


# -- union ---------------------------------------------------------------------------------------------------------
def cmd_union(args) -> int:
    from .api import Lakescout

    params = {k: v for k, v in (("tau", args.tau), ("phi_c", args.phi_c), ("phi_ref", args.phi_ref),
                                ("phi_r", args.phi_r)) if v is not None}
    out = Lakescout(args.warehouse, args.snapshot).union(args.query, k=args.k, method=args.method, **params)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  method {out['method']}  score {st['score_kind']}")
    rows = [{"rank": r["rank"], "score": f"{r['score']:.3f}", "table_id": r["table_id"], "path": r["path"],
             "alignment": ", ".join(f"{q}~{c} ({s:.2f})" for q, c, s in r["alignment"])} for r in out["results"]]
    print(_table(rows, ["rank", "score", "table_id", "path", "alignment"]))
    print(f"\ncandidates after refinement {st['candidates_after_refinement']}, after pruning "
          f"{st['candidates_after_pruning']}, exact matchings {st['exact_matchings']}, {st['seconds'] * 1000:.0f} ms")
    return 0


# -- join ----------------------------------------------------------------------------------------------------------
def cmd_join(args) -> int:
    from .api import Lakescout

    out = Lakescout(args.warehouse, args.snapshot).join(args.query, args.column, tau=args.tau, T=args.T,
                                                        top_k=args.top_k, method=args.method,
                                                        tau_share=args.tau_share, similarity=args.similarity,
                                                        metric=args.metric)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    if out.get("join") == "numeric":
        return _print_numeric_join(out)
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  column {out['column']}  method {out['method']}  "
          f"tau {out['tau']} (distance {st['tau_distance']:.3f})  "
          + (f"top-{out['top_k']}" if out["T"] is None else f"T {out['T']}"))
    rows = [{"rank": r["rank"], "joinability": f"{r['joinability']:.2f}", "table_id": r["table_id"],
             "path": r["path"], "column": r["column"], "context": _context(r),
             "matches": "; ".join(f"{a} ~ {b} ({d:.3f})" for a, b, d in r["matches"][:3])} for r in out["results"]]
    print(_table(rows, ["rank", "joinability", "table_id", "path", "column", "context", "matches"]))
    print(f"\n{st['query_values']} distinct query values; {st.get('distance_computations', 0)} distance computations"
          f", {st['seconds'] * 1000:.0f} ms")
    return 0


def _context(r: dict) -> str:
    """A join result's context score and evidence (``2.75 Year ~ year; rows 0.75 (Year ~ year)``): what lifted it
    above results of (nearly) the same joinability; nothing where context decided no order."""
    if r.get("context_score") is None:
        return ""
    return f"{r['context_score']:.2f} {r.get('context') or '(none)'}"


def _value(v) -> str:
    return f"{v:g}" if isinstance(v, float) else "(" + ", ".join(f"{x:g}" for x in v[:4]) + (
        ", ...)" if len(v) > 4 else ")")


def _print_numeric_join(out: dict) -> int:
    st = out["stats"]
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  column {out['column']} ({out['kind']}, "
          f"{out['metric']})  method {out['method']}  tau {out['tau']:g} {st['units']}  "
          + (f"top-{out['top_k']}" if out["T"] is None else f"T {out['T']}"))
    rows = [{"rank": r["rank"], "joinability": f"{r['joinability']:.2f}", "table_id": r["table_id"],
             "path": r["path"], "column": r["column"],
             "matches": "; ".join(f"{_value(a)} ~ {_value(b)} ({d:.3g})" for a, b, d in r["matches"][:3])}
            for r in out["results"]]
    print(_table(rows, ["rank", "joinability", "table_id", "path", "column", "matches"]))
    print(f"\n{st['query_values']} distinct query values; {st.get('distance_computations', 0)} distance computations"
          f", {st['seconds'] * 1000:.0f} ms")
    return 0


# -- nary ------------------------------------------------------------------------------------------------------------
def cmd_nary(args) -> int:
    from .api import Lakescout

    out = Lakescout(args.warehouse, args.snapshot).nary(args.query, args.key, k=args.k, method=args.method,
                                                         bits=args.bits, initial_column=args.initial_column)
    if args.json:
        print(json.dumps(out, default=str))
        return 0
    st = out["stats"]
    print(f"snapshot {out['snapshot_id']}  query {out['query']}  key ({', '.join(out['key'])})  method {out['method']}"
          f"  {st['bits']}-bit XASH (alpha {st['alpha']})")
    rows = [{"rank": r["rank"], "J": r["joinability"], "table_id": r["table_id"], "path": r["path"],
             "mapping": ", ".join(f"{q} -> {c}" for q, c in r["mapping"].items())} for r in out["results"]]
    print(_table(rows, ["rank", "J", "table_id", "path", "mapping"]))
    print(f"\n{st['matchable_tuples']} of {st['query_tuples']} distinct key tuples occur in the lake; initial column "
          f"{st['initial_column']!r}; candidate rows {st['candidate_rows_fetched']}, passing the filter "
          f"{st['rows_passing_filter']}, verified {st['rows_verified']} ({st['false_positive_rows']} false positives)")
    return 0


# -- batch ---------------------------------------------------------------------------------------------------------
def cmd_batch(args) -> int:
    from .batch import run_batch

    try:
        with open(args.spec, encoding="utf-8") as fh:
            spec = fh.read()
    except OSError as exc:
        raise UsageError(f"cannot read batch spec {args.spec!r}: {exc.strerror}") from None
    except UnicodeDecodeError as exc:
        raise UsageError(f"batch spec {args.spec!r} is not UTF-8 text (byte {exc.start})") from None
    summary = None
    if args.master:
        try:
            summary = _batch_on_spark(args, spec)
        except SparkFailed as exc:
            print(f"lakescout batch: {exc}", file=sys.stderr)
            return 1
    if summary is None:
        summary = run_batch(args.warehouse, spec, batch_id=args.batch_id, snapshot_id=args.snapshot)
    print(json.dumps(summary, default=str, indent=None if args.json else 2))
    return 0


def _batch_on_spark(args, spec: str) -> dict | None:
    """The summary of a batch answered by a ``spark-submit`` application on ``--master`` (``spark_jobs.query_batch``),
    or None when the batch is smaller than ``[batch] spark_min_queries`` and runs in this process instead."""
    from .batch import batch_snapshot, open_batch, parse_spec
    from .config import load_config
    from .refresh.launch import submit_env

    batch = parse_spec(spec)
    if len(batch.queries) < load_config().batch.spark_min_queries:
        return None
    wh, batch_id, done = open_batch(args.warehouse, args.batch_id)
    if done is not None:
        return done
    batch_snapshot(wh, batch, args.snapshot)  # a missing snapshot is refused before Spark starts
    job = importlib.util.find_spec("spark_jobs.query_batch")
    if job is None or job.origin is None:
        raise UsageError("the spark_jobs package is not installed next to discovery")
    cmd = [_spark_submit(), "--master", args.master, job.origin, "--warehouse", args.warehouse,
           "--spec", os.path.abspath(args.spec), "--batch-id", batch_id]
    if args.snapshot is not None:
        cmd += ["--snapshot", str(args.snapshot)]
    env = submit_env(dict(os.environ, PYSPARK_PYTHON=os.environ.get("LAKESCOUT_PYSPARK_PYTHON", sys.executable),
                          PYSPARK_DRIVER_PYTHON=sys.executable))
    log = tempfile.NamedTemporaryFile("w+", prefix="lakescout-batch-", suffix=".log", delete=False)
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env)
    result = next((json.loads(line[len("LAKESCOUT_RESULT "):]) for line in proc.stdout.splitlines()
                   if line.startswith("LAKESCOUT_RESULT ")), None)
    if result is not None and "refused" in result:
        raise UsageError(result["refused"])
    if proc.returncode != 0 or result is None:
        log.seek(0)
        raise SparkFailed(f"batch {batch_id} failed on Spark; nothing was recorded. Spark log: {log.name}\n"
                          f"{log.read()[-3000:]}")
    return result


# -- demo lake -------------------------------------------------------------------------------------------------------
def cmd_demo_lake(args) -> int:
    from .demo_lake import generate_demo_lake

    if args.seed < 0:
        raise UsageError(f"--seed must be a non-negative integer, got {args.seed}")
    try:
        summary = generate_demo_lake(args.dir, seed=args.seed, lakehouse=True)
    except OSError as exc:
        raise UsageError(f"cannot write the sample lake to {args.dir!r}: {exc.strerror or exc}") from None
    print(json.dumps(summary, default=str) if args.json else f"sample lake written to {args.dir}: {summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="lakescout", description="Find unionable and joinable tables in a data lake.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("refresh", help="bring the index up to date with the lake (runs the Spark stages)")
    r.add_argument("--lake", required=True, help="lake folder or URI")
    r.add_argument("--warehouse", required=True, help="warehouse folder or URI")
    r.add_argument("--full", action="store_true", help="rebuild every index table from scratch")
    r.add_argument("--master", default=None, help="Spark master (default from config: local[*])")
    r.add_argument("--config", default=None, help="TOML configuration file")
    r.add_argument("--include", action="append", default=[], metavar="PATTERN",
                   help="index only lake tables matching this gitignore-style pattern (repeatable)")
    r.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help="leave out lake tables matching this pattern (repeatable)")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_refresh)

    s = sub.add_parser("status", help="latest snapshot, table counts, failed tables, recent refreshes")
    s.add_argument("--warehouse", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    b = sub.add_parser("batch", help="validate and run a batch of queries; results go to the query_results table")
    b.add_argument("--warehouse", required=True)
    b.add_argument("--spec", required=True, help='JSON file: {"queries": [{"kind": "union|join|nary", "query": ...}]}')
    b.add_argument("--batch-id", default=None, help="idempotency key: a batch already recorded is not run again")
    b.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: the spec's, else the latest)")
    b.add_argument("--master", default=None,
                   help="Spark master (e.g. local[4], spark://host:7077) that answers a batch of at least "
                        "[batch] spark_min_queries queries (default: every batch runs in this process)")
    b.add_argument("--json", action="store_true")
    b.set_defaults(func=cmd_batch)

    d = sub.add_parser("demo-lake", help="write the sample lake (files and lakehouse tables) with its ground truth")
    d.add_argument("dir")
    d.add_argument("--seed", type=int, default=7)
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo_lake)

    u = sub.add_parser("union", help="tables unionable with a query table (PGTUS, TACTUS, Starmie, exact)")
    u.add_argument("--warehouse", required=True)
    u.add_argument("--query", required=True, help="query table: a file, a catalogued lake path or a lake table id")
    u.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    u.add_argument("--method", default="pgtus++",
                   help="search method (default pgtus++); a name this installation lacks is refused with the list")
    u.add_argument("--tau", type=float, default=None, help="column similarity threshold of Definition 5")
    u.add_argument("--phi-c", type=int, default=None, help="centroids probed per query column (pgtus++-approx)")
    u.add_argument("--phi-ref", type=int, default=None, help="candidate tables kept by refinement (pgtus++-approx)")
    u.add_argument("--phi-r", type=int, default=None, help="candidates kept by bound pruning")
    u.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: the latest)")
    u.add_argument("--json", action="store_true")
    u.set_defaults(func=cmd_union)

    j = sub.add_parser("join", help="columns joinable with a query column (PEXESO): semantically for text, by "
                                    "distance for numbers, coordinates and vectors; with evidence")
    j.add_argument("--warehouse", required=True)
    j.add_argument("--query", required=True, help="query table: a file, a catalogued lake path or a lake table id")
    j.add_argument("--column", required=True,
                   help="the query column to join on; LAT,LNG for a coordinate pair (distances in metres)")
    j.add_argument("--tau", type=float, default=None,
                   help="distance threshold: for text a fraction of the maximum (default [join] tau, 0.04); for "
                        "numbers, coordinates and vectors a distance in the data's units (metres for coordinates; "
                        "default [numjoin] tau_metres 50, else tau_share of the column's spread)")
    j.add_argument("--tau-share", type=float, default=None,
                   help="numerical join: tau as a fraction of the query column's spread instead")
    j.add_argument("--similarity", choices=("hit", "all"), default=None,
                   help="numerical join: count query values with a match (hit, default) or matched pairs (all)")
    j.add_argument("--metric", choices=("euclidean", "angular"), default=None,
                   help="numerical join on a list column: euclidean (default) or angular (radians)")
    mode = j.add_mutually_exclusive_group()
    mode.add_argument("--top-k", type=int, default=None,
                      help="the k columns of highest joinability, any match counting (default [join] top_k, 10)")
    mode.add_argument("--T", type=float, default=None,
                      help="instead: every column in which this share of the query values find a match")
    j.add_argument("--method", default="pexeso", help="pexeso (default), pexeso-h (text) or pnodom (numbers), or "
                                                      "exact: identical answers")
    j.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: the latest)")
    j.add_argument("--json", action="store_true")
    j.set_defaults(func=cmd_join)

    n = sub.add_parser("nary", help="tables joinable on a multi-column key (MATE), with J and the column mapping")
    n.add_argument("--warehouse", required=True)
    n.add_argument("--query", required=True, help="query table: a file, a catalogued lake path or a lake table id")
    n.add_argument("--key", required=True, help="key columns of the query, comma-separated: COL1,COL2[,...] (a "
                                                "column with a comma in its name needs a key given as a list: Python "
                                                "API or batch spec)")
    n.add_argument("-k", type=int, default=10, help="number of results (default 10)")
    n.add_argument("--method", default="mate",
                   help="mate (XASH super keys, default), scr (no super keys), bloom (Bloom-filter super keys), "
                        "exhaustive; all return the same exact top-k")
    n.add_argument("--bits", type=int, default=None,
                   help="super-key size: 128, 256 or 512 (default: the index's; another is derived in memory)")
    n.add_argument("--initial-column", default=None, help="key column whose posting lists are fetched "
                                                          "(default: the one with the fewest distinct values)")
    n.add_argument("--snapshot", type=int, default=None, help="snapshot id (default: the latest)")
    n.add_argument("--json", action="store_true")
    n.set_defaults(func=cmd_nary)
    return p


#: What ``lakescout`` alone prints after the command list: the first two commands a newcomer runs.
EXAMPLE = ("example:  lakescout demo-lake sample_lake && lakescout refresh --lake sample_lake --warehouse warehouse "
           "&& lakescout union --warehouse warehouse --query finance/registers/firms.tsv")


def overview(parser: argparse.ArgumentParser) -> str:
    """The commands with their one-line help, and :data:`EXAMPLE`: what ``lakescout`` with no command prints."""
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    width = max(len(c.dest) for c in sub._choices_actions)
    lines = [f"{parser.description}", "", "commands:"]
    lines += [f"  {c.dest.ljust(width)}  {c.help}" for c in sub._choices_actions]
    lines += ["", EXAMPLE, "lakescout COMMAND -h shows a command's options."]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    if not (sys.argv[1:] if argv is None else argv):
        print(overview(parser))
        return 0
    args = parser.parse_args(argv)
    try:
        return args.func(args)
    except Exception as exc:
        from .query import QueryError
        from .store import WarehouseError

        if not isinstance(exc, (UsageError, QueryError, WarehouseError, FileNotFoundError, ValueError)):
            raise
        print(f"lakescout {args.command}: {exc}", file=sys.stderr)
        return 2


def entry() -> None:
    """Console-script entry point: run a command, then leave without interpreter finalisation.

    A command that has printed its answer has nothing left to clean up, while the native thread pools it used (Arrow
    I/O, torch, delta-rs) can still be winding down; finalising the interpreter underneath them occasionally aborts
    the process after the answer was printed, which would turn a correct run into a crash exit code.
    """
    try:
        code = main()
        sys.stdout.flush()
    except BrokenPipeError:  # the reader of our output left (`lakescout ... | head`): not an error of the command
        code = 0
    try:
        sys.stderr.flush()
    except BrokenPipeError:
        pass
    os._exit(code)


if __name__ == "__main__":
    entry()
