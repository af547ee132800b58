"""Many users on the Lake discovery page at once: searches posted as its form posts them, from client threads, and
the check of what the warehouse recorded against what each client was told.  Used by ``test_concurrency.py`` and
``benchmarks/concurrency.py``."""
from __future__ import annotations

import random
import re
import threading
import time
from collections import Counter
from dataclasses import dataclass

import requests

#: Seconds a client waits for one answer before counting the request as unanswered.
REQUEST_TIMEOUT = 600

_SUMMARY = re.compile(r'id="search-summary">\s*(\d+) result\(s\).*?from snapshot (\d+)\s*\(batch <code>([^<]+)</code>',
                      re.S)
_RESULTS = re.compile(r'<table id="search-results">(.*?)</table>', re.S)
_ERROR = re.compile(r'id="search-error">(.*?)</p>', re.S)


@dataclass
class Answer:
    """One request as the client saw it: HTTP status, latency, and what the page said it answered."""

    status: int
    seconds: float
    kind: str
    snapshot_id: int | None = None
    batch_id: str | None = None
    rows: int | None = None
    error: str | None = None


def search(session: requests.Session, url: str, token: str, form: dict) -> Answer:
    """POST one search as the page's form does (multipart) and read the answer off the rendered page."""
    started = time.perf_counter()
    try:
        r = session.post(f"{url}/lakescout/search", files={k: (None, v) for k, v in form.items()},
                         headers={"Authorization": f"Bearer {token}"}, timeout=REQUEST_TIMEOUT)
    except requests.RequestException as exc:
        return Answer(0, time.perf_counter() - started, form["kind"], error=f"{type(exc).__name__}: {exc}")
    answer = Answer(r.status_code, time.perf_counter() - started, form["kind"])
    summary = _SUMMARY.search(r.text) if r.status_code == 200 else None
    if summary is None:
        error = _ERROR.search(r.text)
        answer.error = f"HTTP {r.status_code}: " + (error[1] if error else r.text[:200]).strip()
        return answer
    table = _RESULTS.search(r.text)
    answer.snapshot_id, answer.batch_id = int(summary[2]), summary[3]
    answer.rows = table[1].count("<tr><td") if table else 0
    if answer.rows != int(summary[1]):
        answer.error = f"page lists {answer.rows} rows but says {summary[1]} result(s)"
    return answer


def run_clients(url: str, token: str, forms: list[dict], clients: int, *, seconds: float | None = None,
                per_client: int | None = None, seed: int = 0) -> list[Answer]:
    """``clients`` threads, each with its own HTTP session, searching forms drawn from ``forms`` (seeded) until
    ``seconds`` have passed or each has sent ``per_client`` requests, whichever bound is given first."""
    if seconds is None and per_client is None:
        raise ValueError("give seconds or per_client: the load must be bounded")
    answers: list[Answer] = []
    lock = threading.Lock()
    deadline = None if seconds is None else time.monotonic() + seconds

    def client(i: int) -> None:
        rng = random.Random(seed * 1000 + i)
        mine = []
        with requests.Session() as session:
            while (per_client is None or len(mine) < per_client) and (deadline is None or time.monotonic() < deadline):
                mine.append(search(session, url, token, rng.choice(forms)))
        with lock:
            answers.extend(mine)

    threads = [threading.Thread(target=client, args=(i,), name=f"client-{i}") for i in range(clients)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers


def check_answers(warehouse: str, answers: list[Answer]) -> dict:
    """What the warehouse recorded against what the clients were told: every request answered, from a published
    snapshot; every answer's rows in ``query_results``, all in one data file (one group commit, which may hold other
    searches' rows too: ``batches_per_file``), with exactly one ``query_batches`` row: nothing lost to a Delta commit
    conflict, nothing doubled."""
    from discovery.data.store import Warehouse, list_snapshots

    wh = Warehouse(warehouse)
    published = {s.snapshot_id for s in list_snapshots(wh)}
    ok = [a for a in answers if a.status == 200 and a.error is None]
    ids = sorted({a.batch_id for a in ok})
    files: dict[str, set[str]] = {}
    rows: Counter = Counter()
    per_file = []
    for fragment in wh.dataset("query_results").get_fragments():
        batch = fragment.to_table(columns=["batch_id"]).column("batch_id").to_pylist()
        per_file.append(len(set(batch)))
        for b in set(batch):
            files.setdefault(b, set()).add(fragment.path)
        rows.update(batch)
    recorded = Counter(wh.read("query_batches", columns=["batch_id"]).column("batch_id").to_pylist())
    return {
        "answered": len(ok),
        "errors": len(answers) - len(ok),
        "server_errors": sum(1 for a in answers if a.status >= 500),
        "unanswered": sum(1 for a in answers if a.status == 0),
        "error_samples": sorted({a.error for a in answers if a.error})[:5],
        "unpublished_snapshot": sum(1 for a in ok if a.snapshot_id not in published),
        "snapshots_answered_from": sorted({a.snapshot_id for a in ok}),
        "rows_returned": sum(a.rows for a in ok),
        "rows_recorded": sum(rows[b] for b in ids),
        "batches_with_other_row_count": sum(1 for a in ok if rows[a.batch_id] != a.rows),
        "batches_not_in_one_file": sum(1 for a in ok if a.rows and len(files.get(a.batch_id, ())) != 1),
        "batches_per_file": {"mean": round(sum(per_file) / max(len(per_file), 1), 2), "max": max(per_file, default=0)},
        "batches_not_recorded_once": sum(1 for b in ids if recorded[b] != 1),
    }
