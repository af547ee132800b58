"""Bounded reads: peak memory of profiling a large lakehouse table against a small one.

Two Delta tables of the same shape (an id, two text columns drawn from the sample lake's vocabulary, an amount and a
date) are written with delta-rs: ``--small`` rows (default 10,000) and ``--large`` rows (default 10,000,000).  Each
is profiled in a fresh process exactly as the refresh's profile stage does it (``read_lake_table`` within
``profile_limits``, then ``profile_table``), and the process's peak resident memory is read from the kernel.  The
reader takes the first ``[profile] sample_rows`` rows batch by batch through the format's own scan with the limit
pushed down, so the large table's peak should stay close to the small one's (target: within 1.5x).

Usage: python benchmarks/bounded_reads.py [--small 10000] [--large 10000000] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

import numpy as np
import pyarrow as pa

import harness
from harness import print_table, write_result

_CHILD = """
import json, sys, time
from discovery.config import Config
from discovery.data.lake import list_lake, profile_table, read_lake_table
from discovery.data.lake.profile import profile_limits
root = sys.argv[1]
[table] = list_lake(root)
t0 = time.perf_counter()
cfg = Config()
parsed = read_lake_table(root, table.path, table.format, table.size, profile_limits(cfg.limits, cfg.profile))
profile = profile_table(parsed, cfg.profile)
print(json.dumps({"rows_read": parsed.num_rows, "seconds": time.perf_counter() - t0, "warnings": parsed.warnings}))
"""


def write_table(folder: Path, rows: int, seed: int = 0) -> None:
    from deltalake import write_deltalake

    from discovery.orchestration.demo_lake.vocab import CITIES, FIRST_NAMES

    if (folder / "_delta_log").exists():
        return
    rng = np.random.default_rng(seed)
    cities = np.array([c for c, _ in CITIES])
    names = np.array(FIRST_NAMES)
    step = 1_000_000
    for start in range(0, rows, step):
        n = min(step, rows - start)
        batch = pa.table({"id": np.arange(start, start + n), "name": names[rng.integers(0, len(names), n)],
                          "city": cities[rng.integers(0, len(cities), n)],
                          "amount": rng.random(n) * 1000,
                          "day": pa.array(rng.integers(18000, 20000, n).astype("datetime64[D]"))})
        write_deltalake(str(folder), batch, mode="append")


def profile_in_child(root: Path) -> dict:
    done = harness.python(_CHILD, root)
    return {**done.json(), "peak_rss_mb": done.peak_rss_mb}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--small", type=int, default=10_000)
    ap.add_argument("--large", type=int, default=10_000_000)
    ap.add_argument("--workdir", default="/tmp/lakescout-bench-bounded")
    args = ap.parse_args()
    rows = []
    for label, n in (("small", args.small), ("large", args.large)):
        lake = Path(args.workdir) / label
        write_table(lake / "table", n)
        r = profile_in_child(lake)
        rows.append({"table": label, "rows": n, "rows_read": r["rows_read"], "peak_rss_mb": r["peak_rss_mb"],
                     "seconds": r["seconds"]})
    ratio = rows[1]["peak_rss_mb"] / rows[0]["peak_rss_mb"]
    print_table(rows, ["table", "rows", "rows_read", "peak_rss_mb", "seconds"])
    print(f"peak RSS large : small = {ratio:.2f}")
    write_result("bounded_reads", {"rows": rows, "rss_ratio": ratio})
    return 0


if __name__ == "__main__":
    sys.exit(main())
