"""The PEXESO index of the lake as a versioned model plus per-table rows: pivots, grid, JSD partitions.

The ``pivots`` stage (``spark_jobs/pivot_mappings.py``) fits a :class:`PivotModel` on a bounded sample of the value
vectors (PCA pivot selection, grid extent from the mapped sample, and, when the lake's index would not fit the memory
budget, JSD k-means partition centres over column histograms), stores it in ``models``, and then maps every value
vector in Spark tasks (:func:`mapping_batch`): distances to the pivots, leaf cell of the hierarchical grid, and the
column's partition (nearest centre by Jensen-Shannon divergence).  Queries rebuild a :class:`~discovery.join.JoinIndex`
from those rows without recomputing a single mapping (:func:`index_from_rows`).

One set of numbers.  Pivot distances are stored as float32; the leaf cell and the partition of a vector are computed
from those float32 values at build time (:func:`stored_mapping`), and the index searches those same values with a
slack for float32 precision, so no vector sits on one side of a cell boundary in the rows and on the other in the
index, and no lemma decides on numbers more precise than the ones it reads.

Column ids in the join index are ``table_id * 65536 + ordinal`` (ordinals are bounded by ``max_columns``).
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from ..store import SCHEMAS, StoredModel, Warehouse, WarehouseError, latest_model
from .grid import GridSpec
from .partitioning import _jsd_to_centres, column_histograms, partition_columns
from .pivots import map_to_pivots, select_pivots
from .search import JoinIndex

MODEL = "pivots"
COLUMN_KEY_BASE = 65536
#: What identifies a value-vector row in ``value_vectors`` and ``pivot_mappings`` alike.
ROW_KEYS = ["table_id", "ordinal", "value"]
_LN2 = float(np.log(2.0))


def column_keys(table_ids: np.ndarray, ordinals: np.ndarray) -> np.ndarray:
    return np.asarray(table_ids, dtype=np.int64) * COLUMN_KEY_BASE + np.asarray(ordinals, dtype=np.int64)


@dataclass(frozen=True)
class PivotModel:
    version: str
    pivots: np.ndarray          # (p, d) float32
    grid: GridSpec
    metric: str
    encoder_version: str        # the join encoder whose vectors were sampled
    hist_level: int             # grid level of the partition histograms
    bins: np.ndarray            # (b,) int64 coarse cell ids the partition centres are defined over
    centres: np.ndarray         # (k, b) float64 partition centres; k = 1 means one partition

    @property
    def n_partitions(self) -> int:
        return int(self.centres.shape[0])

    def params(self) -> dict:
        return {"n_pivots": int(len(self.pivots)), "levels": self.grid.levels, "metric": self.metric,
                "encoder_version": self.encoder_version, "partitions": self.n_partitions,
                "hist_level": self.hist_level}

    def payload(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, pivots=self.pivots, lower=self.grid.lower, upper=self.grid.upper, bins=self.bins,
                 centres=self.centres)
        return buf.getvalue()

    @classmethod
    def from_stored(cls, stored: StoredModel) -> "PivotModel":
        z = np.load(io.BytesIO(stored.payload), allow_pickle=False)
        p = stored.params
        return cls(stored.version, z["pivots"], GridSpec(z["lower"], z["upper"], int(p["levels"])), p["metric"],
                   p["encoder_version"], int(p["hist_level"]), z["bins"], z["centres"])

    def rows(self) -> pa.Table:
        return pa.table({"model_version": [self.version] * len(self.pivots),
                         "pivot_id": np.arange(len(self.pivots), dtype=np.int32),
                         "vector": [v.tolist() for v in self.pivots]}, schema=SCHEMAS["pivots"])

    def assign_partitions(self, mapped: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct column keys, partition of each): nearest centre by JSD of the column's cell histogram."""
        columns, col = np.unique(keys, return_inverse=True)
        if self.n_partitions == 1 or len(columns) == 0:
            return columns, np.zeros(len(columns), dtype=np.int32)
        coarse = GridSpec(self.grid.lower, self.grid.upper, self.hist_level).leaf_cells(mapped)
        pos = np.minimum(np.searchsorted(self.bins, coarse), len(self.bins) - 1)
        known = self.bins[pos] == coarse
        sizes = np.bincount(col, minlength=len(columns))
        ukey, counts = np.unique(col[known].astype(np.int64) * len(self.bins) + pos[known], return_counts=True)
        e_col, e_bin = ukey // len(self.bins), ukey % len(self.bins)
        e_p = counts / sizes[e_col]
        dist = _jsd_to_centres(e_col, e_bin, e_p, len(columns), self.centres)
        # Mass in cells no centre covers: each such bin adds a * ln2 / 2 to the divergence to every centre.
        unknown = 1.0 - np.bincount(e_col, weights=e_p, minlength=len(columns))
        dist += 0.5 * _LN2 * np.clip(unknown, 0.0, None)[:, None]
        return columns, np.argmin(dist, axis=1).astype(np.int32)


def fit_pivot_model(sample: np.ndarray, sample_keys: np.ndarray, encoder_version: str, n_pivots: int, levels: int,
                    metric: str, n_partitions: int, seed: int, hist_level: int = 2) -> PivotModel:
    """PCA pivots, grid extent and (for more than one partition) JSD centres, all from a sample of value vectors."""
    sample = np.asarray(sample, dtype=np.float32)
    pivots = select_pivots(sample, n_pivots=n_pivots, seed=seed, metric=metric)
    mapped = map_to_pivots(sample, pivots, metric)
    grid = GridSpec.fit(mapped, levels)
    if n_partitions > 1:
        columns, assign = partition_columns(mapped, sample_keys, n_partitions, seed, grid, hist_level)
        _, e_col, e_bin, e_p, n_bins = column_histograms(mapped, sample_keys, grid, hist_level)
        bins = np.unique(GridSpec(grid.lower, grid.upper, hist_level).leaf_cells(mapped))
        k = int(assign.max()) + 1
        centres = np.zeros((k, n_bins))
        np.add.at(centres, (assign[e_col], e_bin), e_p)
        centres /= np.maximum(np.bincount(assign, minlength=k), 1)[:, None]
    else:
        bins, centres = np.zeros(0, dtype=np.int64), np.zeros((1, 0))
    digest = hashlib.blake2b(pivots.tobytes() + grid.lower.tobytes() + grid.upper.tobytes() + centres.tobytes()
                             + encoder_version.encode(), digest_size=8).hexdigest()
    return PivotModel(f"pivots-{n_pivots}x{levels}-{digest}", pivots, grid, metric, encoder_version, hist_level,
                      bins.astype(np.int64), centres)


def current_model(warehouse: Warehouse) -> PivotModel | None:
    stored = latest_model(warehouse, MODEL)
    return PivotModel.from_stored(stored) if stored is not None else None


def _matrix(lists: pa.ChunkedArray | pa.Array, width: int | None = None) -> np.ndarray:
    """A list<float32> column as a (rows, width) float32 matrix (no widening: these are the stored numbers)."""
    flat = lists.combine_chunks() if isinstance(lists, pa.ChunkedArray) else lists
    values = flat.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False)
    return values.reshape(len(flat), width if width is not None else (values.size // max(len(flat), 1)))


def stored_mapping(vectors: np.ndarray, model: PivotModel) -> tuple[np.ndarray, np.ndarray]:
    """Pivot distances as ``pivot_mappings`` stores them (float32) and the leaf cell of each, computed from those
    stored numbers by :meth:`GridSpec.leaf_cells`, the function anyone re-deriving a cell from the rows uses."""
    mapped = map_to_pivots(vectors, model.pivots, model.metric).astype(np.float32)
    return mapped, model.grid.leaf_cells(mapped)


def mapping_rows(vv: pa.Table, model: PivotModel) -> pa.Table:
    """``pivot_mappings`` rows of ``value_vectors`` rows (table_id, content_hash, ordinal, value, vector)."""
    if vv.num_rows == 0:
        return SCHEMAS["pivot_mappings"].empty_table()
    mapped, cells = stored_mapping(_matrix(vv.column("vector")), model)
    keys = column_keys(vv.column("table_id").to_numpy(), vv.column("ordinal").to_numpy())
    columns, part = model.assign_partitions(mapped, keys)
    partition = part[np.searchsorted(columns, keys)]
    return pa.table({
        "table_id": vv.column("table_id"), "content_hash": vv.column("content_hash"),
        "model_version": pa.array([model.version] * vv.num_rows, pa.string()),
        "ordinal": vv.column("ordinal"), "value": vv.column("value"),
        "distances": pa.ListArray.from_arrays(np.arange(0, mapped.size + 1, mapped.shape[1], dtype=np.int32),
                                              pa.array(mapped.ravel(), pa.float32())),
        "cell": pa.array(cells, pa.int64()), "partition": pa.array(partition, pa.int32()),
    }, schema=SCHEMAS["pivot_mappings"])


def mapping_batch(work: pa.Table, ctx) -> tuple[pa.Table, dict]:
    """``pivot_mappings`` rows of the work tables' value vectors under the current pivot model."""
    wh = Warehouse(ctx.warehouse)
    model = current_model(wh)
    ids = pa.array(work.column("table_id").to_pylist(), pa.int64())
    vv = wh.read("value_vectors", columns=["table_id", "content_hash", "ordinal", "value", "vector"],
                 filter=pc.field("table_id").isin(ids))
    return mapping_rows(vv, model), {"tables_processed": work.num_rows, "vectors": vv.num_rows}


def index_from_rows(mapping: pa.Table, vectors: pa.Table, model: PivotModel) -> tuple[JoinIndex, np.ndarray] | None:
    """The join index of ``pivot_mappings`` rows (one partition, or all) and the value string of each index input
    row (``JoinIndex.order`` and result pairs point into it).

    ``mapping``: table_id, ordinal, value, distances, cell; ``vectors``: table_id, ordinal, value, vector rows of at
    least the same columns.  Value vectors of other columns are dropped first: JSD partitions are per column, so
    the other columns of a table may lie in other partitions.  The float32 distances and stored cells go to the index
    as they are.  None when there are no rows.
    """
    if mapping.num_rows == 0:
        return None
    wanted = np.unique(column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy()))
    have = column_keys(vectors.column("table_id").to_numpy(), vectors.column("ordinal").to_numpy())
    vectors = vectors.filter(pa.array(np.isin(have, wanted)))
    order = [(k, "ascending") for k in ROW_KEYS]
    mapping, vectors = mapping.sort_by(order), vectors.sort_by(order)
    if mapping.num_rows != vectors.num_rows or not mapping.select(ROW_KEYS).equals(vectors.select(ROW_KEYS)):
        raise WarehouseError(f"pivot_mappings ({mapping.num_rows} rows) and value_vectors ({vectors.num_rows} rows of "
                             "the same columns) disagree: the pivots stage did not finish; run a refresh")
    keys = column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy())
    index = JoinIndex.from_mapped(_matrix(vectors.column("vector")), keys,
                                  _matrix(mapping.column("distances"), len(model.pivots)), model.pivots, model.grid,
                                  model.metric, mapping.column("cell").to_numpy())
    return index, np.asarray(mapping.column("value").to_pylist(), dtype=object)
