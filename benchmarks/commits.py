"""A cold query after many commits to ``query_results``: does opening the warehouse stay cheap as commits pile up?

Every query batch (and every search from the page) is one commit to ``query_results``, so a deployment gathers
thousands of them between two maintenance runs.  Opening a Delta table reads its last checkpoint and the commits
after it; delta-rs writes a checkpoint every ``CHECKPOINT_INTERVAL`` commits (a table property set by
``Warehouse.ensure``), so the log part of an open stays bounded whatever the number of commits.

For each commit count (default 50 and 5,000) the script builds a warehouse with a published snapshot through the
real write path, commits the same 5,000 result rows (``--rows``) in that many appends (``append_rows``, as
``run_batch`` does; 100 rows per commit, or one), so that the two tables differ in their commits and not in what a
read returns, and then runs the weekly maintenance (compaction, vacuum, orphan cleanup under the lease).
A cold query is a fresh Python
process that imports ``discovery``, then (timed) opens the warehouse at its latest snapshot with
``discovery.open``, loads ``query_results`` and reads its rows; the median of ``--repeats`` processes is reported,
also before maintenance (when the rows of 5,000 commits still sit in 5,000 files, which no log layout can make as
cheap to read as 50).  The ratio large / small is the figure of merit (target <= 1.2).

    python benchmarks/commits.py [--counts 50 5000] [--repeats 5]
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime, UTC

import pyarrow as pa

import harness
from discovery.config import Config
from discovery.data.store import SCHEMAS, Session, Warehouse, new_attempt_token
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.surfaces.maintenance import run_maintenance
from harness import print_table, write_result

COLD = """
import sys, time
import discovery
from discovery.data.store import Warehouse
t0 = time.perf_counter()
lake = discovery.open(sys.argv[1])
wh = Warehouse(sys.argv[1])
t1 = time.perf_counter()
dt = wh.table("query_results")
t2 = time.perf_counter()
rows = wh.read("query_results", columns=["batch_id", "rank", "score"]).num_rows
t3 = time.perf_counter()
print(lake.snapshot_id, rows, t1 - t0, t2 - t1, t3 - t0)
"""


def _results(batch: str, rows: int, now: datetime) -> pa.Table:
    return pa.Table.from_pylist([{"batch_id": batch, "query_id": "q", "snapshot_id": 1, "kind": "nary", "rank": r + 1,
                                  "table_id": r, "path": f"t{r}.csv", "column": None, "score": 1.0 / (r + 1),
                                  "evidence": "{}", "created_at": now} for r in range(rows)],
                                schema=SCHEMAS["query_results"])


def build(root: str, commits: int, rows: int) -> float:
    """A warehouse with one published snapshot and ``rows`` result rows appended to ``query_results`` in
    ``commits`` commits; commit seconds."""
    wh = Warehouse(root)
    publish_snapshot(wh, begin_refresh(Session.at(wh, Config())), "/lake")
    started = time.perf_counter()
    for i in range(commits):
        wh.append_rows("query_results", _results(f"b{i}", rows // commits, datetime.now(UTC)), refresh_id=1,
                       stage="query_batch", attempt=new_attempt_token(), once=False)
        if (i + 1) % 500 == 0:
            print(f"  {i + 1} commits, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    return time.perf_counter() - started


def _cold_once(root: str, expected_rows: int) -> tuple[float, float, float]:
    _, rows, open_s, table_s, total_s = harness.python(COLD, root).stdout.split()
    assert int(rows) == expected_rows, (rows, expected_rows)
    return float(open_s), float(table_s), float(total_s)


def cold(roots: list[str], repeats: int, expected_rows: int) -> list[dict]:
    """Per warehouse, the median seconds of ``repeats`` fresh processes (open the warehouse, load query_results,
    read it), the warehouses taking turns so that a busy moment of the machine weighs on all of them alike."""
    runs: list[list] = [[] for _ in roots]
    for _ in range(repeats):
        for i, root in enumerate(roots):
            runs[i].append(_cold_once(root, expected_rows))
    return [{"open_warehouse_ms": 1000 * statistics.median(r[0] for r in rs),
             "load_table_ms": 1000 * statistics.median(r[1] for r in rs),
             "cold_query_ms": 1000 * statistics.median(r[2] for r in rs)} for rs in runs]


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--counts", type=int, nargs="+", default=[50, 5000])
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--rows", type=int, default=5000, help="result rows in all (a multiple of every count)")
    args = p.parse_args(argv)
    rows = []
    with tempfile.TemporaryDirectory(prefix="lakescout-commits-") as tmp:
        roots = [os.path.join(tmp, f"wh{n}") for n in args.counts]
        for n, root in zip(args.counts, roots):
            seconds = build(root, n, args.rows)
            log = os.listdir(os.path.join(root, "query_results", "_delta_log"))
            rows.append({"commits": n, "commit_s": round(seconds, 1), "commits_per_s": round(n / seconds, 1),
                         "checkpoints": sum(f.endswith(".checkpoint.parquet") for f in log)})
        expected = args.rows // min(args.counts) * min(args.counts)
        before = cold(roots, args.repeats, expected)
        reports = [run_maintenance(Warehouse(root))["status"] for root in roots]
        after = cold(roots, args.repeats, expected)
        for row, root, b, a, status in zip(rows, roots, before, after, reports):
            row.update({"maintenance": status, "files_after": Warehouse(root).files("query_results").num_rows,
                        **{f"{k}_before": round(v, 1) for k, v in b.items()},
                        **{f"{k}_after": round(v, 1) for k, v in a.items()}})
    base, top = rows[0], rows[-1]
    ratios = {"ratio_after_maintenance": round(top["cold_query_ms_after"] / base["cold_query_ms_after"], 3),
              "ratio_before_maintenance": round(top["cold_query_ms_before"] / base["cold_query_ms_before"], 3),
              "ratio_load_table_after_maintenance": round(top["load_table_ms_after"] / base["load_table_ms_after"],
                                                          3)}
    print_table(rows, ["commits", "commit_s", "commits_per_s", "checkpoints", "files_after",
                       "open_warehouse_ms_after", "load_table_ms_after", "cold_query_ms_after",
                       "load_table_ms_before", "cold_query_ms_before"])
    print(f"\ncold query after {top['commits']} vs {base['commits']} commits: "
          f"{ratios['ratio_after_maintenance']}x after maintenance (target <= 1.2), "
          f"{ratios['ratio_before_maintenance']}x before it")
    write_result("commits", {"repeats": args.repeats, "rows": rows, **ratios})
    return 0


if __name__ == "__main__":
    sys.exit(main())
