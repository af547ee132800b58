"""Per-table work of the ``centroids`` stage: PGTUS Algorithm 1 over the current k-means model.

The k-means model itself is fitted in the stage driver on a bounded sample (``spark_jobs/centroid_partitions.py``);
it is stored as a versioned model (``centroids``) so that Spark tasks, later refreshes and queries all use the same
centroids.  Tasks are handed the model and the ``column_vectors`` data files by the driver and read the column
vectors of their own tables straight from those files (pruned by table id), so no vectors pass through the driver
and no task replays the Delta log.
"""
from __future__ import annotations

import hashlib
import io
from dataclasses import dataclass

import numpy as np
import pyarrow as pa

from ...data.store import SCHEMAS, StoredModel, Warehouse, latest_model, read_rows
from .centroids import assign_to_centroids
from .partitioning import partition_table

MODEL = "centroids"


@dataclass(frozen=True)
class CentroidModel:
    """Base centroids C_E of PGTUS with what they were fitted on."""

    version: str
    centroids: np.ndarray      # (k, d) float32
    encoder_version: str       # column-vector encoder the centroids were fitted on
    mean_sq_error: float       # mean squared distance of the training columns to their nearest centroid
    n_columns: int

    @classmethod
    def fit_result(cls, centroids: np.ndarray, encoder_version: str, mean_sq_error: float,
                   n_columns: int) -> CentroidModel:
        centroids = np.ascontiguousarray(centroids, dtype=np.float32)
        digest = hashlib.blake2b(centroids.tobytes() + encoder_version.encode(), digest_size=8).hexdigest()
        return cls(f"kmeans-{len(centroids)}-{digest}", centroids, encoder_version, mean_sq_error, n_columns)

    def params(self) -> dict:
        return {"k": len(self.centroids), "dim": int(self.centroids.shape[1]), "encoder_version": self.encoder_version,
                "mean_sq_error": self.mean_sq_error, "n_columns": self.n_columns}

    def payload(self) -> bytes:
        buf = io.BytesIO()
        np.save(buf, self.centroids, allow_pickle=False)
        return buf.getvalue()

    @classmethod
    def from_stored(cls, stored: StoredModel) -> CentroidModel:
        centroids = np.load(io.BytesIO(stored.payload), allow_pickle=False)
        p = stored.params
        return cls(stored.version, centroids, p["encoder_version"], float(p["mean_sq_error"]), int(p["n_columns"]))

    def rows(self) -> pa.Table:
        """Rows of the ``centroids`` table for this model."""
        return pa.table({"model_version": [self.version] * len(self.centroids),
                         "centroid_id": np.arange(len(self.centroids), dtype=np.int32),
                         "vector": [c.tolist() for c in self.centroids]}, schema=SCHEMAS["centroids"])


def current_model(warehouse: Warehouse) -> CentroidModel | None:
    stored = latest_model(warehouse, MODEL)
    return CentroidModel.from_stored(stored) if stored is not None else None


def _column_vectors(ctx, files: pa.Table, table_ids: list[int]) -> pa.Table:
    return read_rows(ctx.store.table_uri("column_vectors"), SCHEMAS["column_vectors"], files, table_ids,
                     ["table_id", "content_hash", "ordinal", "vector"])


def _grouped(vectors: pa.Table):
    """(table_id, content_hash, ordinals, vectors) per table, ordinals ascending."""
    if vectors.num_rows == 0:
        return
    vectors = vectors.sort_by([("table_id", "ascending"), ("ordinal", "ascending")])
    tids = vectors.column("table_id").to_numpy()
    flat = vectors.column("vector").combine_chunks()
    dim = len(flat[0]) if len(flat) else 0
    mat = flat.flatten().to_numpy(zero_copy_only=False).astype(np.float32).reshape(-1, dim)
    ordinals = vectors.column("ordinal").to_numpy()
    hashes = vectors.column("content_hash").to_pylist()
    bounds = np.flatnonzero(np.diff(tids)) + 1
    for lo, hi in zip(np.r_[0, bounds], np.r_[bounds, len(tids)]):
        yield int(tids[lo]), hashes[lo], ordinals[lo:hi], mat[lo:hi]


def quantisation_batch(work: pa.Table, ctx, model: CentroidModel, files: pa.Table) -> tuple[pa.Table, dict]:
    """Squared quantisation error of the work tables' columns under ``model`` (for the drift test); ``files``: the
    ``column_vectors`` data files the driver planned from (tasks are handed the model and the files rather than each
    reading the ``models`` table and the Delta log, whose sizes grow with the lake)."""
    err, n = 0.0, 0
    for _, _, _, vecs in _grouped(_column_vectors(ctx, files, work.column("table_id").to_pylist())):
        ids = assign_to_centroids(vecs, model.centroids)
        err += float(np.sum((vecs - model.centroids[ids]) ** 2))
        n += len(vecs)
    return pa.table({k: [] for k in SCHEMAS["centroid_partitions"].names}, schema=SCHEMAS["centroid_partitions"]), \
        {"sq_error_sum": err, "columns": n}


def partition_batch(work: pa.Table, ctx, model: CentroidModel, files: pa.Table) -> tuple[pa.Table, dict]:
    """``centroid_partitions`` rows (Algorithm 1) for the work tables under ``model``; ``files`` as for
    :func:`quantisation_batch`."""
    cfg = ctx.config.union
    out: dict[str, list] = {k: [] for k in SCHEMAS["centroid_partitions"].names}
    processed = 0
    for table_id, content_hash, ordinals, vecs in _grouped(_column_vectors(ctx, files,
                                                                           work.column("table_id").to_pylist())):
        processed += 1
        ids = assign_to_centroids(vecs, model.centroids)
        parts = partition_table(vecs, ids, model.centroids, cfg.rho_l, cfg.rho_h, col_ordinals=ordinals,
                                seed=cfg.seed)
        pos = {int(o): i for i, o in enumerate(ordinals)}
        for pid, part in enumerate(parts):
            rows = [pos[int(m)] for m in part.members]
            err = float(np.sum((vecs[rows] - model.centroids[ids[rows]]) ** 2))
            for k, v in (("table_id", table_id), ("content_hash", content_hash), ("model_version", model.version),
                         ("partition_id", pid), ("member_ordinals", part.members.tolist()),
                         ("iw_centroid_ids", part.centroid_ids.tolist()),
                         ("iw_counts", part.centroid_counts.tolist()), ("sq_error", err)):
                out[k].append(v)
    return pa.table(out, schema=SCHEMAS["centroid_partitions"]), {"tables_processed": processed}


def drifted(model: CentroidModel, sq_error_sum: float, n_columns: int, threshold: float) -> bool:
    """True when the new columns' mean squared quantisation error exceeds the training error by ``threshold``."""
    if n_columns == 0:
        return False
    return sq_error_sum / n_columns > (1.0 + threshold) * max(model.mean_sq_error, 1e-12)
