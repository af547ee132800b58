"""The two-table matcher on Spark: a text join's lake column paired with the query's values while its distinct
values stay on the executors.

:func:`discovery.transforms.match.match_values` runs unchanged; its lake column is a :class:`SparkLake`, which answers
what the matcher asks of the whole column with Spark jobs whose tasks run :mod:`discovery.transforms.match.distributed`
on blocks of it: document frequencies as a count, each query value's blocked candidates as the merge of every block's
best (a window per query value), the neighbours of the lake values they name the same way, and the views
(:mod:`discovery.transforms.match.views`) as counts and joins.  The driver holds what the query's size bounds: its
values, at most ``2 m`` candidates each, the sample the configuration is chosen on and the pairs; never the lake column.
The pairs are the ones the matcher gives in one process (a test holds them equal on random columns).

Entry points: :func:`match_on_spark` (a session in hand) and ``spark-submit spark_jobs/match.py --spec DIR``
(:func:`discovery.surfaces.materialize.sources.spark_matches` writes the spec), which writes the pairs into the folder
and prints ``LAKESCOUT_RESULT {description}`` or ``{"refused": message}``.
"""
from __future__ import annotations

import argparse
import json
import os
import sys

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from discovery import storage
from discovery.config import Limits
from discovery.data.lake import LakeFileError
from discovery.data.lake.pinned import PinnedTable, read_unit, units
from discovery.ground.normalize import normalize_array
from discovery.transforms.match import Matches, match_values
from discovery.transforms.match.distributed import block_nearest, feature_rows, local_counts, pair_distances, weights_of
from discovery.transforms.match.measures import MEASURES
from discovery.transforms.match.sides import Blocker, LakeSide
from discovery.transforms.match.views import DELIMITERS, View, shaped
from spark_jobs.common import spark_session
from spark_jobs.fanout import cores, items_frame, map_frame

#: Column values a block holds at most: a task featurises the query's values once for its block.
BLOCK_VALUES = 100_000

_FEATURES = "value string, kind byte, feature string"
_NEAREST = "q long, value string, cos_words float, cos_grams float"
_MEASURED = "q long, value string, " + ", ".join(f"d_{m} double" for m in MEASURES)


def lake_frame(spark, table: PinnedTable, column: str, limits: Limits):
    """``(frame, rows)``: the distinct join keys of ``column`` of ``table`` (normalised as
    :func:`discovery.surfaces.materialize.local.lake_values` keys them) as a cached frame of ``value``, read unit by
    unit on the executors, and how many rows hold one."""
    work = units(table)
    env = storage.client_env()

    def unit(i: int):
        os.environ.update(env)
        for chunk in read_unit(table, work[i], limits):
            if column in chunk.names:
                keys = normalize_array(chunk.columns[chunk.names.index(column)]).drop_null()
                counts = pc.value_counts(keys)
                yield pa.RecordBatch.from_arrays([counts.field("values"), counts.field("counts")],
                                                 names=["value", "rows"])

    from pyspark.sql import functions as F

    counted = items_frame(spark, len(work), unit, "value string, rows long")
    frame = counted.groupBy("value").agg(F.sum("rows").alias("rows")).cache()
    rows = frame.agg(F.sum("rows")).first()[0] or 0
    return frame.select("value"), int(rows)


def _values_frame(spark, values, column: str = "value"):
    return spark.createDataFrame(pa.table({column: pa.array(sorted(values), pa.string())}).to_pandas())


class SparkLake(LakeSide):
    """A lake column's distinct values as a Spark frame (column ``value``; nulls and empty values left out)."""

    def __init__(self, spark, frame):
        from pyspark.sql import functions as F

        self.spark = spark
        self.frame = frame.where(F.col("value").isNotNull() & (F.col("value") != "")).distinct().cache()
        self.size = self.frame.count()
        self._counted = None

    def holding(self, values: list[str]) -> set[str]:
        from pyspark.sql import functions as F

        if not values or not self.size:
            return set()
        found = self.frame.join(F.broadcast(_values_frame(self.spark, set(values))), "value").collect()
        return {r["value"] for r in found}

    def features(self):
        """``(features, counts)``: one row per distinct feature of each value, and each feature's count."""
        if self._counted is None:
            feats = map_frame(self.frame, lambda batches: (feature_rows(b.column(0).to_pylist()) for b in batches),
                              _FEATURES).cache()
            self._counted = (feats, feats.groupBy("kind", "feature").count().cache())
        return self._counted

    def lake_counts(self, keys) -> dict[tuple[int, str], int]:
        """The column's counts of the features ``keys`` (``(kind, feature)``), for those it holds."""
        from pyspark.sql import functions as F

        if not keys:
            return {}
        _, counts = self.features()
        wanted = self.spark.createDataFrame(
            pa.table({"kind": pa.array([k for k, _ in keys], pa.int8()),
                      "feature": pa.array([f for _, f in keys], pa.string())}).to_pandas())
        return {(r["kind"], r["feature"]): r["count"] for r in counts.join(F.broadcast(wanted), ["kind", "feature"])
                .collect()}

    def blocker(self, rest: list[str]) -> Blocker:
        return SparkBlocker(self, rest)

    def shapes(self) -> list[View]:
        from pyspark.sql import functions as F

        if not self.size:
            return shaped({}, 0)
        row = self.frame.agg(*[F.sum(F.when(F.col("value").contains(d), 1).otherwise(0)).alias(f"d{i}")
                               for i, d in enumerate(DELIMITERS)]).first()
        return shaped({d: int(row[f"d{i}"] or 0) for i, d in enumerate(DELIMITERS)}, self.size)

    def _keyed(self, view: View):
        def keyed(batches):
            for b in batches:
                values = b.column(0).to_pylist()
                yield pa.RecordBatch.from_arrays([pa.array([view.apply(v) for v in values], pa.string()),
                                                  pa.array(values, pa.string())], names=["key", "value"])

        return map_frame(self.frame, keyed, "key string, value string")

    def _single(self, view: View, wanted: set[str]):
        from pyspark.sql import functions as F

        counted = self._keyed(view).groupBy("key").agg(F.count("*").alias("n"), F.min("value").alias("value"))
        wanted_frame = _values_frame(self.spark, wanted, "key")
        return counted.where(F.col("n") == 1).join(F.broadcast(wanted_frame), "key").collect()

    def unique_views(self, view: View, wanted: set[str]) -> set[str]:
        return {r["key"] for r in self._single(view, wanted)} if wanted else set()

    def viewed(self, view: View):
        keys = SparkLake(self.spark, self._keyed(view).selectExpr("key AS value"))
        return keys, lambda wanted: ({r["key"]: r["value"] for r in self._single(view, wanted)} if wanted else {})


class SparkBlocker(Blocker):
    """The candidates and neighbours of the query values ``rest`` against a :class:`SparkLake`."""

    def __init__(self, side: SparkLake, rest: list[str]):
        from pyspark.sql import functions as F

        self.side, self.rest = side, rest
        self.n = len(rest) + side.size
        self.query_counts = local_counts(rest)
        self.query_weights = self._weights(rest)
        feats, counts = side.features()
        self.blocks = max(2 * cores(side.spark), -(-side.size // BLOCK_VALUES))
        self.weighted = (feats.join(counts, ["kind", "feature"]).groupBy("value")
                         .agg(F.collect_list(F.struct("kind", "feature", "count")).alias("features"))
                         .repartition(self.blocks).cache())
        self.lake: list[str] = []

    def _weights(self, values: list[str]):
        """IDF of ``values``' features: their counts over the column's values and the query's."""
        own = local_counts(values)
        lake = self.side.lake_counts(list(own))
        return weights_of({key: lake.get(key, 0) + self.query_counts.get(key, 0) for key in own}, self.n)

    def _blocks(self, frame, run, schema: str, key: str | None = None):
        """``run`` over every partition of ``frame`` (by ``key`` when given), its batches handed over together."""
        def whole(batches):
            yield from run(list(batches))

        return map_frame(frame, whole, schema, key, self.blocks)

    def _nearest(self, query: list[str], weights, m: int, refuse: bool):
        """Per query value, the union of its ``m`` nearest column values by each cosine, with the distances."""
        from pyspark.sql import Window
        from pyspark.sql import functions as F

        shared = self.side.spark.sparkContext.broadcast(
            {"query": query, "weights": weights, "counts": self.query_counts, "n": self.n})

        def lake_weights(batches, column: str):
            s = shared.value
            counts: dict[tuple[int, str], int] = {}
            for b in batches:
                for feats in b.column(column).to_pylist():
                    for x in feats:
                        key = (x["kind"], x["feature"])
                        counts[key] = x["count"] + s["counts"].get(key, 0)
            return weights_of(counts, s["n"])

        def nearest(batches):
            s = shared.value
            values = [v for b in batches for v in b.column("value").to_pylist()]
            if values:
                yield block_nearest(s["query"], s["weights"], values, lake_weights(batches, "features"), m)

        def measured(batches):
            s = shared.value
            q = np.array([v for b in batches for v in b.column("q").to_pylist()], np.int64)
            values = [v for b in batches for v in b.column("value").to_pylist()]
            d = pair_distances(s["query"], s["weights"], q, values, lake_weights(batches, "features"), refuse)
            if values:
                yield pa.RecordBatch.from_arrays([pa.array(q), pa.array(values, pa.string())]
                                                 + [pa.array(d[:, k]) for k in range(len(MEASURES))],
                                                 names=["q", "value"] + [f"d_{x}" for x in MEASURES])

        try:
            pairs = self._blocks(self.weighted, nearest, _NEAREST)
            by_words = Window.partitionBy("q").orderBy(F.col("cos_words").desc_nulls_last(), "value")
            by_grams = Window.partitionBy("q").orderBy(F.col("cos_grams").desc_nulls_last(), "value")
            kept = (pairs.withColumn("rw", F.row_number().over(by_words))
                    .withColumn("rg", F.row_number().over(by_grams))
                    .where((F.col("cos_words").isNotNull() & (F.col("rw") <= m))
                           | (F.col("cos_grams").isNotNull() & (F.col("rg") <= m)))
                    .select("q", "value"))
            rows = self._blocks(kept.join(self.weighted, "value"), measured, _MEASURED, key="q").toArrow()
        finally:
            shared.unpersist()
        q = rows.column("q").to_numpy()
        d = np.stack([rows.column(f"d_{x}").to_numpy() for x in MEASURES], axis=1) if rows.num_rows else \
            np.zeros((0, len(MEASURES)))
        return q, rows.column("value").to_pylist(), d

    def candidates(self, depth: int):
        q, values, d = self._nearest(self.rest, self.query_weights, depth, refuse=True)
        self.lake = sorted(set(values))
        at = {v: i for i, v in enumerate(self.lake)}
        return q.astype(np.int64), np.array([at[v] for v in values], np.int64), d

    def neighbours(self, used: np.ndarray, m: int):
        names = [self.lake[u] for u in used.tolist()]
        q, values, d = self._nearest(names, self._weights(names), m + 1, refuse=False)
        keep = np.array([values[i] != names[q[i]] for i in range(len(values))], dtype=bool)
        return used[q[keep]], d[keep]


def match_on_spark(spark, query: list[str], table: PinnedTable, column: str, limits: Limits, target: float,
                   query_keys: bool) -> tuple[Matches, int, int]:
    """``(matches, distinct lake values, rows holding one)``: :func:`discovery.transforms.match.match_values` of the
    distinct ``query`` values against ``column`` of ``table`` read on the executors; one-to-one when ``query_keys`` (the
    query holds one row per value) and the column holds one row per value too."""
    frame, held = lake_frame(spark, table, column, limits)
    side = SparkLake(spark, frame)
    found = match_values(query, side, target, keys=query_keys and side.size == held)
    return found, side.size, held


def write_matches(found: Matches, folder: str) -> None:
    """The pairs of ``found`` as ``matches.arrow`` in ``folder``."""
    table = pa.table({"query": pa.array(found.query, pa.string()), "lake": pa.array(found.lake, pa.string()),
                      "distance": pa.array(found.distance, pa.float64()), "score": pa.array(found.score, pa.float64()),
                      "rule": pa.array(found.rule, pa.string())})
    with pa.OSFile(os.path.join(folder, "matches.arrow"), "wb") as sink, pa.ipc.new_file(sink, table.schema) as w:
        w.write_table(table)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="spark_jobs.match", description="Pair a query column with a lake column on Spark")
    p.add_argument("--spec", required=True,
                   help="folder of the spec (discovery.surfaces.materialize.sources.spark_matches)")
    args = p.parse_args(argv)
    with open(os.path.join(args.spec, "spec.json"), encoding="utf-8") as fh:
        spec = json.load(fh)
    with pa.memory_map(os.path.join(args.spec, "query.arrow")) as source:
        query = pa.ipc.open_file(source).read_all().column("value").to_pylist()
    try:
        spark = spark_session("lakescout-match")
        spark.sparkContext.setLogLevel("ERROR")
        found, size, held = match_on_spark(spark, query, PinnedTable(**spec["table"]), spec["column"],
                                           Limits(**spec["limits"]), spec["target"], spec["query_keys"])
    except (LakeFileError, ValueError) as exc:
        print("LAKESCOUT_RESULT " + json.dumps({"refused": str(exc).splitlines()[0]}))
        return 2
    write_matches(found, args.spec)
    out = {"values": found.values, "target": found.target, "precision": found.precision, "rules": found.rules,
           "views": found.views, "lake_values": size, "lake_rows": held}
    print("LAKESCOUT_RESULT " + json.dumps(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
