"""Concurrent use: searches commit to ``query_results`` while a refresh commits to the same warehouse.

The commit path is tested with real Delta conflicts made on purpose (a concurrent metadata change that delta-rs
refuses to commit over), so the retry is exercised on every run, not only when threads happen to collide; then a real
api-server answers searches from several clients while a refresh of a changing lake commits and publishes, and every
answer is checked against what the warehouse recorded.
"""
from __future__ import annotations

import os
import threading
import time
from datetime import datetime, UTC

import pyarrow as pa
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError

from discovery.config import MaintenanceConfig
from discovery.data.store import SCHEMAS, Warehouse, list_snapshots, write_data_file
from discovery.data.store import warehouse as store
from discovery.orchestration.refresh import begin_refresh
from sessions import session


def _results(batch: str, n: int) -> pa.Table:
    now = datetime.now(UTC)
    return pa.Table.from_pylist([{"batch_id": batch, "query_id": "q", "snapshot_id": 1, "kind": "nary", "rank": r + 1,
                                  "table_id": r, "path": f"t{r}.csv", "column": None, "score": 1.0 / (r + 1),
                                  "evidence": "{}", "created_at": now} for r in range(n)],
                                schema=SCHEMAS["query_results"])


@pytest.fixture
def wh(tmp_path) -> Warehouse:
    w = Warehouse(str(tmp_path / "wh"))
    w.ensure()
    return w


class Interloper:
    """Replaces ``DeltaTable.create_write_transaction``: before each of the first ``conflicts`` calls goes through,
    another writer changes the table's metadata, so delta-rs finds a conflicting commit after the version this writer
    read and refuses (a real ``CommitFailedError``)."""

    def __init__(self, monkeypatch, conflicts: int):
        self.calls, self.conflicts = 0, conflicts
        original = DeltaTable.create_write_transaction

        def create_write_transaction(dt: DeltaTable, *args, **kwargs):
            self.calls += 1
            if self.calls <= self.conflicts:
                DeltaTable(dt.table_uri).alter.set_table_description(f"changed by another writer ({self.calls})")
            return original(dt, *args, **kwargs)

        monkeypatch.setattr(DeltaTable, "create_write_transaction", create_write_transaction)


def test_an_append_that_loses_to_a_concurrent_commit_is_retried_and_lands_once(wh, monkeypatch):
    monkeypatch.setattr(store, "COMMIT_BACKOFF_SECONDS", 0.0)
    before = wh.version("query_results")
    interloper = Interloper(monkeypatch, conflicts=2)
    result = wh.append_rows("query_results", _results("b1", 4), refresh_id=1, stage="query_batch", attempt="a1",
                            once=False)
    assert interloper.calls == 3                                    # two refused, the third committed
    assert wh.read("query_results").num_rows == 4
    mine = [h for h in wh.table("query_results").history() if h.get("lakescout.attempt") == "a1"]
    assert [h["version"] for h in mine] == [result.version] and result.version > before + 2


def test_a_commit_that_landed_although_an_error_was_raised_is_not_repeated(wh, monkeypatch):
    original = DeltaTable.create_write_transaction
    calls = []

    def lands_then_fails(dt, *args, **kwargs):
        calls.append(1)
        original(dt, *args, **kwargs)
        raise CommitFailedError("connection reset after the commit was written")

    monkeypatch.setattr(DeltaTable, "create_write_transaction", lands_then_fails)
    result = wh.append_rows("query_results", _results("b2", 3), refresh_id=1, stage="query_batch", attempt="a2",
                            once=False)
    assert len(calls) == 1
    assert wh.read("query_results").num_rows == 3
    assert result.version == wh.version("query_results")


def test_retries_are_bounded_and_leave_nothing_committed(wh, monkeypatch):
    monkeypatch.setattr(store, "COMMIT_ATTEMPTS", 3)
    monkeypatch.setattr(store, "COMMIT_BACKOFF_SECONDS", 0.0)
    interloper = Interloper(monkeypatch, conflicts=10**6)
    with pytest.raises(CommitFailedError):
        wh.append_rows("query_results", _results("b3", 2), refresh_id=1, stage="query_batch", attempt="a3",
                       once=False)
    assert interloper.calls == 3
    assert wh.read("query_results").num_rows == 0


def test_a_commit_that_removes_files_is_not_retried(wh, monkeypatch):
    first = wh.append_rows("snapshots", pa.Table.from_pylist([], schema=SCHEMAS["snapshots"]), refresh_id=1,
                           stage="publish", attempt="p1")
    assert first.version is not None
    current = wh.files("snapshots").column("path").to_pylist()
    interloper = Interloper(monkeypatch, conflicts=1)
    with pytest.raises(CommitFailedError):
        wh.append_rows("snapshots", pa.Table.from_pylist([], schema=SCHEMAS["snapshots"]), refresh_id=2,
                       stage="maintenance", attempt="m1", replace_paths=current, once=False)
    assert interloper.calls == 1                                    # its removals were decided on a stale version
    assert wh.files("snapshots").column("path").to_pylist() == current


def test_a_refresh_starting_spares_the_file_of_a_search_still_committing(wh):
    uri = wh.table_uri("query_results")
    grace = MaintenanceConfig().grace_seconds
    in_flight = write_data_file(uri, _results("b4", 5), 1, "query_batch", "inflight")
    stale = write_data_file(uri, _results("old", 1), 1, "query_batch", "crashed")
    long_ago = time.time() - 2 * grace
    os.utime(os.path.join(uri, stale.path), (long_ago, long_ago))
    index_orphan = write_data_file(wh.table_uri("catalog"), pa.Table.from_pylist([], schema=SCHEMAS["catalog"]), 1,
                                   "scan", "killed")
    os.utime(os.path.join(wh.table_uri("catalog"), index_orphan.path), (long_ago, long_ago))
    begin_refresh(session(wh.root))                                          # cleans orphans of every table
    assert os.path.exists(os.path.join(uri, in_flight.path))        # a writer may still commit it
    assert not os.path.exists(os.path.join(uri, stale.path))        # an old crash's file goes
    assert not os.path.exists(os.path.join(wh.table_uri("catalog"), index_orphan.path))  # so does a killed stage's
    wh.commit("query_results", [in_flight], [], refresh_id=1, stage="query_batch", attempt="inflight", once=False)
    assert wh.read("query_results").num_rows == 5


# -- a real api-server under concurrent searches while a refresh commits ----------------------------------------------
CLIENTS, PER_CLIENT = 8, 4


@pytest.mark.spark
@pytest.mark.airflow
@pytest.mark.slow
def test_concurrent_searches_while_a_refresh_commits(spark, demo_lake, tmp_path):
    import random

    from airflow_server import api_server, bearer_token
    from lake_edits import append_last_rows
    from page_load import check_answers, run_clients
    from test_batch import nary_lake, refresh_for_nary

    env = nary_lake(demo_lake, str(tmp_path / "lake"))
    warehouse = str(tmp_path / "wh")
    first = refresh_for_nary(spark, warehouse, env["lake"])
    forms = [{"kind": "nary", "table": env["query"], "key": ",".join(env["key"]), "k": k} for k in ("3", "5")]
    with api_server(str(tmp_path / "airflow"), warehouse, {"admin": ("admin", "concurrency-test")}) as url:
        token = bearer_token(url, "admin", "concurrency-test")
        published = []

        def refresh() -> None:
            append_last_rows(env["lake"], 3, random.Random(5))
            published.append(refresh_for_nary(spark, warehouse, env["lake"]))

        refresher = threading.Thread(target=refresh)
        refresher.start()
        answers = run_clients(url, token, forms, CLIENTS, per_client=PER_CLIENT)
        refresher.join()
    assert published and published[0] > first
    assert {s.snapshot_id for s in list_snapshots(Warehouse(warehouse))} == {first, published[0]}
    checks = check_answers(warehouse, answers)
    assert len(answers) == CLIENTS * PER_CLIENT
    assert checks["errors"] == 0, checks["error_samples"]
    assert checks["answered"] == CLIENTS * PER_CLIENT
    assert checks["unpublished_snapshot"] == 0
    assert checks["rows_recorded"] == checks["rows_returned"] > 0
    assert checks["batches_with_other_row_count"] == checks["batches_not_in_one_file"] == 0
    assert checks["batches_not_recorded_once"] == 0
