"""Published snapshots: one consistent version of every index table.

A refresh commits stage by stage; queries never see those intermediate versions.  Only the last stage of a
successful refresh appends a row to ``snapshots`` naming the Delta version of every index table, and readers resolve
a snapshot (the latest, or a given id) to those versions.  A failed or killed refresh therefore leaves the previous
snapshot answering queries.
"""
from __future__ import annotations

import json
from bisect import bisect_left, bisect_right
from dataclasses import dataclass, field
from datetime import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.dataset as pads

from .cache import INDEXES
from .rewrite import candidate_files
from .schema import SCHEMAS
from .warehouse import Warehouse, WarehouseError

#: The catalog columns queries consult (resolving a query, naming results): one cached read serves both.
CATALOG_COLUMNS = ["table_id", "path", "format", "bytes", "mtime_ns", "status", "error"]


@dataclass(frozen=True)
class Snapshot:
    warehouse: Warehouse
    snapshot_id: int
    created_at: datetime
    refresh_id: int
    lake: str
    versions: dict[str, int]
    models: dict[str, str] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    #: Datasets of the pinned versions, opened once per snapshot object: a version never changes, and opening one
    #: (the Delta log's file list, each file's statistics) cost a served join 5 to 10 ms per read, twice a query.
    _datasets: dict = field(default_factory=dict, compare=False, repr=False)

    def __getstate__(self) -> dict:
        """Pickled (a Spark task's snapshot) without the opened datasets: each process opens its own."""
        return {**self.__dict__, "_datasets": {}}

    def __setstate__(self, state: dict) -> None:
        self.__dict__.update(state)

    def lake_root(self) -> str:
        return self.lake

    def version(self, name: str) -> int:
        try:
            return self.versions[name]
        except KeyError:
            raise WarehouseError(f"snapshot {self.snapshot_id} does not pin table {name!r}") from None

    def dataset(self, name: str) -> pads.Dataset:
        """The pinned version as Delta's dataset (files carry their statistics, so a filter prunes them)."""
        key = ("delta", name)
        if key not in self._datasets:
            self._datasets[key] = self.warehouse.dataset(name, self.version(name))
        return self._datasets[key]

    def files(self, name: str) -> pa.Table:
        """The pinned version's data files with their ``table_id`` statistics (:meth:`Warehouse.files`)."""
        key = ("files", name)
        if key not in self._datasets:
            self._datasets[key] = self.warehouse.files(name, self.version(name))
        return self._datasets[key]

    def parquet_dataset(self, name: str) -> pads.Dataset:
        """The pinned version's data files as a plain Parquet dataset (:meth:`Warehouse.parquet_dataset`)."""
        key = ("parquet", name)
        if key not in self._datasets:
            self._datasets[key] = self.warehouse.parquet_dataset(name, self.version(name))
        return self._datasets[key]

    def read(self, name: str, columns: list[str] | None = None, filter: pads.Expression | None = None) -> pa.Table:
        """Rows of the pinned version, as :meth:`Warehouse.read` reads them."""
        if filter is None:
            return self.parquet_dataset(name).to_table(columns=columns)
        return self.dataset(name).to_table(columns=columns, filter=filter)

    def scan(self, name: str, columns: list[str], filter: pads.Expression,
             table_ids: list[int] | None = None) -> pa.Table:
        """The rows of ``name`` matching ``filter``, read file after file and batch after batch in the calling thread.

        For a query that needs a small part of a large table (one join partition): a threaded read decodes several
        files at once and its allocator keeps the high-water mark, several times the rows kept; here only the
        matching rows and one batch are held at a time.  The version's data files are read straight from Parquet
        through the warehouse's own filesystem, as Spark tasks read them (:func:`.rewrite.read_rows`): through the
        Delta dataset's filesystem, a partition read of the 1M-vector benchmark lake left about 70 MB more resident.
        ``table_ids``: the tables ``filter`` keeps, when it keeps a few; only files that may hold them are opened."""
        if table_ids is None:
            dataset = self.parquet_dataset(name)
        else:  # only the files whose table_id statistics may hold one (each file opened costs a read of its footer)
            dataset = self.warehouse.parquet_files(name, candidate_files(self.files(name), np.asarray(table_ids)))
        batches = [b for fragment in dataset.get_fragments(filter=filter)
                   for b in fragment.to_batches(columns=columns, filter=filter, use_threads=False, batch_size=8192)
                   if b.num_rows]
        pa.default_memory_pool().release_unused()  # the decoded files' pages, kept by Arrow's allocator otherwise
        return pa.Table.from_batches(batches, schema=pa.schema([SCHEMAS[name].field(c) for c in columns]))

    def cached(self, name: str, columns: list[str]) -> pa.Table:
        """``columns`` of a whole index table at this snapshot, read once per process and kept in the byte-bounded
        index cache: for the small tables every query consults (catalog, columns), which a snapshot never changes,
        so a long-running process answers without a Delta read per query.  Kept as one chunk: a read gives a chunk
        per file, and every ``take`` of a served search's rows then walks them all (a catalog of 22 files: 0.20 ms
        a take of ten rows against 0.06)."""
        key = ("table", self.warehouse.root, self.snapshot_id, name, tuple(columns))
        return INDEXES.get(key, lambda: self.read(name, columns=columns).combine_chunks())

    def lookup(self, name: str, columns: list[str]) -> tuple[pa.Table, RowLookup]:
        """:meth:`cached` ``columns`` of ``name`` with a :class:`RowLookup` over them, built once per process and
        snapshot: what a served search uses to find its query's catalog row and name its results without a pass
        over the whole table."""
        rows = self.cached(name, columns)
        key = ("lookup", self.warehouse.root, self.snapshot_id, name, tuple(columns))
        return rows, INDEXES.get(key, lambda: RowLookup(rows))

    def file_uris(self, name: str) -> list[str]:
        return self.warehouse.file_uris(name, self.version(name))

    def to_dict(self) -> dict:
        return {"snapshot_id": self.snapshot_id, "created_at": self.created_at.isoformat(),
                "refresh_id": self.refresh_id, "lake": self.lake, "versions": self.versions, "models": self.models,
                "counts": self.counts}


class RowLookup:
    """Positions of a cached index table's rows by ``table_id`` (and by ``path`` when it has one), found by binary
    search: a served search resolves its query and names its results in microseconds whatever the lake's size,
    where a filter over the table costs a pass over it (a million catalog rows, ten million column rows).  Costs 16
    bytes a row (the sorted ids and the order that sorts them) and 8 a path."""

    def __init__(self, rows: pa.Table):
        ids = rows.column("table_id").to_numpy()
        self._order = np.argsort(ids, kind="stable")
        self._ids = ids[self._order]
        self._paths: pa.Array | None = None
        if "path" in rows.column_names:
            self._paths = rows.column("path").combine_chunks()
            order = pc.array_sort_indices(self._paths, null_placement="at_end").to_numpy()
            self._path_order = order[:len(order) - self._paths.null_count]

    @property
    def nbytes(self) -> int:
        return self._order.nbytes + self._ids.nbytes + (self._path_order.nbytes if self._paths is not None else 0)

    def by_ids(self, table_ids) -> np.ndarray:
        """Positions of the rows of ``table_ids``, by ascending id and then row order."""
        wanted = np.unique(np.asarray(table_ids, dtype=np.int64))
        lo, hi = np.searchsorted(self._ids, wanted, "left"), np.searchsorted(self._ids, wanted, "right")
        if not (hi > lo).any():
            return np.zeros(0, dtype=np.int64)
        return np.concatenate([self._order[a:b] for a, b in zip(lo.tolist(), hi.tolist()) if b > a])

    def by_path(self, path: str) -> np.ndarray:
        """Positions of the rows whose ``path`` is ``path``, in row order."""
        if self._paths is None:
            raise ValueError("these rows have no path column")
        paths, order = self._paths, self._path_order
        lo = bisect_left(range(len(order)), path, key=lambda i: paths[int(order[i])].as_py())
        hi = bisect_right(range(lo, len(order)), path, key=lambda i: paths[int(order[i])].as_py()) + lo
        return np.sort(order[lo:hi])


def result_names(snapshot: Snapshot, table_ids: list[int]) -> tuple[dict[int, str], dict[tuple[int, int], str]]:
    """Paths and column names of the tables a search returned: ``({table_id: path}, {(table_id, ordinal): name})``.

    The two tables are read once per snapshot and process (:meth:`Snapshot.cached`) and their rows found by
    :class:`RowLookup`; only the result tables' rows are turned into Python objects.
    """
    if not table_ids:
        return {}, {}
    catalog, at = snapshot.lookup("catalog", CATALOG_COLUMNS)
    catalog = catalog.take(at.by_ids(table_ids))
    columns, at = snapshot.lookup("columns", ["table_id", "ordinal", "name"])
    columns = columns.take(at.by_ids(table_ids))
    paths = dict(zip(catalog.column("table_id").to_pylist(), catalog.column("path").to_pylist()))
    names = {(t, o): n for t, o, n in zip(*(columns.column(c).to_pylist() for c in ("table_id", "ordinal", "name")))}
    return paths, names


def _from_row(warehouse: Warehouse, row: dict) -> Snapshot:
    return Snapshot(warehouse, row["snapshot_id"], row["created_at"], row["refresh_id"], row["lake"],
                    json.loads(row["versions"]), json.loads(row["models"] or "{}"), json.loads(row["counts"] or "{}"))


def list_snapshots(warehouse: Warehouse) -> list[Snapshot]:
    """Every published snapshot, oldest first."""
    warehouse.require()
    rows = warehouse.read("snapshots").sort_by("snapshot_id").to_pylist()
    return [_from_row(warehouse, r) for r in rows]


def load_snapshot(warehouse: Warehouse, snapshot_id: int | None = None) -> Snapshot:
    """The latest published snapshot, or the one with ``snapshot_id``."""
    warehouse.require()
    table = warehouse.read("snapshots")
    if snapshot_id is not None:
        table = table.filter(pc.equal(table["snapshot_id"], snapshot_id))
        if table.num_rows == 0:
            raise WarehouseError(f"no snapshot {snapshot_id} in {warehouse.root!r}")
    if table.num_rows == 0:
        raise WarehouseError(f"the warehouse {warehouse.root!r} has no published snapshot yet "
                             "(the first refresh has not finished)")
    row = table.sort_by([("snapshot_id", "descending")]).slice(0, 1).to_pylist()[0]
    return _from_row(warehouse, row)
