"""Soak: months of scheduled operation compressed into N cycles of lake edits, refreshes (some killed), maintenance
and searches, checked after every completed refresh against two references.

A small generated lake (CSV, Parquet, JSON Lines, Delta tables, Hive-partitioned folders; about two dozen tables
over shared cities, people and products) is edited every cycle, from a seeded RNG: files added, changed, deleted
and renamed, new Delta versions, added partitions, and a table that becomes unreadable (its bytes garbled) and
readable again a cycle later.  Three warehouses index it:

* **faulted**: a share of its refreshes run as ``lakescout refresh`` subprocesses killed with SIGKILL (the whole
  process group: CLI, spark-submit, JVM and Python workers) a random delay after it took the warehouse lease (a
  tenth of them after their start, while Spark starts), so inside Spark tasks, between stages or during a commit;
  the next refresh takes over the dead one's lease once its heartbeat has expired (the soak ages the lease record
  rather than wait ``LEASE_SECONDS``).  Every cycle ends with a refresh that completes
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
snapshots, retention window, garbage, Delta logs, query arrays: :mod:`benchmarks.warehouse_bytes`).

    python benchmarks/soak.py [--cycles 200] [--seed 0] [--kill-share 0.35]
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time

import pyarrow as pa
import pyarrow.csv as pacsv
import pyarrow.parquet as pq

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from benchmarks.common import ROOT, write_result  # noqa: E402
from benchmarks.warehouse_bytes import breakdown, compare  # noqa: E402

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

CITIES = [("Paris", "France"), ("Lyon", "France"), ("Nice", "France"), ("Berlin", "Germany"),
          ("Munich", "Germany"), ("Hamburg", "Germany"), ("Madrid", "Spain"), ("Seville", "Spain"),
          ("Valencia", "Spain"), ("Rome", "Italy"), ("Milan", "Italy"), ("Naples", "Italy"), ("Lisbon", "Portugal"),
          ("Porto", "Portugal"), ("Vienna", "Austria"), ("Graz", "Austria"), ("Zurich", "Switzerland"),
          ("Geneva", "Switzerland"), ("Oslo", "Norway"), ("Bergen", "Norway"), ("Warsaw", "Poland"),
          ("Krakow", "Poland"), ("Prague", "Czechia"), ("Brno", "Czechia")]
NAMES = ["Ada", "Ben", "Cleo", "Dan", "Eva", "Finn", "Gia", "Hugo", "Ines", "Jon", "Kai", "Lena", "Milo", "Nora",
         "Otto", "Pia", "Quin", "Rosa", "Sven", "Tara", "Ugo", "Vera", "Wim", "Xia", "Yves", "Zoe"]
PRODUCTS = ["apple", "bread", "cheese", "dates", "eggs", "flour", "grapes", "honey", "ink", "jam", "kale", "lemon",
            "milk", "nuts", "oats", "pears", "quince", "rice", "salt", "tea"]
KINDS = ("cities", "people", "sales")


def make_rows(kind: str, rng: random.Random, n: int) -> pa.Table:
    """``n`` rows of one of three table shapes over shared vocabularies, so union, join and n-ary have answers."""
    places = [rng.choice(CITIES) for _ in range(n)]
    if kind == "cities":
        return pa.table({"city": [c for c, _ in places], "country": [k for _, k in places],
                         "population": [rng.randrange(10_000, 3_000_000) for _ in range(n)]})
    if kind == "people":
        return pa.table({"name": [rng.choice(NAMES) for _ in range(n)], "city": [c for c, _ in places],
                         "country": [k for _, k in places], "age": [rng.randrange(18, 90) for _ in range(n)]})
    return pa.table({"product": [rng.choice(PRODUCTS) for _ in range(n)], "city": [c for c, _ in places],
                     "amount": [round(rng.uniform(1, 500), 2) for _ in range(n)]})


def _write_file(path: str, table: pa.Table) -> None:
    from discovery.demo_lake.layouts import write_json_lines

    os.makedirs(os.path.dirname(path), exist_ok=True)
    if path.endswith(".csv"):
        pacsv.write_csv(table, path)
    elif path.endswith(".parquet"):
        pq.write_table(table, path)
    else:
        write_json_lines(path, table)


def make_lake(root: str, rng: random.Random) -> None:
    """About two dozen small tables: CSV, Parquet and JSON Lines files, three Delta tables (one with an older
    version), two Hive-partitioned folders."""
    from discovery.demo_lake.layouts import write_delta, write_hive

    for i in range(18):
        kind = KINDS[i % 3]
        ext = ("csv", "csv", "parquet", "jsonl")[i % 4]
        _write_file(os.path.join(root, "files", f"{kind}_{i}.{ext}"), make_rows(kind, rng, rng.randrange(20, 60)))
    for i in range(3):
        kind = KINDS[i % 3]
        write_delta(os.path.join(root, "delta", f"{kind}_d{i}"), make_rows(kind, rng, 40),
                    make_rows(kind, rng, 30) if i == 0 else None)
    for i, kind in enumerate(("cities", "people")):
        write_hive(os.path.join(root, "hive", f"{kind}_h{i}"), make_rows(kind, rng, 50), ["country"])


class Editor:
    """Random edits of the lake, one cycle at a time, from a seeded RNG."""

    OPS = ("add", "change", "delete", "rename", "delta_version", "add_partition", "break")

    def __init__(self, root: str, rng: random.Random):
        self.root, self.rng, self.serial = root, rng, 100
        self.broken: dict[str, bytes] = {}  # lake path -> its bytes before garbling

    def files(self) -> list[str]:
        folder = os.path.join(self.root, "files")
        return sorted(f for f in os.listdir(folder) if f not in {os.path.basename(p) for p in self.broken})

    def _kind(self, name: str) -> str:
        return name.split("_")[0]

    def cycle(self) -> list[str]:
        """Mend what the last cycle broke, then one to three random edits; returns what was done."""
        done = []
        for rel, data in sorted(self.broken.items()):
            with open(os.path.join(self.root, rel), "wb") as fh:
                fh.write(data)
            done.append(f"mend {rel}")
        self.broken.clear()
        for _ in range(self.rng.randint(1, 3)):
            op = self.rng.choice(self.OPS)
            done.append(getattr(self, op)())
        return done

    def add(self) -> str:
        self.serial += 1
        kind = self.rng.choice(KINDS)
        ext = self.rng.choice(("csv", "parquet", "jsonl"))
        rel = f"files/{kind}_{self.serial}.{ext}"
        _write_file(os.path.join(self.root, rel), make_rows(kind, self.rng, self.rng.randrange(20, 60)))
        return f"add {rel}"

    def change(self) -> str:
        name = self.rng.choice(self.files())
        _write_file(os.path.join(self.root, "files", name),
                    make_rows(self._kind(name), self.rng, self.rng.randrange(20, 60)))
        return f"change files/{name}"

    def delete(self) -> str:
        names = self.files()
        if len(names) <= 10:
            return self.add()
        name = self.rng.choice(names)
        os.remove(os.path.join(self.root, "files", name))
        return f"delete files/{name}"

    def rename(self) -> str:
        name = self.rng.choice(self.files())
        self.serial += 1
        kind, _, rest = name.partition("_")
        new = f"{kind}_{self.serial}.{rest.split('.', 1)[1]}"
        os.rename(os.path.join(self.root, "files", name), os.path.join(self.root, "files", new))
        return f"rename files/{name} -> files/{new}"

    def delta_version(self) -> str:
        from deltalake import DeltaTable, write_deltalake

        name = self.rng.choice(sorted(os.listdir(os.path.join(self.root, "delta"))))
        path = os.path.join(self.root, "delta", name)
        mode = self.rng.choice(("append", "overwrite"))
        rows = make_rows(self._kind(name), self.rng, self.rng.randrange(5, 40))
        write_deltalake(path, rows.cast(pa.schema(DeltaTable(path).schema().to_arrow())), mode=mode)
        return f"delta {mode} delta/{name}"

    def add_partition(self) -> str:
        from discovery.demo_lake.layouts import write_hive

        name = self.rng.choice(sorted(os.listdir(os.path.join(self.root, "hive"))))
        rows = make_rows(self._kind(name), self.rng, 20)
        self.serial += 1
        country = f"Land{self.serial}"
        rows = rows.set_column(rows.column_names.index("country"), "country", pa.array([country] * rows.num_rows))
        write_hive(os.path.join(self.root, "hive", name), rows, ["country"])
        return f"partition hive/{name}/country={country}"

    def break_(self) -> str:
        name = self.rng.choice(self.files())
        rel = f"files/{name}"
        path = os.path.join(self.root, rel)
        with open(path, "rb") as fh:
            self.broken[rel] = fh.read()
        with open(path, "wb") as fh:  # not a table any reader can make sense of
            fh.write(b"\x00\x01garbled\xff" * 7 if not name.endswith(".csv") else b"\x00\xff\xfe" * 40)
        return f"break {rel}"

    def __getattr__(self, name):
        if name == "break":
            return self.break_
        raise AttributeError(name)


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
    from discovery.store import INDEX_TABLES

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
    from discovery.store import Warehouse, list_snapshots

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
def expire_lease(wh_root: str) -> dict | None:
    """Age the current lease record past its ttl, as if its (killed) holder had been gone that long; returns the
    record when it was held."""
    folder = os.path.join(wh_root, "lease")
    names = sorted(n for n in os.listdir(folder) if n.endswith(".json")) if os.path.isdir(folder) else []
    if not names:
        return None
    path = os.path.join(folder, names[-1])
    with open(path) as fh:
        record = json.load(fh)
    if record.get("state") != "held":
        return None
    record["heartbeat"] = time.time() - record["ttl"] - 60
    with open(path, "w") as fh:
        json.dump(record, fh)
    return record


def killed_at(wh_root: str, lease: dict | None) -> str:
    """Where a killed refresh was: before it took the lease, or after its last stage recorded as done."""
    from discovery.store import Warehouse

    if lease is None or lease.get("purpose") != "refresh":
        return "before the lease"
    if not lease.get("refresh_id"):
        return "starting"
    runs = Warehouse(wh_root).read("refresh_runs").to_pylist()
    done = [r["stage"] for r in sorted(runs, key=lambda r: r["finished_at"])
            if r["refresh_id"] == lease["refresh_id"] and r["status"] == "ok"]
    return f"after {done[-1]}" if done else "in the first stage"


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
    env = dict(os.environ, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""), LAKESCOUT_CONFIG=config,
               PYSPARK_PYTHON=sys.executable)
    cmd = [sys.executable, "-m", "discovery.cli", "refresh", "--lake", lake, "--warehouse", wh_root,
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
    from discovery.store import SCHEMAS, Warehouse
    from discovery.store.orphans import _log, first_retained, pinned_versions

    wh = Warehouse(wh_root)
    pins = pinned_versions(wh)
    removed = 0
    old = time.time() - log_retention_seconds - 2 * 3600
    for name in SCHEMAS:
        _, folder, commits = _log(wh, name)
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
def soak(work: str, cycles: int, seed: int = 0, kill_share: float = 0.35, max_kill_delay: float = 25.0,
         maintain_every: int = 3, fresh_every: int = 1, retention_days: float = 0.002, grace_hours: float = 0.005,
         spark=None, log=print, on_cycle=None) -> dict:
    """Run ``cycles`` soak cycles under ``work`` (a scratch folder); returns the report (see module doc).
    ``on_cycle(report)`` is called after every cycle (the script writes its result file there, so a run stopped
    early still reports the cycles it ran)."""
    from discovery.config import load_config
    from discovery.maintenance import run_maintenance
    from spark_jobs.refresh import refresh

    if spark is None:
        from spark_jobs.common import spark_session

        spark = spark_session("lakescout-soak")
        spark.sparkContext.setLogLevel("ERROR")
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
              "seed": seed}
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
            where = killed_at(faulted, expire_lease(faulted))
            if run["killed"]:
                report["killed_at"][where] = report["killed_at"].get(where, 0) + 1
        for target in (faulted, twin):
            out = refresh(spark, target, lake, config_path=config)
            if not out.get("published"):
                report["mismatches"].append(f"cycle {cycle}: refresh of {os.path.basename(target)} failed: "
                                            f"{out.get('failed_stage')}")
        report["refreshes"] += 1
        problems = diff(index_rows(faulted), index_rows(twin), "index rows vs twin")
        answers = queries.all(faulted)
        report["searches"] += len(answers)
        problems += diff(answers, queries.all(twin), "answers vs twin")
        if cycle % maintain_every == 0:
            m = run_maintenance(faulted, mcfg)
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
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    work = args.work or tempfile.mkdtemp(prefix="lakescout-soak-")
    os.makedirs(work, exist_ok=True)
    try:
        report = soak(work, args.cycles, args.seed, args.kill_share, args.max_kill_delay, args.maintain_every,
                      args.fresh_every, log=lambda s: print(s, flush=True),
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
