"""Refresh throughput: full build of the sample lake and of fivethirtyeight, then an incremental refresh with 1% of
the tables changed.  Prints tables/s and the incremental/full time ratio (target <= 0.10); writes JSON.

    .venv/bin/python benchmarks/refresh.py [--lakes sample,fivethirtyeight] [--changed 0.01]

Both refreshes run in one SparkSession (local[*]) so JVM start-up is not part of either figure.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import sys
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import print_table, shared_path, write_result  # noqa: E402
from discovery.demo_lake import generate_demo_lake  # noqa: E402
from discovery.lake import list_lake  # noqa: E402
from spark_jobs.common import spark_session  # noqa: E402
from spark_jobs.refresh import refresh  # noqa: E402


def _change(lake: str, fraction: float, seed: int = 3) -> list[str]:
    """Append a row to ``fraction`` of the CSV tables (at least one), deterministically."""
    import random

    files = [f.path for f in list_lake(lake) if f.format in ("csv", "tsv")]
    rng = random.Random(seed)
    picked = rng.sample(files, max(1, round(fraction * len(list_lake(lake)))))
    for rel in picked:
        path = os.path.join(lake, rel)
        with open(path, "rb") as fh:
            data = fh.read()
        with open(path, "ab") as fh:
            fh.write((b"" if data.endswith(b"\n") else b"\n") + data.splitlines()[-1] + b"\n")
    return picked


def bench_lake(spark, name: str, source: str, fraction: float, work: str, rounds: int) -> dict:
    """Full build, then ``rounds`` incremental refreshes each changing ``fraction`` of the tables (median reported;
    the first one, which also warms the Python workers, is reported too)."""
    lake = os.path.join(work, name)
    shutil.copytree(source, lake)
    n = len(list_lake(lake))
    wh = os.path.join(work, f"wh-{name}")
    t0 = time.perf_counter()
    full = refresh(spark, wh, lake)
    t_full = time.perf_counter() - t0
    times = []
    for round_ in range(rounds):
        changed = _change(lake, fraction, seed=round_)
        t0 = time.perf_counter()
        inc = refresh(spark, wh, lake)
        times.append(time.perf_counter() - t0)
        assert full.get("published") and inc.get("published"), (full, inc)
    t_inc = statistics.median(times)
    return {"lake": name, "tables": n, "full_s": t_full, "tables_per_s": n / t_full, "changed": len(changed),
            "incremental_s": t_inc, "incremental_first_s": times[0], "ratio": t_inc / t_full}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lakes", default="sample,fivethirtyeight")
    p.add_argument("--changed", type=float, default=0.01)
    p.add_argument("--rounds", type=int, default=3, help="incremental refreshes to take the median of")
    args = p.parse_args()
    spark = spark_session("lakescout-bench-refresh")
    spark.sparkContext.setLogLevel("ERROR")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.lakes.split(","):
            if name == "sample":
                src = os.path.join(work, "_sample_src")
                generate_demo_lake(src)
            else:
                src = shared_path(name)
                if src is None:
                    continue
            rows.append(bench_lake(spark, name, src, args.changed, work, args.rounds))
    print_table(rows, ["lake", "tables", "full_s", "tables_per_s", "changed", "incremental_s", "incremental_first_s",
                       "ratio"])
    write_result("refresh", {"changed_fraction": args.changed, "results": rows, "target_ratio": 0.10})
    return 0


if __name__ == "__main__":
    sys.exit(main())
