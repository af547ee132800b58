"""Shared by the benchmark scripts: where the shared data is, printing a table, writing the JSON result."""
from __future__ import annotations

import json
import os
import sys
from datetime import datetime, timezone

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHARED = os.environ.get("LAKESCOUT_SHARED", os.path.join(os.path.dirname(ROOT), "shared"))
RESULTS = os.path.join(ROOT, "benchmarks", "results")


def shared_path(*parts: str) -> str | None:
    """Path of a shared benchmark data set, or None (with a message) when it is not there."""
    path = os.path.join(SHARED, "benchmarks", *parts)
    if not os.path.exists(path):
        print(f"skipping: {path} not found (set LAKESCOUT_SHARED to the folder holding benchmarks/)", file=sys.stderr)
        return None
    return path


def print_table(rows: list[dict], columns: list[str]) -> None:
    cells = [[_fmt(r.get(c)) for c in columns] for r in rows]
    widths = [max(len(c), *(len(row[i]) for row in cells)) if cells else len(c) for i, c in enumerate(columns)]
    print("  ".join(c.ljust(w) for c, w in zip(columns, widths)))
    print("  ".join("-" * w for w in widths))
    for row in cells:
        print("  ".join(v.ljust(w) for v, w in zip(row, widths)))


def _fmt(v) -> str:
    if isinstance(v, float):
        return f"{v:.3f}" if abs(v) < 100 else f"{v:.1f}"
    return "" if v is None else str(v)


def write_result(name: str, payload: dict) -> str:
    os.makedirs(RESULTS, exist_ok=True)
    path = os.path.join(RESULTS, f"{name}.json")
    payload = {"benchmark": name, "at": datetime.now(timezone.utc).isoformat(), "machine": {"cpus": os.cpu_count()},
               **payload}
    with open(path, "w") as fh:
        json.dump(payload, fh, indent=2, default=str)
    print(f"\nwrote {path}")
    return path


def refresh_lake(lake: str, warehouse: str, app: str, config_path: str | None = None) -> tuple[dict, float]:
    """Build (or refresh) ``warehouse`` from ``lake`` with the real refresh on local[2]: (result, seconds)."""
    import time

    from spark_jobs.common import spark_session
    from spark_jobs.refresh import refresh

    os.environ.setdefault("LAKESCOUT_SPARK_MASTER", "local[2]")
    spark = spark_session(app)
    spark.sparkContext.setLogLevel("ERROR")
    t0 = time.perf_counter()
    out = refresh(spark, warehouse, lake, config_path=config_path)
    return out, time.perf_counter() - t0


def autofj_warehouse(root, names: list[str], workdir, master: str,
                     config_path: str | None = None) -> tuple[str, float | None]:
    """Lake of the 100 AutoFJ tables (``<Dataset>_left.csv`` / ``<Dataset>_right.csv``) under ``workdir``,
    refreshed into its warehouse by the real pipeline (every stage; default configuration unless ``config_path``)
    unless the warehouse already has a snapshot; returns (warehouse, refresh wall seconds, or None when an existing
    snapshot was reused)."""
    import shutil
    import time
    from pathlib import Path

    from discovery.store import Warehouse, list_snapshots
    from spark_jobs.common import spark_session
    from spark_jobs.refresh import refresh

    root, workdir = Path(root), Path(workdir)
    lake, wh = workdir / "lake", workdir / "warehouse"
    lake.mkdir(parents=True, exist_ok=True)
    for n in names:
        for side in ("left", "right"):
            if not (lake / f"{n}_{side}.csv").exists():
                shutil.copyfile(root / n / f"{side}.csv", lake / f"{n}_{side}.csv")
    if Warehouse(str(wh)).exists() and list_snapshots(Warehouse(str(wh))):
        return str(wh), None
    os.environ["LAKESCOUT_SPARK_MASTER"] = master
    spark = spark_session("lakescout-bench-autofj")
    spark.sparkContext.setLogLevel("ERROR")
    t0 = time.perf_counter()
    out = refresh(spark, str(wh), str(lake), config_path=config_path)
    seconds = time.perf_counter() - t0
    spark.stop()
    if not out.get("published"):
        raise RuntimeError(f"AutoFJ refresh failed: {out}")
    return str(wh), seconds
