"""The process-wide index cache: LRU by bytes, one build per key under concurrency, failed builds not kept."""
from __future__ import annotations

import threading

import numpy as np
import pyarrow as pa
import pytest

from discovery.data.store.cache import IndexCache, deep_nbytes


def _array(mb: float) -> np.ndarray:
    return np.zeros(int(mb * 1024 * 1024), np.uint8)


def test_least_recently_used_entries_leave_first_when_the_budget_is_exceeded():
    cache = IndexCache(budget_bytes=3 * 1024 * 1024 + 4096)
    for key in "abc":
        cache.get(key, lambda: _array(1))
    cache.get("a", lambda: pytest.fail("a is cached"))     # a becomes the most recently used
    cache.get("d", lambda: _array(1))                        # over budget: b, the least recently used, leaves
    assert [k in cache for k in "abcd"] == [True, False, True, True]
    assert cache.nbytes <= cache.budget_bytes


def test_an_index_larger_than_the_budget_is_returned_but_not_kept():
    cache = IndexCache(budget_bytes=1024 * 1024)
    cache.get("small", lambda: _array(0.5))
    big = cache.get("big", lambda: _array(2))
    assert big.nbytes == 2 * 1024 * 1024
    assert "big" not in cache and "small" in cache


def test_a_grown_index_is_remeasured_and_evicts_others():
    cache = IndexCache(budget_bytes=3 * 1024 * 1024)
    held = {"parts": [_array(1)]}
    cache.get("grows", lambda: held)
    cache.get("other", lambda: _array(1))
    held["parts"].append(_array(1.5))
    cache.get("grows", lambda: pytest.fail("cached"))
    cache.put("grows", held)                                 # 2.5 MiB + 1 MiB: the older entry goes
    assert "grows" in cache and "other" not in cache


def test_concurrent_requests_for_one_key_build_it_once():
    cache, builds, release = IndexCache(budget_bytes=1 << 30), [], threading.Event()
    waiting = threading.Barrier(9)

    def build():
        builds.append(1)
        release.wait()
        return _array(0.1)

    results = []

    def ask():
        waiting.wait()
        results.append(cache.get("k", build))

    threads = [threading.Thread(target=ask) for _ in range(8)]
    for t in threads:
        t.start()
    waiting.wait()
    release.set()
    for t in threads:
        t.join()
    assert len(builds) == 1 and len(results) == 8 and all(r is results[0] for r in results)


def test_a_failed_build_is_not_kept_and_the_next_request_builds_again():
    cache = IndexCache(budget_bytes=1 << 30)

    def broken():
        raise RuntimeError("unreadable snapshot")

    with pytest.raises(RuntimeError):
        cache.get("k", broken)
    assert "k" not in cache
    assert cache.get("k", lambda: 7) == 7


def test_retired_snapshots_are_dropped_and_not_kept_again():
    cache = IndexCache(1 << 20, size_of=lambda v: 10)
    for sid in (1, 2, 3):
        cache.put(("join", "/wh", sid), sid)
    cache.put(("join", "/other", 1), "other warehouse")
    cache.put(("encoder", "/wh", "join-abc"), "not per snapshot")
    assert cache.retire("/wh", 3) == 2
    assert set(cache.keys()) == {("join", "/wh", 3), ("join", "/other", 1), ("encoder", "/wh", "join-abc")}
    built = []
    assert cache.get(("union", "/wh", 2), lambda: built.append(1) or "late") == "late"   # a request still on 2
    assert ("union", "/wh", 2) not in cache and cache.nbytes == 30
    cache.get(("union", "/wh", 2), lambda: built.append(1) or "late")
    assert built == [1, 1]                                                  # answered, never kept
    assert cache.get(("union", "/wh", 4), lambda: "newer") == "newer" and ("union", "/wh", 4) in cache
    cache.retire("/wh", 2)                                                  # a floor never moves back
    cache.put(("join", "/wh", 2), 2)
    assert ("join", "/wh", 2) not in cache


def test_deep_nbytes_counts_buffers_strings_and_attributes_once():
    vectors = np.ones((1000, 8), np.float32)

    class Index:
        def __init__(self):
            self.vectors = vectors
            self.alias = vectors                              # the same buffer is counted once
            self.values = np.array([f"{i}" + "x" * 100 for i in range(10)], dtype=object)
            self.table = pa.table({"a": pa.array(np.arange(1000, dtype=np.int64))})

    size = deep_nbytes(Index())
    floor = vectors.nbytes + 10 * 100 + 8000
    assert floor < size < floor + 8192


def test_deep_nbytes_counts_an_hnsw_graph_by_its_capacity():
    import hnswlib

    graph = hnswlib.Index("ip", 32)
    graph.init_index(2000, M=8)
    graph.add_items(np.random.default_rng(0).random((100, 32), dtype=np.float32))
    assert 2000 * 32 * 4 < deep_nbytes({"graph": graph}) < 2 * 2000 * (32 * 4 + 2 * 8 * 4 + 16)


@pytest.mark.spark
def test_searches_keep_their_snapshot_indexes_within_the_process_budget(indexed_lake, monkeypatch):
    """Union, join and n-ary searches put their loaded indexes in the one cache; a budget too small for them keeps none
    and answers the same, and a sufficient budget keeps both, counted in bytes."""
    import discovery
    from discovery.data.store.cache import INDEXES

    _, warehouse = indexed_lake
    ls = discovery.open(warehouse)
    queries = {"union": lambda: ls.union("finance/registers/firms.tsv", k=5),
               "join": lambda: ls.join("partners/vendor_master.csv", "Vendor", top_k=5),
               "nary": lambda: ls.nary("retail/stores/store_locations_q1.csv", ["country", "city"], k=5)}
    monkeypatch.setattr(INDEXES, "budget_bytes", 1 << 40)
    INDEXES.clear()
    kept = {kind: run()["results"] for kind, run in queries.items()}
    # plus the catalog, columns and models a query consults, the encoders of the query table, the values and postings
    # of the lake tables the join returned, whether the snapshot's quantities are this code's (a union query of an
    # indexed lake table takes its stored rows), the parsed query files, each still the catalog's, and the union's
    # lexical table vectors, the query table's terms and the lookups of catalog and column rows
    kinds = {key[0] for key in INDEXES.keys()}
    assert kinds == {"union", "join", "nary", "table", "model", "encoders", "encoder", "join-values", "join-postings",
                     "quantity_rule", "query-table", "union-lexical", "query-terms", "lookup"}
    assert INDEXES.nbytes > 0
    assert "encoder.join" in {key[2] for key in INDEXES.keys() if key[0] == "encoder"}
    monkeypatch.setattr(INDEXES, "budget_bytes", 1024)
    INDEXES.clear()
    assert {kind: run()["results"] for kind, run in queries.items()} == kept
    held = {key[0] for key in INDEXES.keys()}
    assert INDEXES.nbytes <= 1024 and not held & {"union", "join", "nary", "table", "encoders", "encoder",
                                                  "union-lexical"}


def _graphs(index) -> list:
    """Weak references to the HNSW graphs an index holds (as attributes, or in a dict of them by kind)."""
    import weakref

    held = [v for value in vars(index).values() for v in (value.values() if isinstance(value, dict) else [value])]
    return [weakref.ref(v) for v in held if type(v).__module__ == "hnswlib"]


def _evict_all(cache: IndexCache) -> None:
    cache.budget_bytes = 64
    cache.put("newcomer", 0)                                  # a small int: every older entry leaves
    assert cache.keys() == ["newcomer"]


def _graph_floor(elements: int, dim: int) -> int:
    """hnswlib's memory for ``elements`` vectors of ``dim`` float32 and 2M links each (M = 16) at least."""
    return elements * (dim * 4 + 2 * 16 * 4)


def test_union_graphs_built_on_first_use_are_counted_once_remeasured_and_leave_with_their_index():
    import gc

    from discovery.indexes.union import UnionIndex
    from synthetic_lake import build_index_inputs, draw_tables, generate_lake, lake_model

    model = lake_model(16, 30, 6, 5, max_columns=6, seed=3)
    lake = generate_lake(model, 300, seed=4)
    centroids, parts = build_index_inputs(lake, 12)
    cache = IndexCache(budget_bytes=1 << 40)
    index = cache.get("union", lambda: UnionIndex.build(lake.column_vectors, lake.column_table_ids,
                                                         lake.column_ordinals, centroids, parts, lake.table_vectors))
    query, _, _ = draw_tables(model, 1, seed=5)
    before = cache.nbytes
    index.search(query, 5, "starmie")
    index.search(query, 5, "tactus", query_table_vector=query.mean(axis=0))
    index.search(query, 5, "pgtus++-approx")
    assert index.graphs == 3
    cache.put("union", index)
    floor = sum(_graph_floor(*v.shape) for v in (lake.column_vectors, lake.table_vectors, centroids))
    assert cache.nbytes - before >= floor
    graphs = _graphs(index)
    del index
    _evict_all(cache)
    gc.collect()
    assert len(graphs) == 3 and all(g() is None for g in graphs)


@pytest.mark.spark
def test_union_search_counts_the_hnsw_graphs_it_builds_and_eviction_frees_them(indexed_lake, monkeypatch):
    """starmie, tactus and the approximate mode build their graph on first use, after the index entered the cache:
    the cache's byte count must hold it, and evicting the entry must free it."""
    import gc

    import discovery
    from discovery.indexes.union import service

    _, warehouse = indexed_lake
    cache = IndexCache(budget_bytes=1 << 40)                  # holds the union index alone
    monkeypatch.setattr(service, "INDEXES", cache)
    ls = discovery.open(warehouse)
    query = "finance/registers/firms.tsv"
    service.loaded_index(ls.snapshot)                         # the full index the graph-building methods search
    (key,) = cache.keys()
    index = cache.get(key, lambda: pytest.fail("cached")).index
    base, counted = cache.nbytes, 0
    for method, vectors in (("starmie", index.vectors), ("tactus", index.table_vectors),
                            ("pgtus++-approx", index.centroids)):
        ls.union(query, k=5, method=method)
        counted += _graph_floor(*vectors.shape)               # table vectors may have a dimension of their own
        assert cache.nbytes - base >= counted, method
        assert cache.nbytes == deep_nbytes(cache.get(key, lambda: pytest.fail("cached")))
    graphs = _graphs(index)
    del index
    _evict_all(cache)
    gc.collect()
    assert len(graphs) == 3 and all(g() is None for g in graphs)
