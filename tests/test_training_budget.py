"""Encoder training under a time budget, and builds that do not depend on the clock.

A budget that binds stops training at a step count from a fixed ladder (the planned steps halved, never below the
probe), and the model equals one trained for exactly that many steps without a budget; a budget that fits changes
nothing.  Two refreshes of one lake with one configuration give the same models and the same vectors, bit for bit,
and report every stage's seconds and CPU utilisation.
"""
from __future__ import annotations

import os
import shutil
import time
from dataclasses import replace
from types import SimpleNamespace

import pyarrow as pa
import pytest

from discovery.config import load_config
from discovery.data.lake import list_lake
from discovery.data.store import Warehouse, load_snapshot
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.refresh.display import summary_line, totals
from discovery.query.vectors import OUTPUTS
from discovery.transforms.encoders.join_training import train_join_encoder
from discovery.transforms.encoders.lake_training import (PROBE_STEPS, StepBudget, join_config, join_steps,
                                                         join_training_columns, read_sample, sample_tables,
                                                         table_config, table_steps, train_join_model, train_table_model)
from discovery.transforms.encoders.stored import column_encoder
from discovery.transforms.encoders.table_encoder import train_table_encoder
from spark_jobs.progress import CpuMeter
from spark_jobs.refresh import refresh

SMALL = """
[embed]
dim = 32
column_values = 100
join_min_distinct = 5
join_steps = {join_steps}
join_epochs = 1000
join_train_values = 500
table_epochs = {table_epochs}
table_min_tables = 4
train_tables = 12
train_seconds = {budget}
join_options = {{ dim = 16, embed_dim = 16, hidden = 32, buckets = 2048, batch_size = 32 }}
table_options = {{ out_dim = 16, hidden = 32, batch_size = 4 }}
"""


def _config(tmp_path, budget: float, join_steps: int = 40, table_epochs: int = 8):
    path = tmp_path / f"budget-{budget}-{join_steps}-{table_epochs}.toml"
    path.write_text(SMALL.format(budget=budget, join_steps=join_steps, table_epochs=table_epochs))
    return str(path)


@pytest.fixture
def lake(tmp_path, demo_lake):
    """About fifteen good tables of the sample lake."""
    broken = {r["path"] for r in load_ground_truth(demo_lake)["broken"]}
    good = [f.path for f in list_lake(demo_lake) if f.path not in broken and f.path.endswith(".csv")][::20]
    dest = tmp_path / "lake"
    for rel in good:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), dest / rel)
    return str(dest)


def _sample(lake: str, config):
    files = list_lake(lake)
    catalog = pa.table({"table_id": list(range(len(files))), "path": [f.path for f in files],
                        "format": [f.format for f in files], "bytes": [f.size for f in files]})
    chosen = sample_tables(catalog, config.embed.train_tables, config.embed.seed)
    return read_sample(chosen, lake, config.limits, config.profile.type_agreement)


def test_the_ladder_halves_planned_steps_and_stops_at_the_probe():
    """The step count chosen for a given probed pace (the choice itself involves no clock)."""
    def limit(seconds: float, planned: int, step_seconds: float) -> int:
        return StepBudget(seconds, planned).choose(step_seconds)

    assert limit(0, 1000, 1.0) == 1000            # no budget
    assert limit(1000, 1000, 1.0) == 1000         # fits exactly
    assert limit(999, 1000, 1.0) == 500           # one halving
    assert limit(300, 1000, 1.0) == 250
    assert limit(1e-6, 1000, 1.0) == PROBE_STEPS  # never below the steps already done
    assert limit(1e-6, 7, 1.0) == 7               # nor above the plan
    assert StepBudget(1e-6, 1000).choose(1.0, done=11) == 11


def test_a_binding_budget_equals_training_that_many_steps(lake, tmp_path):
    config = load_config(_config(tmp_path, budget=1e-9))
    tables = _sample(lake, config)
    cfg = config.embed
    values, columns = join_training_columns(tables, cfg, cfg.seed)
    planned = join_steps(cfg, len(values))
    assert planned == 40 > PROBE_STEPS

    join = train_join_model(tables, cfg, config.profile.type_agreement, len(tables), "test")
    assert (join.params["planned_steps"], join.params["steps"]) == (planned, PROBE_STEPS)
    unbudgeted = train_join_encoder(values, replace(join_config(cfg), steps=PROBE_STEPS), columns=columns)
    assert join.payload == unbudgeted.to_bytes()

    column = column_encoder(cfg)
    table = train_table_model(tables, cfg, column, "col", len(tables), "test")
    t_cfg = table_config(cfg)
    # The table loop asks after each step, so its probe ends one step later than the join encoder's.
    assert table.params["planned_steps"] == table_steps(t_cfg, len(tables)) > PROBE_STEPS + 1
    assert table.params["steps"] == PROBE_STEPS + 1
    reference = train_table_encoder([t for t, _, _ in tables], column, replace(t_cfg, max_steps=PROBE_STEPS + 1),
                                    [k for _, k, _ in tables], [n for _, _, n in tables])
    assert table.payload == reference.to_bytes()


def test_a_budget_that_fits_changes_nothing(lake, tmp_path):
    generous = load_config(_config(tmp_path, budget=1e9, join_steps=12, table_epochs=3))
    none = load_config(_config(tmp_path, budget=0, join_steps=12, table_epochs=3))
    tables = _sample(lake, generous)
    agreement = generous.profile.type_agreement
    a = train_join_model(tables, generous.embed, agreement, len(tables), "test")
    b = train_join_model(tables, none.embed, agreement, len(tables), "test")
    assert a.params["steps"] == a.params["planned_steps"] == 12 and a.payload == b.payload
    column = column_encoder(generous.embed)
    a = train_table_model(tables, generous.embed, column, "col", len(tables), "test")
    b = train_table_model(tables, none.embed, column, "col", len(tables), "test")
    assert a.params["steps"] == a.params["planned_steps"] == table_steps(table_config(generous.embed), len(tables))
    assert a.payload == b.payload


def test_cpu_is_unknown_off_a_local_master():
    assert CpuMeter(SimpleNamespace(defaultParallelism=2, master="spark://10.0.0.1:7077")).utilisation() is None
    local = CpuMeter(SimpleNamespace(defaultParallelism=2, master="local[2]"))
    assert local.cpu_seconds() is not None


def test_totals_weigh_cpu_by_seconds():
    stages = [{"stage": "scan", "seconds": 10.0, "cpu": 0.5}, {"stage": "embed", "seconds": 30.0, "cpu": 0.9}]
    assert totals(stages) == {"stage_seconds": 40.0, "cpu": 0.8}
    assert totals(stages + [{"stage": "x", "seconds": 1.0, "cpu": None}])["cpu"] is None
    line = summary_line({"stage": "embed", "status": "ok", "tables_processed": 3, "tables_added": 3,
                         "tables_changed": 0, "tables_deleted": 0, "tables_failed": 0, "seconds": 30.04, "cpu": 0.9})
    assert line.endswith("30.0 s  cpu 90%")


@pytest.mark.spark
def test_two_builds_of_one_lake_are_bit_identical_and_report_their_stages(spark, lake, tmp_path):
    config = _config(tmp_path, budget=150, join_steps=12, table_epochs=3)
    results = [refresh(spark, str(tmp_path / name), lake, config_path=config) for name in ("wh1", "wh2")]
    for result in results:
        assert result["published"], result
        assert [s["stage"] for s in result["stages"]] == ["scan", "profile", "embed", "centroids", "pivots", "xash",
                                                         "numeric"]
        assert all(s["seconds"] > 0 and s["cpu"] is not None and s["cpu"] > 0 for s in result["stages"])
    snaps = [load_snapshot(Warehouse(str(tmp_path / name))) for name in ("wh1", "wh2")]
    models = [{k: v for k, v in r["models"].items() if k != "xash"} for r in results]
    assert models[0] == models[1] and "encoder.join" in models[0] and "encoder.table" in models[0]
    for name in OUTPUTS:
        a, b = (s.read(name).sort_by([("table_id", "ascending")]) for s in snaps)
        keys = ["table_id"] + [k for k in ("ordinal", "value", "segment") if k in a.column_names]
        a, b = (t.sort_by([(k, "ascending") for k in keys]) for t in (a, b))
        assert a.num_rows > 0 and a.equals(b), name


@pytest.mark.spark
def test_cpu_meter_counts_the_python_workers(spark):
    """The CPU seconds the tasks themselves measured are all inside the meter's count (Python workers included)."""
    def burn(i: int) -> float:
        start = time.process_time()
        x = 0
        while time.process_time() - start < 1.0:
            x += 1
        return time.process_time() - start

    meter = CpuMeter(spark.sparkContext)
    assert meter.cpu_seconds() < 1.0
    used = sum(spark.sparkContext.parallelize(range(4), 4).map(burn).collect())
    assert used >= 4.0
    assert meter.cpu_seconds() >= used
    assert meter.utilisation() > 0
