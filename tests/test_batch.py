"""Query batches and standing queries on a real warehouse built by the refresh stages from part of the sample lake.

The warehouse is built by the stages n-ary search needs (scan, profile, xash) and published as a snapshot, so the
batches run the real ``Lakescout.nary`` search; results are compared with that search called directly.
"""
from __future__ import annotations

import collections
import csv
import importlib
import json
import os
import shutil

from datetime import UTC, datetime, timedelta

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

import discovery
from discovery.config import load_config
from discovery.data.store import SCHEMAS, Warehouse, new_attempt_token
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.query.resolve import read_query_file
from discovery.stages import StageContext
from discovery.surfaces.batch import (BatchError, batch_results, first_run, parse_spec, recent_batches, recorded_batch,
                                      run_batch, validate_batch)
from discovery.surfaces.standing import (pinned_snapshots, run_standing, save_standing, standing_changes,
                                         standing_queries)
from sessions import session

pytestmark = [pytest.mark.spark]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

NARY_STAGES = ("scan", "profile", "xash")


def refresh_for_nary(spark, warehouse: str, lake: str) -> int:
    """Run the refresh stages n-ary search reads (scan, profile, xash) and publish; returns the snapshot id."""
    from spark_jobs.common import execute
    from spark_jobs.stages import STAGES

    refresh_id = begin_refresh(session(warehouse))
    config = load_config(None)
    for stage in NARY_STAGES:
        module = importlib.import_module(f"spark_jobs.{STAGES[stage]}")
        ctx = StageContext(warehouse, lake, refresh_id, new_attempt_token(), False, config)
        assert execute(spark, module.STAGE, module.run, ctx) == 0, stage
    return publish_snapshot(Warehouse(warehouse), refresh_id, lake)["snapshot_id"]


def nary_lake(demo_lake: str, dest: str) -> dict:
    """Copy one n-ary query table, the tables joinable with it and the broken files; return the query."""
    gt = load_ground_truth(demo_lake)
    groups = collections.defaultdict(list)
    for r in gt["nary"]:
        groups[(r["query_table"], tuple(r["query_columns"]))].append(r)
    (query, key), rows = max(groups.items(), key=lambda kv: (len(kv[1]), kv[0]))
    lake_tables = sorted({r["lake_table"] for r in rows if r["joinable_tuples"] > 0})[:12]
    for rel in [query, *lake_tables, *(b["path"] for b in gt["broken"])]:
        os.makedirs(os.path.dirname(os.path.join(dest, rel)), exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), os.path.join(dest, rel))
    return {"query": query, "key": list(key), "tables": lake_tables, "lake": dest}


@pytest.fixture(scope="module")
def nary_env(spark, demo_lake, tmp_path_factory):
    root = tmp_path_factory.mktemp("batch")
    env = nary_lake(demo_lake, str(root / "lake"))
    env["warehouse"] = str(root / "wh")
    env["snapshot"] = refresh_for_nary(spark, env["warehouse"], env["lake"])
    return env


def _count(wh: str, table: str) -> int:
    return Warehouse(wh).read(table).num_rows


# -- validation -----------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("query_patch, field", [
    ({"kind": "fuzzy"}, "kind"),
    ({"query": "no/such/file.csv"}, "query"),
    ({"query": 999999}, "query"),
    ({"key": ["country", "no_such_column"]}, "key"),
    ({"k": 0}, "k"),
    ({"k": "ten"}, "k"),
    ({"method": "quantum"}, "method"),
    ({"colour": "blue"}, "colour"),
    ({"initial_column": "nope"}, "initial_column"),
])
def test_a_bad_query_is_refused_naming_query_and_field(nary_env, query_patch, field):
    good = {"id": "good", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], "k": 3}
    bad = {"id": "bad", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], **query_patch}
    before = _count(nary_env["warehouse"], "query_results")
    with pytest.raises(BatchError) as err:
        run_batch(session(nary_env["warehouse"]), {"queries": [good, bad]})
    message = str(err.value)
    assert "query 1 (id 'bad')" in message and repr(field) in message, message
    assert _count(nary_env["warehouse"], "query_results") == before  # nothing of the good query was written


@pytest.mark.parametrize("spec, text", [
    ({"queries": []}, "non-empty"),
    ({"queries": [{"kind": "nary", "query": "x"}], "extra": 1}, "unknown field"),
    ({"queries": [{"id": "a", "kind": "nary", "query": "x"}, {"id": "a", "kind": "nary", "query": "y"}]},
     "duplicate"),
    ({"queries": [{"kind": "nary", "query": "x", "k": 1, "params": {"k": 2}}]}, "both inline"),
    ({"snapshot_id": "latest", "queries": [{"kind": "nary", "query": "x"}]}, "snapshot_id"),
    ("[not json", "not valid JSON"),
    ({"queries": [{"kind": "union", "query": pa.table({"city": ["Oslo"]})}]}, "recorded as JSON"),
])
def test_malformed_specs_are_refused(spec, text):
    with pytest.raises(BatchError, match=text):
        parse_spec(spec)


def test_missing_required_parameter_and_unknown_snapshot(nary_env):
    with pytest.raises(BatchError, match="field 'key'.*required"):
        validate_batch(session(nary_env["warehouse"]), [{"kind": "nary", "query": nary_env["query"]}])
    with pytest.raises(BatchError, match="snapshot_id"):
        validate_batch(session(nary_env["warehouse"]), {"snapshot_id": 4242, "queries": [
            {"kind": "nary", "query": nary_env["query"], "key": nary_env["key"]}]})


# -- running ----------------------------------------------------------------------------------------------------------
def test_batch_results_equal_the_search_and_are_committed_once(nary_env):
    wh = nary_env["warehouse"]
    spec = {"name": "nightly", "queries": [
        {"id": "by-path", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], "k": 5},
        {"id": "exhaustive", "kind": "nary", "query": nary_env["query"],
         "params": {"key": ",".join(nary_env["key"]), "k": 3, "method": "exhaustive"}},
    ]}
    version = Warehouse(wh).version("query_results")
    summary = run_batch(session(wh), spec, batch_id="b-equal")
    assert Warehouse(wh).version("query_results") == version + 1      # one commit for the whole batch
    ls = discovery.open(wh)
    rows = batch_results(Warehouse(wh), "b-equal")
    for qid, k, method in (("by-path", 5, "mate"), ("exhaustive", 3, "exhaustive")):
        direct = ls.nary(nary_env["query"], nary_env["key"], k=k, method=method)["results"]
        mine = rows.filter(pc.equal(rows["query_id"], qid)).to_pylist()
        assert [(r["rank"], r["table_id"], r["path"], r["score"]) for r in mine] == \
            [(r["rank"], r["table_id"], r["path"], float(r["joinability"])) for r in direct]
        assert all(r["snapshot_id"] == nary_env["snapshot"] and r["kind"] == "nary" for r in mine)
        assert all("mapping" in r["evidence"] for r in mine)
    assert summary["results"] == rows.num_rows > 0
    assert [q["id"] for q in summary["queries"]] == ["by-path", "exhaustive"]
    # the same batch id again: the recorded summary, no second commit
    assert run_batch(session(wh), spec, batch_id="b-equal") == summary
    assert Warehouse(wh).version("query_results") == version + 1


def test_a_batch_recorded_twice_by_runs_that_raced_is_read_once(nary_env):
    """Two runs of one batch id that both passed the check before either wrote: the rows of both are stored (the
    second appended here as it would, a second later), and every reader keeps the first run's."""
    wh = nary_env["warehouse"]
    spec = [{"id": "q", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], "k": 4}]
    summary = run_batch(session(wh), spec, batch_id="b-race")
    first = batch_results(Warehouse(wh), "b-race")
    store = Warehouse(wh)
    for name in ("query_results", "query_batches"):
        rows = store.read(name, filter=pc.field("batch_id") == "b-race")
        later = pc.add(rows["created_at"], pa.scalar(timedelta(seconds=1)))
        rows = rows.set_column(rows.schema.get_field_index("created_at"), "created_at", later)
        if name == "query_batches":
            rows = rows.set_column(rows.schema.get_field_index("summary"), "summary", pa.array(['{"second": 1}']))
        store.append_rows(name, rows, refresh_id=1, stage="query_batch", attempt=new_attempt_token(), once=False)
    assert store.read("query_results", filter=pc.field("batch_id") == "b-race").num_rows == 2 * first.num_rows
    assert batch_results(Warehouse(wh), "b-race").equals(first)
    assert recorded_batch(Warehouse(wh), "b-race") == summary
    assert [b["batch_id"] for b in recent_batches(Warehouse(wh), 100)].count("b-race") == 1


def test_the_newest_batches_are_the_newest_first_runs_of_every_batch(nary_env):
    """``recent_batches`` reads the wide columns of the newest batches only; what it lists is the plain definition's:
    every batch's first run, newest first, the first ``limit`` (a batch recorded twice, above, counts once, at its
    first run's time)."""
    from discovery.surfaces.batch import recent_queries

    wh = Warehouse(nary_env["warehouse"])
    spec = [{"id": "q", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], "k": 2}]
    for i in range(3):
        run_batch(session(wh), spec, batch_id=f"b-newest-{i}")
    every = first_run(wh.read("query_batches"), ["batch_id"]).sort_by([("created_at", "descending")])
    for limit in (1, 2, 3, every.num_rows, every.num_rows + 5):
        want = every.slice(0, limit).to_pylist()
        got = recent_batches(wh, limit)
        assert [b["batch_id"] for b in got] == [r["batch_id"] for r in want]
        assert [b["summary"] for b in got] == [json.loads(r["summary"]) for r in want]
        assert [q.id for q in recent_queries(wh, limit)] == [q["id"] for r in want
                                                             for q in json.loads(r["spec"])["queries"]]


def test_first_run_keeps_the_earliest_row_of_every_key():
    rng = np.random.default_rng(3)
    for _ in range(50):
        n = int(rng.integers(0, 30))
        keys = rng.integers(0, 4, n)
        at = rng.permutation(n)  # distinct times
        t = pa.table({"k": keys, "created_at": pa.array(at, pa.int64()), "i": np.arange(n)})
        expected = sorted(min(np.flatnonzero(keys == k), key=lambda i: at[i]) for k in set(keys.tolist()))
        assert first_run(t, ["k"]).column("i").to_pylist() == expected


def test_a_lake_table_id_query_leaves_itself_out(nary_env):
    wh = nary_env["warehouse"]
    cat = Warehouse(wh).read("catalog")
    tid = cat.filter(pc.equal(cat["path"], nary_env["query"]))["table_id"][0].as_py()
    run_batch(session(wh), [{"kind": "nary", "query": tid, "key": nary_env["key"], "k": 10}], batch_id="b-self")
    rows = batch_results(Warehouse(wh), "b-self")
    assert rows.num_rows > 0 and tid not in rows.column("table_id").to_pylist()


# -- served batches: the page and the DAGs name lake tables only ------------------------------------------------------
@pytest.fixture
def escaping(nary_env, tmp_path):
    """A copy of the query table outside the lake with a marker cell, and a catalogued lake table temporarily
    replaced by a link to it (a link inside the lake that leads out of it)."""
    outside = tmp_path / "outside" / "copy.csv"
    outside.parent.mkdir()
    table = read_query_file(os.path.join(nary_env["lake"], nary_env["query"]))
    with open(outside, "w", newline="") as fh:
        out = csv.writer(fh)
        out.writerows([table.names, *zip(*(c.to_pylist() for c in table.columns)), ["SECRET-CELL"] * len(table.names)])
    linked = nary_env["tables"][-1]
    lake_file = os.path.join(nary_env["lake"], linked)
    moved = str(tmp_path / "moved.csv")
    shutil.move(lake_file, moved)
    os.symlink(outside, lake_file)
    cat = Warehouse(nary_env["warehouse"]).read("catalog")
    ids = dict(zip(cat["path"].to_pylist(), cat["table_id"].to_pylist()))
    try:
        up = os.path.join(nary_env["lake"], os.path.relpath(outside, nary_env["lake"]))   # <lake>/../../<outside>
        yield {"outside": str(outside), "linked": linked, "linked_id": ids[linked], "root": str(tmp_path),
               "lake": nary_env["lake"], "up": up}
    finally:
        os.remove(lake_file)
        shutil.move(moved, lake_file)


@pytest.mark.parametrize("named, cwd, reason", [
    ("{outside}", "{root}", "outside the lake"),
    ("outside/copy.csv", "{root}", "not a table of the lake"),
    ("../outside/copy.csv", "{root}/outside", "'..' may not appear"),
    ("{up}", "{root}", "'..' may not appear"),
    ("{linked}", "{root}", "link to a file outside the lake"),
    ("{linked_id}", "{root}", "link to a file outside the lake"),
])
def test_a_served_batch_refuses_every_path_but_a_lake_table(nary_env, escaping, monkeypatch, named, cwd, reason):
    query = named.format(**escaping)
    monkeypatch.chdir(cwd.format(**escaping))
    spec = [{"kind": "nary", "query": query, "key": nary_env["key"], "k": 3}]
    before = _count(nary_env["warehouse"], "query_results")
    if reason.startswith("link"):
        # a lake table that became a link out of the lake is read by no path, the CLI and Python API included
        with pytest.raises(BatchError, match="leads out of the lake"):
            validate_batch(session(nary_env["warehouse"]), spec)
    else:
        validate_batch(session(nary_env["warehouse"]), spec)     # unserved (CLI, Python API): the file is read
    with pytest.raises(BatchError) as err:
        run_batch(session(nary_env["warehouse"]), spec, served=True)
    message = str(err.value)
    assert f"query 0 (id 'q1'): field 'query': query {query!r} is refused" in message and reason in message, message
    assert "SECRET" not in message
    assert _count(nary_env["warehouse"], "query_results") == before


def test_a_served_batch_answers_lake_tables_by_path_id_and_absolute_lake_path(nary_env):
    wh, lake = nary_env["warehouse"], nary_env["lake"]
    cat = Warehouse(wh).read("catalog")
    tid = cat.filter(pc.equal(cat["path"], nary_env["query"]))["table_id"][0].as_py()
    names = {"path": nary_env["query"], "id": tid, "absolute": os.path.join(lake, nary_env["query"])}
    spec = {"name": "served", "queries": [{"id": n, "kind": "nary", "query": q, "key": nary_env["key"], "k": 5}
                                          for n, q in names.items()]}
    summary = run_batch(session(wh), spec, batch_id="b-served", served=True)
    direct = [(r["table_id"], float(r["joinability"]))
              for r in discovery.open(wh).nary(tid, nary_env["key"], k=5)["results"]]
    rows = batch_results(Warehouse(wh), "b-served")
    assert direct and summary["results"] == 3 * len(direct)
    for qid in names:
        mine = rows.filter(pc.equal(rows["query_id"], qid))
        assert list(zip(mine["table_id"].to_pylist(), mine["score"].to_pylist())) == direct, qid


def test_uploads_of_a_served_batch_are_read_under_their_name(nary_env, escaping):
    wh = nary_env["warehouse"]
    spec = [{"kind": "nary", "query": "upload:copy.csv", "key": nary_env["key"], "k": 5}]
    summary = run_batch(session(wh), spec, batch_id="b-upload", served=True,
                        uploads={"upload:copy.csv": escaping["outside"]})
    direct = discovery.open(wh).nary(escaping["outside"], nary_env["key"], k=5)["results"]
    rows = batch_results(Warehouse(wh), "b-upload")
    assert summary["queries"][0]["query"] == "upload:copy.csv" and rows.num_rows == len(direct) > 0
    assert rows["table_id"].to_pylist() == [r["table_id"] for r in direct]
    broken = os.path.join(escaping["root"], "broken.csv")
    with open(broken, "w") as fh:
        fh.write('a,b\n1,"SECRET-CELL opens a quote\n2,3\n')
    with pytest.raises(BatchError) as err:
        run_batch(session(wh), [{"kind": "nary", "query": "upload:broken.csv", "key": ["a"]}], served=True,
                  uploads={"upload:broken.csv": broken})
    assert "query file 'upload:broken.csv' cannot be read" in str(err.value) and "SECRET" not in str(err.value)


def test_query_batch_dag_and_standing_queries_are_served(nary_env, escaping, monkeypatch):
    from airflow.models.dagbag import DagBag

    # this test's warehouse is not the deployment's: allow its folder, as a deployment serving several would
    monkeypatch.setenv("LAKESCOUT_ALLOWED_ROOTS", os.path.dirname(nary_env["warehouse"]))
    bag = DagBag(dag_folder=os.path.join(ROOT, "dags", "query_batch.py"), include_examples=False)
    validate = bag.dags["query_batch"].get_task("validate").python_callable
    params = {"name": "dag", "snapshot_id": None, "warehouse": nary_env["warehouse"]}
    for query in (escaping["outside"], escaping["linked"]):
        with pytest.raises(BatchError, match="is refused"):
            validate(params={**params, "queries": [{"kind": "nary", "query": query, "key": nary_env["key"]}]})
    ok = validate(params={**params, "queries": [{"kind": "nary", "query": nary_env["query"], "key": nary_env["key"]}]})
    assert ok["snapshot_id"] == nary_env["snapshot"]
    with pytest.raises(BatchError, match="outside the lake"):
        save_standing(session(nary_env["warehouse"]), "outside", [{"kind": "nary", "query": escaping["outside"],
                                                          "key": nary_env["key"]}])
    assert "outside" not in standing_queries(Warehouse(nary_env["warehouse"]))


# -- standing queries -------------------------------------------------------------------------------------------------
def test_standing_query_records_changes_between_snapshots(nary_env, spark):
    wh, lake = nary_env["warehouse"], nary_env["lake"]
    spec = [{"id": "stores", "kind": "nary", "query": nary_env["query"], "key": nary_env["key"], "k": 20}]
    with pytest.raises(BatchError, match="snapshot_id"):
        save_standing(session(wh), "stores", {"snapshot_id": 1, "queries": spec})
    with pytest.raises(BatchError, match="name"):
        save_standing(session(wh), "Bad Name!", spec)
    save_standing(session(wh), "stores", spec)
    assert list(standing_queries(Warehouse(wh))) == ["stores"]

    first = run_standing(session(wh), "stores")
    assert first["previous_snapshot_id"] is None and first["changes"]["new"] == first["results"] > 0
    before = {r["table_id"]: r for r in batch_results(Warehouse(wh), first["batch_id"]).to_pylist()}

    # the lake changes: one result table disappears, one joinable table is added under a new name
    dropped_path = nary_env["tables"][0]
    os.remove(os.path.join(lake, dropped_path))
    added = "copies/" + os.path.basename(nary_env["tables"][1])
    os.makedirs(os.path.join(lake, "copies"), exist_ok=True)
    shutil.copy2(os.path.join(lake, nary_env["tables"][1]), os.path.join(lake, added))
    second_snapshot = refresh_for_nary(spark, wh, lake)

    second = run_standing(session(wh), "stores")
    assert second["snapshot_id"] == second_snapshot and second["previous_snapshot_id"] == first["snapshot_id"]
    changes = standing_changes(Warehouse(wh), "stores")
    latest = changes.filter(pc.equal(changes["snapshot_id"], second_snapshot)).to_pylist()
    by_change = collections.defaultdict(set)
    for c in latest:
        by_change[c["change"]].add(c["path"])
    after = {r["table_id"]: r for r in batch_results(Warehouse(wh), second["batch_id"]).to_pylist()}
    expect_new = {r["path"] for t, r in after.items() if t not in before}
    expect_dropped = {r["path"] for t, r in before.items() if t not in after}
    assert added in expect_new and dropped_path in expect_dropped
    assert by_change["new"] == expect_new and by_change["dropped"] == expect_dropped
    assert second["changes"]["new"] == len(expect_new) and second["changes"]["dropped"] == len(expect_dropped)
    # a re-run on the same snapshot records nothing more, and that snapshot is the one pinned for retention
    n = standing_changes(Warehouse(wh)).num_rows
    assert run_standing(session(wh), "stores")["rerun"] is True
    assert standing_changes(Warehouse(wh)).num_rows == n
    assert pinned_snapshots(Warehouse(wh)) == {second_snapshot}


def test_the_newest_keys_read_from_few_files_equal_every_files_first_runs(tmp_path):
    """:func:`discovery.surfaces.batch._newest_keys` reads files newest first by their statistics; on random histories
    (files of one to four batches, batches recorded again later in newer files, files written out of time order) it
    lists exactly the first runs of every file, newest first, for every limit."""
    from discovery.surfaces.batch import _newest_keys

    rng = np.random.default_rng(11)
    base = datetime(2026, 1, 1, tzinfo=UTC)
    for trial in range(4):
        wh = Warehouse(str(tmp_path / f"wh{trial}"))
        wh.ensure()
        stamps = rng.permutation(100_000)[:250] * 1_000_003  # distinct times, microseconds apart by millions
        ids, t = [], 0
        for _ in range(int(rng.integers(40, 60))):
            rows = []
            for _ in range(int(rng.integers(1, 5))):
                rerun = ids and rng.random() < 0.25
                bid = ids[int(rng.integers(len(ids)))] if rerun else f"b-{trial}-{len(ids):03d}"
                if not rerun:
                    ids.append(bid)
                rows.append({"batch_id": bid, "name": "n", "standing": False, "snapshot_id": 1, "queries": 1,
                             "results": 0, "seconds": 0.0, "spec": "{}", "summary": "{}",
                             "created_at": base + timedelta(microseconds=int(stamps[t]))})
                t += 1
            wh.append_rows("query_batches", pa.Table.from_pylist(rows, schema=SCHEMAS["query_batches"]),
                           refresh_id=1, stage="query_batch", attempt=new_attempt_token(), once=False)
        every = first_run(wh.read("query_batches"), ["batch_id"]).sort_by([("created_at", "descending")])
        for limit in (1, 2, 3, 5, 8, 20, len(ids), len(ids) + 3):
            got = _newest_keys(wh, limit)
            assert got.column("batch_id").to_pylist() == every.column("batch_id").to_pylist()[:limit]
            assert got.column("created_at").to_pylist() == every.column("created_at").to_pylist()[:limit]


def test_recent_batches_listed_before_maintenance_vacuumed_a_file_are_read_again(tmp_path, monkeypatch):
    """Maintenance may compact ``query_batches`` and vacuum the files it replaced between a reader's listing and its
    reading (a served page rebuilding its panel, seen under a soak): the newest batches are read again from the new
    listing, not answered with a missing file."""
    from discovery.data.store.files import write_data_file

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    base = datetime(2026, 1, 1, tzinfo=UTC)
    rows = [{"batch_id": f"b-{i}", "name": "n", "standing": False, "snapshot_id": 1, "queries": 1, "results": 0,
             "seconds": 0.0, "spec": "{}", "summary": "{}", "created_at": base + timedelta(seconds=i)}
            for i in range(3)]
    uri = wh.table_uri("query_batches")
    old = write_data_file(uri, pa.Table.from_pylist(rows, schema=SCHEMAS["query_batches"]), 1, "query_batch", "a")
    wh.commit("query_batches", [old], [], refresh_id=1, stage="query_batch", attempt="a")
    listed = wh.files("query_batches", stats=("created_at", "batch_id"))
    compacted = write_data_file(uri, pa.Table.from_pylist(rows, schema=SCHEMAS["query_batches"]), 2, "maintenance",
                                "b")
    wh.commit("query_batches", [compacted], [old.path], refresh_id=2, stage="maintenance", attempt="b")
    os.remove(os.path.join(uri, old.path))                          # vacuumed
    real, calls = Warehouse.files, []

    def listed_first(table: str, *args, **kwargs):
        calls.append(table)
        return listed if len(calls) == 1 else real(wh, table, *args, **kwargs)

    monkeypatch.setattr(wh, "files", listed_first)
    assert [b["batch_id"] for b in recent_batches(wh, 2)] == ["b-2", "b-1"] and len(calls) == 2
