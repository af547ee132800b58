"""Union query arrays: the compact index's columns as ``.npy`` files beside the Delta tables, versioned with them.

The refresh writes them when it publishes a snapshot (before the snapshot row, so a published snapshot finds them)
as the query-array folder :data:`UNION_ARRAYS` (:mod:`discovery.data.store.arrays`, the protocol every index's folder
follows: written whole then renamed into place or uploaded, ``meta.json`` last; opened from a local copy on object
storage; pruned by maintenance) named ``union-v<FORMAT>-cv<a>-cp<b>``, where a and b are the Delta versions of
``column_vectors`` and ``centroid_partitions`` the snapshot pins: everything in the files follows from those two
versions.  A query process maps them (``np.load(mmap_mode="r")``, :func:`open_arrays`), except the table ids, the
float32 vectors and
the ordinals, whose rows it reads with positioned reads for the tables it scores or returns (:class:`StoredRows`),
so what stays resident is the codes and the column offsets every query reads whole: a cold process
reads only what a query touches, and processes serving the same warehouse share the files through the page cache
instead of each building its index from Delta.

Files (columns grouped by table, tables by ascending id, a table's columns in the order of its Algorithm 1
partitions, as ``UnionIndex`` stores them, so matchings see the columns in the same order): ``table_ids`` int64 (T,),
``col_offsets`` int32 (T + 1,) (int64 from 2^31 columns on: :func:`narrow_offsets`), ``ordinals`` int32 (n,),
``vectors`` float32 (n, d) unit rows, ``codes`` int8 (n, d),
``steps`` float32 (d,) and ``error`` float64 (d,) of the quantisation (:mod:`.quantised`), ``quantities`` int16 (n,)
(each column's quantity code, :func:`discovery.transforms.quantities.codes`); ``meta.json`` is written last and marks
the folder complete.

The writer streams ``column_vectors`` batch by batch into the files, a block at a time through a short-lived map
(:class:`_FileRows`), so it holds the (table, ordinal) keys of the columns but never their vectors, and its resident
set does not grow with the files.

A snapshot without arrays (a warehouse written before they existed, or a process that cannot write the local cache
of a remote warehouse's folder) gets the same arrays built in memory from its Delta tables (:func:`build_arrays`).
"""
from __future__ import annotations

import json
import os

import numpy as np

from ...data.store.arrays import ArrayFolder
from ...transforms.quantities import codes as quantity_codes
from .csr import offsets_from_counts
from .matching import unit_rows
from .quantised import encode, fit_steps

#: Bumped when the files change meaning; part of the folder name, so an old folder is simply not found.
FORMAT = 2
FILES = ("table_ids", "col_offsets", "ordinals", "vectors", "codes", "steps", "error", "quantities")
#: arrays a query reads only the rows of the tables it scores (vectors) or returns (ordinals, table ids):
#: positioned reads.
_READ = ("table_ids", "vectors", "ordinals")
_BATCH = 65536


def arrays_name(versions: dict) -> str:
    """Folder name of the arrays of a snapshot pinning ``versions`` (Delta version per index table)."""
    return f"union-v{FORMAT}-cv{int(versions['column_vectors'])}-cp{int(versions['centroid_partitions'])}"


def _positions(warehouse, versions: dict) -> tuple[np.ndarray, np.ndarray, int, np.ndarray, np.ndarray]:
    """Storage order of the columns from the partitions: per position its table id and ordinal, the ordinal span
    that packs (table id, ordinal) into one key, the keys sorted, and the position of every sorted key."""
    parts = warehouse.read("centroid_partitions", versions["centroid_partitions"],
                           columns=["table_id", "partition_id", "member_ordinals"])
    parts = parts.sort_by([("table_id", "ascending"), ("partition_id", "ascending")])
    members = parts.column("member_ordinals").combine_chunks()
    counts = members.value_lengths().to_numpy(zero_copy_only=False)
    seq_table = np.repeat(parts.column("table_id").to_numpy(), counts).astype(np.int64)
    seq_ordinal = members.flatten().to_numpy(zero_copy_only=False).astype(np.int64)
    span = int(seq_ordinal.max()) + 1 if len(seq_ordinal) else 1
    seq_key = seq_table * span + seq_ordinal
    order = np.argsort(seq_key, kind="stable")
    if len(seq_key) and (np.diff(seq_key[order]) == 0).any():
        raise ValueError("every column must be a member of exactly one partition of its table")
    return seq_table, seq_ordinal, span, seq_key[order], order


def build_arrays(warehouse, versions: dict, folder: str | None = None) -> dict[str, np.ndarray]:
    """The union query arrays of the snapshot pinning ``versions``, written as ``.npy`` files into the local
    ``folder`` (and returned memory-mapped), or built in memory when ``folder`` is None."""
    seq_table, seq_ordinal, span, sorted_keys, order = _positions(warehouse, versions)
    dataset = warehouse.dataset("column_vectors", versions["column_vectors"])
    n = len(seq_table)
    if dataset.count_rows() != n:
        raise ValueError("every column must be a member of exactly one partition of its table")
    first = dataset.head(1, columns=["vector"]).column("vector")
    dim = len(first[0]) if len(first) else 0

    def array(name: str, shape: tuple, dtype) -> np.ndarray | _FileRows:
        if folder is None or not np.prod(shape):
            return np.zeros(shape, dtype=dtype)
        return _FileRows.create(os.path.join(folder, f"{name}.npy"), shape, dtype)

    vectors = array("vectors", (n, dim), np.float32)
    quantities = np.zeros(n, dtype=np.int16)
    read = ["table_id", "ordinal", "vector"] + (["quantity"] if "quantity" in dataset.schema.names else [])
    for batch in dataset.to_batches(columns=read, batch_size=_BATCH):
        if not batch.num_rows:
            continue
        key = batch.column("table_id").to_numpy().astype(np.int64) * span + batch.column("ordinal").to_numpy()
        found = np.minimum(np.searchsorted(sorted_keys, key), max(n - 1, 0))
        if (sorted_keys[found] != key).any():
            raise ValueError("every column must be a member of exactly one partition of its table")
        flat = batch.column("vector").flatten().to_numpy(zero_copy_only=False)
        vectors[order[found]] = unit_rows(flat.reshape(-1, dim))
        if "quantity" in read:
            quantities[order[found]] = quantity_codes(batch.column("quantity").to_pylist())
    steps = fit_steps(vectors)
    codes = array("codes", (n, dim), np.int8)
    error = encode(vectors, steps, codes)
    table_ids, counts = np.unique(seq_table, return_counts=True)
    out: dict[str, np.ndarray] = {
        "table_ids": table_ids, "col_offsets": narrow_offsets(offsets_from_counts(counts)),
        "ordinals": seq_ordinal.astype(np.int32), "vectors": _array(vectors), "codes": _array(codes), "steps": steps,
        "error": error, "quantities": quantities}
    if folder is None:
        return out
    return save_arrays(folder, out, {"versions": {t: int(versions[t]) for t in ("column_vectors",
                                                                              "centroid_partitions")}})


def _array(rows: np.ndarray | _FileRows) -> np.ndarray:
    """``rows`` as an array: a file of them mapped (read-only) once it is written whole."""
    return rows.mapped() if isinstance(rows, _FileRows) else rows


class _FileRows:
    """A ``.npy`` file written and read a block of rows at a time, each block through a map opened for it alone.

    Pages touched through a map stay in the process's resident set until it is closed: one map held over the whole
    build made the refresh driver's RSS grow by the vectors and codes files (1.4 GB at 100,000 tables, 14 GB at a
    million), which memory limits and the peak-RSS figure count although the kernel could drop them."""

    def __init__(self, path: str, shape: tuple, dtype):
        self.path, self.shape, self.dtype = path, shape, np.dtype(dtype)

    @classmethod
    def create(cls, path: str, shape: tuple, dtype) -> _FileRows:
        np.lib.format.open_memmap(path, mode="w+", dtype=dtype, shape=shape).flush()
        return cls(path, shape, dtype)

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, rows) -> np.ndarray:
        return np.array(np.load(self.path, mmap_mode="r")[rows])

    def __setitem__(self, rows, values) -> None:
        np.load(self.path, mmap_mode="r+")[rows] = values  # unmapped at once: dirty pages go back to the page cache

    def mapped(self) -> np.memmap:
        return np.load(self.path, mmap_mode="r")


def narrow_offsets(offsets: np.ndarray) -> np.ndarray:
    """Column offsets as int32 when every offset fits (fewer than 2^31 columns), else int64.

    Why: the bound pass reads every table's offsets on every query, so they stay resident beside the codes; at
    int64 they add 8 bytes a table to the codes' byte a coordinate (0.14% of the float32 vectors on a lake of 7.5
    columns a table, d = 384), at int32 half that.
    """
    offsets = np.asarray(offsets)
    if len(offsets) and int(offsets[-1]) >= 2 ** 31:
        return offsets.astype(np.int64)
    return offsets.astype(np.int32)


def save_arrays(folder: str, arrays: dict[str, np.ndarray], meta: dict) -> dict[str, np.ndarray]:
    """Write ``arrays`` into ``folder`` as ``.npy`` files (arrays already mapped from there are flushed), then
    ``meta.json``; returns them memory-mapped."""
    for name in FILES:
        value, path = arrays[name], os.path.join(folder, f"{name}.npy")
        if (isinstance(value, np.memmap) and value.filename is not None
                and os.path.abspath(value.filename) == os.path.abspath(path)):
            value.flush()
        else:
            np.save(path, value, allow_pickle=False)
    vectors = arrays["vectors"]
    meta = {"format": FORMAT, "columns": int(vectors.shape[0]), "tables": len(arrays["table_ids"]),
            "dim": int(vectors.shape[1]), **meta}
    with open(os.path.join(folder, "meta.json"), "w") as fh:
        json.dump(meta, fh)
    return load_arrays(folder)


def load_arrays(folder: str) -> dict:
    """The arrays of a complete folder: ``table_ids``, ``vectors`` and ``ordinals`` as :class:`StoredRows`, the
    others memory-mapped."""
    out: dict = {name: StoredRows(os.path.join(folder, f"{name}.npy")) for name in _READ}
    for name in FILES:
        path = os.path.join(folder, f"{name}.npy")
        if name in _READ:
            continue
        try:
            out[name] = np.load(path, mmap_mode="r", allow_pickle=False)
        except ValueError:  # an empty array cannot be mapped
            out[name] = np.load(path, allow_pickle=False)
    return out


class StoredRows:
    """The rows of a ``.npy`` file, read on demand with positioned reads (bounded queries) or mapped whole
    (``exact``).

    Why not a mapping for the scattered reads.  The page cache holds a file that was written or read recently in large
    folios (ext4 on Linux 6.x), and a page fault maps the whole folio into the process: gathering the 480 columns of
    64 tables from a mapped 230 MB vectors file left 226 MB of it resident in the process, for 0.7 MB read.  A
    positioned read copies just the rows and maps nothing, and the page cache still serves every process.
    """

    def __init__(self, path: str) -> None:
        self.path = path
        self._file = open(path, "rb", buffering=0)
        version = np.lib.format.read_magic(self._file)
        read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                       else np.lib.format.read_array_header_2_0)
        shape, fortran, self.dtype = read_header(self._file)
        if fortran or not shape:
            raise ValueError(f"{path}: expected a C-ordered array of rows")
        self.shape = shape
        self._offset = self._file.tell()
        self._mapped: np.ndarray | None = None

    @property
    def nbytes(self) -> int:
        return 0  # holds no rows; see :meth:`whole` for the mapping ``exact`` reads

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, row: int):
        """One row (a scalar for a 1-d file), one positioned read: enough for a binary search over sorted ids."""
        return self.take(np.array([row]), np.array([1]))[0]

    def take(self, starts: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Rows ``starts[i]:starts[i] + counts[i]`` of every span, concatenated, one read per span."""
        out = np.empty((int(np.sum(counts)), *self.shape[1:]), dtype=self.dtype)
        row = out.itemsize * int(np.prod(self.shape[1:]))
        view = out.data.cast("B")  # memoryview(out), which numpy types as a Buffer from Python 3.12 only
        at = 0
        for start, count in zip(np.asarray(starts).tolist(), np.asarray(counts).tolist()):
            done, size = 0, count * row
            while done < size:
                got = os.preadv(self._file.fileno(), [view[at + done:at + size]], self._offset + start * row + done)
                if got <= 0:
                    raise OSError(f"{self.path}: short read")
                done += got
            at += size
        return out

    def whole(self) -> np.ndarray:
        """Every row, memory-mapped (read by ``exact``, which scores every table)."""
        if self._mapped is None:
            try:
                self._mapped = np.load(self.path, mmap_mode="r", allow_pickle=False)
            except ValueError:  # an empty array cannot be mapped
                self._mapped = np.zeros(self.shape, dtype=self.dtype)
        return self._mapped


def open_arrays(warehouse, versions: dict) -> dict[str, np.ndarray] | None:
    """The stored arrays of the snapshot pinning ``versions``, memory-mapped, or None when it has none (or they
    cannot be brought to a local folder)."""
    folder = UNION_ARRAYS.open(warehouse, versions)
    return None if folder is None else load_arrays(folder)


def _laid_out(counts: dict) -> bool:
    """A snapshot whose refresh stopped short of the centroids stage (a partial rebuild) has no partitions to lay the
    columns out by: its queries build the arrays in memory instead."""
    return bool(counts.get("rows_centroid_partitions")) or not counts.get("rows_column_vectors")


#: The union's query-array folder (:mod:`discovery.data.store.arrays`).
UNION_ARRAYS = ArrayFolder(arrays_name, build_arrays, _laid_out)
