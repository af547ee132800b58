"""The embed stage on a real SparkSession and real Delta tables, with tiny encoder settings.

Vectors read back from Delta equal, bit for bit, what the query helpers compute for the same table; an incremental
embed equals a full embed with the same encoders; a changed encoder rebuilds every vector; deleted tables vanish;
columns that hit the value cap are reported; a retried stage adds nothing.
"""
from __future__ import annotations

import os
import re
import shutil
from datetime import datetime, UTC

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from discovery.config import EmbedConfig, load_config
from discovery.data.lake import infer_type, list_lake, read_lake_table
from discovery.data.store import Warehouse, load_snapshot, new_attempt_token
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.query.resolve import resolve_query
from discovery.query.vectors import OUTPUTS, embed_batch, embed_query, query_value_vectors, snapshot_encoders
from discovery.stages import StageContext
from discovery.transforms.encoders.columns import profile_column
from discovery.transforms.encoders.lake_training import join_config, sample_tables
from discovery.transforms.encoders.stored import (JOIN_MODEL, MODEL_FILES, TABLE_MODEL, ModelRow, needs_training,
                                                  payload)
from spark_jobs import embed_vectors, profile_columns, scan_lake
from spark_jobs.common import execute
from sessions import session

TINY = """
[embed]
dim = 32
column_values = 100
join_min_distinct = 5
join_max_values = {cap}
join_steps = 3
join_train_values = 500
table_epochs = 1
table_min_tables = 4
train_tables = 12
join_options = {{ dim = 16, embed_dim = 16, hidden = 32, buckets = 2048, batch_size = 32 }}
table_options = {{ out_dim = 16, hidden = 32 }}
"""


def _config(tmp_path, cap: int = 40):
    path = tmp_path / f"embed-{cap}.toml"
    path.write_text(TINY.format(cap=cap))
    return load_config(str(path))


@pytest.fixture
def lake(tmp_path, demo_lake):
    """About fifteen good tables of the sample lake and one broken file."""
    broken = sorted(r["path"] for r in load_ground_truth(demo_lake)["broken"])[:1]
    good = [f.path for f in list_lake(demo_lake) if f.path not in broken and f.path.endswith(".csv")][::20]
    dest = tmp_path / "lake"
    for rel in broken + good:
        (dest / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), dest / rel)
    return str(dest)


def _refresh(spark, root: str, lake: str, config, full: bool = False) -> int:
    """scan, profile, embed and publish (the stages these vectors depend on)."""
    rid = begin_refresh(session(root))
    for module in (scan_lake, profile_columns, embed_vectors):
        ctx = StageContext(root, lake, rid, new_attempt_token(), full, config)
        assert execute(spark, module.STAGE, module.run, ctx) == 0
    publish_snapshot(Warehouse(root), rid, lake)
    return rid


def _embed_run(wh: Warehouse, rid: int) -> dict:
    runs = wh.read("refresh_runs").to_pylist()
    return [r for r in runs if r["refresh_id"] == rid and r["stage"] == "embed" and r["status"] == "ok"][-1]


def _rows(snapshot) -> dict[str, dict]:
    """Every vector row of the snapshot keyed by (path, ordinal[, value]), with table ids replaced by paths."""
    cat = snapshot.read("catalog")
    path = dict(zip(cat.column("table_id").to_pylist(), cat.column("path").to_pylist()))
    out = {}
    for name in OUTPUTS:
        rows = {}
        for r in snapshot.read(name).to_pylist():
            key = (path[r.pop("table_id")], r.get("ordinal"), r.get("value")) + (
                (r["segment"],) if "segment" in r else ())
            assert key not in rows, f"duplicate row {key} in {name}"
            rows[key] = r
        out[name] = rows
    return out


def _reference(snapshot, lake: str, config) -> dict[str, dict]:
    """A full embed of every ok table with the snapshot's encoders, computed in this process without Spark."""
    cat = snapshot.read("catalog")
    ok = cat.filter(pc.equal(cat["status"], "ok"))
    for name in OUTPUTS:
        ok = ok.append_column(f"do_{name}", pa.array(np.ones(ok.num_rows, dtype=bool)))
    ctx = StageContext(snapshot.warehouse.root, lake, 0, "reference", False, config)
    tables, _, _ = embed_batch(ok, ctx, snapshot_encoders(snapshot).refs)
    path = dict(zip(cat.column("table_id").to_pylist(), cat.column("path").to_pylist()))
    return {name: {(path[r.pop("table_id")], r.get("ordinal"), r.get("value")) + (
        (r["segment"],) if "segment" in r else ()): r for r in t.to_pylist()} for name, t in tables.items()}


def _capped_columns(lake: str, snapshot, config) -> int:
    """Brute force: string columns with at least join_min_distinct and more than join_max_values distinct values."""
    cfg, n = config.embed, 0
    for r in snapshot.read("catalog").to_pylist():
        if r["status"] != "ok":
            continue
        parsed = read_lake_table(lake, r["path"], r["format"], r["bytes"], config.limits)
        for col in parsed.columns:
            distinct = len(profile_column(col).values)
            if infer_type(col, config.profile.type_agreement) == "string" and distinct >= cfg.join_min_distinct:
                n += distinct > cfg.join_max_values
    return n


def _mutate(lake: str, demo_lake: str) -> dict:
    present = {f.path for f in list_lake(lake)}
    broken = {r["path"] for r in load_ground_truth(demo_lake)["broken"]}
    good = sorted(p for p in present if p not in broken and p.endswith(".csv"))
    extra = [f.path for f in list_lake(demo_lake) if f.path not in present and f.path not in broken
             and f.path.endswith(".csv")][5:7]
    for rel in extra:
        os.makedirs(os.path.dirname(os.path.join(lake, rel)), exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), os.path.join(lake, rel))
    changed, deleted = good[0:2], good[2:4]
    for rel in changed:
        with open(os.path.join(lake, rel), encoding="utf-8") as fh:
            width = fh.readline().count(",") + 1
        with open(os.path.join(lake, rel), "a", encoding="utf-8") as fh:
            fh.write(",".join(["zz"] * width) + "\n")
    for rel in deleted:
        os.remove(os.path.join(lake, rel))
    return {"added": extra, "changed": changed, "deleted": deleted}


@pytest.mark.spark
def test_stage_vectors_equal_query_vectors_and_incremental_equals_full(spark, lake, demo_lake, tmp_path):
    root = str(tmp_path / "wh")
    config = _config(tmp_path)
    rid = _refresh(spark, root, lake, config)
    wh = Warehouse(root)
    snap = load_snapshot(wh)
    encoders = snapshot_encoders(snap)
    assert encoders.refs.table and encoders.refs.join, "tiny lake still trains both encoders"
    assert "trained in" in _embed_run(wh, rid)["message"]
    # The training tasks left the plain copies of the weights that the encoding tasks map, the stored bytes exactly.
    for name, version in ((JOIN_MODEL, encoders.refs.join), (TABLE_MODEL, encoders.refs.table)):
        with open(os.path.join(root, MODEL_FILES, f"{version}.bin"), "rb") as fh:
            assert fh.read() == payload(wh, name, version)[0]
    rows = _rows(snap)
    ok = [r for r in snap.read("catalog").to_pylist() if r["status"] == "ok"]
    assert {k[0] for k in rows["table_vectors"]} == {r["path"] for r in ok}

    # Bit-identical: Spark task output read back from Delta == query helpers on the same table.
    candidates = 0
    for r in ok:
        q = resolve_query(snap, r["table_id"])
        emb = embed_query(snap, q, with_values=True)
        stored = np.array([rows["column_vectors"][(r["path"], j, None)]["vector"] for j in range(len(q.columns))],
                          dtype=np.float32)
        assert stored.tobytes() == emb.column_vectors.tobytes()
        table = np.array(rows["table_vectors"][(r["path"], None, None)]["vector"], dtype=np.float32)
        assert table.tobytes() == emb.table_vector.tobytes()
        for cv in emb.values:
            candidates += 1
            got = query_value_vectors(snap, q, q.names[cv.ordinal])
            keys = [(r["path"], cv.ordinal, got.values[i], k) for i, k in zip(got.value_of.tolist(),
                                                                               got.segment.tolist())]
            assert all(rows["value_vectors"][k]["frequency"] == got.frequency[i] for k, i in zip(keys, got.value_of))
            vecs = np.array([rows["value_vectors"][k]["vector"] for k in keys], dtype=np.float32)
            assert vecs.tobytes() == got.vectors.tobytes()
        n_values = sum(len(cv.value_of) for cv in emb.values)
        assert sum(1 for k in rows["value_vectors"] if k[0] == r["path"]) == n_values
    assert candidates > 0

    # Capped columns are counted and named.
    message = _embed_run(wh, rid)["message"]
    expected = _capped_columns(lake, snap, config)
    assert expected > 0
    assert re.search(rf"\b{expected} columns hit the cap of {config.embed.join_max_values} value vectors", message)

    # Incremental: only added and changed tables are encoded, with the same encoders, equal to a full embed.
    done = _mutate(lake, demo_lake)
    rid2 = _refresh(spark, root, lake, config)
    run = _embed_run(wh, rid2)
    assert (run["tables_added"], run["tables_changed"], run["tables_deleted"], run["tables_processed"]) == (2, 2, 2, 4)
    snap2 = load_snapshot(wh)
    assert snapshot_encoders(snap2).refs == encoders.refs
    rows2 = _rows(snap2)
    assert rows2 == _reference(snap2, lake, config)
    for name in OUTPUTS:
        assert not {k[0] for k in rows2[name]} & set(done["deleted"]), f"deleted tables left rows in {name}"
        assert {r["encoder_version"] for r in rows2[name].values()} == \
            {r["encoder_version"] for r in rows[name].values()}

    # A retried embed of the same refresh commits nothing more.
    ctx = StageContext(root, lake, rid2, new_attempt_token(), False, config)
    versions = {name: wh.version(name) for name in OUTPUTS + ("models",)}
    assert execute(spark, "embed", embed_vectors.run, ctx) == 0
    assert {name: wh.version(name) for name in OUTPUTS + ("models",)} == versions


@pytest.mark.spark
def test_a_refresh_killed_between_the_outputs_commits_leaves_no_row_twice(spark, lake, demo_lake, tmp_path):
    """A refresh killed inside embed may have committed some outputs and not others: an added table in
    ``value_vectors`` and ``table_vectors`` but not in ``column_vectors``, which plans the stage.  The next refresh, a
    new one, embeds the table again into every output and first removes what the killed one left (the soak found
    its value vectors and pivot mappings twice)."""
    from discovery.data.store import drop_table_ids

    root = str(tmp_path / "wh")
    config = _config(tmp_path)
    _refresh(spark, root, lake, config)
    added = _mutate(lake, demo_lake)["added"]
    _refresh(spark, root, lake, config)
    wh = Warehouse(root)
    rows = _rows(load_snapshot(wh))
    path = next(p for p in added if any(k[0] == p for k in rows["value_vectors"]))
    cat = wh.read("catalog")
    tid = cat.column("table_id").to_pylist()[cat.column("path").to_pylist().index(path)]
    uri, adds, removes = wh.table_uri("column_vectors"), [], []
    for file in wh.files("column_vectors").column("path").to_pylist():
        touched, replacement = drop_table_ids(uri, file, np.array([tid]), 1, "killed", "t1")
        if touched:
            removes.append(file)
            adds += [replacement] if replacement is not None else []
    wh.commit("column_vectors", adds, removes, refresh_id=1, stage="killed", attempt="t1", once=False)
    rid = _refresh(spark, root, lake, config)
    assert _embed_run(wh, rid)["tables_processed"] == 1
    snap = load_snapshot(wh)
    assert _rows(snap) == _reference(snap, lake, config)  # _rows fails on a row held twice


@pytest.mark.spark
def test_encoder_change_rebuilds_every_vector(spark, lake, tmp_path):
    root = str(tmp_path / "wh")
    _refresh(spark, root, lake, _config(tmp_path, cap=40))
    wh = Warehouse(root)
    before = snapshot_encoders(load_snapshot(wh)).refs
    changed = _config(tmp_path, cap=25)       # a new value cap: new join encoder version, all value vectors rebuilt
    rid = _refresh(spark, root, lake, changed)
    snap = load_snapshot(wh)
    after = snapshot_encoders(snap).refs
    assert after.join != before.join and after.column == before.column and after.table == before.table
    run = _embed_run(wh, rid)
    n_ok = snap.counts["tables_ok"]
    assert run["tables_processed"] == n_ok and "rebuilt in full: value_vectors" in run["message"]
    rows = _rows(snap)
    assert {r["encoder_version"] for r in rows["value_vectors"].values()} == {after.value_vector_version}
    assert max(sum(1 for k in rows["value_vectors"] if k[:2] == key[:2] and k[3] == 0)
               for key in rows["value_vectors"]) <= 25
    assert rows == _reference(snap, lake, changed)
    # A full rebuild retrains the trained encoders; the deterministic training gives the same versions back.
    full = _refresh(spark, root, lake, changed, full=True)
    assert "full rebuild" in _embed_run(wh, full)["message"]
    assert snapshot_encoders(load_snapshot(wh)).refs == after


def _row(requires: dict, lake_tables: int) -> ModelRow:
    return ModelRow("encoder.join", "join-x", {"requires": requires, "lake_tables": lake_tables},
                    datetime.now(UTC), 1)


def test_retrain_policy():
    req = {"train": {"steps": 3, "options": {"dims": (1, 2)}}}
    assert needs_training(None, req, 10, False, 0.25) == "first build"
    assert needs_training(_row(req, 10), req, 10, True, 0.25) == "full rebuild"
    assert needs_training(_row({"train": {"steps": 4}}, 10), req, 10, False, 0.25) == "settings changed"
    stored = {"train": {"steps": 3, "options": {"dims": [1, 2]}}}   # as it reads back from JSON
    assert needs_training(_row(stored, 100), req, 125, False, 0.25) is None
    assert "grew" in needs_training(_row(stored, 100), req, 126, False, 0.25)


@pytest.mark.parametrize("seed", range(4))
def test_training_sample_is_deterministic_and_stable_under_growth(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(30, 80))
    paths = [f"t{int(i)}.csv" for i in rng.permutation(10 * n)[:n]]
    ok = pa.table({"table_id": np.arange(n, dtype=np.int64), "path": paths})
    limit = int(rng.integers(5, 20))
    a = sample_tables(ok, limit, seed)
    assert a.num_rows == limit and a.column("table_id").to_pylist() == sorted(a.column("table_id").to_pylist())
    assert sample_tables(ok.take(pa.array(rng.permutation(n))), limit, seed).equals(a)
    grown = pa.concat_tables([ok, pa.table({"table_id": np.arange(n, 2 * n, dtype=np.int64),
                                            "path": [f"new{i}.csv" for i in range(n)]})])
    kept = set(sample_tables(grown, limit, seed).column("path").to_pylist())
    chosen = set(a.column("path").to_pylist())
    # A table leaves the sample only to make room for a new table that ranks before it.
    assert kept - chosen <= {f"new{i}.csv" for i in range(n)}
    assert sample_tables(ok, 2 * n, seed).num_rows == n


def test_embed_config_defaults_and_errors():
    cfg = EmbedConfig()
    assert cfg.join_min_distinct >= 2 and cfg.retrain_growth > 0
    with pytest.raises(ValueError, match="join_options"):
        join_config(EmbedConfig(join_options={"no_such_field": 1}))
