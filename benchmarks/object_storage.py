"""Object-storage benchmark: requests a refresh makes against the lake's bucket, counted at the S3 server.

A lake of about ``--objects`` objects (default 10,000) is written to an S3 server on 127.0.0.1
(``scripts/s3_server.py``, which counts the requests it answers per bucket): small CSV tables from the sample-lake
generator's vocabulary, and -- most of the objects, as in lakehouse lakes -- Hive-partitioned folders of 250 part
files and Delta tables of 100 commits, so the listing has dataset folders to classify as well as files.
The lake is built by the real refresh
into a warehouse in another bucket; then the unchanged lake is refreshed again and the requests that no-op refresh
made to the lake bucket are reported: LIST requests against objects / 1,000 (one LIST page holds 1,000 keys), and
GET / HEAD requests, which must be none (nothing is opened when nothing changed).  Warehouse requests are reported
beside them.

With ``--listing N`` it measures the listing alone instead: N objects (CSV files in folders of 1,000, and a fifth of
them in Hive-partitioned folders of 10 part files) are put on the server, and the lake is listed in a fresh process
twice: once as ``list_lake`` does (the paged listing classified from Arrow columns), once holding the result of
fsspec's ``find`` (one recursive listing returned whole, as the listing once did, before classifying anything).
Reported: each process's peak of Python allocations (``tracemalloc``) and of RSS over its state before listing
(after listing one folder the same way, so imports and clients are in place), seconds (traced, so slower than
untraced), and LIST requests.

Usage: python benchmarks/object_storage.py [--objects 10000] [--listing 100000]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np
import pyarrow as pa

import harness
from discovery import storage
from discovery.orchestration.demo_lake import layouts
from discovery.orchestration.demo_lake.vocab import CITIES, FIRST_NAMES
from harness import print_table, write_result


def _table(rng: np.random.Generator, rows: int) -> pa.Table:
    return pa.table({"name": rng.choice(FIRST_NAMES, rows).tolist(),
                     "city": rng.choice([c for c, _ in CITIES], rows).tolist(),
                     "amount": rng.integers(1, 10_000, rows).astype(str).tolist(),
                     "region": rng.choice(["north", "south", "east", "west"], rows).tolist()})


def write_lake(lake: str, objects: int, seed: int = 0) -> int:
    """Write about ``objects`` objects the way lakehouse lakes hold them, most of them inside datasets: a tenth as
    CSV files, half as Hive-partitioned Parquet folders of 250 part files, the rest as Delta tables of 100 commits (a
    log entry and a data file each).  Returns the objects written."""
    from deltalake import write_deltalake

    rng = np.random.default_rng(seed)
    fs, base = storage.filesystem(lake)
    for i in range(objects // 10):
        fs.pipe_file(f"{base}/csv/{i // 1000:03d}/t{i:05d}.csv", layouts.csv_bytes(_table(rng, 10)))
    days = [f"2026-{m:02d}-{d:02d}" for m in range(1, 11) for d in range(1, 26)]   # 250 partitions
    for t in range(max(1, objects // 2 // len(days))):
        table = _table(rng, len(days)).append_column("day", pa.array(days))
        layouts.write_hive(f"{lake}/hive/t{t:04d}", table, ["day"])
    for t in range(max(1, (objects - len(fs.find(base))) // 200)):
        uri = f"{lake}/delta/t{t:04d}"
        for _ in range(100):
            write_deltalake(uri, _table(rng, 5), mode="append", storage_options=storage.delta_options(uri))
    return len(fs.find(base))


def put_keys(lake: str, objects: int) -> int:
    """Put ``objects`` small objects under ``lake``: four fifths CSV files in folders of 1,000, a fifth as Hive
    folders of 10 partitions.  Returns the tables they make."""
    from concurrent.futures import ThreadPoolExecutor

    bucket, _, prefix = lake.split("://", 1)[1].partition("/")
    client = storage.s3_client()
    files = objects * 4 // 5
    keys = [f"{prefix}/csv/{i // 1000:04d}/t{i:07d}.csv" for i in range(files)]
    keys += [f"{prefix}/hive/d{i // 10:06d}/day={i % 10}/part-0.parquet" for i in range(objects - files)]
    body = b"name,city\nAda,Oslo\n"
    with ThreadPoolExecutor(16) as pool:
        list(pool.map(lambda key: client.put_object(Bucket=bucket, Key=key, Body=body), keys))
    return files + (objects - files + 9) // 10


def _listing_peak(mode: str, lake: str, env: dict, out) -> None:
    """In a fresh process: (MB of Python allocations at the peak, MB of peak RSS over the RSS before listing,
    seconds, tables or objects).  One folder is listed the same way first, so imports, clients and botocore's S3
    model (tens of MB) are in place before measuring."""
    import time
    import tracemalloc

    os.environ.update(env)
    from discovery.data.lake import list_lake

    fs, base = storage.filesystem(lake)
    warm = f"{lake}/hive/d000000"
    list_lake(warm) if mode == "list_lake" else fs.find(f"{base}/hive/d000000", detail=True)
    before = harness.proc_status("VmRSS")
    tracemalloc.start()
    t0 = time.perf_counter()
    if mode == "list_lake":
        n = len(list_lake(lake))
    else:
        n = len(fs.find(base, detail=True, withdirs=False))
    seconds = time.perf_counter() - t0
    python = tracemalloc.get_traced_memory()[1] / 2**20
    out.put((python, (harness.proc_status("VmHWM") - before) / 2**20, seconds, n))


def listing(server, objects: int) -> dict:
    import multiprocessing as mp

    lake = server.create_bucket("bench-listing") + "/lake"
    tables = put_keys(lake, objects)
    rows = []
    for mode in ("list_lake", "fsspec find"):
        server.requests(reset=True)
        ctx = mp.get_context("spawn")
        out = ctx.Queue()
        proc = ctx.Process(target=_listing_peak, args=(mode, lake, dict(server.env), out))
        proc.start()
        python, grown, seconds, n = out.get()
        proc.join()
        rows.append({"listing": mode, "objects": objects, "found": n, "python_peak_mb": python,
                     "rss_growth_mb": grown, "seconds": seconds,
                     "LIST": server.requests(bucket="bench-listing").get("LIST", 0)})
    print(f"{objects} objects, {tables} tables")
    print_table(rows, ["listing", "objects", "found", "python_peak_mb", "rss_growth_mb", "seconds", "LIST"])
    return {"objects": objects, "tables": tables, "rows": rows}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--objects", type=int, default=10_000)
    ap.add_argument("--listing", type=int, default=None, metavar="N", help="measure the listing of N objects alone")
    args = ap.parse_args()
    from s3_server import S3Server

    if args.listing:
        with S3Server() as server:
            os.environ.update(server.env)
            write_result("object_storage_listing", listing(server, args.listing))
        return 0

    with S3Server() as server:
        os.environ.update(server.env)
        lake, warehouse = server.create_bucket("bench-lake") + "/lake", server.create_bucket("bench-wh") + "/wh"
        n_objects = write_lake(lake, args.objects)
        spark = harness.spark_session("lakescout-bench-s3")
        first = harness.refresh(lake, warehouse, spark=spark)
        server.requests(reset=True)
        again = harness.refresh(lake, warehouse, spark=spark)
        (first, build), (again, noop) = (first.result, first.seconds), (again.result, again.seconds)
        lake_req, wh_req = server.requests(bucket="bench-lake"), server.requests(bucket="bench-wh")
    rows = [{"bucket": "lake", **lake_req}, {"bucket": "warehouse", **wh_req}]
    print(f"{n_objects} lake objects; full build {build:.1f} s (published: {first.get('published')}); "
          f"no-op refresh {noop:.1f} s (published: {again.get('published')})")
    print_table(rows, ["bucket", "LIST", "GET", "HEAD", "PUT", "POST", "DELETE"])
    lists = lake_req.get("LIST", 0)
    print(f"lake LIST per 1,000 objects: {1000 * lists / n_objects:.2f}; lake GET + HEAD: "
          f"{lake_req.get('GET', 0) + lake_req.get('HEAD', 0)}")
    write_result("object_storage", {"objects": n_objects, "build_seconds": build, "noop_seconds": noop,
                                    "lake_requests": lake_req, "warehouse_requests": wh_req,
                                    "lists_per_1000_objects": 1000 * lists / n_objects})
    return 0


if __name__ == "__main__":
    sys.exit(main())
