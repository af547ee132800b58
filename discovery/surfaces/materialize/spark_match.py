"""A text join's values paired on Spark (``spark_jobs.match``): the lake column's distinct values stay on the
executors; this process sends the query's distinct values and reads back the pairs, both of the query's size."""
from __future__ import annotations

import json
import os
import tempfile
from dataclasses import asdict

import numpy as np
import pyarrow as pa

from ...config import Limits
from ...data.lake.pinned import PinnedTable
from ...transforms.match import Matches


def spark_matches(master: str, query: list[str], table: PinnedTable, column: str, limits: Limits, target: float,
                  query_keys: bool) -> Matches:
    """:func:`discovery.transforms.match.match_values` of the distinct ``query`` values against ``column`` of ``table``,
    run as a Spark application on ``master``: the same pairs, one-to-one when ``query_keys`` and the lake column hold
    one row per value."""
    from ..submit import run_job

    with tempfile.TemporaryDirectory(prefix="lakescout-match-") as folder:
        with open(os.path.join(folder, "spec.json"), "w", encoding="utf-8") as fh:
            json.dump({"table": table.to_dict(), "column": column, "limits": asdict(limits), "target": target,
                       "query_keys": query_keys}, fh, default=str)
        values = pa.table({"value": pa.array(query, pa.string())})
        with pa.OSFile(os.path.join(folder, "query.arrow"), "wb") as sink, \
                pa.ipc.new_file(sink, values.schema) as writer:
            writer.write_table(values)
        out = run_job("match", master, ["--spec", folder], f"matching lake column {column!r}", "nothing was written")
        with pa.memory_map(os.path.join(folder, "matches.arrow")) as source:
            pairs = pa.ipc.open_file(source).read_all()
    views = out["views"]
    return Matches(pairs.column("query").to_pylist(), pairs.column("lake").to_pylist(),
                   pairs.column("distance").to_numpy().astype(np.float64),
                   pairs.column("score").to_numpy().astype(np.float64), pairs.column("rule").to_pylist(),
                   out["values"], out["target"], out["precision"], out["rules"],
                   None if views is None else (views[0], views[1]))
