"""Soak: months of scheduled operation compressed into N cycles of lake edits, refreshes (some killed), maintenance
and searches, checked after every completed refresh against a fault-free twin and a fresh build.

The soak itself (the lake, its edits, the kills, the checks) is ``tests/soak_run.py``, which ``tests/test_soak.py``
runs for two cycles; this script runs it for ``--cycles`` on the benchmark's SparkSession and writes its report to
``benchmarks/results/soak.json`` after every cycle (``finished`` false until the last).

    python benchmarks/soak.py [--cycles 200] [--seed 0] [--kill-share 0.35]
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile

import harness
from harness import write_result
from soak_run import soak


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cycles", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--kill-share", type=float, default=0.35, help="share of cycles that start a refresh to kill")
    p.add_argument("--max-kill-delay", type=float, default=25.0,
                   help="seconds after the refresh took the lease; the kill comes uniformly before it")
    p.add_argument("--maintain-every", type=int, default=3)
    p.add_argument("--fresh-every", type=int, default=1)
    p.add_argument("--work", default=None, help="scratch folder (default: a temporary one, removed at the end)")
    args = p.parse_args(argv)
    work = args.work or tempfile.mkdtemp(prefix="lakescout-soak-")
    os.makedirs(work, exist_ok=True)
    try:
        report = soak(harness.spark_session("lakescout-soak"), work, args.cycles, args.seed, args.kill_share,
                      args.max_kill_delay, args.maintain_every, args.fresh_every, log=lambda s: print(s, flush=True),
                      on_cycle=lambda r: write_result("soak", {**r, "finished": False}))
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    summary = {k: (len(v) if isinstance(v, list) and k in ("mismatches", "missing_files", "search_failures") else v)
               for k, v in report.items() if k != "size_breakdown"}
    print(json.dumps(summary, indent=1))
    for line in report["mismatches"][:20] + report["missing_files"][:20] + report["search_failures"][:20]:
        print(" ", line)
    write_result("soak", {**report, "finished": True})
    return 0 if not report["mismatches"] and not report["missing_files"] else 1


if __name__ == "__main__":
    sys.exit(main())
