"""Schemas of every Delta table of the index.

Every table that holds rows derived from lake tables carries ``table_id`` (the key that incremental refreshes replace
rows by) and ``content_hash`` (the version of the lake file the rows were derived from).  A stage decides its work by
comparing the catalog's ``content_hash`` with the one recorded in its own output, which makes every stage idempotent
and self-healing: a refresh that died half way is finished by the next one.
"""
from __future__ import annotations

import pyarrow as pa

TS = pa.timestamp("us", tz="UTC")
VEC = pa.list_(pa.float32())

SCHEMAS: dict[str, pa.Schema] = {
    "catalog": pa.schema([
        ("table_id", pa.int64()),
        ("path", pa.string()),            # relative to the lake root, '/'-separated: a file or a dataset folder
        ("format", pa.string()),          # csv | csv.gz | json | parquet | orc | delta | iceberg | hive/<f> | parts/<f>
        ("bytes", pa.int64()),
        ("mtime_ns", pa.int64()),
        ("content_hash", pa.string()),    # content version: file digest, Delta file set, Iceberg snapshot, ...
        ("rows", pa.int64()),
        ("cols", pa.int32()),
        ("status", pa.string()),          # ok | stale (indexed rows kept; now unreadable) | error | deleted
        ("error", pa.string()),           # readable reason when status = error
        ("warnings", pa.string()),        # JSON list of bounds hit / repairs made (reported, never silent)
        ("encoding", pa.string()),
        ("delimiter", pa.string()),
        ("refresh_id", pa.int64()),       # refresh that last changed this row
        ("indexed_at", TS),
        ("fingerprint", pa.string()),     # change signal read off the listing (size:mtime, log version, ...)
        ("version", pa.string()),         # the format's own version: Delta table version, Iceberg snapshot id
    ]),
    "columns": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("ordinal", pa.int32()),
        ("name", pa.string()),
        ("type", pa.string()),            # string | int | float | bool | date | datetime | empty
        ("non_null", pa.int64()),
        ("distinct_count", pa.int64()),
        ("null_fraction", pa.float64()),
        ("key_candidate", pa.bool_()),
        ("max_length", pa.int32()),
    ]),
    "column_vectors": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("ordinal", pa.int32()),
        ("encoder_version", pa.string()),
        ("vector", VEC),
        ("quantity", pa.string()),        # what a number column measures (discovery.transforms.quantities); "" none
        ("terms", pa.list_(pa.int32())),  # hashed words of its name and sampled values
                                          # (discovery.transforms.encoders.terms)
        ("term_counts", pa.list_(pa.int32())),
    ]),
    "table_vectors": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("encoder_version", pa.string()),
        ("vector", VEC),
    ]),
    "value_vectors": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("ordinal", pa.int32()),
        ("value", pa.string()),
        ("frequency", pa.int64()),
        ("encoder_version", pa.string()),
        ("vector", VEC),
        ("segment", pa.int32()),          # 0: the whole value; k: its k-th segment (discovery.transforms.segments)
    ]),
    "centroids": pa.schema([
        ("model_version", pa.string()),
        ("centroid_id", pa.int32()),
        ("vector", VEC),
    ]),
    "centroid_partitions": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("model_version", pa.string()),
        ("partition_id", pa.int32()),
        ("member_ordinals", pa.list_(pa.int32())),     # member columns S_k
        ("iw_centroid_ids", pa.list_(pa.int32())),     # distinct nearest base centroids of the members ...
        ("iw_counts", pa.list_(pa.int32())),           # ... and how many members each has (I_w)
        ("sq_error", pa.float64()),                    # sum of squared distances of the members to their centroid
    ]),
    "pivots": pa.schema([
        ("model_version", pa.string()),
        ("pivot_id", pa.int32()),
        ("vector", VEC),
    ]),
    "pivot_mappings": pa.schema([
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("model_version", pa.string()),
        ("ordinal", pa.int32()),
        ("value", pa.string()),
        ("distances", VEC),
        ("cell", pa.int64()),
        ("partition", pa.int32()),
        ("segment", pa.int32()),          # as in value_vectors
    ]),
    "xash_postings": pa.schema([
        ("value", pa.string()),
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("model_version", pa.string()),
        ("column", pa.int32()),
        ("row", pa.int64()),
        ("superkey", pa.binary()),
    ]),
    "xash_stats": pa.schema([            # per lake table: its share of the XASH model's corpus statistics
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("model_version", pa.string()),   # model its postings were built with (the stage's done marker)
        ("rows_total", pa.int64()),
        ("rows_indexed", pa.int64()),     # < rows_total when [xash] max_rows_per_table was hit
        ("char_codes", pa.list_(pa.int32())),    # code points of the characters of its normalised cells
        ("char_counts", pa.list_(pa.int64())),   # their occurrence counts
        ("hll", pa.binary()),             # HyperLogLog registers of its distinct normalised values (zlib)
    ]),
    "numeric_sets": pa.schema([          # per lake table: its column groups for the numerical join
        ("table_id", pa.int64()),
        ("content_hash", pa.string()),
        ("set_no", pa.int32()),           # the group's number within its table; -1: the table has none (done marker)
        ("kind", pa.string()),            # number | coordinates | vector | none
        ("ordinals", pa.list_(pa.int32())),   # member columns ((latitude, longitude) for coordinates)
        ("names", pa.list_(pa.string())),
        ("dim", pa.int32()),
        ("size", pa.int64()),             # distinct values kept
        ("total", pa.int64()),            # distinct values before the cap ([numjoin] max_values)
        ("spread", pa.float64()),         # range / bounding-box diagonal, in the group's units
        ("unit", pa.string()),            # metres (coordinates) | column units (numbers) | vector units (lists)
        ("values", pa.list_(pa.float64())),   # the distinct values, row-major (size x dim)
        ("quantity", pa.string()),        # what a number column measures (discovery.transforms.quantities); "" none
        ("rule", pa.string()),            # version of the group rules the row was read by (numjoin GROUP_RULE)
    ]),
    "models": pa.schema([
        ("name", pa.string()),            # e.g. encoder.hash, encoder.join, xash, centroids
        ("version", pa.string()),
        ("created_at", TS),
        ("refresh_id", pa.int64()),
        ("params", pa.string()),          # JSON
        ("payload", pa.binary()),         # weights / parameters
    ]),
    "snapshots": pa.schema([
        ("snapshot_id", pa.int64()),
        ("created_at", TS),
        ("refresh_id", pa.int64()),
        ("lake", pa.string()),            # lake root the snapshot indexes
        ("versions", pa.string()),        # JSON {table: delta version}
        ("models", pa.string()),          # JSON {model name: version}
        ("counts", pa.string()),          # JSON {table status / index table: count}
    ]),
    "refresh_runs": pa.schema([
        ("refresh_id", pa.int64()),
        ("stage", pa.string()),
        ("status", pa.string()),          # ok | failed | skipped
        ("started_at", TS),
        ("finished_at", TS),
        ("seconds", pa.float64()),
        ("tables_added", pa.int64()),
        ("tables_changed", pa.int64()),
        ("tables_deleted", pa.int64()),
        ("tables_failed", pa.int64()),
        ("tables_processed", pa.int64()),  # lake tables parsed / encoded by this stage
        ("rows_written", pa.int64()),
        ("message", pa.string()),
        ("took_over", pa.string()),        # the killed run whose expired lease this one took over (else null)
    ]),
    "query_results": pa.schema([
        ("batch_id", pa.string()),
        ("query_id", pa.string()),
        ("snapshot_id", pa.int64()),
        ("kind", pa.string()),            # union | join | nary
        ("rank", pa.int32()),
        ("table_id", pa.int64()),
        ("path", pa.string()),
        ("column", pa.string()),
        ("score", pa.float64()),
        ("evidence", pa.string()),        # JSON
        ("created_at", TS),
    ]),
    "query_batches": pa.schema([
        ("batch_id", pa.string()),
        ("name", pa.string()),            # standing query name, or the batch's own label
        ("standing", pa.bool_()),         # run by the standing-queries DAG
        ("snapshot_id", pa.int64()),
        ("queries", pa.int32()),
        ("results", pa.int64()),
        ("seconds", pa.float64()),
        ("spec", pa.string()),            # JSON of the validated batch
        ("summary", pa.string()),         # JSON: per query id, results and stats
        ("created_at", TS),
    ]),
    "standing_changes": pa.schema([
        ("name", pa.string()),            # standing query
        ("batch_id", pa.string()),
        ("query_id", pa.string()),
        ("snapshot_id", pa.int64()),
        ("previous_snapshot_id", pa.int64()),
        ("change", pa.string()),          # new | dropped | rescored
        ("table_id", pa.int64()),
        ("path", pa.string()),
        ("column", pa.string()),
        ("score", pa.float64()),
        ("previous_score", pa.float64()),
        ("created_at", TS),
    ]),
}

#: Tables whose rows are derived from lake tables and replaced per lake table on refresh.
PER_TABLE = tuple(name for name, s in SCHEMAS.items() if "table_id" in s.names and "content_hash" in s.names)
#: Bookkeeping tables: not pinned by snapshots (they record what happened, not what the index is).
BOOKKEEPING_TABLES = ("snapshots", "refresh_runs", "query_results", "query_batches", "standing_changes")
#: Tables a snapshot pins (everything but the bookkeeping tables).
INDEX_TABLES = tuple(n for n in SCHEMAS if n not in BOOKKEEPING_TABLES)
