"""The PEXESO index of the lake as a versioned model plus per-table rows: pivots, grid, JSD partitions.

The ``pivots`` stage (``spark_jobs/pivot_mappings.py``) fits a :class:`PivotModel` on a bounded sample of the value
vectors (PCA pivot selection, grid extent from the mapped sample, and, when the lake's index would not fit the memory
budget, JSD k-means partition centres over column histograms), stores it in ``models``, and then maps every value
vector in Spark tasks (:func:`mapping_batch`): distances to the pivots, leaf cell of the hierarchical grid, and the
column's partition (nearest centre by Jensen-Shannon divergence).  Queries rebuild a
:class:`~discovery.indexes.join.JoinIndex` from those rows without recomputing a single mapping
(:func:`index_from_rows`).

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

from ...data.store import SCHEMAS, StoredModel, Warehouse, WarehouseError, latest_model, read_rows
from .grid import GridSpec
from .partitioning import BALANCE, jsd_to_centres, balance_prices, column_histograms, partition_columns
from .pivots import map_to_pivots, select_pivots
from .search import JoinIndex

MODEL = "pivots"
COLUMN_KEY_BASE = 65536
#: What identifies a value-vector row in ``value_vectors`` and ``pivot_mappings`` alike.
ROW_KEYS = ["table_id", "ordinal", "value", "segment"]
_LN2 = float(np.log(2.0))
#: Sample vectors per partition-histogram bin the histogram level is chosen for (:func:`fit_pivot_model`).
HIST_FILL = 10


def column_keys(table_ids: np.ndarray, ordinals: np.ndarray) -> np.ndarray:
    return np.asarray(table_ids, dtype=np.int64) * COLUMN_KEY_BASE + np.asarray(ordinals, dtype=np.int64)


@dataclass(frozen=True)
class Histograms:
    """Column cell histograms (:meth:`PivotModel.histograms`): sorted distinct column keys and their vector counts,
    and one entry per (column, covered bin) with its vector count, sorted by column then bin.  Counts add up, so the
    histograms of row batches merge into those of all the rows."""

    columns: np.ndarray
    sizes: np.ndarray
    entry_columns: np.ndarray
    entry_bins: np.ndarray
    entry_counts: np.ndarray

    @staticmethod
    def merge(parts: list[Histograms]) -> Histograms:
        columns, col = np.unique(np.concatenate([p.columns for p in parts]), return_inverse=True)
        sizes = np.zeros(len(columns), np.int64)
        np.add.at(sizes, col, np.concatenate([p.sizes for p in parts]))
        e_col, e_bin, e_n = (np.concatenate([getattr(p, f) for p in parts])
                             for f in ("entry_columns", "entry_bins", "entry_counts"))
        order = np.lexsort((e_bin, e_col))
        e_col, e_bin, e_n = e_col[order], e_bin[order], e_n[order]
        starts = np.flatnonzero(np.r_[True, (e_col[1:] != e_col[:-1]) | (e_bin[1:] != e_bin[:-1])]) if len(e_col) \
            else np.zeros(0, np.int64)
        return Histograms(columns, sizes, e_col[starts], e_bin[starts],
                          np.add.reduceat(e_n, starts) if len(starts) else e_n)


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
    prices: np.ndarray          # (k,) float64 added to the divergence to each centre: the balance by bytes
    choice: dict                # how |P| and m were chosen: {"by": ..., "cost": {"PxM": estimated cost}}

    @property
    def n_partitions(self) -> int:
        return int(self.centres.shape[0])

    def params(self) -> dict:
        return {"n_pivots": int(len(self.pivots)), "levels": self.grid.levels, "metric": self.metric,
                "encoder_version": self.encoder_version, "partitions": self.n_partitions,
                "hist_level": self.hist_level, "choice": self.choice}

    def payload(self) -> bytes:
        buf = io.BytesIO()
        np.savez(buf, pivots=self.pivots, lower=self.grid.lower, upper=self.grid.upper, bins=self.bins,
                 centres=self.centres, prices=self.prices)
        return buf.getvalue()

    @classmethod
    def from_stored(cls, stored: StoredModel) -> PivotModel:
        z = np.load(io.BytesIO(stored.payload), allow_pickle=False)
        p = stored.params
        prices = z["prices"] if "prices" in z.files else np.zeros(len(z["centres"]))  # models before balancing
        return cls(stored.version, z["pivots"], GridSpec(z["lower"], z["upper"], int(p["levels"])), p["metric"],
                   p["encoder_version"], int(p["hist_level"]), z["bins"], z["centres"], prices,
                   p.get("choice", {"by": "configuration"}))

    def rows(self) -> pa.Table:
        return pa.table({"model_version": [self.version] * len(self.pivots),
                         "pivot_id": np.arange(len(self.pivots), dtype=np.int32),
                         "vector": [v.tolist() for v in self.pivots]}, schema=SCHEMAS["pivots"])

    def histograms(self, cells: np.ndarray, keys: np.ndarray) -> Histograms:
        """The columns' vector counts and cell histograms from the vectors' leaf cells: the histogram bin of a
        vector is its leaf cell's ancestor at ``hist_level`` (a Morton prefix, :mod:`.grid`), the cell
        :meth:`GridSpec.leaf_cells` gives at that level; a vector in a bin no centre covers counts in its column's
        size only."""
        columns, col = np.unique(np.asarray(keys, dtype=np.int64), return_inverse=True)
        sizes = np.bincount(col, minlength=len(columns)).astype(np.int64)
        if self.n_partitions == 1 or len(columns) == 0:
            return Histograms(columns, sizes, *(np.zeros(0, np.int64) for _ in range(3)))
        coarse = np.asarray(cells, dtype=np.int64) >> (len(self.pivots) * (self.grid.levels - self.hist_level))
        pos = np.minimum(np.searchsorted(self.bins, coarse), len(self.bins) - 1)
        known = self.bins[pos] == coarse
        ukey, counts = np.unique(col[known].astype(np.int64) * len(self.bins) + pos[known], return_counts=True)
        return Histograms(columns, sizes, columns[ukey // len(self.bins)], ukey % len(self.bins),
                          counts.astype(np.int64))

    def divergences(self, cells: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """(distinct column keys, their vector counts, the JSD of each column's histogram to each centre) from the
        vectors' leaf cells (:meth:`histograms`).  The same numbers whether a Spark task computes them from its
        tables' rows or the stage from the stored cells of the whole lake, a batch at a time
        (:meth:`Histograms.merge`)."""
        return self.divergences_of(self.histograms(cells, keys))

    def divergences_of(self, hist: Histograms) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        columns, sizes = hist.columns, hist.sizes
        if self.n_partitions == 1 or len(columns) == 0:
            return columns, sizes, np.zeros((len(columns), self.n_partitions))
        e_col = np.searchsorted(columns, hist.entry_columns)
        e_p = hist.entry_counts / sizes[e_col]
        dist = jsd_to_centres(e_col, hist.entry_bins, e_p, len(columns), self.centres)
        # Mass in cells no centre covers: each such bin adds a * ln2 / 2 to the divergence to every centre.
        unknown = 1.0 - np.bincount(e_col, weights=e_p, minlength=len(columns))
        dist += 0.5 * _LN2 * np.clip(unknown, 0.0, None)[:, None]
        return columns, sizes, dist

    def assign_partitions(self, cells: np.ndarray, keys: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(distinct column keys, partition of each): the centre of least JSD of the column's cell histogram plus the
        centre's price (:func:`.partitioning.balance_prices`)."""
        columns, _, dist = self.divergences(cells, keys)
        return columns, np.argmin(dist + self.prices, axis=1).astype(np.int32)


def fit_pivot_model(sample: np.ndarray, sample_keys: np.ndarray, encoder_version: str, n_pivots: int, levels: int,
                    metric: str, n_partitions: int, seed: int, hist_level: int | None = None,
                    choice: dict | None = None) -> PivotModel:
    """PCA pivots, grid extent and (for more than one partition) JSD centres balanced by vector count, all from a
    sample of value vectors.  ``choice`` records how ``n_pivots`` and ``levels`` were chosen.

    ``hist_level`` defaults to the finest level whose ``2**(|P| level)`` bins the sample fills with about
    :data:`HIST_FILL` vectors each: a later column's vectors must mostly fall in bins the sample saw, or they carry
    no divergence to any centre and the column goes wherever prices are lowest (with |P| = 9, level 2 has 262,144
    bins; a 20,000-vector sample leaves most of them empty)."""
    sample = np.asarray(sample, dtype=np.float32)
    if hist_level is None:
        hist_level = max(1, int(np.log2(max(len(sample) / HIST_FILL, 2.0)) // n_pivots))
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
        weight = np.bincount(np.searchsorted(columns, sample_keys), minlength=columns.size).astype(np.float64)
        dist = jsd_to_centres(e_col, e_bin, e_p, columns.size, centres)
        prices = balance_prices(dist, weight, BALANCE * weight.sum() / k)
    else:
        bins, centres, prices = np.zeros(0, dtype=np.int64), np.zeros((1, 0)), np.zeros(1)
    digest = hashlib.blake2b(pivots.tobytes() + grid.lower.tobytes() + grid.upper.tobytes() + centres.tobytes()
                             + prices.tobytes() + encoder_version.encode(), digest_size=8).hexdigest()
    return PivotModel(f"pivots-{n_pivots}x{levels}-{digest}", pivots, grid, metric, encoder_version, hist_level,
                      bins.astype(np.int64), centres, prices, choice if choice is not None else {"by": "configuration"})


def current_model(warehouse: Warehouse) -> PivotModel | None:
    stored = latest_model(warehouse, MODEL)
    return PivotModel.from_stored(stored) if stored is not None else None


def _matrix(lists: pa.ChunkedArray | pa.Array, width: int | None = None, rows: np.ndarray | None = None) -> np.ndarray:
    """A list<float32> column as a (rows, width) float32 matrix (no widening: these are the stored numbers).

    ``rows``: the stored rows in the order wanted (a permutation); each Arrow chunk is then scattered straight to
    its sorted place, so the matrix is built with one copy and no intermediate combined or sorted table."""
    chunks = lists.chunks if isinstance(lists, pa.ChunkedArray) else [lists]
    parts = [c.flatten().to_numpy(zero_copy_only=False).astype(np.float32, copy=False) for c in chunks]
    n = len(lists)
    width = width if width is not None else sum(p.size for p in parts) // max(n, 1)
    if rows is None and len(parts) == 1:
        return parts[0].reshape(n, width)
    at = np.arange(n)
    if rows is not None:
        at[rows] = np.arange(n)
    out = np.empty((n, width), dtype=np.float32)
    start = 0
    for part in parts:
        k = part.size // max(width, 1)
        out[at[start:start + k]] = part.reshape(k, width)
        start += k
    return out


def stored_mapping(vectors: np.ndarray, model: PivotModel) -> tuple[np.ndarray, np.ndarray]:
    """Pivot distances as ``pivot_mappings`` stores them (float32) and the leaf cell of each, computed from those
    stored numbers by :meth:`GridSpec.leaf_cells`, the function anyone re-deriving a cell from the rows uses."""
    mapped = map_to_pivots(vectors, model.pivots, model.metric).astype(np.float32)
    return mapped, model.grid.leaf_cells(mapped)


def mapping_rows(vv: pa.Table, model: PivotModel, placed: tuple[np.ndarray, np.ndarray] | None = None) -> pa.Table:
    """``pivot_mappings`` rows of ``value_vectors`` rows (table_id, content_hash, ordinal, value, segment, vector).

    ``placed``: (column keys ascending, their partitions) decided by the stage on the whole lake's sizes
    (:func:`.partitioning.settle`); other columns go where the model's prices send them.  Two arrays, not a dict:
    after a refit the stage may move a large share of the lake's columns, and ships the placement to every task."""
    if vv.num_rows == 0:
        return SCHEMAS["pivot_mappings"].empty_table()
    mapped, cells = stored_mapping(_matrix(vv.column("vector")), model)
    keys = column_keys(vv.column("table_id").to_numpy(), vv.column("ordinal").to_numpy())
    columns, part = model.assign_partitions(cells, keys)
    if placed is not None and placed[0].size:
        at = np.minimum(np.searchsorted(placed[0], columns), placed[0].size - 1)
        hit = placed[0][at] == columns
        part = np.where(hit, placed[1][at], part).astype(np.int32)
    partition = part[np.searchsorted(columns, keys)]
    return pa.table({
        "table_id": vv.column("table_id"), "content_hash": vv.column("content_hash"),
        "model_version": pa.repeat(pa.scalar(model.version, pa.string()), vv.num_rows),
        "ordinal": vv.column("ordinal"), "value": vv.column("value"),
        "distances": pa.ListArray.from_arrays(np.arange(0, mapped.size + 1, mapped.shape[1], dtype=np.int32),
                                              pa.array(mapped.ravel(), pa.float32())),
        "cell": pa.array(cells, pa.int64()), "partition": pa.array(partition, pa.int32()),
        "segment": vv.column("segment") if "segment" in vv.column_names else pa.nulls(vv.num_rows, pa.int32()),
    }, schema=SCHEMAS["pivot_mappings"])


def mapping_batch(work: pa.Table, ctx, model: PivotModel, files: pa.Table,
                  placed: tuple[np.ndarray, np.ndarray] | None = None) -> tuple[pa.Table, dict]:
    """``pivot_mappings`` rows of the work tables' value vectors under ``model`` (``placed``: see
    :func:`mapping_rows`); ``files``: the ``value_vectors`` data files the driver planned from.  Tasks are handed both
    rather than each reading the ``models`` table and the Delta log, whose sizes grow with the lake (which made the
    stage's cost grow with tasks x files)."""
    vv = read_rows(ctx.store.table_uri("value_vectors"), SCHEMAS["value_vectors"], files,
                   work.column("table_id").to_pylist(),
                   ["table_id", "content_hash", "ordinal", "value", "segment", "vector"])
    return mapping_rows(vv, model, placed), {"tables_processed": work.num_rows, "vectors": vv.num_rows}


def index_from_rows(mapping: pa.Table, vectors: pa.Table, model: PivotModel) -> JoinIndex | None:
    """The join index of ``pivot_mappings`` rows (one partition, or all); None when there are no rows.

    ``mapping``: table_id, ordinal, value, distances, cell; ``vectors``: table_id, ordinal, value, vector rows of at
    least the same columns.  Value vectors of other columns are dropped first: JSD partitions are per column, so
    the other columns of a table may lie in other partitions.  Both are ordered by :data:`ROW_KEYS`, so an index input
    row (``JoinIndex.order``, result pairs) is its column's first row plus the rank of its value among the column's
    values (:func:`column_first_rows`, :func:`values_at`): the value strings need not be kept.  Only the key columns
    are sorted; vectors and distances are gathered once, straight into the index's (leaf cell, column) order
    (:func:`_matrix`), each Arrow table released as soon as its numbers are out, and the float32 distances and
    stored cells go to the index as they are: the index keeps that matrix and makes no sorted copy.
    """
    if mapping.num_rows == 0:
        return None
    wanted = np.unique(column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy()))
    keep = np.isin(column_keys(vectors.column("table_id").to_numpy(), vectors.column("ordinal").to_numpy()), wanted)
    if not keep.all():
        vectors = vectors.filter(pa.array(keep))
    m_rows, v_rows = _row_order(mapping), _row_order(vectors)
    if mapping.num_rows != vectors.num_rows or not mapping.select(ROW_KEYS).take(m_rows).equals(
            vectors.select(ROW_KEYS).take(v_rows)):
        raise WarehouseError(f"pivot_mappings ({mapping.num_rows} rows) and value_vectors ({vectors.num_rows} rows of "
                             "the same columns) disagree: the pivots stage did not finish; run a refresh")
    keys = column_keys(mapping.column("table_id").to_numpy(), mapping.column("ordinal").to_numpy())[m_rows]
    cells = mapping.column("cell").to_numpy()[m_rows]
    order = np.lexsort((keys, cells))  # the index's (leaf cell, column) order, numbered in ROW_KEYS order
    x = _matrix(vectors.column("vector"), rows=v_rows[order])
    del vectors
    mapped = _matrix(mapping.column("distances"), len(model.pivots), m_rows[order])
    del mapping
    return JoinIndex.from_mapped(x, keys[order], mapped, model.pivots, model.grid, model.metric, cells[order], order)


def _row_order(rows: pa.Table) -> np.ndarray:
    """The permutation that sorts ``rows`` by :data:`ROW_KEYS`, computed on those key columns alone."""
    return pc.sort_indices(rows.select(ROW_KEYS), sort_keys=[(k, "ascending") for k in ROW_KEYS]).to_numpy()


def column_first_rows(index: JoinIndex) -> dict[int, int]:
    """Column key -> the index input row of its first value (inputs are sorted by column key, then value)."""
    sizes = np.bincount(index.col, minlength=index.n_columns)
    return dict(zip(index.column_values.tolist(), np.r_[0, np.cumsum(sizes)[:-1]].tolist()))


def values_at(read, wanted: dict[int, list[int]]) -> dict[tuple[int, int], str]:
    """``{(column key, rank): value}`` for the ``wanted`` ranks of each column (rank = position of the value among
    its column's values sorted as :func:`index_from_rows` sorts them).  ``read(table_ids)`` returns the
    ``value_vectors`` rows (:data:`ROW_KEYS`) of those tables; only the wanted columns' tables are asked for."""
    if not wanted:
        return {}
    rows = read(sorted({k // COLUMN_KEY_BASE for k in wanted}))
    keys = column_keys(rows.column("table_id").to_numpy(), rows.column("ordinal").to_numpy())
    rows = rows.filter(pa.array(np.isin(keys, np.fromiter(wanted, dtype=np.int64))))
    rows = rows.sort_by([(k, "ascending") for k in ROW_KEYS])
    keys = column_keys(rows.column("table_id").to_numpy(), rows.column("ordinal").to_numpy())
    values = rows.column("value")
    out = {}
    for key, ranks in wanted.items():
        first = int(np.searchsorted(keys, key))
        for r in ranks:
            out[(key, r)] = values[first + int(r)].as_py()
    return out
