"""A refresh killed with SIGKILL, then the next one at once: is it let in, and does it answer as a fault-free twin?

The soak's lake (``tests/soak_run.py``: 23 tables of CSV, Parquet, JSON Lines, Delta and partitioned folders) is
built by ``lakescout refresh`` into a twin, without fault, once.  Then, for every delay, a new warehouse's first
refresh (``lakescout refresh``, its own process group) is SIGKILLed ``delay`` seconds after it took the warehouse
lease, the group's processes are waited out, and ``lakescout refresh`` runs again at once.  Per delay: its exit code
(2 is refused), seconds from its launch to holding the lease, its wall time, the takeover it recorded, and whether its
index rows and its union, join and n-ary answers equal the twin's.

    python benchmarks/killed_refresh.py [--delays 1,2,4,6,8] [--work DIR]
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import sys
import tempfile
import threading
import time

from harness import cli, config_file, print_table, refresh_cli, write_result
from soak_run import CONFIG, Queries, diff, held_lease, index_rows, killed_refresh, make_lake


def _lease_taken(warehouse: str, killed_pid: int, since: float, done: threading.Event) -> dict:
    """Poll the lease until a holder other than the killed one holds it; the seconds since ``since``."""
    seen: dict = {}

    def poll():
        while not done.is_set():
            record = held_lease(warehouse)
            if record is not None and record["pid"] != killed_pid:
                seen["seconds"] = round(time.time() - since, 2)
                return
            time.sleep(0.05)

    thread = threading.Thread(target=poll, daemon=True)
    thread.start()
    seen["thread"] = thread
    return seen


def trial(lake: str, work: str, config: str, delay: float, twin_rows: dict, twin_answers: dict,
          queries: Queries) -> dict:
    warehouse = os.path.join(work, f"faulted-{delay:g}")
    shutil.rmtree(warehouse, ignore_errors=True)
    killed = killed_refresh(lake, warehouse, config, delay, search=lambda: None)
    left = held_lease(warehouse)
    row = {"delay_s": delay, "killed": killed["killed"], "lease_left_held": left is not None}
    started, done = time.time(), threading.Event()
    seen = _lease_taken(warehouse, left["pid"] if left else -1, started, done)
    run = cli("refresh", "--lake", lake, "--warehouse", warehouse, "--config", config, "--json", check=False)
    done.set()
    row.update(exit_code=run.returncode, wall_s=round(run.wall, 1),
               published=run.returncode == 0 and bool(run.json().get("published")))
    if run.returncode != 0:
        row["stderr"] = run.stderr.strip().splitlines()[-1:]
    seen["thread"].join()
    row["lease_after_s"] = seen.get("seconds")
    from discovery.data.store import Warehouse

    took = [r["took_over"] for r in Warehouse(warehouse).read("refresh_runs").to_pylist() if r["took_over"]]
    row["takeover"] = took[-1] if took else None
    if row["published"]:
        row["mismatches"] = diff(index_rows(warehouse), twin_rows, "index rows") + \
            diff(queries.all(warehouse), twin_answers, "answers")
    return row


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--delays", default="1,2,4,6,8", help="seconds after the lease at which each refresh is killed")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed at the end)")
    args = p.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="lakescout-killed-")
    os.makedirs(work, exist_ok=True)
    try:
        rng = random.Random(args.seed)
        lake = os.path.join(work, "lake")
        shutil.rmtree(lake, ignore_errors=True)
        make_lake(lake, rng)
        queries = Queries(os.path.join(work, "queries"), rng)
        config = config_file(work, "lakescout", CONFIG.format(retention_days=7, grace_hours=1))
        twin = os.path.join(work, "twin")
        shutil.rmtree(twin, ignore_errors=True)
        twin_build = refresh_cli(lake, twin, config=config)
        twin_rows, twin_answers = index_rows(twin), queries.all(twin)
        rows = [trial(lake, work, config, float(d), twin_rows, twin_answers, queries) for d in args.delays.split(",")]
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print_table(rows, ["delay_s", "killed", "lease_left_held", "exit_code", "lease_after_s", "wall_s", "published"])
    for r in rows:
        print(f"  {r['delay_s']:g} s: takeover {r['takeover']!r}; mismatches {r.get('mismatches')}"
              + (f"; {r['stderr']}" if "stderr" in r else ""))
    write_result("killed_refresh", {"twin_wall_s": round(twin_build.seconds, 1), "trials": rows})
    bad = [r for r in rows if not r["published"] or r.get("mismatches")]
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
