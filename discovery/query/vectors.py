"""Column, table and value vectors of one table, computed identically by the embed stage and by queries.

The embed stage (:func:`embed_batch`, run in Spark tasks) and the query side (:func:`embed_query`,
:func:`query_value_vectors`) both go through :func:`embed_table`, with the encoders a set of stored model versions
names (:class:`EncoderRefs`, the ``embed.encoders`` model a snapshot pins).  Same cells, same encoder bytes and the
same sequence of numpy calls give bit-identical vectors, so a lake table used as a query scores exactly as it is
indexed.

* Column vector: the column encoder over a deterministic priority sample of the column's distinct normalised values
  (TACTUS Eq. 7), with numeric distribution features for columns inferred numeric (same type inference as the
  profile stage, same agreement), and the column's name as a channel of its own
  (:mod:`discovery.transforms.encoders.header`) when ``[embed] header_weight`` is above 0: a query's columns get their
  names' channel exactly as lake columns do.
* Terms: the hashed words of each column's name and of a few sampled values
  (:mod:`discovery.transforms.encoders.terms`), which the union search's lexical table score weighs by the snapshot's
  IDF.
* Quantity: what each number column measures (:mod:`discovery.transforms.quantities`, from its name, cells and
  values), so that union alignment pairs only number columns of compatible quantities, the query's as the lake's.
* Table vector: the trained TACTUS table encoder over the column vectors, or their normalised mean when the lake had
  too few tables to train one.
* Value vectors: for join candidates (string columns with at least ``join_min_distinct`` distinct values), the
  ``join`` encoder over at most ``join_max_values`` distinct values (the same priority sample: the most frequent
  values first, ties broken by a stable hash), each with its frequency; then over each value's segments, at most
  ``join_segments`` of them (:mod:`discovery.transforms.segments`, glued words split on the cells as written), each row
  carrying its value (segment 0 is the whole value).  A query
  column is cut with the snapshot's own setting, so its segments are what its lake twin's were.
"""
from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

import numpy as np
import pyarrow as pa

from ..data.lake import LakeFileError, infer_type, read_lake_table
from ..data.store import SCHEMAS, Snapshot, Warehouse, WarehouseError
from ..data.store.cache import INDEXES
from ..transforms.encoders.base import Encoder
from ..transforms.encoders.columns import NUMERIC_KINDS, ColumnProfile, parse_numbers, priority_sample, profile_column
from ..transforms.encoders.stored import COLUMN_MODEL, JOIN_MODEL, SET_MODEL, TABLE_MODEL, payload, stored_encoder
from ..transforms.encoders.terms import column_terms
from ..transforms.quantities import RULE as QUANTITY_RULE, quantity
from ..transforms.segments import RULE, glued_spellings, value_segments
from .resolve import QueryError, QueryTable

OUTPUTS = ("column_vectors", "table_vectors", "value_vectors")


@dataclass(frozen=True)
class EmbedSpec:
    """Settings besides the encoders that decide what is encoded."""

    type_agreement: float
    join_min_distinct: int
    join_max_values: int
    join_segments: int = 0      # what a spec stored before segments existed means


@dataclass(frozen=True)
class EncoderRefs:
    """The model versions one embed stage encodes with (``None``: no trained encoder of that kind)."""

    column: str
    table: str | None
    join: str | None
    spec: EmbedSpec

    @property
    def table_vector_version(self) -> str:
        """What ``table_vectors.encoder_version`` holds: the table encoder, or the column encoder for the mean."""
        return self.table or self.column

    @property
    def value_vector_version(self) -> str | None:
        """What ``value_vectors.encoder_version`` holds: the join encoder, and the bound on segments and the
        segment rule's version when there are any, so that rows encoded under another bound or rule are stale and
        re-encoded (and the pivots refitted)."""
        if self.join is None or not self.spec.join_segments:
            return self.join
        return f"{self.join}+segments-{self.spec.join_segments}-rule{RULE}"

    def to_params(self) -> dict:
        return {"column": self.column, "table": self.table, "join": self.join,
                "spec": {"type_agreement": self.spec.type_agreement,
                         "join_min_distinct": self.spec.join_min_distinct,
                         "join_max_values": self.spec.join_max_values, "join_segments": self.spec.join_segments}}

    @classmethod
    def from_params(cls, params: dict) -> EncoderRefs:
        return cls(params["column"], params["table"], params["join"], EmbedSpec(**params["spec"]))  # no segments:
        # a spec stored before they existed


@dataclass(frozen=True)
class LakeEncoders:
    refs: EncoderRefs
    column: Encoder
    warehouse: Warehouse

    @property
    def table(self) -> Encoder:
        """The trained table encoder, loaded on first use (a join query never needs it), or without one the column
        encoder, whose ``encode_table`` is the mean of the column vectors."""
        return stored_encoder(self.warehouse, TABLE_MODEL, self.refs.table) if self.refs.table else self.column

    @property
    def join(self) -> Encoder | None:
        """The join encoder, loaded on first use: its weights are most of the models' bytes (about 100 MB with the
        default 2^18 buckets), and union queries and column vectors never need them.  Not kept on this object: the
        index cache holds it, within its byte budget."""
        return stored_encoder(self.warehouse, JOIN_MODEL, self.refs.join) if self.refs.join else None


def load_encoders(wh: Warehouse, refs: EncoderRefs) -> LakeEncoders:
    """The encoders ``refs`` names, each loaded once per process (the table and join encoders when first used)."""
    return LakeEncoders(refs, stored_encoder(wh, COLUMN_MODEL, refs.column), wh)


@dataclass
class ColumnValues:
    """Value vectors of one column: distinct normalised values, their frequencies, and the vectors of the values
    (the first ``len(values)`` rows, in value order) followed by those of their segments."""

    ordinal: int
    values: list[str]
    frequency: np.ndarray   # int64, per value
    vectors: np.ndarray     # (rows, join dim) float32
    distinct: int           # distinct values of the column; more than len(values) when the cap was hit
    value_of: np.ndarray    # int64 per row: the value it belongs to
    segment: np.ndarray     # int32 per row: 0 for the whole value, k for its k-th segment

    @property
    def capped(self) -> bool:
        return self.distinct > len(self.values)


@dataclass
class TableEmbedding:
    kinds: list[str]
    column_vectors: np.ndarray   # (columns, dim) float32
    table_vector: np.ndarray     # (table dim,) float32
    values: list[ColumnValues]   # join-candidate columns only
    quantities: list[str]        # per column: what a number column measures ("" for none and for other kinds)
    terms: list[tuple[np.ndarray, np.ndarray]]   # per column: its term buckets and counts
                                                 # (:mod:`discovery.transforms.encoders.terms`)


def is_join_candidate(kind: str, profile: ColumnProfile, spec: EmbedSpec) -> bool:
    return kind == "string" and len(profile.values) >= spec.join_min_distinct


def column_rows(profile: ColumnProfile, ordinal: int, max_values: int, max_segments: int = 0,
                cells: pa.Array | None = None) -> tuple[ColumnValues, list[str]]:
    """What :func:`column_values` encodes: the column's rows with no vectors yet (a 0 x 0 array) and the text of each
    row, the values and then their segments."""
    chosen = priority_sample(profile.values, profile.counts, max_values)
    values = [profile.values[i] for i in chosen]
    splits = glued_spellings(cells, values) if max_segments > 0 and cells is not None else None
    owner, number, segs = value_segments(values, max_segments, splits)
    n = len(values)
    rows = ColumnValues(ordinal, values, profile.counts[chosen].astype(np.int64), np.zeros((0, 0), dtype=np.float32),
                        len(profile.values), np.r_[np.arange(n, dtype=np.int64), owner],
                        np.r_[np.zeros(n, dtype=np.int32), number].astype(np.int32))
    return rows, values + segs


def column_values(join: Encoder, profile: ColumnProfile, ordinal: int, max_values: int,
                  max_segments: int = 0, cells: pa.Array | None = None) -> ColumnValues:
    """Value vectors of at most ``max_values`` distinct values (priority sample, ascending value order), then of
    their segments, at most ``max_segments`` a value (:func:`.segments.value_segments`); ``cells``, the column as
    written, lets glued words be split (:func:`.segments.glued_spellings`)."""
    rows, texts = column_rows(profile, ordinal, max_values, max_segments, cells)
    return replace(rows, vectors=join.encode_values(texts))


def column_quantities(kinds: list[str], profiles: list[ColumnProfile], names: list[str]) -> list[str]:
    """The quantity (:func:`.quantities.quantity`) of every number column, "" for the others."""
    return [quantity(name, prof.values, prof.counts, parse_numbers(prof.values), len(prof.row_codes))
            if kind in NUMERIC_KINDS else ""
            for kind, prof, name in zip(kinds, profiles, names)]


def embed_table(encoders: LakeEncoders, columns: list[pa.Array], names: list[str],
                with_values: bool = True) -> TableEmbedding:
    """Column vectors, table vector and (with ``with_values`` and a join encoder) value vectors of one table whose
    columns are called ``names``."""
    spec = encoders.refs.spec
    enc = encoders.column
    kinds = [infer_type(c, spec.type_agreement) for c in columns]
    profiles = [profile_column(c) for c in columns]
    header_names: list[str | None] = list(names)
    headers = enc.header_vectors(header_names)
    vectors = np.zeros((len(columns), enc.column_dim), dtype=np.float32)
    for j, (kind, prof) in enumerate(zip(kinds, profiles)):
        chosen = priority_sample(prof.values, prof.counts, enc.column.max_values)
        vectors[j] = enc.column_vector([prof.values[i] for i in chosen], prof.counts[chosen], kind,
                                       header=None if headers is None else headers[j])
    values = []
    if with_values and encoders.join is not None:
        values = [column_values(encoders.join, prof, j, spec.join_max_values, spec.join_segments, columns[j])
                  for j, (kind, prof) in enumerate(zip(kinds, profiles)) if is_join_candidate(kind, prof, spec)]
    return TableEmbedding(kinds, vectors, encoders.table.encode_table(vectors), values,
                          column_quantities(kinds, profiles, names),
                          [column_terms(name, prof) for name, prof in zip(names, profiles)])


# -- the embed stage's per-table work (runs in Spark tasks) -------------------------------------------------------
def _vector_array(rows: np.ndarray) -> pa.Array:
    rows = np.ascontiguousarray(rows, dtype=np.float32)
    dim = rows.shape[1] if rows.ndim == 2 else 0
    offsets = pa.array(np.arange(rows.shape[0] + 1, dtype=np.int32) * dim)
    return pa.ListArray.from_arrays(offsets, pa.array(rows.reshape(-1)))


def _output_table(name: str, columns: dict[str, list], vectors: list[np.ndarray], dim: int) -> pa.Table:
    stacked = np.concatenate(vectors) if vectors else np.zeros((0, dim), dtype=np.float32)
    arrays = {k: pa.array(v, type=SCHEMAS[name].field(k).type) for k, v in columns.items()}
    arrays["vector"] = _vector_array(stacked)
    return pa.table([arrays[f] for f in SCHEMAS[name].names], schema=SCHEMAS[name])


def embed_batch(work: pa.Table, ctx, refs: EncoderRefs) -> tuple[dict[str, pa.Table], dict, list[dict]]:
    """Rows of the three vector tables for catalog rows of ok tables, as the flags ``do_column_vectors``,
    ``do_table_vectors`` and ``do_value_vectors`` of each work row ask; also counters and the join-candidate
    columns that hit the value cap.  A table that cannot be read or encoded is counted as failed, never raised."""
    encoders = load_encoders(ctx.store, refs)
    cols: dict[str, dict[str, list]] = {n: {k: [] for k in SCHEMAS[n].names if k != "vector"} for n in OUTPUTS}
    vecs: dict[str, list[np.ndarray]] = {n: [] for n in OUTPUTS}
    counts = {"tables_processed": 0, "tables_failed": 0, "capped_columns": 0}
    notes: list[dict] = []
    for item in work.to_pylist():
        try:
            parsed = read_lake_table(ctx.lake, item["path"], item["format"], item["bytes"], ctx.config.limits)
            emb = embed_table(encoders, parsed.columns, parsed.names, with_values=item["do_value_vectors"])
        except (LakeFileError, OSError) as exc:
            # Changed since the scan; the next refresh's scan sees the new content and records it.
            counts["tables_failed"] += 1
            notes.append({"failed": item["path"], "error": str(exc)[:200]})
            continue
        counts["tables_processed"] += 1
        tid, digest = item["table_id"], item["content_hash"]
        if item["do_column_vectors"]:
            n = len(emb.kinds)
            c = cols["column_vectors"]
            c["table_id"] += [tid] * n
            c["content_hash"] += [digest] * n
            c["ordinal"] += list(range(n))
            c["encoder_version"] += [refs.column] * n
            c["quantity"] += emb.quantities
            c["terms"] += [t.tolist() for t, _ in emb.terms]
            c["term_counts"] += [n.tolist() for _, n in emb.terms]
            vecs["column_vectors"].append(emb.column_vectors)
        if item["do_table_vectors"]:
            c = cols["table_vectors"]
            c["table_id"].append(tid)
            c["content_hash"].append(digest)
            c["encoder_version"].append(refs.table_vector_version)
            vecs["table_vectors"].append(emb.table_vector[None, :])
        for cv in emb.values:
            n = len(cv.value_of)
            c = cols["value_vectors"]
            c["table_id"] += [tid] * n
            c["content_hash"] += [digest] * n
            c["ordinal"] += [cv.ordinal] * n
            c["value"] += [cv.values[i] for i in cv.value_of.tolist()]
            c["segment"] += cv.segment.tolist()
            c["frequency"] += cv.frequency[cv.value_of].tolist()
            c["encoder_version"] += [refs.value_vector_version] * n
            vecs["value_vectors"].append(cv.vectors)
            if cv.capped:
                counts["capped_columns"] += 1
                notes.append({"capped": item["path"], "column": parsed.names[cv.ordinal], "distinct": cv.distinct})
    dims = {"column_vectors": encoders.column.column_dim, "table_vectors": encoders.table.table_dim,
            "value_vectors": encoders.join.dim if encoders.join is not None else 0}
    out = {n: _output_table(n, cols[n], vecs[n], dims[n]) for n in OUTPUTS}
    return out, counts, notes


# -- query side ---------------------------------------------------------------------------------------------------
def snapshot_refs(snapshot: Snapshot) -> EncoderRefs:
    """The encoder versions and embed settings the snapshot's vectors were built with."""
    version = snapshot.models.get(SET_MODEL)
    if version is None:
        raise WarehouseError(f"snapshot {snapshot.snapshot_id} has no vectors (no embed stage ran before it)")
    _, params = payload(snapshot.warehouse, SET_MODEL, version, snapshot.version("models"))
    return EncoderRefs.from_params(params)


def snapshot_encoders(snapshot: Snapshot) -> LakeEncoders:
    """The encoders the snapshot's vectors were built with.  The versions a snapshot pins are read once per process
    and kept, like the encoders themselves, in the byte-bounded index cache, so a long-running process that serves
    snapshot after snapshot does not hold every snapshot's encoders."""
    return INDEXES.get(("encoders", snapshot.warehouse.root, snapshot.snapshot_id),
                       lambda: load_encoders(snapshot.warehouse, snapshot_refs(snapshot)))


def current_quantities(snapshot: Snapshot) -> bool:
    """Whether the snapshot's column vectors carry their quantities by this code's rule (the column model's
    version was made under :data:`discovery.transforms.quantities.RULE`): only then are a lake table's stored quantities
    what encoding it now gives (a snapshot indexed before an upgrade keeps the old rule's until the next refresh).  Read
    once per snapshot."""
    def read() -> bool:
        refs = snapshot_encoders(snapshot).refs
        _, params = payload(snapshot.warehouse, COLUMN_MODEL, refs.column, snapshot.version("models"))
        return (params.get("requires") or {}).get("quantity_rule") == QUANTITY_RULE

    return INDEXES.get(("quantity_rule", snapshot.warehouse.root, snapshot.snapshot_id), read)


def embed_query(snapshot: Snapshot, query: QueryTable, with_values: bool = False) -> TableEmbedding:
    """Column vectors, table vector (and optionally join-candidate value vectors) of a query table, exactly as the
    embed stage computes them for a lake table."""
    return embed_table(snapshot_encoders(snapshot), query.columns, query.names, with_values)


def query_terms(query: QueryTable) -> list[tuple[np.ndarray, np.ndarray]]:
    """The terms of a query's columns (:mod:`discovery.transforms.encoders.terms`), as :func:`embed_table` gives them,
    without encoding the columns."""
    return [column_terms(name, profile_column(cells)) for name, cells in zip(query.names, query.columns)]


def query_column_vectors(snapshot: Snapshot, query: QueryTable) -> np.ndarray:
    return embed_query(snapshot, query).column_vectors


def query_table_vector(snapshot: Snapshot, query: QueryTable) -> np.ndarray:
    return embed_query(snapshot, query).table_vector


def query_value_vectors(snapshot: Snapshot, query: QueryTable, column: str | int, max_values: int | None = None,
                        stored: Callable[[ColumnValues], np.ndarray | None] | None = None) -> ColumnValues:
    """Value vectors of one query column (by name or ordinal) with the snapshot's join encoder.

    ``max_values`` defaults to the stage's per-column cap, which makes a lake column's vectors equal to its rows in
    ``value_vectors``; any column may be chosen, join candidate or not.  ``stored``, given the column's rows, returns
    their vectors as the snapshot already holds them (a lake column as it was indexed: the same bits, see the module
    docstring) or None, and the rows are then encoded.
    """
    encoders = snapshot_encoders(snapshot)
    if encoders.join is None:
        raise QueryError(f"snapshot {snapshot.snapshot_id} has no join encoder: the lake had no join-candidate "
                         "columns when it was indexed")
    if isinstance(column, int):
        if not 0 <= column < len(query.columns):
            raise QueryError(f"query {query.label!r} has no column {column} ({len(query.columns)} columns)")
        ordinal = column
    else:
        ordinal = query.ordinal(column)
    cap = encoders.refs.spec.join_max_values if max_values is None else max_values
    cells = query.columns[ordinal]
    rows, texts = column_rows(profile_column(cells), ordinal, cap, encoders.refs.spec.join_segments, cells)
    vectors = stored(rows) if stored is not None else None
    return replace(rows, vectors=encoders.join.encode_values(texts) if vectors is None else vectors)
