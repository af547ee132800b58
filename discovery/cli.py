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

from .config import load_config
from .store import Warehouse, WarehouseError


class UsageError(Exception):
    """Bad input from the user: printed as one clear line, exit code 2, never a traceback."""


def _table(rows: list[dict], columns: list[str]) -> str:
    if not rows:
        return "  (none)"
    cells = [[str(r.get(c, "")) if r.get(c) is not None else "" for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) for i, c in enumerate(columns)]
    line = lambda vals: "  " + "  ".join(v.ljust(w) for v, w in zip(vals, widths))  # noqa: E731
    return "\n".join([line(columns), line(["-" * w for w in widths])] + [line(r) for r in cells])


# -- refresh ---------------------------------------------------------------------------------------------------------
def _spark_submit() -> str:
    local = os.path.join(os.path.dirname(sys.executable), "spark-submit")
    found = local if os.path.exists(local) else shutil.which("spark-submit")
    if not found:
        raise UsageError("spark-submit not found: install pyspark in this environment")
    return found


def cmd_refresh(args) -> int:
    if not os.path.isdir(args.lake) and "://" not in args.lake:
        raise UsageError(f"lake folder {args.lake!r} does not exist")
    config = load_config(args.config)
    spec = importlib.util.find_spec("spark_jobs.refresh")
    if spec is None or spec.origin is None:
        raise UsageError("the spark_jobs package is not installed next to discovery")
    cmd = [_spark_submit(), "--master", args.master or config.spark.master, spec.origin,
           "--warehouse", args.warehouse, "--lake", args.lake]
    if args.full:
        cmd.append("--full")
    if args.config:
        cmd += ["--config", args.config]
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, PYSPARK_DRIVER_PYTHON=sys.executable)
    log = tempfile.NamedTemporaryFile("w+", prefix="lakescout-refresh-", suffix=".log", delete=False)
    started = time.time()
    result = None
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=log, text=True, env=env) as proc:
        for line in proc.stdout:
            if line.startswith('{"stage"'):
                s = json.loads(line)
                if not args.json:
                    print(f"  {s['stage']:<10} {s['status']:<7} processed {s['tables_processed']:>6}  "
                          f"added {s['tables_added']}  changed {s['tables_changed']}  deleted {s['tables_deleted']}  "
                          f"failed {s['tables_failed']}", flush=True)
            elif line.startswith("LAKESCOUT_RESULT "):
                result = json.loads(line[len("LAKESCOUT_RESULT "):])
    if proc.returncode != 0 or result is None or "failed_stage" in result:
        log.seek(0)
        tail = log.read()[-3000:]
        print(f"refresh failed{' in stage ' + result['failed_stage'] if result else ''}; "
              f"the last snapshot still answers queries. Spark log: {log.name}\n{tail}", file=sys.stderr)
        return 1
    result["seconds"] = round(time.time() - started, 1)
    if args.json:
        print(json.dumps(result, default=str))
    else:
        print(f"published snapshot {result['snapshot_id']} (refresh {result['refresh_id']}) "
              f"in {result['seconds']} s")
    return 0


# -- status ----------------------------------------------------------------------------------------------------------
def cmd_status(args) -> int:
    from .status import warehouse_status

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
        print(f"tables     {t.get('ok', 0)} ok, {t.get('error', 0)} error, {t.get('deleted', 0)} deleted")
        rows = ", ".join(f"{k} {v}" for k, v in st.get("index_rows", {}).items() if v)
        print(f"index      {rows or 'empty'}")
    else:
        print("snapshot   none published yet")
    print(f"\nfailed tables ({len(st['errors'])}):")
    print(_table(st["errors"], ["table_id", "path", "reason"]))
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


# -- demo lake -------------------------------------------------------------------------------------------------------
def cmd_demo_lake(args) -> int:
    from .demo_lake import generate_demo_lake

    summary = generate_demo_lake(args.dir, seed=args.seed)
    print(json.dumps(summary, default=str) if args.json else f"sample lake written to {args.dir}: {summary}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="lakescout", description="Find unionable and joinable tables in a data lake.")
    sub = p.add_subparsers(dest="command", required=True)

    r = sub.add_parser("refresh", help="bring the index up to date with the lake (runs the Spark stages)")
    r.add_argument("--lake", required=True, help="lake folder or URI")
    r.add_argument("--warehouse", required=True, help="warehouse folder or URI")
    r.add_argument("--full", action="store_true", help="rebuild every index table from scratch")
    r.add_argument("--master", default=None, help="Spark master (default from config: local[*])")
    r.add_argument("--config", default=None, help="TOML configuration file")
    r.add_argument("--json", action="store_true")
    r.set_defaults(func=cmd_refresh)

    s = sub.add_parser("status", help="latest snapshot, table counts, failed tables, recent refreshes")
    s.add_argument("--warehouse", required=True)
    s.add_argument("--json", action="store_true")
    s.set_defaults(func=cmd_status)

    d = sub.add_parser("demo-lake", help="write the deterministic sample lake with its ground truth")
    d.add_argument("dir")
    d.add_argument("--seed", type=int, default=7)
    d.add_argument("--json", action="store_true")
    d.set_defaults(func=cmd_demo_lake)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (UsageError, WarehouseError, FileNotFoundError, ValueError) as exc:
        print(f"lakescout {args.command}: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
