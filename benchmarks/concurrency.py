"""Concurrent use of the Lake discovery page: many users searching while a refresh commits to the same warehouse.

The sample lake is built with the real refresh (``lakescout refresh``), a real Airflow api-server serves the plugin
on 127.0.0.1 (private AIRFLOW_HOME, simple auth manager, user ``admin``, token from ``POST /auth/token``), and
``--clients`` threads post union, join and n-ary searches from the lake's ground truth to ``/lakescout/search`` for
``--seconds``.  During that window the lake keeps changing and ``lakescout refresh`` runs again and again (the window
opens once the first of them has started committing), so searches overlap scans, commits and snapshot publications.
Every answer is checked afterwards:

* every request answered, none with a 5xx (any non-200 counts as an error);
* every answer names a published snapshot (a row of ``snapshots``);
* every answer's result rows are in ``query_results``, all in one data file (one group commit of the server, which
  may hold other searches' rows), and the batch has exactly one ``query_batches`` row: nothing lost to a Delta commit
  conflict, nothing doubled.

Latency is reported as p50 / p95 and as ratios to one client searching alone on the same server just before the
window (the baseline); writes ``benchmarks/results/concurrency.json``.

A second part races ``--clients`` threads appending ``--appends`` batches straight through the warehouse's commit
path (what every search does last), once with delta-rs' own commit retries alone and once with Lakescout's retry on
top, and counts the appends lost to ``CommitFailedError``; writes ``benchmarks/results/concurrency_commits.json``.

    .venv/bin/python benchmarks/concurrency.py [--part all|server|commits] [--clients 16] [--seconds 60]
        [--baseline 16] [--appends 300] [--workers 1] [--workdir DIR]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import statistics
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict
from datetime import datetime, UTC

import pyarrow as pa
import requests
from deltalake.exceptions import CommitFailedError

import harness
from airflow_server import api_server, bearer_token
from discovery.data.store import SCHEMAS, Warehouse, new_attempt_token
from discovery.data.store import warehouse as store
from discovery.orchestration.demo_lake import load_ground_truth
from harness import print_table, write_result
from lake_edits import append_last_rows
from page_load import Answer, check_answers, run_clients, search

USER, PASSWORD = "admin", "lakescout-concurrency"
#: Longest wait for the first refresh of the window to start committing.
STARTUP_SECONDS = 900


def search_forms(lake: str, k: int = 10) -> list[dict]:
    """Search form fields for every union, join and n-ary query of the sample lake's ground truth."""
    gt = load_ground_truth(lake)
    union = sorted({r["query_table"] for r in gt["union"]})
    join = sorted({(r["query_table"], r["query_column"]) for r in gt["join"]})
    nary = sorted({(r["query_table"], ",".join(r["query_columns"])) for r in gt["nary"]})
    return ([{"kind": "union", "table": t, "k": str(k)} for t in union]
            + [{"kind": "join", "table": t, "column": c, "k": str(k)} for t, c in join]
            + [{"kind": "nary", "table": t, "key": key, "k": str(k)} for t, key in nary])


def latency(answers: list[Answer]) -> dict:
    secs = sorted(a.seconds for a in answers)
    if not secs:
        return {"requests": 0}
    return {"requests": len(secs), "p50_s": statistics.median(secs),
            "p95_s": secs[min(len(secs) - 1, int(round(0.95 * (len(secs) - 1))))], "max_s": secs[-1]}


def lakescout_refresh(lake: str, warehouse: str, log) -> dict:
    """One ``lakescout refresh --json`` run; returns its result (or the failure)."""
    done = harness.cli("refresh", "--lake", lake, "--warehouse", warehouse, "--json", check=False)
    log.write(done.stderr)
    out = {"seconds": round(done.wall, 1), "returncode": done.returncode}
    if done.returncode == 0:
        result = done.json()
        out.update(snapshot_id=result.get("snapshot_id"), refresh_id=result.get("refresh_id"))
    return out


def refresh_loop(lake: str, warehouse: str, stop: threading.Event, log, rng: random.Random, out: list) -> None:
    """Change the lake and refresh, again and again until ``stop`` is set; the refresh then running runs to its end."""
    while not stop.is_set():
        changed = append_last_rows(lake, 3, rng)
        run = lakescout_refresh(lake, warehouse, log)
        run["changed"] = len(changed)
        out.append(run)


def wait_for_commit(warehouse: str, table: str, version: int, refresher: threading.Thread) -> None:
    """Block until ``table`` moves past ``version`` (the refresh has started committing: its JVM is up and its scan
    recorded), so the measured window covers the refresh's commits rather than its start-up."""
    deadline = time.monotonic() + STARTUP_SECONDS
    while Warehouse(warehouse).version(table) <= version and refresher.is_alive() and time.monotonic() < deadline:
        time.sleep(0.5)


def serve_and_search(args, work: str) -> bool:
    """The served page under concurrent searches while refreshes commit; prints, writes JSON, returns success."""
    lake, warehouse = os.path.join(work, "lake"), os.path.join(work, "warehouse")
    harness.sample_lake(lake)
    log = open(os.path.join(work, "refresh.log"), "a")
    print(f"building the index of {lake} with lakescout refresh ...", flush=True)
    first = lakescout_refresh(lake, warehouse, log)
    if first["returncode"] != 0:
        print(f"the first refresh failed; see {log.name}", file=sys.stderr)
        return False
    forms = search_forms(lake)
    with api_server(os.path.join(work, "airflow"), warehouse, {USER: ("admin", PASSWORD)}, lake=lake,
                    workers=args.workers) as url:
        token = bearer_token(url, USER, PASSWORD)
        with requests.Session() as session:
            warm = [search(session, url, token, next(f for f in forms if f["kind"] == kind))
                    for kind in ("union", "join", "nary")]
        started = time.perf_counter()
        baseline = run_clients(url, token, forms, 1, per_client=args.baseline, seed=1)
        base_wall = time.perf_counter() - started
        refreshes: list[dict] = []
        rng = random.Random(11)
        runs_before = Warehouse(warehouse).version("refresh_runs")
        stop = threading.Event()
        refresher = threading.Thread(target=refresh_loop, args=(lake, warehouse, stop, log, rng, refreshes))
        refresher.start()
        wait_for_commit(warehouse, "refresh_runs", runs_before, refresher)
        load_average = [os.getloadavg()[0]]
        started = time.perf_counter()
        loaded = run_clients(url, token, forms, args.clients, seconds=args.seconds, seed=2)
        load_wall = time.perf_counter() - started
        load_average.append(os.getloadavg()[0])
        stop.set()
        refresher.join()
    log.close()
    checks = check_answers(warehouse, warm + baseline + loaded)
    base = {**latency(baseline), "per_second": len(baseline) / base_wall}
    load = {**latency(loaded), "per_second": len(loaded) / load_wall}
    rows = [{"run": "1 client (baseline)", **base, "errors": sum(1 for a in baseline if a.error)},
            {"run": f"{args.clients} clients + refresh", **load, "errors": sum(1 for a in loaded if a.error)}]
    print_table(rows, ["run", "requests", "per_second", "p50_s", "p95_s", "max_s", "errors"])
    ratio = {"p50_vs_baseline": load["p50_s"] / base["p50_s"], "p95_vs_baseline": load["p95_s"] / base["p95_s"],
             "throughput_vs_baseline": load["per_second"] / base["per_second"]}
    print(f"\nunder load: p50 {ratio['p50_vs_baseline']:.1f}x and p95 {ratio['p95_vs_baseline']:.1f}x the single "
          f"client's, throughput {ratio['throughput_vs_baseline']:.2f}x")
    print("refreshes during the window: " + ", ".join(
        f"snapshot {r.get('snapshot_id')} in {r['seconds']} s" if r["returncode"] == 0 else f"FAILED ({r['seconds']} s)"
        for r in refreshes))
    print("checks: " + json.dumps({k: v for k, v in checks.items() if k != "snapshots_answered_from"}))
    print(f"snapshots answered from: {checks['snapshots_answered_from']}")
    by_kind = {k: latency([a for a in loaded if a.kind == k]) for k in ("union", "join", "nary")}
    write_result("concurrency", {
        "clients": args.clients, "seconds": args.seconds, "workers": args.workers, "baseline": base, "loaded": load,
        "ratios": ratio,
        "by_kind": by_kind, "load_average_1min": load_average, "refreshes": refreshes, "first_refresh": first,
        "checks": checks, "warmup": [asdict(a) for a in warm]})
    return not (checks["errors"] or checks["unpublished_snapshot"] or checks["batches_with_other_row_count"]
                or checks["batches_not_in_one_file"]
                or checks["batches_not_recorded_once"] or not any(r["returncode"] == 0 for r in refreshes))


def append_race(root: str, threads: int, appends: int, attempts: int) -> dict:
    """``threads`` threads append ``appends`` 3-row batches to a fresh ``query_results`` through the warehouse's
    commit path with ``attempts`` commit attempts (1: delta-rs' own retries alone); counts the appends that failed
    and checks that the rows in the table are exactly those of the appends that succeeded."""
    wh = Warehouse(root)
    wh.ensure()
    failed: dict[int, str] = {}
    saved, store.COMMIT_ATTEMPTS = store.COMMIT_ATTEMPTS, attempts
    now = datetime.now(UTC)

    def append(i: int) -> None:
        rows = pa.Table.from_pylist([{"batch_id": f"race-{i}", "query_id": "q", "snapshot_id": 1, "kind": "nary",
                                      "rank": r, "table_id": r, "path": f"t{r}", "column": None, "score": 1.0,
                                      "evidence": "{}", "created_at": now} for r in (1, 2, 3)],
                                    schema=SCHEMAS["query_results"])
        try:
            wh.append_rows("query_results", rows, refresh_id=1, stage="query_batch", attempt=new_attempt_token(),
                           once=False)
        except CommitFailedError as exc:
            failed[i] = str(exc)

    started = time.perf_counter()
    try:
        with ThreadPoolExecutor(threads) as pool:
            list(pool.map(append, range(appends)))
    finally:
        store.COMMIT_ATTEMPTS = saved
    seconds = time.perf_counter() - started
    landed = Counter(wh.read("query_results", columns=["batch_id"]).column("batch_id").to_pylist())
    expected = Counter({f"race-{i}": 3 for i in range(appends) if i not in failed})
    return {"attempts": attempts, "appends": appends, "failed": len(failed), "seconds": seconds,
            "rows_match": landed == expected, "errors": sorted(set(failed.values()))[:3]}


def commit_race(args, work: str) -> bool:
    """Appends from many threads at once, without and with the retry; prints, writes JSON, returns success."""
    rows = [{"commit attempts": "1 (delta-rs alone)", **append_race(os.path.join(work, "race-1"), args.clients,
                                                                    args.appends, 1)},
            {"commit attempts": f"{store.COMMIT_ATTEMPTS} (default)",
             **append_race(os.path.join(work, "race-n"), args.clients, args.appends, store.COMMIT_ATTEMPTS)}]
    print_table(rows, ["commit attempts", "appends", "failed", "rows_match", "seconds"])
    write_result("concurrency_commits", {"threads": args.clients, "runs": rows})
    return rows[1]["failed"] == 0 and all(r["rows_match"] for r in rows)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--part", choices=("all", "server", "commits"), default="all")
    ap.add_argument("--clients", type=int, default=16, help="concurrent clients (and appending threads)")
    ap.add_argument("--seconds", type=float, default=60.0)
    ap.add_argument("--workers", type=int, default=1, help="api-server worker processes")
    ap.add_argument("--baseline", type=int, default=16, help="requests of the single-client baseline")
    ap.add_argument("--appends", type=int, default=300, help="appends of the commit race")
    ap.add_argument("--workdir", help="folder for the lake, warehouse and AIRFLOW_HOME (default: a temp folder)")
    args = ap.parse_args()
    if args.clients < 1 or args.seconds <= 0 or args.baseline < 1 or args.appends < 1:
        ap.error("--clients, --baseline and --appends must be at least 1 and --seconds positive")
    work = args.workdir or tempfile.mkdtemp(prefix="lakescout-concurrency-")
    ok = True
    if args.part in ("all", "commits"):
        ok = commit_race(args, work) and ok
    if args.part in ("all", "server"):
        ok = serve_and_search(args, work) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
