"""The refresh stages in the order they run: Airflow task id -> spark_jobs module (a spark-submit entry point).

Both the ``lake_refresh`` DAG and the one-application refresh of the CLI read this list, so a stage is added in one
place.  Every module exposes ``STAGE`` and ``run(spark, ctx) -> StageReport``.
"""
STAGES: dict[str, str] = {
    "scan": "scan_lake",
    "profile": "profile_columns",
    "embed": "embed_vectors",
    "centroids": "centroid_partitions",
    "pivots": "pivot_mappings",
    "xash": "xash_postings",
    "numeric": "numeric_sets",
}
