"""The compact union index: its int8 bounds never fall below a table's score, and it returns exact's top-k (tables,
scores, alignments, tie order) on random lakes, with ties, with vectors and similarities on the quantisation and tau
boundaries, and served from a refreshed warehouse with and without stored query arrays."""
from __future__ import annotations

import os
import shutil

import numpy as np
import pytest

from discovery.indexes.union import UnionIndex, compact
from discovery.indexes.union.compact import CompactIndex
from discovery.indexes.union.matching import pair_similarities, unit_rows
from discovery.indexes.union.quantised import encode, fit_steps, table_upper_bounds
from discovery.indexes.union.scoring import exhaustive_scores
from synthetic_lake import build_index_inputs, draw_tables, generate_lake, lake_model


@pytest.fixture(autouse=True)
def bound_pass_on_small_lakes(monkeypatch):
    """The bound pass on every lake, however small (served lakes below the threshold are scored exhaustively)."""
    monkeypatch.setattr(compact, "BOUND_PASS_MIN_COLUMNS", 0)


def _lake(seed: int, dim: int = 24, tables: int = 300, duplicates: int = 40):
    """A clustered random lake whose last ``duplicates`` tables copy earlier ones (equal scores: ties by id)."""
    model = lake_model(dim, 30, 6, 8, max_columns=8, noise=(0.1, 0.9), seed=seed)
    lake = generate_lake(model, tables, seed=seed + 1)
    rng = np.random.default_rng(seed)
    vectors, owner, ordinal = lake.column_vectors, lake.column_table_ids, lake.column_ordinals
    for new, old in enumerate(rng.choice(tables, size=duplicates, replace=False), start=tables):
        rows = owner == old
        vectors = np.vstack([vectors, vectors[rows]])
        owner = np.concatenate([owner, np.full(rows.sum(), new)])
        ordinal = np.concatenate([ordinal, ordinal[rows]])
    return model, vectors, owner, ordinal


def _indexes(vectors, owner, ordinal) -> tuple[UnionIndex, CompactIndex]:
    """The full index and a compact one over the same columns in the same storage order."""
    from synthetic_lake import SyntheticLake

    lake = SyntheticLake(vectors, owner, ordinal, np.zeros((0, vectors.shape[1])))
    centroids, parts = build_index_inputs(lake, seed=0)
    full = UnionIndex.build(vectors, owner, ordinal, centroids, parts)
    key = owner * 1000 + ordinal
    pos = np.argsort(key)
    rows = pos[np.searchsorted(key[pos], full.table_ids[full.col_table] * 1000 + full.ordinals)]
    return full, CompactIndex.build(vectors[rows], owner[rows], ordinal[rows])


def _true_scores(index: CompactIndex, query: np.ndarray, tau: float) -> np.ndarray:
    col_table = np.repeat(np.arange(index.table_count), np.diff(index.col_offsets))
    found = exhaustive_scores(unit_rows(query), index.vectors, col_table, index.col_offsets, tau)
    scores = np.zeros(index.table_count)
    scores[found.tables] = found.scores
    return scores


@pytest.mark.parametrize("seed", range(4))
def test_table_bounds_are_never_below_the_score(seed):
    model, vectors, owner, ordinal = _lake(seed)
    _, compact = _indexes(vectors, owner, ordinal)
    qv, qo, _ = draw_tables(model, 8, seed=100 + seed)
    for i in range(8):
        query = unit_rows(qv[qo == i])
        for tau in (0.2, 0.5, 0.8):
            upper = table_upper_bounds(query, compact.codes, compact.steps, compact.error, compact.col_offsets, tau)
            scores = _true_scores(compact, query, tau)
            assert (upper >= scores).all()
            assert (upper[scores == 0] >= 0).all() and (upper[scores > 0] > 0).all()


@pytest.mark.parametrize("threads", (2, 3, 7))
def test_bound_pass_on_threads_gives_the_one_thread_bounds(monkeypatch, threads):
    """Tables cut into ranges of about equal columns, one per thread: the same bound, bit for bit, for every table,
    and the compact search's answers unchanged."""
    from discovery.ground import threads as query_threads
    from discovery.indexes.union import quantised

    model, vectors, owner, ordinal = _lake(7)
    _, compact = _indexes(vectors, owner, ordinal)
    qv, qo, _ = draw_tables(model, 4, seed=300)
    monkeypatch.setattr(quantised, "MIN_COLUMNS_PER_THREAD", 50)
    cuts = quantised.table_ranges(compact.col_offsets, threads)
    assert cuts[0] == 0 and cuts[-1] == compact.table_count and (np.diff(cuts) > 0).all()
    assert len(cuts) - 1 == min(threads, int(compact.col_offsets[-1]) // 50)
    for i in range(4):
        query = unit_rows(qv[qo == i])
        monkeypatch.setattr(query_threads, "_threads", [1])
        one = table_upper_bounds(query, compact.codes, compact.steps, compact.error, compact.col_offsets, 0.4)
        want = compact.search(query, 10, "pgtus++", tau=0.4)
        monkeypatch.setattr(query_threads, "_threads", [threads])
        many = table_upper_bounds(query, compact.codes, compact.steps, compact.error, compact.col_offsets, 0.4)
        assert np.array_equal(one, many) and (one > 0).any()
        assert compact.search(query, 10, "pgtus++", tau=0.4).results == want.results


@pytest.mark.parametrize("seed", range(4))
def test_compact_returns_exacts_top_k_with_ties(seed):
    model, vectors, owner, ordinal = _lake(seed)
    full, compact = _indexes(vectors, owner, ordinal)
    qv, qo, _ = draw_tables(model, 6, seed=200 + seed)
    queries = [qv[qo == i] for i in range(6)] + [vectors[owner == owner[-1]]]  # the last: a duplicated table
    tied = 0
    for i, query in enumerate(queries):
        exclude = int(owner[-1]) if i == len(queries) - 1 else None
        for tau in (0.3, 0.6, 0.9):
            for k in (1, 3, 10, 50):
                want = full.search(query, k, "exact", tau=tau, exclude_table_id=exclude)
                for method in ("pgtus++", "pgtus", "exact"):
                    got = compact.search(query, k, method, tau=tau, exclude_table_id=exclude)
                    assert got.results == want.results, (i, tau, k, method)
                scores = [r.score for r in want.results]
                tied += len(scores) != len(set(scores))
    assert tied  # the duplicated tables put equal scores into the top-k


def test_vectors_on_rounding_boundaries_and_pairs_at_tau():
    """Every coordinate half-way between two codes (the largest rounding error), and tau equal to a similarity."""
    rng = np.random.default_rng(3)
    dim, step = 32, 2.0 ** -8
    centres = rng.integers(-14, 14, size=(12, dim))
    cells = centres[rng.integers(12, size=900)] + rng.integers(-1, 2, size=(900, dim))
    # 900 columns half a step off every code (exact in float32), then one column per dimension on the largest code,
    # which fixes the step of every dimension at 2^-8
    vectors = np.vstack([(cells + 0.5) * step, 127 * step * np.eye(dim)]).astype(np.float32)
    owner = np.concatenate([np.repeat(np.arange(150), 6), np.repeat(np.arange(150, 154), 8)])
    ordinal = np.concatenate([np.tile(np.arange(6), 150), np.tile(np.arange(8), 4)])
    steps = fit_steps(vectors)
    codes = np.empty(vectors.shape, dtype=np.int8)
    error = encode(vectors, steps, codes)
    assert (steps == step).all() and (error == step / 2).all()
    offsets = np.append(np.arange(0, 901, 6), [908, 916, 924, 932]).astype(np.int64)
    compact = CompactIndex(np.arange(154, dtype=np.int64), offsets, ordinal.astype(np.int32), vectors, codes, steps,
                           error)
    for qi in range(0, 150, 10):
        query = unit_rows(vectors[owner == qi] + rng.normal(0, step, size=(6, dim)).astype(np.float32))
        sims = pair_similarities(np.repeat(query, len(vectors), axis=0), np.tile(vectors, (len(query), 1)))
        for tau in (float(np.quantile(sims, q, method="lower")) for q in (0.97, 0.995)):  # tau is a similarity
            scores = _true_scores(compact, query, tau)
            upper = table_upper_bounds(query, codes, steps, error, offsets, tau)
            assert (upper >= scores).all()
            want = compact.search(query, 7, "exact", tau=tau)
            assert compact.search(query, 7, "pgtus++", tau=tau).results == want.results
            assert want.results


def test_stored_arrays_answer_as_the_in_memory_index_with_ties_and_exclusion(tmp_path):
    """Mapped codes and int32 offsets, table ids read per returned table (ids far from the table indices, a binary
    search for the excluded one): the same tables, scores, alignments and tie order as the in-memory index."""
    from discovery.indexes.union.arrays import FILES, StoredRows, load_arrays, narrow_offsets, save_arrays

    model, vectors, owner, ordinal = _lake(5)
    built = CompactIndex.build(vectors, owner * 7 + 1000, ordinal)
    stored = CompactIndex(**save_arrays(str(tmp_path), {name: getattr(built, name) for name in FILES}, {}))
    assert isinstance(stored.table_ids, StoredRows) and stored.col_offsets.dtype == np.int32
    assert isinstance(load_arrays(str(tmp_path))["codes"], np.memmap)
    qv, qo, _ = draw_tables(model, 4, seed=55)
    queries = [qv[qo == i] for i in range(4)] + [vectors[owner == owner[-1]]]  # the last: a duplicated table
    tied = 0
    for i, query in enumerate(queries):
        exclude = int(owner[-1]) * 7 + 1000 if i == len(queries) - 1 else None
        for tau, k in ((0.3, 10), (0.6, 50)):
            want = built.search(query, k, "exact", tau=tau, exclude_table_id=exclude)
            for method in ("pgtus++", "exact"):
                assert stored.search(query, k, method, tau=tau, exclude_table_id=exclude).results == want.results
            assert exclude not in {r.table_id for r in want.results}
            scores = [r.score for r in want.results]
            tied += len(scores) != len(set(scores))
    assert tied
    assert narrow_offsets(np.array([0, 2 ** 31 - 1])).dtype == np.int32
    assert narrow_offsets(np.array([0, 2 ** 31])).dtype == np.int64


def test_bad_input_is_refused():
    _, vectors, owner, ordinal = _lake(0, tables=30, duplicates=0)
    _, compact = _indexes(vectors, owner, ordinal)
    for args, kwargs, message in [((vectors[:2], 0), {}, "k must"), ((vectors[:2, :5],), {}, "query must"),
                                  ((vectors[:2], 5, "tactus"), {}, "compact index answers"),
                                  ((vectors[:2],), {"tau": 0.0}, "tau must")]:
        kwargs.setdefault("tau", 0.5)
        with pytest.raises(ValueError, match=message):
            compact.search(*args, **kwargs)


@pytest.mark.spark
def test_served_union_uses_the_stored_arrays_and_answers_as_the_full_index(indexed_lake, tmp_path):
    """Through ``discovery.open(...).union``: the refresh wrote the arrays, queries map them and answer as the full
    index's ``exact`` does (tables, scores, alignments); a copy of the warehouse without them builds them from Delta
    and answers the same."""
    import discovery
    from discovery.orchestration.demo_lake import load_ground_truth
    from discovery.data.store import Warehouse, load_snapshot, result_names
    from discovery.data.store.arrays import ARRAYS_DIR
    from discovery.indexes.union.arrays import arrays_name
    from discovery.indexes.union.service import compact_index, loaded_index

    lake, wh = indexed_lake
    snap = load_snapshot(Warehouse(wh))
    folder = os.path.join(wh, ARRAYS_DIR, arrays_name(snap.versions))
    assert os.path.exists(os.path.join(folder, "meta.json"))
    loaded = compact_index(snap)
    assert loaded.source == "files" and isinstance(loaded.index.codes, np.memmap)
    assert loaded.index.codes.shape == loaded.index.vectors.shape

    copy = str(tmp_path / "warehouse")
    shutil.copytree(wh, copy, ignore=shutil.ignore_patterns(ARRAYS_DIR))
    from_delta = discovery.open(copy)
    assert compact_index(from_delta.snapshot).source == "delta"

    ls = discovery.open(wh)
    full = loaded_index(snap).index
    queries = sorted({r["query_table"] for r in load_ground_truth(lake)["union"]})[:6]
    for q in queries:
        for tau, k in ((0.4, 10), (0.7, 3), (0.9, 40)):
            answers = {m: ls.union(q, k=k, method=m, tau=tau, lexical=0) for m in ("pgtus++", "pgtus", "exact")}
            assert {a["stats"]["index"] for a in answers.values()} == {"compact"}
            first = answers["exact"]["results"]
            assert all(a["results"] == first for a in answers.values())
            assert from_delta.union(q, k=k, tau=tau, lexical=0)["results"] == first
            assert from_delta.union(q, k=k, tau=tau)["results"] == ls.union(q, k=k, tau=tau)["results"]
            vectors, exclude, query_names = _query(ls, q)
            old = full.search(vectors, k, "exact", tau=tau, exclude_table_id=exclude)
            paths, names = result_names(snap, [r.table_id for r in old.results])
            assert first == [{"rank": i, "table_id": r.table_id, "path": paths[r.table_id], "score": r.score,
                              "alignment": [[query_names[qc], names[(r.table_id, lc)], s] for qc, lc, s in r.alignment]}
                             for i, r in enumerate(old.results, start=1)]


def _query(ls, query) -> tuple[np.ndarray, int | None, list[str]]:
    """The query's column vectors, its lake table id (None for a file outside the lake) and column names."""
    from discovery.query.resolve import resolve_query
    from discovery.query.vectors import embed_query

    q = resolve_query(ls.snapshot, query)
    return embed_query(ls.snapshot, q).column_vectors, q.table_id, q.names


def test_arrays_of_a_warehouse_on_s3_are_uploaded_then_downloaded_once(s3_server, tmp_path, monkeypatch):
    """The union's folder (written as every index's, :mod:`discovery.data.store.arrays`) is uploaded for a remote
    warehouse (``meta.json`` last); open_arrays downloads it once into the local cache keyed by warehouse and snapshot
    versions, maps the copy, and answers as the in-memory index."""
    from dataclasses import replace
    from types import SimpleNamespace

    from discovery.indexes.union import arrays

    _, vectors, owner, ordinal = _lake(1, tables=60, duplicates=5)
    built = CompactIndex.build(vectors, owner, ordinal)
    local = {name: getattr(built, name) for name in arrays.FILES}
    union = replace(arrays.UNION_ARRAYS, fill=lambda wh, versions, folder: arrays.save_arrays(folder, local, {}))
    monkeypatch.setattr(arrays, "UNION_ARRAYS", union)
    monkeypatch.setenv("LAKESCOUT_ARRAY_CACHE", str(tmp_path / "cache"))
    warehouse = SimpleNamespace(root=s3_server.create_bucket("arrays") + "/warehouse")
    versions = {"column_vectors": 3, "centroid_partitions": 2}
    assert arrays.open_arrays(warehouse, versions) is None  # nothing written yet: the caller builds from Delta
    target = union.write(warehouse, versions)
    assert target.endswith(arrays.arrays_name(versions))
    opened = arrays.open_arrays(warehouse, versions)
    assert isinstance(opened["codes"], np.memmap) and opened["codes"].filename.startswith(str(tmp_path / "cache"))
    s3_server.requests(reset=True)
    again = CompactIndex(**arrays.open_arrays(warehouse, versions))
    assert not s3_server.requests().get("GET")  # served from the local copy
    query = vectors[owner == 3]
    for method in ("pgtus++", "exact"):
        assert again.search(query, 5, method, tau=0.5).results == built.search(query, 5, "exact", tau=0.5).results


def test_a_warehouse_written_again_at_its_uri_is_not_served_the_old_copy(s3_server, tmp_path, monkeypatch):
    """Folder names pin content within one warehouse only: a warehouse deleted and built again at the same URI
    reuses them, so the local copy is keyed by the upload of the remote ``meta.json`` too."""
    import time

    from discovery import storage

    monkeypatch.setenv("LAKESCOUT_ARRAY_CACHE", str(tmp_path / "cache"))
    root = s3_server.create_bucket("arrays-again") + "/warehouse"
    target = f"{root}/query_arrays/union-v1-cv1-cp1"
    fs, path = storage.filesystem(target)
    seen = []
    for build in ("first", "second"):
        src = tmp_path / build
        src.mkdir()
        (src / "codes.npy").write_text(build)
        (src / "meta.json").write_text("{}")       # the same meta.json both times
        if fs.exists(path):
            fs.rm(path, recursive=True)
            time.sleep(1.1)                         # a new upload time (S3 reports seconds)
        storage.backend(target).write_folder(target,
                                             lambda folder, src=src: shutil.copytree(src, folder, dirs_exist_ok=True))
        local = storage.backend(root).local_folder(root, target, "union-v1-cv1-cp1")
        seen.append(open(os.path.join(local, "codes.npy")).read())
    assert seen == ["first", "second"]


def test_maintenance_keeps_the_arrays_of_retained_snapshots_only(tmp_path):
    from types import SimpleNamespace

    from discovery.indexes.numjoin.arrays import numeric_arrays_name
    from discovery.orchestration.refresh.runs import query_array_folders
    from discovery.data.store.arrays import ARRAYS_DIR, prune_folders
    from discovery.indexes.union.arrays import arrays_name

    kept = {"column_vectors": 5, "centroid_partitions": 4, "numeric_sets": 7}
    old = {"column_vectors": 3, "centroid_partitions": 4, "numeric_sets": 6}
    root = tmp_path / ARRAYS_DIR
    names = (arrays_name(kept), arrays_name(old), numeric_arrays_name(kept), numeric_arrays_name(old),
             ".union-being-written")
    for name in names:
        (root / name).mkdir(parents=True)
        (root / name / "meta.json").write_text("{}")
    keep = {folder.name(kept) for folder in query_array_folders()}
    removed = prune_folders(SimpleNamespace(root=str(tmp_path)), keep)
    assert sorted(removed) == sorted([arrays_name(old), numeric_arrays_name(old)])
    assert sorted(os.listdir(root)) == sorted([arrays_name(kept), numeric_arrays_name(kept), ".union-being-written"])


@pytest.mark.spark
def test_a_lake_table_as_the_query_answers_from_its_stored_rows_as_when_encoded(indexed_lake):
    """A query that is a lake file as the snapshot indexed it (size and modification time the catalog's) is searched
    with the index's own rows of its columns instead of being encoded again; for every such table of the lake, at
    two taus and every table score, the answer equals the one from encoding it.  A file whose size or time differs
    from the catalog's is encoded."""
    import dataclasses

    import pyarrow.compute as pc

    import discovery
    from discovery.config import Limits
    from discovery.query.resolve import _from_lake, resolve_query
    from discovery.indexes.union.service import union_search
    from discovery.indexes.union.widths import SCORES

    lake, wh = indexed_lake
    snap = discovery.open(wh).snapshot
    catalog = snap.read("catalog", columns=["table_id", "path", "format", "status"])
    ok = catalog.filter(pc.equal(catalog["status"], "ok")).to_pylist()
    indexed = 0
    for row in ok:
        q = resolve_query(snap, row["table_id"])
        if not q.indexed:
            continue
        indexed += 1
        for tau, score in ((0.4, SCORES[indexed % len(SCORES)]), (0.7, "sum")):
            stored = union_search(snap, q, k=10, tau=tau, score=score)
            encoded = union_search(snap, dataclasses.replace(q, indexed=False), k=10, tau=tau, score=score)
            assert stored["results"] == encoded["results"], row["path"]
    files = [r for r in ok if "." in r["path"].rpartition("/")[2]]
    assert indexed >= len(files) * 0.9 > 0  # the lake's plain files, as the catalog has them
    entry = snap.cached("catalog", ["table_id", "path", "format", "bytes", "mtime_ns", "status", "error"])
    first = entry.filter(pc.equal(entry["table_id"], files[0]["table_id"])).to_pylist()[0]
    assert _from_lake(snap, first, "q", Limits()).indexed
    assert not _from_lake(snap, {**first, "mtime_ns": first["mtime_ns"] + 1}, "q", Limits()).indexed
    assert not _from_lake(snap, {**first, "bytes": first["bytes"] + 1}, "q", Limits()).indexed
