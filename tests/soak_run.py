"""The soak: months of scheduled operation compressed into N cycles of lake edits, refreshes (some killed), maintenance
and searches, checked after every completed refresh against two references.

A small generated lake (CSV, Parquet, JSON Lines, Delta tables, Hive-partitioned folders; about two dozen tables
over shared cities, people and products) is edited every cycle, from a seeded RNG: files added, changed, deleted
and renamed, new Delta versions, added partitions, and a table that becomes unreadable (its bytes garbled) and
readable again a cycle later.  Three warehouses index it:

* **faulted**: a share of its refreshes run as ``lakescout refresh`` subprocesses killed with SIGKILL (the whole
  process group: CLI, spark-submit, JVM and Python workers) a random delay after it took the warehouse lease (a
  tenth of them after their start, while Spark starts), so inside Spark tasks, between stages or during a commit;
  the next refresh takes over the dead one's lease at once, its process being gone (``lease_takeovers`` counts
  them; a lease left held but not taken over is a mismatch).  Every cycle ends with a refresh that completes
  (in-process, sharing the soak's Spark session).  Every ``--maintain-every`` cycles maintenance runs (snapshot
  retention, compaction, vacuum, orphan cleanup, checkpoints), then log entries older than every retained version
  are aged past the log retention and expired (``cleanup_metadata``).  Searches run on it from a thread while a
  killed refresh runs, and after every refresh.
* **twin**: the same edits and one refresh per cycle, no fault and no maintenance.  Its index rows (bookkeeping
  columns aside: refresh ids, timestamps, snapshot ids) and its union, join and n-ary answers to a fixed set of
  queries must equal the faulted warehouse's.
* **fresh**: a full build of the lake as it is now, every ``--fresh-every`` cycles.  Its catalog rows (paths, formats,
  sizes, content hashes, row and column counts; table ids and refresh ids aside) and its n-ary answers (which depend
  on no trained model) must equal the faulted warehouse's.  A table that is unreadable at that moment is left out:
  the faulted warehouse keeps its last indexed rows (``stale``), a fresh build never had any (``error``).

Every retained snapshot of the faulted warehouse must read with no missing file.  The report counts cycles,
refreshes killed, mismatches, missing files, searches and their failures, and the faulted warehouse's size after
maintenance against a fresh build's, with both broken down by what keeps their bytes (latest version, retained
snapshots, retention window, garbage, Delta logs, query arrays: :mod:`warehouse_bytes`).

``tests/test_soak.py`` runs it for two cycles; ``benchmarks/soak.py`` runs it for hundreds and records the report.
"""
from __future__ import annotations

import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pyarrow as pa
import pyarrow.csv as pacsv

from lake_edits import Editor, make_lake, make_rows
from warehouse_bytes import breakdown, compare

#: Settings of the soak's warehouses: encoders trained in seconds, and retention short enough that maintenance
#: drops snapshots, versions and files within a run of minutes (log retention >= snapshot retention, as required).
CONFIG = """
[embed]
join_steps = 30
table_epochs = 2
train_tables = 64

[maintenance]
keep_snapshots = 3
snapshot_retention_days = {retention_days}
log_retention_days = {retention_days}
orphan_grace_hours = {grace_hours}
min_small_files = 4
"""

# -- comparing warehouses ----------------------------------------------------------------------------------------------
#: Columns that record when and by which run a row was written, not what the index holds.
BOOKKEEPING = {"refresh_id", "indexed_at", "created_at", "snapshot_id", "previous_snapshot_id"}


#: The refresh id that model versions carry (``xash-<hash>-r<refresh id>``): which run fitted it, not what it holds.
RUN_SUFFIX = re.compile(r"-r\d{6,}")
#: How long a model took to fit, in its params: a timing, not content.
TIMING = re.compile(r'\\"seconds\\": [0-9.e+-]+')


def _plain(value) -> str:
    """A value JSON has no form for, as text: bytes by their SHA-256, which compares as the bytes do.  A model's
    payload (93 MB for the join encoder) spelled out as ``repr`` and searched by the regexes above took 14 s per
    warehouse and comparison, most of a short soak's checking time."""
    if isinstance(value, (bytes, bytearray)):
        return f"sha256:{hashlib.sha256(value).hexdigest()}"
    return str(value)


def _canonical(table: pa.Table, drop: set[str]) -> list[str]:
    keep = [c for c in table.column_names if c not in drop]
    return sorted(TIMING.sub("", RUN_SUFFIX.sub("-r*", json.dumps(row, sort_keys=True, default=_plain)))
                  for row in table.select(keep).to_pylist())


def index_rows(wh_root: str) -> dict[str, list[str]]:
    """Rows of every index table at the latest snapshot, bookkeeping columns aside, in a canonical order.  Of
    ``models``, the rows the snapshot answers with (its ``models``): older versions are history, which maintenance
    deletes once no retained snapshot uses them and the fault-free twin, never maintained, keeps."""
    import discovery
    from discovery.data.store import INDEX_TABLES

    snap = discovery.open(wh_root).snapshot
    out = {}
    for name in INDEX_TABLES:
        if name in snap.versions:
            rows = snap.read(name)
            if name == "models":
                used = [snap.models.get(n) == v for n, v in zip(rows["name"].to_pylist(), rows["version"].to_pylist())]
                rows = rows.filter(pa.array(used, pa.bool_()))
            out[name] = _canonical(rows, BOOKKEEPING)
    return out


def catalog_rows(wh_root: str, unreadable: set[str]) -> list[str]:
    """Catalog rows of tables present in the lake (not ``deleted``) and readable now, without ids."""
    import discovery

    cat = discovery.open(wh_root).snapshot.read("catalog")
    rows = [r for r in cat.to_pylist() if r["status"] != "deleted" and r["path"] not in unreadable]
    return _canonical(pa.Table.from_pylist(rows, schema=cat.schema) if rows else cat.slice(0, 0),
                      BOOKKEEPING | {"table_id", "mtime_ns", "fingerprint"})


def _answer(out: dict, drop_paths: set[str] = frozenset()) -> list:
    return [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items() if k not in ("table_id", "rank")}
            for r in out["results"] if r.get("path") not in drop_paths]


class Queries:
    """The fixed query set: query tables written once outside the lake."""

    def __init__(self, folder: str, rng: random.Random):
        os.makedirs(folder, exist_ok=True)
        self.people = os.path.join(folder, "q_people.csv")
        self.sales = os.path.join(folder, "q_sales.csv")
        pacsv.write_csv(make_rows("people", rng, 30), self.people)
        pacsv.write_csv(make_rows("sales", rng, 30), self.sales)

    def union(self, lake) -> dict:
        return {"union people": _answer(lake.union(self.people, k=5)),
                "union sales": _answer(lake.union(self.sales, k=5))}

    def join(self, lake) -> dict:
        return {"join people.city": _answer(lake.join(self.people, "city", top_k=5))}

    def nary(self, lake, drop_paths: set[str] = frozenset()) -> dict:
        """Every joinable table (k above the lake's size), as a set: ties in J are ordered by table id, which a
        fresh build assigns differently."""
        return {f"nary {name} {tuple(key)}": sorted(_answer(lake.nary(query, key, k=200), drop_paths),
                                                   key=lambda r: (-r["joinability"], r["path"]))
                for name, query, key in (("people", self.people, ["city", "country"]),
                                         ("sales", self.sales, ["product", "city"]))}

    def all(self, wh_root: str) -> dict:
        import discovery

        lake = discovery.open(wh_root)
        return {**self.union(lake), **self.join(lake), **self.nary(lake)}


def diff(a, b, what: str) -> list[str]:
    """Names of the parts of ``a`` and ``b`` (dicts of lists, or lists) that differ."""
    if isinstance(a, dict):
        return [f"{what}: {k}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
    return [what] if a != b else []


def missing_files(wh_root: str) -> list[str]:
    """Data files a retained snapshot's table versions reference that are not there."""
    from discovery.data.store import Warehouse, list_snapshots

    wh = Warehouse(wh_root)
    missing = []
    for snap in list_snapshots(wh):
        for name, version in snap.versions.items():
            for uri in wh.file_uris(name, int(version)):
                path = uri.removeprefix("file://")
                if not os.path.exists(path):
                    missing.append(f"snapshot {snap.snapshot_id} {name}@{version}: {os.path.basename(path)}")
    return missing


def folder_bytes(root: str) -> int:
    return sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(root) for f in fs)


# -- faults and maintenance ------------------------------------------------------------------------------------------
def held_lease(wh_root: str) -> dict | None:
    """The current lease record when it is held (a killed refresh leaves it so), else None."""
    folder = os.path.join(wh_root, "lease")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    if not names:
        return None
    with open(os.path.join(folder, names[-1])) as fh:
        record = json.load(fh)
    return record if record.get("state") == "held" else None


def _wait_gone(group: int, timeout: float = 60.0) -> None:
    """Wait until every process of ``group`` has exited (SIGKILL is delivered asynchronously), as the user running
    the next refresh after a kill would find them."""
    import psutil

    deadline = time.time() + timeout
    while time.time() < deadline:
        alive = []
        for proc in psutil.process_iter():
            try:
                if os.getpgid(proc.pid) == group and proc.status() != psutil.STATUS_ZOMBIE:
                    alive.append(proc.pid)
            except (OSError, psutil.Error):
                continue
        if not alive:
            return
        time.sleep(0.05)
    raise RuntimeError(f"processes of the killed group {group} still run after {timeout:.0f} s")


def killed_at(wh_root: str, lease: dict | None) -> str:
    """Where a killed refresh was: before it took the lease, or after its last stage recorded as done."""
    from discovery.data.store import Warehouse

    if lease is None or lease.get("purpose") != "refresh":
        return "before the lease"
    if not lease.get("refresh_id"):
        return "starting"
    runs = Warehouse(wh_root).read("refresh_runs").to_pylist()
    done = [r["stage"] for r in sorted(runs, key=lambda r: r["finished_at"])
            if r["refresh_id"] == lease["refresh_id"] and r["status"] == "ok"]
    return f"after {done[-1]}" if done else "in the first stage"


def _took_over_at_once(wh_root: str, refresh_id: int, left: dict) -> bool:
    """Whether refresh ``refresh_id`` recorded taking over the lease ``left`` because its process was gone."""
    from discovery.data.store import Warehouse

    rows = [r for r in Warehouse(wh_root).read("refresh_runs").to_pylist()
            if r["refresh_id"] == refresh_id and r["took_over"]]
    return len(rows) == 1 and f"pid {left['pid']}" in rows[0]["took_over"] and \
        rows[0]["took_over"].endswith("(its process is gone)")


def _lease_generations(wh_root: str) -> int:
    """The lease's highest generation (0 before the first): it grows by one with every run that takes the lease."""
    folder = os.path.join(wh_root, "lease")
    names = [n[:-5] for n in os.listdir(folder) if n.endswith(".json")] if os.path.isdir(folder) else []
    return max((int(n) for n in names if n.isdigit()), default=0)


def killed_refresh(lake: str, wh_root: str, config: str, delay: float, search, after_lease: bool = True) -> dict:
    """``lakescout refresh`` in a process group of its own, SIGKILLed ``delay`` seconds after it took the
    warehouse lease (``after_lease``) or after its start (unless it ended first), with ``search`` called in a loop
    meanwhile."""
    generations = _lease_generations(wh_root)
    env = dict(os.environ, LAKESCOUT_CONFIG=config, PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "discovery.surfaces.cli", "refresh", "--lake", lake, "--warehouse", wh_root,
           "--config", config, "--json"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env,
                            start_new_session=True)
    stop = threading.Event()
    searches = {"ran": 0, "failed": []}

    def loop():
        while not stop.is_set():
            try:
                search()
                searches["ran"] += 1
            except Exception as exc:  # noqa: BLE001 - every failure of a search on a published snapshot counts
                searches["failed"].append(f"{type(exc).__name__}: {exc}"[:300])
            stop.wait(0.5)

    thread = threading.Thread(target=loop, daemon=True)
    thread.start()
    try:
        if after_lease:  # the delay runs from when the refresh holds the lease: Spark's start takes a while
            while _lease_generations(wh_root) <= generations:
                if proc.poll() is not None:
                    break
                time.sleep(0.1)
        proc.wait(timeout=delay)
        killed = False
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        _wait_gone(proc.pid)
        killed = True
    stop.set()
    thread.join()
    return {"killed": killed, "returncode": proc.returncode, **searches}


#: A Delta log file of one version: its commit, checkpoint (single or multi-part) or checksum.
LOG_FILE = re.compile(r"^(\d{20})\.(json|crc|checkpoint\.(?:\d+\.\d+\.)?parquet)$")


def expire_logs(wh_root: str, log_retention_seconds: float, window_seconds: float) -> int:
    """Age the Delta log files (commits, checkpoints, checksums) of every table's versions older than every retained
    one past the log retention, as the weeks of a deployment would, and let delta-rs expire them
    (``cleanup_metadata``); returns the log files removed.

    Checkpoints age with the commits: delta-rs deletes nothing from the oldest checkpoint that has not expired on,
    so aging the commits alone stalled the expiry at the first checkpoint written in the run until it was an hour
    old (the table property's log retention is whole hours) and let every table's log grow until then."""
    from discovery.data.store import SCHEMAS, Warehouse
    from discovery.data.store.orphans import commit_log, first_retained, pinned_versions

    wh = Warehouse(wh_root)
    pins = pinned_versions(wh)
    removed = 0
    old = time.time() - log_retention_seconds - 2 * 3600
    for name in SCHEMAS:
        _, folder, commits = commit_log(wh, name)
        first = first_retained(commits, wh.version(name), pins.get(name, ()), time.time() - window_seconds)
        names = os.listdir(folder)
        for f in names:
            m = LOG_FILE.match(f)
            if m and int(m[1]) < first:
                os.utime(os.path.join(folder, f), (old, old))
        wh.table(name).cleanup_metadata()
        removed += len(names) - len(os.listdir(folder))
    return removed


# -- the run ---------------------------------------------------------------------------------------------------------
def soak(spark, work: str, cycles: int, seed: int = 0, kill_share: float = 0.35, max_kill_delay: float = 25.0,
         maintain_every: int = 3, fresh_every: int = 1, retention_days: float = 0.002, grace_hours: float = 0.005,
         log=print, on_cycle=None) -> dict:
    """Run ``cycles`` soak cycles under ``work`` (a scratch folder) on ``spark``; returns the report (see module doc).
    ``on_cycle(report)`` is called after every cycle (the script writes its result file there, so a run stopped
    early still reports the cycles it ran)."""
    from discovery.config import load_config
    from discovery.surfaces.maintenance import run_maintenance
    from discovery.data.store import Warehouse
    from spark_jobs.refresh import refresh

    rng = random.Random(seed)
    lake, faulted, twin = (os.path.join(work, n) for n in ("lake", "faulted", "twin"))
    config = os.path.join(work, "lakescout.toml")
    with open(config, "w") as fh:
        fh.write(CONFIG.format(retention_days=retention_days, grace_hours=grace_hours))
    mcfg = load_config(config).maintenance
    make_lake(lake, rng)
    editor = Editor(lake, rng)
    queries = Queries(os.path.join(work, "queries"), rng)
    report = {"cycles": 0, "refreshes": 0, "refresh_attempts_killed": 0, "kill_attempts_ended_first": 0,
              "killed_at": {}, "maintenance_runs": 0, "log_files_expired": 0, "searches": 0, "search_failures": [],
              "mismatches": [], "missing_files": [], "size_ratio_after_maintenance": [], "size_breakdown": [],
              "lease_takeovers": 0, "seed": seed}
    for target in (faulted, twin):
        out = refresh(spark, target, lake, config_path=config)
        assert out.get("published"), out
    for cycle in range(1, cycles + 1):
        started = time.time()
        edits = editor.cycle()
        unreadable = set(editor.broken)
        if rng.random() < kill_share:
            after_lease = rng.random() < 0.9  # a tenth of the kills land while Spark starts
            delay = rng.uniform(0.0, max_kill_delay)
            run = killed_refresh(lake, faulted, config, delay, lambda: queries.nary(_open(faulted)), after_lease)
            report["refresh_attempts_killed" if run["killed"] else "kill_attempts_ended_first"] += 1
            report["searches"] += run["ran"]
            report["search_failures"] += [f"cycle {cycle}: {f}" for f in run["failed"]]
            left = held_lease(faulted)
            where = killed_at(faulted, left)
            if run["killed"]:
                report["killed_at"][where] = report["killed_at"].get(where, 0) + 1
        else:
            left = None
        for target in (faulted, twin):
            out = refresh(spark, target, lake, config_path=config)  # raises LeaseHeld if the dead holder blocked it
            if not out.get("published"):
                report["mismatches"].append(f"cycle {cycle}: refresh of {os.path.basename(target)} failed: "
                                            f"{out.get('failed_stage')}")
            if target == faulted and left is not None:
                report["lease_takeovers"] += 1
                if not _took_over_at_once(faulted, out["refresh_id"], left):
                    report["mismatches"].append(f"cycle {cycle}: the killed refresh's lease was not taken over")
        report["refreshes"] += 1
        problems = diff(index_rows(faulted), index_rows(twin), "index rows vs twin")
        answers = queries.all(faulted)
        report["searches"] += len(answers)
        problems += diff(answers, queries.all(twin), "answers vs twin")
        if cycle % maintain_every == 0:
            m = run_maintenance(Warehouse(faulted), mcfg)
            report["maintenance_runs"] += m["status"] == "ok"
            report["log_files_expired"] += expire_logs(faulted, mcfg.log_retention_days * 86400,
                                                         mcfg.window_seconds)
            problems += diff(queries.all(faulted), answers, "answers after maintenance")
        if cycle % fresh_every == 0 or cycle == cycles:
            fresh = os.path.join(work, f"fresh{cycle}")
            out = refresh(spark, fresh, lake, config_path=config)
            problems += [] if out.get("published") else [f"fresh build failed: {out.get('failed_stage')}"]
            problems += diff(catalog_rows(faulted, unreadable), catalog_rows(fresh, unreadable), "catalog vs fresh")
            problems += diff(queries.nary(_open(faulted), unreadable), queries.nary(_open(fresh), unreadable),
                             "n-ary answers vs fresh")
            if cycle % maintain_every == 0:
                report["size_ratio_after_maintenance"].append(
                    round(folder_bytes(faulted) / folder_bytes(fresh), 3))
                sizes = {"cycle": cycle, "ratio": report["size_ratio_after_maintenance"][-1],
                         "faulted": breakdown(faulted, mcfg.window_seconds),
                         "fresh": breakdown(fresh, mcfg.window_seconds)}
                report["size_breakdown"].append(sizes)
                log(f"cycle {cycle} bytes: " + compare(sizes["faulted"], sizes["fresh"]))
            shutil.rmtree(fresh, ignore_errors=True)
        missing = missing_files(faulted)
        report["missing_files"] += [f"cycle {cycle}: {m}" for m in missing]
        report["mismatches"] += [f"cycle {cycle}: {p}" for p in problems]
        report["cycles"] = cycle
        log(f"cycle {cycle}: {'; '.join(edits)}; {len(problems)} mismatches, {len(missing)} missing, "
            f"killed {report['refresh_attempts_killed']}, {time.time() - started:.0f} s")
        ratios = report["size_ratio_after_maintenance"]
        report["size_ratio_max"] = max(ratios) if ratios else None
        report["size_ratio_last"] = ratios[-1] if ratios else None
        if on_cycle is not None:
            on_cycle(report)
    return report


def _open(wh_root: str):
    import discovery

    return discovery.open(wh_root)


