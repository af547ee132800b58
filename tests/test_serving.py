"""What a long-running server answers from (:mod:`discovery.surfaces.serving`), on a copy of the indexed sample lake: a
served search answers exactly as the Python API and as a recorded batch; recording is one group commit for every search
queued behind the one committing, and a failed commit fails every search it held, none acknowledged; a newly published
snapshot is warmed with the searches served last before requests move to it, and the old one's indexes are dropped;
the first snapshot a process serves is warmed with the newest recorded searches; memos follow snapshots, and the page
lists a search this process recorded at once, as the warehouse holds it."""
from __future__ import annotations

import threading

import pytest
from fastapi.encoders import jsonable_encoder

from discovery.data.store import Warehouse
from discovery.data.store.cache import INDEXES
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.surfaces.batch import BatchError, batch_results, recent_batches
from discovery.surfaces.serving import Served
from test_readme import linked_copy
from sessions import session

pytestmark = [pytest.mark.spark]


@pytest.fixture
def warehouse(indexed_lake, tmp_path):
    root = str(tmp_path / "wh")
    linked_copy(indexed_lake[1], root)
    return root


def _union_query(lake: str) -> str:
    return load_ground_truth(lake)["union"][0]["query_table"]


def _batches(root: str) -> list[str]:
    return Warehouse(root).read("query_batches", columns=["batch_id"]).column("batch_id").to_pylist()


def _recorded(root: str) -> int:
    return len(_batches(root))


def test_a_served_search_answers_as_the_python_api_and_records_only_when_asked(indexed_lake, warehouse):
    import discovery

    lake = indexed_lake[0]
    truth = load_ground_truth(lake)
    join_q, join_col = truth["join"][0]["query_table"], truth["join"][0]["query_column"]
    served, ls = Served(session(warehouse)), discovery.open(warehouse)
    before = _recorded(warehouse)            # the session's warehouse may hold batches of other tests
    answer = served.search("join", join_q, {"column": join_col, "top_k": 5}, user="ada", record=False)
    direct = ls.join(join_q, join_col, top_k=5)
    assert jsonable_encoder(answer["answer"]["results"]) == jsonable_encoder(direct["results"])  # stats: timings
    assert answer["batch_id"] is None and not answer["recorded"] and _recorded(warehouse) == before
    kept = served.search("union", _union_query(lake), {"k": 4}, user="ada", record=True)
    assert kept["recorded"] and _recorded(warehouse) == before + 1
    direct = ls.union(_union_query(lake), k=4)["results"]
    assert [r["table_id"] for r in kept["rows"]] == [r["table_id"] for r in direct]
    stored = batch_results(Warehouse(warehouse), kept["batch_id"]).to_pylist()
    assert [(r["rank"], r["table_id"], r["evidence"]) for r in stored] == [
        (r["rank"], r["table_id"], r["evidence"]) for r in kept["rows"]]
    assert recent_batches(Warehouse(warehouse), 1)[0]["name"] == "ui:ada"
    with pytest.raises(BatchError, match="outside the lake"):
        served.search("union", "/etc/passwd", {}, user="ada", record=True)
    assert _recorded(warehouse) == before + 1


def test_searches_queued_behind_a_commit_share_the_next_one_and_land_once(indexed_lake, warehouse):
    served = Served(session(warehouse))
    query = _union_query(indexed_lake[0])
    before = _batches(warehouse)
    recorder, commit = served.recorder, served.recorder._commit
    entered, release = threading.Event(), threading.Event()

    def first_waits(group):
        if not entered.is_set():
            entered.set()
            release.wait(60)
        commit(group)

    recorder._commit = first_waits
    answers: list[dict] = []
    threads = [threading.Thread(target=lambda: answers.append(
        served.search("union", query, {"k": 3}, user="ada", record=True))) for _ in range(6)]
    threads[0].start()
    assert entered.wait(120)
    for t in threads[1:]:
        t.start()
    while len(recorder._queue) < 5 and all(t.is_alive() for t in threads[1:]):
        threading.Event().wait(0.05)                  # the five queue behind the commit in progress
    release.set()
    for t in threads:
        t.join(120)
    assert recorder.commits == 2 and len(answers) == 6
    assert sorted(_batches(warehouse)) == sorted(before + [a["batch_id"] for a in answers])
    for a in answers:
        assert batch_results(Warehouse(warehouse), a["batch_id"]).num_rows == len(a["rows"]) == 3


def test_a_failed_commit_fails_every_search_it_held(indexed_lake, warehouse, monkeypatch):
    served = Served(session(warehouse))
    before = _recorded(warehouse)

    def refuse(*args, **kwargs):
        raise OSError("the disk is full")

    monkeypatch.setattr(served.recorder.warehouse, "append_rows", refuse)
    with pytest.raises(OSError, match="disk is full"):
        served.search("union", _union_query(indexed_lake[0]), {"k": 3}, user="ada", record=True)
    assert _recorded(warehouse) == before and served.recorder.commits == 0
    monkeypatch.undo()
    assert served.search("union", _union_query(indexed_lake[0]), {"k": 3}, user="ada", record=True)["recorded"]
    assert _recorded(warehouse) == before + 1


def test_a_new_snapshot_is_warmed_then_swapped_in_and_the_old_indexes_dropped(indexed_lake, warehouse):
    lake = indexed_lake[0]
    served = Served(session(warehouse), poll_seconds=0)
    before = served.search("union", _union_query(lake), {"k": 3}, user="ada", record=False)
    old = before["snapshot_id"]
    def held(sid: int) -> set[str]:
        return {k[0] for k in INDEXES.keys() if isinstance(k, tuple) and k[1:3] == (warehouse, sid)}

    assert "union" in held(old)
    new = publish_snapshot(Warehouse(warehouse), begin_refresh(session(warehouse)), lake)["snapshot_id"]
    assert served.lakescout().snapshot_id == old          # answers from the old one while the new one warms
    served._loading.join(300)
    assert served.lakescout().snapshot_id == new
    assert "union" in held(new)                           # built by the warm-up, before any request asked
    assert not held(old)
    # a request that began on the old snapshot and ends after the swap does not put its indexes back
    from discovery.api import Lakescout
    from discovery.query.resolve import resolve_query

    late = Lakescout(session(warehouse), old)
    assert late.union(_union_query(lake), k=3)["results"] == before["answer"]["results"]
    assert resolve_query(late.snapshot, _union_query(lake)).table_id is not None
    assert not held(old)
    after = served.search("union", _union_query(lake), {"k": 3}, user="ada", record=False)
    assert after["snapshot_id"] == new and after["answer"]["results"] == before["answer"]["results"]


def test_the_first_snapshot_served_is_warmed_with_the_newest_recorded_searches(indexed_lake, warehouse):
    truth = load_ground_truth(indexed_lake[0])
    join_q, join_col = truth["join"][0]["query_table"], truth["join"][0]["query_column"]
    first = Served(session(warehouse))
    first.search("join", join_q, {"column": join_col, "top_k": 5}, user="ada", record=True)
    first.warming.join(300)
    INDEXES.drop(lambda k: isinstance(k, tuple) and len(k) > 2 and k[1] == warehouse)   # a new server process
    served = Served(session(warehouse))
    sid = served.lakescout().snapshot_id
    served.warming.join(300)
    held = {k[0] for k in INDEXES.keys() if isinstance(k, tuple) and k[1:3] == (warehouse, sid)}
    assert {"join", "names"} <= held                     # before any request asked
    assert [(q.kind, q.query) for q in served._recent["join"]] == [("join", join_q)]
    index = INDEXES.find(("join", warehouse, sid))
    served.search("join", join_q, {"column": join_col, "top_k": 5}, user="ada", record=False)
    assert INDEXES.find(("join", warehouse, sid)) is index   # the request used the warm index, built nothing


def test_memos_follow_snapshots_and_the_page_lists_a_search_it_recorded_as_the_warehouse_holds_it(indexed_lake,
                                                                                                  warehouse):
    """A memo is built once per served snapshot (a recorded search does not rebuild it); the page's panel of recent
    searches adds what this process recorded since from the recorder's memory, and it is exactly the panel a read
    of the warehouse gives."""
    import os
    import sys
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins"))
    from lakescout_ui.data import page_data, served_page

    served = Served(session(warehouse))
    served.lakescout()                                  # the snapshot it serves: memos follow it
    builds = []
    build = lambda: builds.append(1) or len(builds)   # noqa: E731
    assert served.memo("index", build, 3600) == served.memo("index", build, 3600) == 1
    served_page(served)                                  # the page's memos, read before the searches below
    answers = [served.search("union", _union_query(indexed_lake[0]), {"k": k}, user="ada", record=True)
               for k in (2, 3)]
    assert served.memo("index", build, 3600) == 1       # recording rebuilt nothing
    listed = served_page(served)["batches"]
    assert [b["batch_id"] for b in listed[:2]] == [a["batch_id"] for a in reversed(answers)]
    assert listed == page_data(Warehouse(warehouse))["batches"]
    assert [len(b["rows"]) for b in listed[:2]] == [3, 2]


def test_a_serving_process_answers_each_request_on_one_thread(indexed_lake, warehouse, monkeypatch):
    """The process that serves caps numpy's BLAS at one thread a caller once it serves a warehouse (its requests are
    its parallelism), and a served search answers as the Python API does; ``LAKESCOUT_QUERY_THREADS`` sets the count."""
    import discovery
    from threadpoolctl import threadpool_info, threadpool_limits

    from discovery.surfaces import serving as serving_module

    monkeypatch.setattr(serving_module, "_SERVED", {})
    before = max(lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas")
    try:
        answer = serving_module.served(warehouse, lambda: session(warehouse).config).search(
            "union", _union_query(indexed_lake[0]), {"k": 4}, user="ada", record=False)
        blas = [lib for lib in threadpool_info() if lib["user_api"] == "blas"]
        assert blas and all(lib["num_threads"] == 1 for lib in blas)
    finally:  # this test process goes on with the tests that follow
        threadpool_limits(limits=before, user_api="blas")
    direct = discovery.open(warehouse).union(_union_query(indexed_lake[0]), k=4)["results"]
    assert jsonable_encoder(answer["answer"]["results"]) == jsonable_encoder(direct)
    assert serving_module.request_threads() == 1
    monkeypatch.setenv("LAKESCOUT_QUERY_THREADS", "3")
    assert serving_module.request_threads() == 3
