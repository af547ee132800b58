"""Lakehouse benchmark: UGEN-V1 laid out as the datasets real lakes hold, indexed by the real refresh.

The 1,000 UGEN-V1 lake tables (``../shared/benchmarks/ugen_v1``) are laid out round robin as Delta tables (each with
an older, different version: a third of the rows, one column fewer, one column more), Hive-partitioned Parquet
folders, Spark part-file folders, gzip'd CSV, JSON Lines, Iceberg tables (SQL catalog on SQLite) and plain CSV
(``discovery.orchestration.demo_lake.layouts``, the formats' own writers).  The same tables as plain CSV form the
reference lake. Both are built by the real refresh (every stage, default configuration, local[2]) and queried through
``discovery.open(warehouse).union(query, k=10)`` with the 50 UGEN query files; ranked tables are mapped back to
their UGEN names to score MAP@10 against ``groundtruth.csv``.

Reported: tables indexed (must equal the CSV lake's), union MAP@10 of each lake (the lakehouse within 0.02 of the
CSV lake), and the full-build time ratio lakehouse : CSV.  With ``--s3`` the lakehouse is also laid out on an S3
server on 127.0.0.1 (``scripts/s3_server.py``) and built into a warehouse on it: answers identical to the local
lakehouse build's, and the build-time ratio S3 : local.

Usage: python benchmarks/lakehouse.py [--workdir DIR] [--s3] [--rebuild]
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
from pathlib import Path

import pyarrow as pa

import discovery
import harness
from discovery import storage
from discovery.config import Limits
from discovery.data.lake import LakeFileError, read_lake_table
from discovery.orchestration.demo_lake.layouts import relayout
from harness import metrics, print_table, shared_path, ugen_layout, write_result

LAYOUTS = ("delta", "hive", "parts", "csv.gz", "jsonl", "iceberg", "csv")
K = 10


def lay_out(ugen: Path, names: list[str], lake: str, catalog_db: str) -> dict[str, str]:
    """Write the UGEN tables under ``lake`` round robin over :data:`LAYOUTS`; returns lake path -> UGEN name."""
    fs, base = storage.filesystem(lake)
    fs.makedirs(base, exist_ok=True)
    back = {}
    for i, name in enumerate(names):
        layout = LAYOUTS[i % len(LAYOUTS)]
        folder = f"{layout.replace('.', '_')}"
        rel = f"{folder}/{name}"
        fs.makedirs(f"{base}/{folder}", exist_ok=True)
        fs.put_file(str(ugen / "datalake" / name), f"{base}/{rel}")
        if layout == "csv":
            back[rel] = name
            continue
        try:
            parsed = read_lake_table(lake, rel, "csv", (ugen / "datalake" / name).stat().st_size, Limits())
        except LakeFileError:  # a header-only table: left as the CSV file, an error table in both lakes alike
            back[rel] = name
            continue
        table = pa.table({n: c for n, c in zip(parsed.names, parsed.columns)})
        older = None
        if layout == "delta":
            cut = table.slice(0, max(1, table.num_rows // 3))
            older = cut.select(cut.column_names[:-1]).append_column("retired", pa.array(["v0"] * cut.num_rows))
        elif layout == "iceberg":
            older = table.slice(0, max(1, table.num_rows // 3))
        back[relayout(lake, rel, layout, table, older, catalog_db=catalog_db)] = name
    return back


def build(lake: str, warehouse: str) -> float:
    """Build ``warehouse`` unless an earlier run did, and return its full build's seconds as ``lakescout status``
    reports them (the stages of its first refresh), so every lake is timed the same way."""
    harness.build(lake, warehouse)
    return sum(harness.stage_seconds(warehouse, first=True).values())


def evaluate(warehouse: str, ugen: Path, queries: list[str], truth: dict, back: dict[str, str]) -> dict:
    ls = discovery.open(warehouse)
    status = ls.status()
    scores, answers = [], {}
    for q in queries:
        ranked = [back.get(r["path"], r["path"]) for r in ls.union(str(ugen / "query" / q), k=K)["results"]]
        answers[q] = ranked
        scores.append(metrics(ranked + [""] * (K - len(ranked)), truth.get(q, set()))[0])
    return {"tables_ok": status["tables"]["ok"], "tables_error": status["tables"]["error"],
            "map10": sum(scores) / len(scores), "answers": answers}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--workdir", default="/tmp/lakescout-bench-lakehouse")
    ap.add_argument("--s3", action="store_true", help="also lay out and build the lakehouse on an S3 server")
    ap.add_argument("--rebuild", action="store_true")
    args = ap.parse_args()
    root = shared_path("ugen_v1")
    if root is None:
        return 0
    ugen = Path(root)
    names, queries, truth = ugen_layout(ugen)
    work = Path(args.workdir)
    if args.rebuild and work.exists():
        shutil.rmtree(work)
    work.mkdir(parents=True, exist_ok=True)
    rows, out = [], {}

    csv_lake = work / "csv_lake"
    if not csv_lake.exists():
        shutil.copytree(ugen / "datalake", csv_lake)
    csv_back = {n: n for n in names}
    csv_seconds = build(str(csv_lake), str(work / "csv_wh"))
    out["csv"] = {**evaluate(str(work / "csv_wh"), ugen, queries, truth, csv_back), "build_seconds": csv_seconds}

    house = work / "lakehouse"
    if house.exists():
        shutil.rmtree(house)
    (work / "catalog.db").unlink(missing_ok=True)  # its Iceberg tables pointed into the lake just removed
    back = lay_out(ugen, names, str(house), str(work / "catalog.db"))
    house_seconds = build(str(house), str(work / "lakehouse_wh"))
    out["lakehouse"] = {**evaluate(str(work / "lakehouse_wh"), ugen, queries, truth, back),
                        "build_seconds": house_seconds}

    if args.s3:
        from s3_server import S3Server

        with S3Server() as server:
            os.environ.update(server.env)
            lake_uri, wh_uri = server.create_bucket("ugen-lake") + "/lake", server.create_bucket("ugen-wh") + "/wh"
            (work / "catalog_s3.db").unlink(missing_ok=True)
            s3_back = lay_out(ugen, names, lake_uri, str(work / "catalog_s3.db"))
            s3_seconds = build(lake_uri, wh_uri)
            out["lakehouse_s3"] = {**evaluate(wh_uri, ugen, queries, truth, s3_back), "build_seconds": s3_seconds,
                                   "requests": server.requests()}

    for name, r in out.items():
        rows.append({"lake": name, "tables_ok": r["tables_ok"], "errors": r["tables_error"], "MAP@10": r["map10"],
                     "build_s": r["build_seconds"], "build_ratio": r["build_seconds"] / out["csv"]["build_seconds"]})
    print_table(rows, ["lake", "tables_ok", "errors", "MAP@10", "build_s", "build_ratio"])
    summary = {"tables": len(names), "rows": rows,
               "map10_gap": out["lakehouse"]["map10"] - out["csv"]["map10"]}
    if "lakehouse_s3" in out:
        summary["s3_answers_identical"] = out["lakehouse_s3"]["answers"] == out["lakehouse"]["answers"]
        summary["s3_to_local_build"] = out["lakehouse_s3"]["build_seconds"] / house_seconds
        summary["s3_requests"] = out["lakehouse_s3"]["requests"]
        print(f"S3 answers identical to the local lakehouse build: {summary['s3_answers_identical']}; "
              f"build S3 : local = {summary['s3_to_local_build']:.2f}")
    write_result("lakehouse", summary)
    return 0


if __name__ == "__main__":
    sys.exit(main())
