"""Per-table work of the XASH refresh stage and the fit of the versioned XASH model from per-table statistics.

Spark tasks call :func:`xash_batch` on chunks of catalog rows; it reads each lake table once, normalises every cell
once, and from that one pass produces both the table's postings (when a model is given) and its statistics row for
``xash_stats``: the character occurrence counts and a HyperLogLog sketch of its distinct values.  The driver merges the
statistics of all tables (:func:`corpus_statistics`), fits a candidate model (Eq. 5 for alpha, corpus character
frequencies for the ranking of §5.3.2) and decides with :func:`refit_reason` whether the model must be refitted, in
which case every posting is rebuilt with the new model in the same refresh.

Rows past ``[xash] max_rows_per_table`` are neither indexed nor counted in the statistics, so the model describes
exactly the indexed corpus; ``rows_indexed < rows_total`` in ``xash_stats`` records every table cut short.
"""
from __future__ import annotations

import json

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery.data.store import SCHEMAS, StoredModel
from discovery.ground.xash import XashModel, code_points
from discovery.indexes.nary import sketch
from discovery.indexes.nary.postings import normalised_cells, postings_from_cells
from discovery.stages.tasks import read_work_tables

MODEL_NAME = "xash"
POSTINGS = SCHEMAS["xash_postings"]
STATS = SCHEMAS["xash_stats"]


def stored_version(model: XashModel, refresh_id: int) -> str:
    """Version under which a fitted model is stored: its content version plus the refresh that fitted it.

    The refresh id makes every refit a new latest row of ``models``, even when a lake returns to an earlier state
    and the fit reproduces parameters stored before (``save_model`` writes a version once).
    """
    return f"{model.version}-r{refresh_id}"


def model_from_stored(stored: StoredModel) -> XashModel:
    """The XASH model of a ``models`` row (its payload is :meth:`XashModel.to_dict` as JSON)."""
    return XashModel.from_dict(json.loads(stored.payload.decode("utf-8")))


def model_payload(model: XashModel) -> bytes:
    return json.dumps(model.to_dict(), ensure_ascii=False, sort_keys=True).encode("utf-8")


def _char_histogram(cells: pa.Array) -> tuple[np.ndarray, np.ndarray]:
    cps, _ = code_points(cells)
    if cps.size == 0:
        return np.zeros(0, np.int32), np.zeros(0, np.int64)
    codes, counts = np.unique(cps, return_counts=True)
    return codes.astype(np.int32), counts.astype(np.int64)


def xash_batch(work: pa.Table, ctx, model: XashModel | None, model_version: str | None,
               with_stats: bool = True) -> tuple[pa.Table, pa.Table, dict]:
    """Postings (with ``model``, if given) and statistics rows of the catalog rows in ``work``.

    Returns ``(postings, stats, counts)``; ``counts`` has ``tables_processed``, ``tables_failed`` (unreadable now:
    changed since the scan, which the next refresh records) and ``tables_truncated`` (row bound hit).  A bad table
    never raises.
    """
    max_rows = ctx.config.xash.max_rows_per_table
    parts: list[pa.Table] = []
    stats: dict[str, list] = {name: [] for name in STATS.names}
    counts = {"tables_processed": 0, "tables_failed": 0, "tables_truncated": 0}
    for item, parsed in read_work_tables(work.select(["table_id", "path", "format", "bytes", "content_hash"]), ctx,
                                         counts):
        cells, n_rows = normalised_cells(parsed.columns, max_rows)
        counts["tables_truncated"] += int(n_rows < parsed.num_rows)
        if model is not None:
            postings = postings_from_cells(item["table_id"], cells, n_rows, model)
            n = postings.num_rows
            parts.append(postings.append_column("content_hash", pa.array([item["content_hash"]] * n, pa.string()))
                         .append_column("model_version", pa.repeat(pa.scalar(model_version, pa.string()), n))
                         .select(POSTINGS.names).cast(POSTINGS))
        if with_stats:
            codes, occurrences = _char_histogram(cells)
            row = {"table_id": item["table_id"], "content_hash": item["content_hash"],
                   "model_version": model_version, "rows_total": parsed.num_rows, "rows_indexed": n_rows,
                   "char_codes": codes, "char_counts": occurrences,
                   "hll": sketch.to_bytes(sketch.registers(cells))}
            for name in STATS.names:
                stats[name].append(row[name])
    postings = pa.concat_tables(parts) if parts else POSTINGS.empty_table()
    return postings, pa.table(stats, schema=STATS), counts


def corpus_statistics(stats: pa.Table) -> tuple[dict[str, int], int]:
    """Summed character counts and the estimated unique-value count of the tables in ``stats``."""
    codes = pc.list_flatten(stats.column("char_codes")).to_numpy(zero_copy_only=False).astype(np.int64)
    occurrences = pc.list_flatten(stats.column("char_counts")).to_numpy(zero_copy_only=False).astype(np.int64)
    chars: dict[str, int] = {}
    if codes.size:
        uniq, inverse = np.unique(codes, return_inverse=True)
        totals = np.bincount(inverse, weights=occurrences, minlength=uniq.size).astype(np.int64)
        chars = {chr(int(c)): int(n) for c, n in zip(uniq, totals)}
    registers = sketch.merge(sketch.from_bytes(b) for b in _blobs(stats.column("hll")))
    return chars, sketch.estimate(registers)


def _blobs(column: pa.ChunkedArray, batch: int = 4096):
    """The column's bytes values, a slice at a time: the whole lake's sketches as Python objects at once cost the
    refresh driver tens of MB at 100,000 tables, and the merge needs one at a time."""
    for chunk in column.chunks:
        for start in range(0, len(chunk), batch):
            yield from chunk.slice(start, batch).to_pylist()


def fit_model(stats: pa.Table, bits: int) -> XashModel:
    """Candidate model of the corpus described by ``stats`` (one row per indexed lake table)."""
    chars, n_unique = corpus_statistics(stats)
    return XashModel.from_counts(chars, n_unique, bits=bits)


def refit_reason(current: XashModel | None, stats: pa.Table, bits: int, drift_threshold: float,
                 full: bool) -> str | None:
    """Why the model must be refitted now (first build, full rebuild, new size, drift), or None to keep it."""
    if current is None:
        return "first build"
    if full:
        return "full rebuild"
    if current.bits != bits:
        return f"hash size changed from {current.bits} to {bits} bits"
    chars, n_unique = corpus_statistics(stats)
    drift = current.drift(chars, n_unique)
    if drift > drift_threshold:
        return f"drift {drift:.3f} > {drift_threshold}"
    return None


def truncated_tables(stats: pa.Table) -> list[int]:
    """Ids of the tables indexed only up to the row bound."""
    cut = pc.less(stats.column("rows_indexed"), stats.column("rows_total"))
    return sorted(stats.filter(cut).column("table_id").to_pylist())
