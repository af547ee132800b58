"""The warehouse: the Delta tables of the index and the one module that commits to them.

Writers never pass rows of the index through a driver: workers write Parquet files into the table folder
(:func:`discovery.store.files.write_data_file`) and the driver commits their metadata, together with the removal of
files whose rows are replaced, in a single ``create_write_transaction``.  Every commit is tagged with an application
transaction ``lakescout/<stage>`` whose version is the refresh id, so a retried stage sees that its refresh already
committed and does not commit twice.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Iterable

import pyarrow as pa
import pyarrow.dataset as pads
import pyarrow.fs as pafs
from deltalake import DeltaTable
from deltalake.exceptions import TableNotFoundError
from deltalake.transaction import AddAction, CommitProperties, RemoveAction, Transaction

from .files import DataFile, parse_data_file_name, resolve, write_data_file
from .schema import SCHEMAS


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

    def __init__(self, root: str):
        self.root = root.rstrip("/") if "://" in root else str(root)
        fs, path = resolve(self.root)
        self._fs, self._path = fs, path

    # -- layout -------------------------------------------------------------------------------------------------
    def table_uri(self, name: str) -> str:
        if name not in SCHEMAS:
            raise KeyError(f"unknown index table {name!r}")
        if "://" in self.root:
            return f"{self.root}/{name}"
        return f"{self._path}/{name}"

    def exists(self) -> bool:
        return DeltaTable.is_deltatable(self.table_uri("catalog"))

    def ensure(self) -> None:
        """Create every index table that does not exist yet (empty, with its schema)."""
        for name, schema in SCHEMAS.items():
            uri = self.table_uri(name)
            if not DeltaTable.is_deltatable(uri):
                DeltaTable.create(uri, schema=schema, mode="ignore", name=name)

    def require(self) -> None:
        if not self.exists():
            raise WarehouseError(f"no Lakescout warehouse at {self.root!r} (run a refresh first: "
                                 f"lakescout refresh --lake DIR --warehouse {self.root})")

    # -- reading ------------------------------------------------------------------------------------------------
    def table(self, name: str, version: int | None = None) -> DeltaTable:
        try:
            return DeltaTable(self.table_uri(name), version=version)
        except TableNotFoundError as exc:
            raise WarehouseError(f"index table {name!r} is missing under {self.root!r}") from exc

    def version(self, name: str) -> int:
        return self.table(name).version()

    def dataset(self, name: str, version: int | None = None) -> pads.Dataset:
        return self.table(name, version).to_pyarrow_dataset()

    def read(self, name: str, version: int | None = None, columns: list[str] | None = None,
             filter: pads.Expression | None = None) -> pa.Table:
        return self.dataset(name, version).to_table(columns=columns, filter=filter)

    def file_uris(self, name: str, version: int | None = None) -> list[str]:
        """The exact data files of a table version (what a Spark reader is handed)."""
        return list(self.table(name, version).file_uris())

    def files(self, name: str, version: int | None = None) -> pa.Table:
        """Add actions of a version: path, size and the min/max statistics of ``table_id`` where present."""
        actions = pa.table(self.table(name, version).get_add_actions(flatten=True))
        keep = [c for c in ("path", "size_bytes", "num_records", "min.table_id", "max.table_id")
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
        ``once=False``.
        """
        adds, removes = list(adds), sorted(set(removes))
        dt = self.table(name)
        if once and self.committed(name, stage, refresh_id):
            return CommitResult(None, 0, 0)
        now = int(time.time() * 1000)
        sizes = {}
        if removes:
            files = self.files(name)
            sizes = dict(zip(files.column("path").to_pylist(), files.column("size_bytes").to_pylist()))
        actions: list = [AddAction(f.path, f.size, {}, f.mtime_ms, True, f.stats) for f in adds]
        actions += [RemoveAction(p, True, now, sizes.get(p), {}) for p in removes]
        meta = {"lakescout.refresh": refresh_id, "lakescout.stage": stage, "lakescout.attempt": attempt}
        meta.update(metadata or {})
        txns = [Transaction(app_id(stage), refresh_id)] if once else None
        dt.create_write_transaction(
            actions, "append", SCHEMAS[name],
            commit_properties=CommitProperties(custom_metadata=meta, app_transactions=txns))
        return CommitResult(self.table(name).version(), len(adds), len(removes))

    def append_rows(self, name: str, rows: pa.Table, *, refresh_id: int, stage: str, attempt: str,
                    replace_paths: Iterable[str] = (), once: bool = True) -> CommitResult:
        """Write a small table of bookkeeping rows (snapshots, run records, models) from the driver and commit it."""
        rows = rows.select(SCHEMAS[name].names).cast(SCHEMAS[name])
        if once and self.committed(name, stage, refresh_id):
            return CommitResult(None, 0, 0)
        data = write_data_file(self.table_uri(name), rows, refresh_id, stage, attempt)
        return self.commit(name, [data], replace_paths, refresh_id=refresh_id, stage=stage, attempt=attempt,
                           once=once)

    def cleanup_orphans(self, name: str, keep_attempt: str | None = None) -> list[str]:
        """Delete data files written by attempts that never committed to this table.

        A file belongs to an attempt through its name; the attempts that committed are recorded in the commit
        metadata of the table history.  Files of ``keep_attempt`` (the attempt now running) are kept.
        """
        dt = self.table(name)
        committed = {str(h.get("lakescout.attempt")) for h in dt.history() if "lakescout.attempt" in h}
        fs, root = resolve(self.table_uri(name))
        removed = []
        for info in fs.get_file_info(pafs.FileSelector(root, recursive=False)):
            parsed = parse_data_file_name(info.base_name)
            if parsed is None or parsed[2] in committed or parsed[2] == keep_attempt:
                continue
            fs.delete_file(info.path)
            removed.append(info.base_name)
        return removed


def json_dumps(obj) -> str:
    return json.dumps(obj, sort_keys=True, separators=(",", ":"), default=str)
