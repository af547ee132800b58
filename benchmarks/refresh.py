"""Refresh throughput: full build of the sample lake and of fivethirtyeight, then an incremental refresh with 1% of
the tables changed.  Prints tables/s and the incremental/full time ratio (target <= 0.10); writes JSON.

    .venv/bin/python benchmarks/refresh.py [--lakes sample,fivethirtyeight,ugen_v1] [--changed 0.01]
    .venv/bin/python benchmarks/refresh.py --scale 1000,4000,16000 [--work DIR]   (cost per table against size)

Both refreshes run in one SparkSession (the harness's, local[2]) so JVM start-up is not part of either figure.  The
full build's seconds and CPU utilisation per stage (what ``lakescout refresh`` prints) are printed and kept in the
JSON too.
"""
from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import sys
import tempfile

import harness
from discovery.data.lake import list_lake
from discovery.orchestration.refresh.display import totals
from harness import print_table, shared_path, write_result
from lake_edits import append_last_rows
from spark_jobs.stages import STAGES

#: Shared data sets whose lake is a folder inside them.
SHARED_LAKES = {"ugen_v1": ("ugen_v1", "datalake")}


def change(lake: str, fraction: float, seed: int = 3) -> list[str]:
    """Append a row (a copy of the last) to ``fraction`` of the tables (at least one), deterministically."""
    return append_last_rows(lake, max(1, round(fraction * len(list_lake(lake)))), random.Random(seed))


def bench_lake(spark, name: str, source: str, fraction: float, work: str, rounds: int) -> dict:
    """Full build, then ``rounds`` incremental refreshes each changing ``fraction`` of the tables (median reported;
    the first one, which also warms the Python workers, is reported too)."""
    lake = os.path.join(work, name)
    shutil.copytree(source, lake)
    n = len(list_lake(lake))
    wh = os.path.join(work, f"wh-{name}")
    first = harness.refresh(lake, wh, spark=spark)
    full, t_full = first.result, first.seconds
    times, changed = [], []
    for round_ in range(rounds):
        changed = change(lake, fraction, seed=round_)
        again = harness.refresh(lake, wh, spark=spark)
        times.append(again.seconds)
        assert full.get("published") and again.result.get("published"), (full, again.result)
    assert full.get("published"), full
    t_inc = statistics.median(times) if times else None
    stages = totals(full["stages"])
    return {"lake": name, "tables": n, "full_s": t_full, "tables_per_s": n / t_full,
            "changed": len(changed), "incremental_s": t_inc,
            "incremental_first_s": times[0] if times else None, "ratio": t_inc / t_full if times else None,
            "stage_s": stages["stage_seconds"], "cpu": stages["cpu"],
            **{f"{s['stage']}_s": s["seconds"] for s in full["stages"]}, "full_stages": full["stages"]}


def _share(cpu: float | None) -> str:
    return "?" if cpu is None else f"{100 * cpu:.0f}%"


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lakes", default="sample,fivethirtyeight")
    p.add_argument("--changed", type=float, default=0.01)
    p.add_argument("--rounds", type=int, default=3,
                   help="incremental refreshes to take the median of (0: the full build only)")
    p.add_argument("--scale", default=None, metavar="N,N,...",
                   help="instead of --lakes: generated lakes of these table counts, per-stage s/table "
                        "(benchmarks/refresh_scale.py), e.g. 1000,4000,16000")
    p.add_argument("--work", default=None, help="with --scale: folder kept for the generated parts (reused)")
    p.add_argument("--config", default=None, help="with --scale: TOML configuration of the refreshes")
    args = p.parse_args()
    if args.scale is not None:
        return _scale(p, args)
    spark = harness.spark_session("lakescout-bench-refresh")
    rows = []
    with tempfile.TemporaryDirectory() as work:
        for name in args.lakes.split(","):
            if name == "sample":
                src = harness.sample_lake(os.path.join(work, "_sample_src"))
            else:
                src = shared_path(*SHARED_LAKES.get(name, (name,)))
                if src is None:
                    continue
            rows.append(bench_lake(spark, name, src, args.changed, work, args.rounds))
    print_table(rows, ["lake", "tables", "full_s", "tables_per_s", "changed", "incremental_s", "incremental_first_s",
                       "ratio"])
    print("\nfull build, per stage: seconds (CPU utilisation = CPU s / (wall s x cores))")
    print_table([{"lake": r["lake"], "stages": f"{r['stage_s']:.1f} ({_share(r['cpu'])})",
                  **{s["stage"]: f"{s['seconds']:.1f} ({_share(s['cpu'])})" for s in r["full_stages"]}}
                 for r in rows], ["lake", *STAGES, "stages"])
    write_result("refresh", {"changed_fraction": args.changed, "results": rows, "target_ratio": 0.10})
    return 0


def _scale(parser: argparse.ArgumentParser, args: argparse.Namespace) -> int:
    from refresh_scale import parse_scales, run_scale

    try:
        scales = parse_scales(args.scale)
    except ValueError as exc:
        parser.exit(2, f"error: {exc}\n")
    spark = harness.spark_session("lakescout-bench-refresh-scale")
    if args.work:
        os.makedirs(args.work, exist_ok=True)
        result = run_scale(spark, scales, args.changed, args.work, change, args.config)
    else:
        with tempfile.TemporaryDirectory() as work:
            result = run_scale(spark, scales, args.changed, work, change, args.config)
    write_result("refresh_scale", result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
