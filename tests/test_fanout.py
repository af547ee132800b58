"""The one Spark fan-out (``spark_jobs/fanout.py``): its task rule, what it returns and in which order, and that no
other module runs Python work on Spark by itself."""
from __future__ import annotations

import ast
from dataclasses import replace
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest

from discovery.config import SparkConfig, load_config
from discovery.stages import StageContext
from spark_jobs import fanout
from spark_jobs.fanout import (TASKS_PER_CORE, item_range, items_frame, map_groups, map_items, task_count,
                               work_chunks)

ROOT = Path(__file__).resolve().parent.parent
#: Spark calls that run Python over a job's tasks or build one's input from the driver's objects.
FAN_OUTS = {"mapInArrow", "mapInPandas", "applyInArrow", "applyInPandas", "mapPartitions", "foreachPartition",
            "parallelize"}


def test_tasks_cover_every_item_once_in_order_by_the_one_rule():
    for n in (0, 1, 7, 8, 9, 100, 1001):
        for cores in (1, 2, 8):
            for least in (1, 8, 32):
                k = task_count(n, cores, least)
                assert k == (0 if n == 0 else max(1, min(-(-n // least), cores * TASKS_PER_CORE)))
                covered = [i for t in range(k) for i in item_range(t, k, n)]
                assert covered == list(range(n))
                sizes = [len(item_range(t, k, n)) for t in range(k)]
                assert not sizes or max(sizes) - min(sizes) <= 1


@pytest.mark.spark
def test_a_stage_shares_few_tables_evenly_over_the_cores(spark, tmp_path):
    """Per-table work of fewer tables than a file per core runs as at most one task per core, the largest of
    ceil(n / cores) tables, each its own file; more tables keep files of ``tables_per_task`` tables."""
    n_cores, per_file = fanout.cores(spark), 4
    config = replace(load_config(None), spark=SparkConfig(tables_per_task=per_file))
    ctx = StageContext(str(tmp_path), str(tmp_path), 1, "chunks", False, config)
    for n in range(1, 6 * n_cores * per_file):
        per_task, file_tables = work_chunks(spark, ctx, n)
        sizes = [min(per_task, n - start) for start in range(0, n, per_task)]
        assert sum(sizes) == n
        if n < n_cores * per_file:
            assert len(sizes) <= n_cores and max(sizes) == -(-n // n_cores) and file_tables == per_task
        else:
            assert file_tables == per_file and per_task % per_file == 0


@pytest.mark.spark
def test_map_items_returns_what_each_item_yields_in_item_order(spark):
    """Any picklable value travels (dicts, tuples, bytes, numpy arrays); an item may yield nothing or several."""
    def body(i: int):
        for k in range(i % 3):
            yield (i, k, {"square": i * i}, np.arange(k, dtype=np.int64), bytes([i % 256]))

    got = map_items(spark, 50, body)
    want = list(body_all(body, 50))
    assert [(g[0], g[1], g[2], g[4]) for g in got] == [(w[0], w[1], w[2], w[4]) for w in want]
    assert all(np.array_equal(g[3], w[3]) for g, w in zip(got, want))
    given = map_items(spark, 5, body, tasks=5)                      # a count of tasks given: one item a task
    assert [g[:2] for g in given] == [w[:2] for w in body_all(body, 5)]
    assert map_items(spark, 0, body) == []


def body_all(body, n: int):
    for i in range(n):
        yield from body(i)


@pytest.mark.spark
def test_items_frame_and_map_groups_keep_every_row_of_a_key_together(spark):
    """A frame of rows from a fan-out, reduced by Spark, then handed back to Python grouped by a key column: every
    key's rows reach one body, none lost or doubled."""
    def rows(i: int):
        yield pa.RecordBatch.from_pydict({"key": pa.array([i % 7] * 3, pa.int64()),
                                          "v": pa.array([i, i + 100, i + 200], pa.int64())})

    frame = items_frame(spark, 40, rows, "key long, v long")

    def per_key(batches):
        seen: dict[int, list[int]] = {}
        for b in batches:
            for k, v in zip(b.column(0).to_pylist(), b.column(1).to_pylist()):
                seen.setdefault(k, []).append(v)
        yield from sorted(seen.items())

    grouped = map_groups(frame, "key", 3, per_key)
    assert sorted(k for k, _ in grouped) == list(range(7))           # each key in one task, once
    assert {k: sorted(v) for k, v in grouped} == {
        k: sorted(x for i in range(40) if i % 7 == k for x in (i, i + 100, i + 200)) for k in range(7)}


def _fan_outs(path: Path) -> list[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return [node.func.attr for node in ast.walk(tree)
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in FAN_OUTS]


def test_no_module_but_the_fan_out_runs_python_work_on_spark():
    found = {}
    for folder in ("discovery", "spark_jobs", "dags", "plugins", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*.py")):
            rel = path.relative_to(ROOT).as_posix()
            if rel != "spark_jobs/fanout.py" and _fan_outs(path):
                found[rel] = _fan_outs(path)
    assert found == {}
    assert set(_fan_outs(ROOT / "spark_jobs" / "fanout.py")) == {"mapInArrow"}
