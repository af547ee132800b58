"""Interactive serving: the JSON API on a real Airflow api-server, one client and many, with refreshes and
maintenance committing beside them.

The sample lake is built with the real refresh (``lakescout refresh``) under ``--workdir``; a real api-server serves
the plugin on 127.0.0.1 (private AIRFLOW_HOME, simple auth manager, an admin, a JWT from ``POST /auth/token``,
``--workers`` processes).  Requests are the lake's ground-truth union, join and n-ary queries as JSON bodies of
``POST /lakescout/api/search/{kind}``.

* **first**: the first union, n-ary and join request of a just-started server (and the same request again), on a
  warehouse with nothing recorded, then after a restart once one search of each kind was recorded (what a server
  warms its first snapshot with).
* **latency**: one client, warm, p50 of ``--runs`` requests per kind, not recorded and recorded (``?record=true``);
  ``status``, ``tables`` and ``find``; beside each, the same search through ``discovery.open`` in this process (the
  in-process baseline the HTTP figure is a ratio to).
* **load**: ``--clients`` clients mixing the three searches for ``--seconds``: throughput, p50, p95; then again while
  ``lakescout refresh`` runs over a changing lake (the window opens once the refresh commits).
* **soak**: ``--soak-clients`` clients for ``--soak-seconds`` mixing searches (a third recorded), uploads, ``tables``,
  ``describe``, ``find`` and ``status`` while refreshes and maintenance run in turn; counts 5xx, checks every
  recorded answer is in ``query_results`` and ``query_batches`` exactly once and every answer names a published
  snapshot, and samples the server's resident memory (all its processes) every 5 s, with what the worker answering
  ``status`` holds in its index cache.

Writes ``benchmarks/results/serving.json``.

    python benchmarks/serving.py [--part all|first|latency|load|soak] [--workers 1] [--clients 16] [--seconds 30]
        [--soak-clients 64] [--soak-seconds 600] [--workdir DIR]
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

import psutil
import requests

import harness
from airflow_server import api_server, bearer_token
from discovery.data.store import Warehouse, list_snapshots
from discovery.orchestration.demo_lake import load_ground_truth
from harness import previous_result, print_table, write_result
from lake_edits import append_last_rows

USER, PASSWORD = "admin", "lakescout-serving"


def bodies(lake: str) -> list[tuple[str, dict]]:
    """(kind, JSON body) of every union, join and n-ary query of the sample lake's ground truth."""
    gt = load_ground_truth(lake)
    union = sorted({r["query_table"] for r in gt["union"]})
    join = sorted({(r["query_table"], r["query_column"]) for r in gt["join"]})
    nary = sorted({(r["query_table"], tuple(r["query_columns"])) for r in gt["nary"]})
    return ([("union", {"table": t, "k": 10}) for t in union]
            + [("join", {"table": t, "column": c, "top_k": 10}) for t, c in join]
            + [("nary", {"table": t, "key": list(key), "k": 10}) for t, key in nary])


def quantiles(secs: list[float]) -> dict:
    secs = sorted(secs)
    if not secs:
        return {"requests": 0}
    return {"requests": len(secs), "p50_ms": round(1000 * statistics.median(secs), 1),
            "p95_ms": round(1000 * secs[min(len(secs) - 1, int(round(0.95 * (len(secs) - 1))))], 1),
            "max_ms": round(1000 * secs[-1], 1)}


class Client:
    def __init__(self, url: str, token: str):
        self.url, self.session = url + "/lakescout/api", requests.Session()
        self.last_error = ""
        self.session.headers["Authorization"] = f"Bearer {token}"

    def timed(self, method: str, path: str, **kwargs) -> tuple[float, requests.Response | None]:
        """(seconds, the response), the response None when the request got none (:attr:`last_error` says why)."""
        started = time.perf_counter()
        try:
            r = self.session.request(method, self.url + path, timeout=600, **kwargs)
        except requests.RequestException as exc:
            r = None
            self.last_error = f"{type(exc).__name__}: {str(exc)[:200]}"
        return time.perf_counter() - started, r


def latency(url: str, token: str, work: dict, runs: int) -> list[dict]:
    import discovery

    client, ls = Client(url, token), discovery.open(work["warehouse"])
    rows = []
    for kind in ("union", "nary", "join"):
        mine = [b for k, b in work["bodies"] if k == kind]
        local_call = {"union": lambda b: ls.union(b["table"], k=b["k"]),
                      "nary": lambda b: ls.nary(b["table"], b["key"], k=b["k"]),
                      "join": lambda b: ls.join(b["table"], b["column"], top_k=b["top_k"])}[kind]
        for b in mine:       # every query once: indexes built, files in the page cache
            client.timed("POST", f"/search/{kind}", json=b)
            local_call(b)
        for record in (False, True):
            secs = [client.timed("POST", f"/search/{kind}" + ("?record=true" if record else ""),
                                 json=mine[i % len(mine)])[0] for i in range(runs)]
            rows.append({"request": f"{kind}{' recorded' if record else ''}", **quantiles(secs)})
        local = []
        for i in range(runs):
            started = time.perf_counter()
            local_call(mine[i % len(mine)])
            local.append(time.perf_counter() - started)
        rows[-2]["in_process_p50_ms"] = round(1000 * statistics.median(local), 1)
        rows[-2]["ratio"] = round(rows[-2]["p50_ms"] / rows[-2]["in_process_p50_ms"], 2)
    for name, path, params in (("status", "/status", None), ("tables", "/tables", None),
                               ("find", "/find", {"words": ["salary", "hire date"]})):
        client.timed("GET", path, params=params)
        rows.append({"request": name, **quantiles([client.timed("GET", path, params=params)[0]
                                                   for _ in range(runs)])})
    return rows


def first_requests(url: str, token: str, work: dict, record: bool) -> dict:
    """Milliseconds of the first search of each kind a just-started server answers (one query per kind, the same
    in every run), then of the same request again; ``record``: the first ones are recorded (what the next start
    warms with)."""
    client = Client(url, token)
    out = {}
    for kind in ("union", "nary", "join"):
        body = next(b for k, b in work["bodies"] if k == kind)
        first = client.timed("POST", f"/search/{kind}" + ("?record=true" if record else ""), json=body)[0]
        again = client.timed("POST", f"/search/{kind}", json=body)[0]
        out[kind] = {"first_ms": round(1000 * first, 1), "again_ms": round(1000 * again, 1)}
    return out


def mixed(url: str, token: str, work: dict, clients: int, seconds: float, soak: bool = False) -> list[dict]:
    """``clients`` threads for ``seconds``; each request a random search (or, in the soak, any route)."""
    deadline = time.monotonic() + seconds
    out: list[dict] = []
    lock = threading.Lock()
    with open(os.path.join(work["lake"], work["nary_upload"][0]), "rb") as fh:
        upload = fh.read()

    def one(client: Client, rng: random.Random) -> dict:
        kind, body = rng.choice(work["bodies"])
        op = rng.random() if soak else 0.0
        if op < 0.45 or not soak:
            record = soak and rng.random() < 0.33
            secs, r = client.timed("POST", f"/search/{kind}" + ("?record=true" if record else ""), json=body)
        elif op < 0.55:
            kind, record = "nary-upload", True
            params = json.dumps({"key": list(work["nary_upload"][1]), "k": 5})
            secs, r = client.timed("POST", "/search/nary?record=true", data={"params": params},
                                   files={"upload": ("mine.csv", upload, "text/csv")})
        else:
            record = False
            kind, path, params = rng.choice([
                ("tables", "/tables", None), ("describe", f"/tables/{rng.randint(1, 40)}", None),
                ("find", "/find", {"words": [rng.choice(["salary", "city", "name", "date"])]}),
                ("status", "/status", None)])
            secs, r = client.timed("GET", path, params=params)
        answer = {"kind": kind, "seconds": secs, "status": r.status_code if r is not None else 0, "record": record}
        if r is None:
            answer["error"] = client.last_error
        if r is not None and r.status_code == 200 and kind in ("union", "join", "nary", "nary-upload"):
            got = r.json()
            answer.update(batch_id=got["batch_id"], snapshot_id=got["snapshot_id"], rows=len(got["results"]))
        return answer

    def run(i: int) -> None:
        rng, client, mine = random.Random(i), Client(url, token), []
        while time.monotonic() < deadline:
            mine.append(one(client, rng))
        with lock:
            out.extend(mine)


    threads = [threading.Thread(target=run, args=(i,)) for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return out


def summary(answers: list[dict], seconds: float) -> dict:
    searches = [a for a in answers if a["kind"] in ("union", "join", "nary", "nary-upload")]
    by_kind = {kind: quantiles([a["seconds"] for a in searches if a["kind"] == kind])
               for kind in sorted({a["kind"] for a in searches})}
    return {**quantiles([a["seconds"] for a in searches]), "by_kind": by_kind,
            "searches_per_s": round(len(searches) / seconds, 1),
            "requests_per_s": round(len(answers) / seconds, 1),
            "status_5xx": sum(1 for a in answers if a["status"] >= 500),
            "unanswered": sum(1 for a in answers if a["status"] == 0),
            "unanswered_why": dict(Counter(a["error"] for a in answers if a["status"] == 0)),
            "refused": dict(Counter(a["status"] for a in answers if 400 <= a["status"] < 500))}


def checked(warehouse: str, answers: list[dict], published: set[int]) -> dict:
    """Every recorded answer in the warehouse exactly once with its rows; every answer from a snapshot that was
    published (``published``: those before the run and those its refreshes published; maintenance may have retired
    some since)."""
    wh = Warehouse(warehouse)
    ok = [a for a in answers if a.get("snapshot_id") is not None]
    kept = [a for a in ok if a["record"]]
    batches = Counter(wh.read("query_batches", columns=["batch_id"]).column("batch_id").to_pylist())
    rows = Counter(wh.read("query_results", columns=["batch_id"]).column("batch_id").to_pylist())
    return {"answers": len(ok), "recorded": len(kept),
            "unpublished_snapshot": sum(1 for a in ok if a["snapshot_id"] not in published),
            "lost_or_doubled": sum(1 for a in kept if batches[a["batch_id"]] != 1),
            "rows_differ": sum(1 for a in kept if rows[a["batch_id"]] != a["rows"]),
            "snapshots_answered_from": sorted({a["snapshot_id"] for a in ok})}


def server_rss_mb() -> float:
    """Resident memory of the api-server: its process and every process under it (the uvicorn workers), MB."""
    total = 0
    for p in psutil.Process().children():
        try:
            if "api_server" in " ".join(p.cmdline()).replace("-", "_"):   # its title: "airflow api_server -- ..."
                total += sum(q.memory_info().rss for q in [p, *p.children(recursive=True)])
        except psutil.Error:
            pass
    return round(total / 2**20, 1)


def worker_memory(samples: list[dict]) -> dict:
    """Per worker: its first and last sample after the first minute (RSS, index cache, and RSS outside the cache) and
    every sample."""
    out = {}
    for pid in sorted({s["pid"] for s in samples}):
        mine = [s for s in samples if s["pid"] == pid]
        warm = [s for s in mine if s["at"] >= 60] or mine
        out[str(pid)] = {"first": warm[0], "last": warm[-1],
                         "outside_cache_mb": [round(warm[0]["rss_mb"] - warm[0]["cache_mb"], 1),
                                              round(warm[-1]["rss_mb"] - warm[-1]["cache_mb"], 1)],
                         "samples": mine}
    return out


def churn(work: dict, stop: threading.Event, log, maintain: bool, out: list) -> None:
    """Change the lake and refresh (and, when ``maintain``, run maintenance) again and again until ``stop``."""
    rng = random.Random(3)
    while not stop.is_set():
        append_last_rows(work["lake"], 3, rng)
        done = harness.cli("refresh", "--lake", work["lake"], "--warehouse", work["warehouse"], "--json", check=False)
        log.write(done.stderr)
        out.append({"run": "refresh", "seconds": round(done.wall, 1), "returncode": done.returncode,
                    "snapshot_id": done.json().get("snapshot_id") if done.returncode == 0 else None})
        if maintain and not stop.is_set():
            from discovery.surfaces.maintenance import run_maintenance
            from discovery.data.store import Warehouse

            started = time.perf_counter()
            run_maintenance(Warehouse(work["warehouse"]), run="serving-benchmark")
            out.append({"run": "maintenance", "seconds": round(time.perf_counter() - started, 1)})


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--part", choices=["all", "first", "latency", "load", "soak"], default="all")
    p.add_argument("--workers", type=int, default=1)
    p.add_argument("--runs", type=int, default=30)
    p.add_argument("--clients", type=int, default=16)
    p.add_argument("--seconds", type=float, default=30)
    p.add_argument("--soak-clients", type=int, default=64)
    p.add_argument("--soak-seconds", type=float, default=600)
    p.add_argument("--workdir")
    args = p.parse_args(argv)
    work_dir = args.workdir or tempfile.mkdtemp(prefix="lakescout-serving-")
    lake, warehouse = os.path.join(work_dir, "lake"), os.path.join(work_dir, "warehouse")
    if not harness.published(warehouse):
        harness.sample_lake(lake)
        print(f"building the index of {lake} with lakescout refresh ...", flush=True)
        harness.cli("refresh", "--lake", lake, "--warehouse", warehouse, "--json")
    gt = load_ground_truth(lake)
    work = {"lake": lake, "warehouse": warehouse, "bodies": bodies(lake),
            "nary_upload": (gt["nary"][0]["query_table"], gt["nary"][0]["query_columns"])}
    result: dict = {"workers": args.workers, "cores": os.cpu_count()}
    log = open(os.path.join(work_dir, "refresh.log"), "a")
    published = {s.snapshot_id for s in list_snapshots(Warehouse(warehouse))}
    if args.part in ("all", "first"):
        # a start on a warehouse with nothing recorded (cold), then a restart after one recorded search of each kind
        recorded = Warehouse(warehouse).read("query_batches", columns=["batch_id"]).num_rows
        result["first"] = {"recorded_before": recorded}
        for run in ("start", "restart"):
            with api_server(os.path.join(work_dir, "airflow"), warehouse, {USER: ("admin", PASSWORD)}, lake=lake,
                            workers=args.workers) as url:
                result["first"][run] = first_requests(url, bearer_token(url, USER, PASSWORD), work, run == "start")
        print(result["first"])
    with api_server(os.path.join(work_dir, "airflow"), warehouse, {USER: ("admin", PASSWORD)}, lake=lake,
                    workers=args.workers) as url:
        token = bearer_token(url, USER, PASSWORD)
        if args.part in ("all", "latency"):
            result["latency"] = latency(url, token, work, args.runs)
            print_table(result["latency"], ["request", "requests", "p50_ms", "p95_ms", "in_process_p50_ms", "ratio"])
        if args.part in ("all", "load"):
            for kind, b in work["bodies"]:
                Client(url, token).timed("POST", f"/search/{kind}", json=b)
            quiet = mixed(url, token, work, args.clients, args.seconds)
            stop, runs = threading.Event(), []
            before = Warehouse(warehouse).version("refresh_runs")
            refresher = threading.Thread(target=churn, args=(work, stop, log, False, runs))
            refresher.start()
            while Warehouse(warehouse).version("refresh_runs") <= before and refresher.is_alive():
                time.sleep(0.5)
            busy = mixed(url, token, work, args.clients, args.seconds)
            stop.set()
            refresher.join()
            result["load"] = [{"run": f"{args.clients} clients", **summary(quiet, args.seconds)},
                              {"run": f"{args.clients} clients + refresh", **summary(busy, args.seconds),
                               "refreshes": runs}]
            published |= {r["snapshot_id"] for r in runs if r.get("snapshot_id")}
            result["load_checks"] = checked(warehouse, quiet + busy, published)
            print_table(result["load"], ["run", "requests", "searches_per_s", "p50_ms", "p95_ms", "max_ms",
                                         "status_5xx"])
            print(result["load_checks"])
            kinds = [{"run": r["run"], "kind": kind, **q} for r in result["load"] for kind, q in r["by_kind"].items()]
            print_table(kinds, ["run", "kind", "requests", "p50_ms", "p95_ms", "max_ms"])
        if args.part in ("all", "soak"):
            stop, runs, memory, workers = threading.Event(), [], [], []
            churner = threading.Thread(target=churn, args=(work, stop, log, True, runs))
            churner.start()
            sampler_stop = threading.Event()

            client = Client(url, token)

            def sample() -> None:
                """Every 5 s the server's RSS, and what one worker (whichever answers ``status``) says it holds:
                its RSS and its index cache's bytes, so growth inside the cache's budget is told from growth
                outside it."""
                started = time.monotonic()
                while not sampler_stop.wait(5):
                    at = round(time.monotonic() - started)
                    memory.append((at, server_rss_mb()))
                    _, r = client.timed("GET", "/status")
                    if r is not None and r.status_code == 200:
                        held = r.json()["serving"]
                        workers.append({"at": at, "pid": held["pid"], "rss_mb": round(held["rss_bytes"] / 2**20, 1),
                                        "cache_mb": round(held["index_cache"]["bytes"] / 2**20, 1)})

            sampler = threading.Thread(target=sample)
            sampler.start()
            answers = mixed(url, token, work, args.soak_clients, args.soak_seconds, soak=True)
            sampler_stop.set()
            sampler.join()
            stop.set()
            churner.join()
            published |= {r["snapshot_id"] for r in runs if r.get("snapshot_id")}
            warm = [m for t, m in memory if t >= 60] or [m for _, m in memory]
            result["soak"] = {"clients": args.soak_clients, "seconds": args.soak_seconds,
                              **summary(answers, args.soak_seconds), "checks": checked(warehouse, answers, published),
                              "runs": runs, "rss_mb_after_first_minute": {"min": min(warm), "max": max(warm),
                                                                          "last": warm[-1]},
                              "rss_mb_samples": memory, "workers": worker_memory(workers)}
            print({k: v for k, v in result["soak"].items() if k != "rss_mb_samples"})
    log.close()
    # a run measures the parts it is asked for; the others stay as the last run left them
    write_result("serving", {**previous_result("serving", ("first", "latency", "load", "load_checks", "soak")),
                             **result})
    return 0


if __name__ == "__main__":
    sys.exit(main())
