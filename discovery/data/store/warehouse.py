"""The warehouse: the Delta tables of the index and the one module that commits to them.

Writers never pass rows of the index through a driver: workers write Parquet files into the table folder
(:func:`discovery.data.store.files.write_data_file`) and the driver commits their metadata, together with the removal of
files whose rows are replaced, in a single ``create_write_transaction``.  Every commit is tagged with an application
transaction ``lakescout/<stage>`` whose version is the refresh id, so a retried stage sees that its refresh already
committed and does not commit twice.

Several processes append to the bookkeeping tables at once (UI searches and query batches to ``query_results`` while a
refresh commits).  delta-rs resolves a lost race for a log version itself, but gives up after a fixed number of
immediate retries; a blind append (adds only) is then retried here with jittered backoff, a bounded number of times,
after checking in the log that it did not land: an append commits once, or raises after the last attempt.
"""
from __future__ import annotations

import json
import random
import time
from datetime import timedelta
from dataclasses import dataclass
from collections.abc import Iterable

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads
import pyarrow.parquet as pq
from deltalake import DeltaTable, Schema as DeltaSchema
from deltalake.exceptions import CommitFailedError, DeltaError, TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction

from ...config import MaintenanceConfig
from ...storage import backend, check, delta_options, join, nonempty, normalize
from .files import DataFile, new_attempt_token, resolve, write_data_file
from .schema import BOOKKEEPING_TABLES, SCHEMAS

#: Attempts of a blind append whose commit delta-rs gave up on (each attempt is itself up to 15 delta-rs retries).
COMMIT_ATTEMPTS = 8
#: First pause before another attempt; doubled each time up to 2 s, with full jitter so racing writers spread out.
COMMIT_BACKOFF_SECONDS = 0.05
#: Commits between two checkpoints (the table property ``delta.checkpointInterval``, which delta-rs' post-commit
#: hook honours on every commit, ours and its own optimize and vacuum).  Opening a table reads its last checkpoint
#: and then every commit after it, one small JSON file each: a GET of 10-30 ms on S3.  At delta-rs' default of 100 an
#: open could read 99 of them (1-3 s on S3); at 20 it reads at most 19, while a checkpoint, which rewrites the
#: table's active file list as one Parquet file, costs milliseconds even for the thousands of files of a busy
#: ``query_results`` between two compactions.
CHECKPOINT_INTERVAL = 20
#: Reads of the latest version of a table, when files vanish under one (see :meth:`Warehouse.read`).
LATEST_READ_ATTEMPTS = 3
#: Readings of a table's latest log, when one raced another writer (:func:`log_raced`).
LISTING_ATTEMPTS = 4


def listing_raced(exc: BaseException) -> bool:
    """Whether delta-rs refused a log listing that held a commit but not the one before it.

    A local file system's directory listing is no snapshot: a commit renamed into ``_delta_log`` while another
    process lists it may be missed while a later one, renamed in after it, is seen (the listing had passed the first
    name's place and not yet the second's), and delta-rs then refuses the gap ("Expected contiguous commit files,
    but found gap").  Both files are there; listing again sees them.  Seen once in 56,202 requests of a 30-minute
    soak, two server workers and maintenance committing to ``query_results``."""
    return isinstance(exc, DeltaError) and "found gap" in str(exc)


def log_raced(exc: BaseException, version: int | None = None) -> bool:
    """Whether reading the latest version of a log failed on another writer's concurrent change to it: a listing
    that raced a commit (:func:`listing_raced`), or a log file listed and then deleted before it was read.  Every
    writer's commit that lands on a checkpoint interval also deletes the log entries past the table's log retention
    (delta-rs' post-commit hook), so two servers' recorders and a refresh may delete the same expired entries, and
    a writer's hook, or a reader, may find one gone that it had listed: seen in a soak test the hour after the
    bookkeeping tables' first entries expired, as 500s of recorded searches (40 in 17,871 requests).  A version
    asked for by number is not retried: its entries may have expired for good."""
    return version is None and (listing_raced(exc) or isinstance(exc, FileNotFoundError))


class WarehouseError(RuntimeError):
    """The warehouse is missing, incomplete or unreadable."""


@dataclass(frozen=True)
class CommitResult:
    version: int | None  # new table version, None when the stage had already committed for this refresh
    added: int
    removed: int


def app_id(stage: str) -> str:
    return f"lakescout/{stage}"


class Warehouse:
    """Root folder (or object-store URI) holding one Delta table per index table."""

    def __init__(self, root: str | Warehouse) -> None:
        """``root``: the warehouse's location (a path or a URI), or another :class:`Warehouse` (the same one); an
        empty one is refused (:func:`~discovery.storage.uri.nonempty`), not read as the working folder."""
        self.root: str = root.root if isinstance(root, Warehouse) else normalize(nonempty(root, "warehouse"))
        self.backend = backend(self.root)

    # -- layout -------------------------------------------------------------------------------------------------
    def table_uri(self, name: str) -> str:
        if name not in SCHEMAS:
            raise KeyError(f"unknown index table {name!r}")
        return join(self.root, name)

    def exists(self) -> bool:
        uri = self.table_uri("catalog")
        return DeltaTable.is_deltatable(uri, storage_options=delta_options(uri))

    def ensure(self) -> None:
        """Create every index table that does not exist yet (empty, with its schema and :func:`table_properties`)."""
        for name, schema in SCHEMAS.items():
            uri = self.table_uri(name)
            if not DeltaTable.is_deltatable(uri, storage_options=delta_options(uri)):
                DeltaTable.create(uri, schema=schema, mode="ignore", name=name,
                                  configuration=table_properties(name, MaintenanceConfig.log_retention_days),
                                  storage_options=delta_options(uri))

    def upgrade(self, log_retention_days: float) -> None:
        """:meth:`ensure`, then bring existing tables in line: add the columns a newer schema has (their old rows
        read as null) and set the log retention and checkpoint interval.  Run by the holder of the warehouse lease
        (a refresh starting, maintenance), since a table property change is a commit that writers must not race.

        The log retention (``delta.logRetentionDuration``) is how long delta-rs keeps a commit's log entry once a
        later checkpoint exists; a version whose entries are gone can no longer be loaded, so it must cover every
        version a retained snapshot pins (``[maintenance]`` checks log retention >= snapshot retention)."""
        self.ensure()
        for name, schema in SCHEMAS.items():
            props = table_properties(name, log_retention_days)
            dt = self.table(name)
            have = set(pa.schema(dt.schema().to_arrow()).names)
            missing = [f for f in schema if f.name not in have]
            if missing:
                dt.alter.add_columns(DeltaSchema.from_arrow(pa.schema(missing)).fields)
            config = dt.metadata().configuration
            if any(config.get(k) != v for k, v in props.items()):
                dt.alter.set_table_properties(props)

    def require(self) -> None:
        check(self.root, "warehouse")
        if not self.exists():
            raise WarehouseError(f"no Lakescout warehouse at {self.root!r} (run a refresh first: "
                                 f"lakescout refresh --lake DIR --warehouse {self.root})")

    # -- reading ------------------------------------------------------------------------------------------------
    def table(self, name: str, version: int | None = None) -> DeltaTable:
        uri = self.table_uri(name)
        for attempt in range(1, LISTING_ATTEMPTS + 1):
            try:
                return DeltaTable(uri, version=version, storage_options=delta_options(uri))
            except TableNotFoundError as exc:
                raise WarehouseError(f"index table {name!r} is missing under {self.root!r}") from exc
            except (DeltaError, FileNotFoundError) as exc:
                if not log_raced(exc, version) or attempt == LISTING_ATTEMPTS:
                    raise
                time.sleep(0.01 * attempt)
        raise AssertionError("unreachable")

    def version(self, name: str) -> int:
        return self.table(name).version()

    def dataset(self, name: str, version: int | None = None) -> pads.Dataset:
        return self.table(name, version).to_pyarrow_dataset()

    def parquet_dataset(self, name: str, version: int | None = None) -> pads.Dataset:
        """The version's data files as a plain Parquet dataset over the warehouse's own filesystem.

        Delta's dataset attaches each file's statistics as a fragment expression (a dozen Arrow casts per file), so
        building it for a 1,000-file table costs about half a second before any row is read; worth it when a filter
        prunes files, wasted on a read of whole columns, which a refresh does a few dozen times per run."""
        return self.parquet_files(name, self.files(name, version).column("path").to_pylist())

    def parquet_files(self, name: str, paths: list[str]) -> pads.Dataset:
        """The data files ``paths`` (relative to the table) of one index table as a plain Parquet dataset."""
        fs, root = resolve(self.table_uri(name))
        return pads.dataset([f"{root.rstrip('/')}/{p}" for p in paths], schema=SCHEMAS[name], format="parquet",
                            filesystem=fs)

    def read(self, name: str, version: int | None = None, columns: list[str] | None = None,
             filter: pads.Expression | None = None) -> pa.Table:
        """Rows of a version: through Delta's dataset when ``filter`` can prune files by their statistics, else
        through :meth:`parquet_dataset` (the same rows in the same order, about twice as fast).

        A read of the latest version (``version`` None) that finds one of its files gone reads the new latest: a
        maintenance run compacted the table and vacuumed the files it replaced between this read's listing and its
        reading (seen on ``query_results`` under a server's load), and the version after it no longer names them."""
        attempts = 1 if version is not None else LATEST_READ_ATTEMPTS
        for attempt in range(1, attempts + 1):
            try:
                if filter is None:
                    return self.parquet_dataset(name, version).to_table(columns=columns)
                return self.dataset(name, version).to_table(columns=columns, filter=filter)
            except FileNotFoundError:
                if attempt == attempts:
                    raise

    def read_since(self, name: str, column: str, least, columns: list[str] | None = None) -> pa.Table:
        """Rows of the latest version whose timestamp ``column`` is at least ``least``, reading only the data files
        whose statistics may hold one: in a table written by appends (recorded batches) the newest rows are in the
        newest files, so this reads a few files however many the table has.  Delta keeps timestamp statistics to the
        millisecond, so a file is kept when its maximum is within a millisecond of ``least``; a file without
        statistics is read.  Retried as :meth:`read` when maintenance vacuumed a listed file meanwhile."""
        for attempt in range(1, LATEST_READ_ATTEMPTS + 1):
            try:
                actions = pa.table(self.table(name).get_add_actions(flatten=True))
                paths = actions["path"]
                top = f"max.{column}"
                if top in actions.column_names:
                    near = pc.subtract(pa.scalar(least), pa.scalar(timedelta(milliseconds=1)))
                    paths = paths.filter(pc.fill_null(pc.greater_equal(actions[top], near), True))
                wanted = None if columns is None else list(dict.fromkeys([*columns, column]))
                rows = self.parquet_files(name, paths.to_pylist()).to_table(columns=wanted)
                rows = rows.filter(pc.greater_equal(rows[column], pa.scalar(least)))
                return rows if columns is None else rows.select(columns)
            except FileNotFoundError:
                if attempt == LATEST_READ_ATTEMPTS:
                    raise

    def pairs(self, name: str, version: int | None = None) -> pa.Table:
        """Distinct (table_id, content_hash) of a derived index table: the lake table versions it was built from.

        Read a batch at a time, each batch reduced to its distinct pairs before the next is read: a refresh plans
        every stage from these, and reading the two columns whole cost the driver 0.4 to 0.8 GB at 9 million value
        vectors, where the pairs are one row per table."""
        keys = ["table_id", "content_hash"]
        parts = [SCHEMAS[name].empty_table().select(keys)]
        for batch in self.parquet_dataset(name, version).to_batches(columns=keys):
            parts.append(pa.Table.from_batches([batch]).group_by(keys).aggregate([]).select(keys))
        return pa.concat_tables(parts).group_by(keys).aggregate([]).select(keys)

    def count_rows(self, name: str, version: int | None = None) -> int:
        """Rows of a version, from the commit log's per-file record counts (no data file is opened when every file
        carries them, as every file Lakescout writes does)."""
        counts = self.files(name, version).column("num_records").to_pylist()
        if None in counts:
            return self.parquet_dataset(name, version).count_rows()
        return int(sum(counts))

    def file_uris(self, name: str, version: int | None = None) -> list[str]:
        """The exact data files of a table version (what a Spark reader is handed)."""
        return list(self.table(name, version).file_uris())

    def files(self, name: str, version: int | None = None, stats: tuple[str, ...] = ("table_id",)) -> pa.Table:
        """Add actions of a version: path, size and the min/max statistics of the ``stats`` columns where present."""
        actions = pa.table(self.table(name, version).get_add_actions(flatten=True))
        keep = [c for c in ("path", "size_bytes", "num_records", *(f"{m}.{col}" for col in stats
                                                                   for m in ("min", "max")))
                if c in actions.column_names]
        return actions.select(keep)

    # -- writing ------------------------------------------------------------------------------------------------
    def committed(self, name: str, stage: str, refresh_id: int) -> bool:
        """True when ``stage`` of refresh ``refresh_id`` (or a later one) already committed to ``name``."""
        done = self.table(name).transaction_version(app_id(stage))
        return done is not None and done >= refresh_id

    def commit(self, name: str, adds: Iterable[DataFile], removes: Iterable[str], *, refresh_id: int,
               stage: str, attempt: str, metadata: dict | None = None, once: bool = True) -> CommitResult:
        """Commit added files and removed files of one stage in one transaction.

        With ``once`` (the default) the commit carries the app transaction of the stage and happens at most once per
        refresh; bookkeeping rows that may legitimately be written by every attempt (a failure record) pass
        ``once=False``.  A blind append that loses the race for a log version to concurrent writers more often than
        delta-rs retries, or whose reading of the log raced another writer (:func:`log_raced`), is attempted again
        (:data:`COMMIT_ATTEMPTS`, backoff) unless it landed (a post-commit hook may fail after the commit is in the
        log); a commit that removes files is not, because its removals were decided on the version it read.
        """
        adds, removes = list(adds), sorted(set(removes))
        if once and self.committed(name, stage, refresh_id):
            return CommitResult(None, 0, 0)
        now = int(time.time() * 1000)
        sizes = {}
        if removes:
            files = self.files(name)
            sizes = dict(zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist()))
        actions: list = [AddAction(f.path, f.size, {}, f.mtime_ms, True, f.stats) for f in adds]
        actions += [RemoveAction(p, True, now, sizes.get(p), {}) for p in removes]
        token = new_attempt_token()  # names this one commit in the log, so a retry can tell whether it landed
        meta = {"lakescout.refresh": refresh_id, "lakescout.stage": stage, "lakescout.attempt": attempt,
                "lakescout.commit": token}
        meta.update(metadata or {})
        txns = [Transaction(app_id(stage), refresh_id)] if once else None
        attempts = COMMIT_ATTEMPTS if not removes else 1
        for n in range(attempts):
            dt = self.table(name)
            read = dt.version()
            try:
                dt.create_write_transaction(
                    actions, "append", SCHEMAS[name],
                    commit_properties=CommitProperties(custom_metadata=meta, app_transactions=txns))
                break
            except (DeltaError, FileNotFoundError) as exc:  # a lost race for the version, or a log that changed
                if not (isinstance(exc, CommitFailedError) or log_raced(exc)):
                    raise
                if self.landed(name, token, read) is not None:
                    break
                if n + 1 == attempts:
                    raise
                if once and self.committed(name, stage, refresh_id):
                    return CommitResult(None, 0, 0)
                time.sleep(random.uniform(0, min(2.0, COMMIT_BACKOFF_SECONDS * 2 ** n)))
        return CommitResult(self.landed(name, token, read), len(adds), len(removes))

    def landed(self, name: str, token: str, after: int) -> int | None:
        """The version of ``name`` newer than ``after`` whose commit carries ``token``, or None."""
        for attempt in range(1, LISTING_ATTEMPTS + 1):
            dt = self.table(name)
            newer = dt.version() - after
            if newer <= 0:
                return None
            try:
                return next((h["version"] for h in dt.history(newer) if h.get("lakescout.commit") == token), None)
            except (DeltaError, FileNotFoundError) as exc:
                if not log_raced(exc) or attempt == LISTING_ATTEMPTS:
                    raise
        raise AssertionError("unreachable")

    def append_rows(self, name: str, rows: pa.Table, *, refresh_id: int, stage: str, attempt: str,
                    replace_paths: Iterable[str] = (), once: bool = True) -> CommitResult:
        """Write a small table of bookkeeping rows (snapshots, run records, models) from the driver and commit it."""
        rows = rows.select(SCHEMAS[name].names).cast(SCHEMAS[name])
        if once and self.committed(name, stage, refresh_id):
            return CommitResult(None, 0, 0)
        data = write_data_file(self.table_uri(name), rows, refresh_id, stage, attempt)
        return self.commit(name, [data], replace_paths, refresh_id=refresh_id, stage=stage, attempt=attempt,
                           once=once)

    def merge_small_files(self, name: str, *, refresh_id: int, stage: str,
                          max_files: int = 64, max_bytes: int = 64 << 20, rows_per_file: int = 1 << 20) -> int:
        """Rewrite a small table that has come to hold more than ``max_files`` files as a few files sorted by
        ``table_id``; returns the files it merged (0 when it left the table as it was).

        Per-table outputs are written as one file per task piece, so a small table (one catalog row per lake table)
        ends up in about as many files as a large one: 1,000 files of 16 rows for the catalog of 16,000 tables, which
        cost every stage that reads it whole about 0.65 s, nearly all of it opening files.  Merged, each read takes
        milliseconds and a later replacement rewrites one small file.  Only tables of at most ``max_bytes`` are
        merged, in the driver; large tables keep their narrow per-file ``table_id`` ranges
        (:mod:`discovery.surfaces.maintenance`).

        The files are read one by one with ``pq.read_table``: through a pyarrow dataset, the 6,250 catalog files of a
        100,000-table first build raised the driver's RSS by 380 MB for a 19 MB table (memory of the file reads that
        the process keeps after the dataset is freed), against 130 MB one by one (``benchmarks/refresh_scale.py``).

        When its commit fails, its files are referenced by no version: orphans that :mod:`.orphans` removes."""
        files = self.files(name)
        total = int(sum(files.column("size_bytes").to_pylist()))
        if files.num_rows <= max_files or total > max_bytes or self.committed(name, stage, refresh_id):
            return 0
        fs, root = resolve(self.table_uri(name))
        rows = pa.concat_tables([pq.read_table(f"{root.rstrip('/')}/{path}", filesystem=fs).cast(SCHEMAS[name])
                                 for path in files.column("path").to_pylist()])
        if "table_id" in rows.column_names:
            rows = rows.sort_by("table_id")
        attempt = new_attempt_token()
        adds = [write_data_file(self.table_uri(name), rows.slice(a, rows_per_file), refresh_id, stage, attempt)
                for a in range(0, rows.num_rows, rows_per_file)]
        self.commit(name, adds, files.column("path").to_pylist(), refresh_id=refresh_id, stage=stage,
                    attempt=attempt)
        return files.num_rows

    def distinct(self, name: str, column: str) -> set:
        """Distinct values of a short string column (a model or encoder version) of the current version.

        Read from the per-file minimum and maximum in the commit log where a file holds one value (as the files of
        one stage run do), so a refresh checks which versions a large table carries without opening its files.  The
        other files -- several values, or a value longer than the statistics keep (a segment-aware value-vector
        version is 38 characters, the statistics 32) -- are read one batch at a time, each batch reduced to its
        distinct values in Arrow: a Python string per row cost the pivots stage about 1 GB at 9 million value
        vectors."""
        files = pa.table(self.table(name).get_add_actions(flatten=True))
        if not files.num_rows:
            return set()
        paths = files.column("path").to_pylist()
        lo, hi = f"min.{column}", f"max.{column}"
        values: set = set()
        unread = paths
        if lo in files.column_names and hi in files.column_names:
            mins, maxs = files.column(lo).to_pylist(), files.column(hi).to_pylist()
            values = {a for a, b in zip(mins, maxs) if a is not None and a == b}
            unread = [p for p, a, b in zip(paths, mins, maxs) if a is None or a != b]
        if unread:
            for batch in self.parquet_files(name, unread).to_batches(columns=[column]):
                values.update(pc.unique(batch.column(0)).drop_null().to_pylist())
        return values


#: How long a remove action stays in the table state as a tombstone (``delta.deletedFileRetentionDuration``): none.
#: See :func:`table_properties`.
TOMBSTONE_RETENTION = "interval 0 hours"
#: Log retention of the bookkeeping tables, which no snapshot pins and every reader reads at their latest version.
#: Their log is what a busy server lengthens (a group commit of searches is a version of ``query_results`` and of
#: ``query_batches``), and a local table's commit and open list the whole log folder: with every entry kept for the
#: snapshots' 30 days, a commit took 5 ms at 117 log files, 20 ms at 1,062 and 31 ms at 3,162, and a recorded search
#: over HTTP twice as long as on a fresh warehouse.  An hour keeps what a writer's conflict check and
#: :meth:`Warehouse.landed` read.
BOOKKEEPING_LOG_RETENTION = "interval 1 hours"


class KeptOpenWarehouse(Warehouse):
    """The warehouse as one thread that commits again and again sees it: each table's latest version is opened once
    and brought up to date (``update_incremental``: the commits since, a millisecond or two) rather than opened again
    (its last checkpoint and every commit after it: 12 to 13 ms for a ``query_results`` of 760 files).  A served
    search's group commit opens its two tables four times (the commit and :meth:`~Warehouse.landed` of each).

    For one thread only: the tables it hands out change version under the caller at its next call.  A version
    asked for by number, and a table whose log can no longer be replayed (its old entries expired while the writer
    was idle), is opened afresh."""

    def __init__(self, root: str | Warehouse) -> None:
        super().__init__(root)
        self._open: dict[str, DeltaTable] = {}

    def table(self, name: str, version: int | None = None) -> DeltaTable:
        kept = self._open.get(name) if version is None else None
        if kept is not None:
            try:
                kept.update_incremental()
                return kept
            except Exception:  # noqa: BLE001 - a log it cannot replay: open the table again, as Warehouse does
                del self._open[name]
        dt = super().table(name, version)
        if version is None:
            self._open[name] = dt
        return dt


def table_properties(name: str, log_retention_days: float) -> dict[str, str]:
    """Delta table properties of the table ``name``: checkpoint interval, log retention (``log_retention_days`` in
    whole hours for a table snapshots pin, :data:`BOOKKEEPING_LOG_RETENTION` for the others) and tombstone
    retention.

    A tombstone (the remove action of a replaced file, which checkpoints repeat until it expires) serves two readers
    only, and neither needs it to outlive the commit that wrote it here:

    * **Time travel.**  A version's file list is its adds, rebuilt from a checkpoint at or before it and the log
      entries after; tombstones take no part.  What keeps a retained version loadable is the log retention, and what
      keeps its files is the version-based cleanup below.
    * **Vacuum**, which in its non-``full`` mode deletes only tombstoned files.  Maintenance vacuums with
      ``retention_hours=0`` and ``keep_versions`` from the oldest retained snapshot, so a tombstone's age never
      decides a deletion: the retained versions do.  It vacuums right after compacting, from a state replayed from
      the JSON log (the compaction and vacuum commits write no checkpoint in between), so compaction's tombstones are
      all seen.  A tombstone that leaves the state before a vacuum could use it (a refresh's replacement, whose old
      file a retained snapshot still reads) makes that file untracked, never deleted early: the orphan cleanup
      (:mod:`.orphans`) deletes it once no version in the retention window or pinned by a snapshot references it
      and it is older than the orphan grace period.

    Dropping tombstones at once is therefore safe with any snapshot retention and grace period, and it is what keeps
    opening a table cheap: at the default of 7 days, the checkpoint maintenance writes after compacting 5,000 query
    batches into one file still listed the 5,000 removes, and a cold read of ``query_results`` after 5,000 commits
    took 1.59x its time after 50; without them, 1.00x (``benchmarks/commits.py``).  What a table load still pays for
    the 5,000 commits is listing their log entries, until the log retention expires them."""
    retention = (BOOKKEEPING_LOG_RETENTION if name in BOOKKEEPING_TABLES
                 else f"interval {max(1, round(log_retention_days * 24))} hours")
    return {"delta.checkpointInterval": str(CHECKPOINT_INTERVAL), "delta.logRetentionDuration": retention,
            "delta.deletedFileRetentionDuration": TOMBSTONE_RETENTION}


def json_dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
