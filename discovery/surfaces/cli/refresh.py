"""``lakescout refresh``: run the Spark stages that bring the index up to date with the lake."""
from __future__ import annotations

import json
import os
import sys
import time

from .common import UsageError, add_common, add_warehouse


def cmd_refresh(args) -> int:
    """Run the refresh application and show its progress; its first line comes before the store, the lake readers
    and pyarrow are imported (about a second), the next before Spark starts."""
    say = (lambda text: None) if args.json else (lambda text: print(f"lakescout refresh: {text}", flush=True))
    from ... import storage

    try:
        local = storage.on_disk(args.lake)
    except ValueError as exc:  # an unknown scheme
        raise UsageError(str(exc)) from None
    if local is not None and (not args.lake.strip() or not os.path.isdir(local)):  # "" is no folder, not the cwd
        raise UsageError(f"lake folder {args.lake!r} " + ("is not a folder" if args.lake.strip() and
                                                          os.path.exists(local) else "does not exist"))
    say(f"checking the lake {args.lake} and the warehouse {args.warehouse}")
    from ...config import load_config
    from ...orchestration.refresh.display import RefreshDisplay, failed_text, totals, usage_text
    from ...stages.progress import NOTE, Progress
    from ...data.store.lease import holder as lease_holder
    from ..submit import launch

    storage.check(args.lake, "lake")
    storage.check(args.warehouse, "warehouse")
    config = load_config(args.config)
    busy = lease_holder(args.warehouse)  # checked again, atomically, when the refresh takes the lease
    if busy:
        raise UsageError(busy)
    master = args.master or config.spark.master
    say(f"starting Spark ({master})")
    job_args = ["--warehouse", args.warehouse, "--lake", args.lake]
    if args.full:
        job_args.append("--full")
    if args.config:
        job_args += ["--config", args.config]
    for name in ("include", "exclude"):
        for pattern in getattr(args, name):
            job_args += [f"--{name}", pattern]
    started = time.time()
    with RefreshDisplay(quiet=args.json) as display:
        def show(line: str) -> None:
            progress = Progress.parse(line)
            if progress is not None:
                display.progress(progress)
            elif line.startswith(NOTE):
                display.note(line[len(NOTE):].rstrip())
            elif line.startswith('{"stage"'):
                display.stage_finished(json.loads(line))

        done = launch("refresh", master, job_args, show)
    result = done.result
    if result is None or "failed_stage" in result:
        print(f"refresh failed{' in stage ' + result['failed_stage'] if result else ''}; "
              f"the last snapshot still answers queries. Spark log: {done.log}\n{done.log_tail()}", file=sys.stderr)
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


def register(sub) -> None:
    r = sub.add_parser("refresh", help="bring the index up to date with the lake (runs the Spark stages)")
    r.add_argument("--lake", required=True, help="lake folder or URI")
    add_warehouse(r)
    r.add_argument("--full", action="store_true", help="rebuild every index table from scratch")
    r.add_argument("--master", default=None, help="Spark master (default from config: local[*])")
    r.add_argument("--include", action="append", default=[], metavar="PATTERN",
                   help="index only lake tables matching this gitignore-style pattern (repeatable)")
    r.add_argument("--exclude", action="append", default=[], metavar="PATTERN",
                   help="leave out lake tables matching this pattern (repeatable)")
    add_common(r, cmd_refresh)
