"""The Delta store: at-most-once commits per refresh and stage, orphan cleanup, copy-on-write removal, snapshots."""
from __future__ import annotations

import os
import time

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from deltalake import DeltaTable
from deltalake.exceptions import CommitFailedError, DeltaError

from discovery.data.store import (SCHEMAS, DataFile, KeptOpenWarehouse, Warehouse, WarehouseError, candidate_files,
                                  cleanup_orphans, drop_table_ids, load_snapshot, new_attempt_token, read_rows,
                                  write_data_file)
from discovery.data.store.files import data_file_name, parse_data_file_name
from discovery.data.store.filters import among
from discovery.data.store.warehouse import listing_raced, log_raced
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from datetime import UTC
from sessions import session


def _columns_rows(table_ids, n_per=3):
    rows = [{"table_id": t, "content_hash": f"h{t}", "ordinal": i, "name": f"c{i}", "type": "string",
             "non_null": 1, "distinct_count": 1, "null_fraction": 0.0, "key_candidate": False, "max_length": 1}
            for t in table_ids for i in range(n_per)]
    return pa.Table.from_pylist(rows, schema=SCHEMAS["columns"])


def _clean(wh: Warehouse, name: str, grace_seconds: float = 0.0, now: float | None = None) -> list[str]:
    """Orphan cleanup with a week's window; no grace unless given (these tests write no file concurrently)."""
    return cleanup_orphans(wh, name, window_seconds=7 * 86400, grace_seconds=grace_seconds, now=now)


def test_every_index_table_is_a_delta_table(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    for name, schema in SCHEMAS.items():
        dt = DeltaTable(wh.table_uri(name))
        assert dt.version() == 0
        assert pa.schema(dt.schema().to_arrow()).names == schema.names


def test_commit_is_at_most_once_per_refresh_and_stage(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    f1 = write_data_file(wh.table_uri("columns"), _columns_rows([1, 2]), 10, "profile", "aaa")
    first = wh.commit("columns", [f1], [], refresh_id=10, stage="profile", attempt="aaa")
    assert first.version == 1
    # A retry of the same stage in the same refresh writes again, but must not commit a second time.
    f2 = write_data_file(wh.table_uri("columns"), _columns_rows([1, 2]), 10, "profile", "bbb")
    again = wh.commit("columns", [f2], [], refresh_id=10, stage="profile", attempt="bbb")
    assert again.version is None
    assert wh.read("columns").num_rows == 6
    # Its file is an orphan: cleanup removes it and keeps the committed one.
    removed = _clean(wh, "columns")
    assert removed == [f2.path]
    assert os.path.exists(os.path.join(wh.table_uri("columns"), f1.path))
    # The next refresh commits normally.
    assert wh.commit("columns", [], [f1.path], refresh_id=11, stage="profile", attempt="ccc").version == 2
    assert wh.read("columns").num_rows == 0


def test_a_kept_open_warehouse_commits_and_reads_the_latest_version_beside_other_writers(tmp_path):
    """The group-commit writer's warehouse keeps each table open and brings it up to date: its appends land once at
    the version the log gives them, and it reads what another writer committed in between; an old version asked for
    by number is that version."""
    root = str(tmp_path / "wh")
    other = Warehouse(root)
    other.ensure()
    kept = KeptOpenWarehouse(root)
    versions = []
    for i in range(5):
        versions.append(kept.append_rows("columns", _columns_rows([10 * i + 1]), refresh_id=1, stage="query_batch",
                                         attempt=f"k{i}", once=False).version)
        other.append_rows("columns", _columns_rows([10 * i + 2]), refresh_id=1, stage="query_batch",
                          attempt=f"o{i}", once=False)
        assert kept.version("columns") == other.version("columns") == 2 * i + 2
        assert kept.table("columns") is kept.table("columns")
    assert versions == [1, 3, 5, 7, 9]
    history = {h["version"]: h.get("lakescout.attempt") for h in DeltaTable(other.table_uri("columns")).history()}
    assert [history[v] for v in versions] == [f"k{i}" for i in range(5)]
    ids = sorted(kept.read("columns").column("table_id").to_pylist())
    assert ids == sorted(t for i in range(5) for t in (10 * i + 1, 10 * i + 2) for _ in range(3))
    assert kept.table("columns", version=1).version() == 1 and kept.version("columns") == 10


def test_a_log_listing_that_raced_a_commit_is_listed_again(tmp_path, monkeypatch):
    """A local directory listing is no snapshot: one may see commit 3 and not commit 2, renamed in just before it,
    and delta-rs refuses the gap.  The warehouse lists again (the pause between listings is where the missing
    commit shows up here), so an open and a blind append go on, each append landing once; a gap that stays is
    still an error."""
    root = str(tmp_path / "wh")
    wh = Warehouse(root)
    wh.ensure()
    for i in range(3):
        wh.append_rows("columns", _columns_rows([i]), refresh_id=1, stage="query_batch", attempt=f"a{i}", once=False)
    log = os.path.join(wh.table_uri("columns"), "_delta_log")
    second = os.path.join(log, f"{2:020d}.json")
    os.rename(second, second + ".unseen")
    with pytest.raises(DeltaError) as raised:
        DeltaTable(wh.table_uri("columns"))
    assert listing_raced(raised.value) and not listing_raced(CommitFailedError("another writer won"))
    gone = FileNotFoundError("Object at location .../_delta_log/00000000000000000001.json not found")
    assert log_raced(raised.value) and log_raced(gone)                   # the latest version: read it again
    assert not log_raced(gone, version=1) and not log_raced(CommitFailedError("another writer won"))
    with pytest.raises(DeltaError):                       # the gap stays: reported after the attempts
        wh.version("columns")

    def lands(seconds: float) -> None:
        if os.path.exists(second + ".unseen"):
            os.rename(second + ".unseen", second)

    monkeypatch.setattr(time, "sleep", lands)
    assert wh.version("columns") == 3
    os.rename(second, second + ".unseen")
    kept = KeptOpenWarehouse(root)
    assert kept.append_rows("columns", _columns_rows([7]), refresh_id=1, stage="query_batch", attempt="b",
                            once=False).version == 4
    attempts = [h.get("lakescout.attempt") for h in DeltaTable(wh.table_uri("columns")).history()]
    assert attempts.count("b") == 1
    assert sorted(set(wh.read("columns").column("table_id").to_pylist())) == [0, 1, 2, 7]


def test_cleanup_keeps_an_uncommitted_file_for_its_grace_period(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    f = write_data_file(wh.table_uri("columns"), _columns_rows([1]), 5, "profile", "run1")
    assert _clean(wh, "columns", grace_seconds=3600) == []                         # its writer may still commit
    assert _clean(wh, "columns", grace_seconds=3600, now=time.time() + 3601) == [f.path]


def test_copy_on_write_removal(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("columns")
    fa = write_data_file(uri, _columns_rows([1, 2, 3]), 1, "profile", "a")
    fb = write_data_file(uri, _columns_rows([10, 11]), 1, "profile", "a")
    wh.commit("columns", [fa, fb], [], refresh_id=1, stage="profile", attempt="a")
    # Statistics prune the file whose table_id range cannot hold the ids.
    assert candidate_files(wh.files("columns"), np.array([2])) == [fa.path]
    assert sorted(candidate_files(wh.files("columns"), np.array([2, 10]))) == sorted([fa.path, fb.path])
    touched, repl = drop_table_ids(uri, fa.path, np.array([2]), 2, "profile", "b")
    assert touched and repl is not None and repl.rows == 6
    touched, repl2 = drop_table_ids(uri, fb.path, np.array([5]), 2, "profile", "b")
    assert not touched and repl2 is None
    wh.commit("columns", [repl], [fa.path], refresh_id=2, stage="profile", attempt="b")
    ids = sorted(set(wh.read("columns").column("table_id").to_pylist()))
    assert ids == [1, 3, 10, 11]
    # Time travel still sees the rows before the replacement.
    assert sorted(set(wh.read("columns", version=1).column("table_id").to_pylist())) == [1, 2, 3, 10, 11]


def test_reads_counts_and_versions_from_the_log_equal_the_rows(tmp_path):
    """A whole-column read skips Delta's per-file expressions; it, the log's row count and the versions a table carries
    (from per-file statistics) must equal what the rows say, at every version."""
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("pivot_mappings")
    schema = SCHEMAS["pivot_mappings"]

    def rows(ids, version):
        n = len(ids)
        return pa.table({"table_id": pa.array(ids, pa.int64()), "content_hash": pa.array(["h"] * n),
                         "ordinal": pa.array([0] * n, pa.int32()), "value": pa.array([f"v{i}" for i in ids]),
                         "partition": pa.array([0] * n, pa.int32()), "cell": pa.array([7] * n, pa.int64()),
                         "distances": pa.array([[0.5]] * n, pa.list_(pa.float32())),
                         "model_version": pa.array([version] * n),
                         "segment": pa.array([0] * n, pa.int32())}).select(schema.names).cast(schema)

    a = write_data_file(uri, rows([1, 2], "pivots-a"), 1, "pivots", "x")
    wh.commit("pivot_mappings", [a], [], refresh_id=1, stage="pivots", attempt="x")
    assert wh.distinct("pivot_mappings", "model_version") == {"pivots-a"}
    b = write_data_file(uri, rows([3], "pivots-b"), 2, "pivots", "y")
    wh.commit("pivot_mappings", [b], [], refresh_id=2, stage="pivots", attempt="y")
    assert wh.distinct("pivot_mappings", "model_version") == {"pivots-a", "pivots-b"}
    mixed = write_data_file(uri, pa.concat_tables([rows([4], "pivots-a"), rows([5], "pivots-c")]), 3, "pivots", "z")
    wh.commit("pivot_mappings", [mixed], [], refresh_id=3, stage="pivots", attempt="z")
    assert wh.distinct("pivot_mappings", "model_version") == {"pivots-a", "pivots-b", "pivots-c"}
    assert wh.distinct("catalog", "content_hash") == set()
    long_a, long_b = "join-0123456789abcdef+segments-3-rule2", "join-0123456789abcdef+segments-3-rule3"
    longer = write_data_file(uri, pa.concat_tables([rows([6], long_a), rows([7, 8], long_b)]), 4, "pivots", "w")
    wh.commit("pivot_mappings", [longer], [], refresh_id=4, stage="pivots", attempt="w")
    assert wh.distinct("pivot_mappings", "model_version") == {"pivots-a", "pivots-b", "pivots-c", long_a, long_b}
    for version in (1, 2, 3, 4):
        through_delta = wh.dataset("pivot_mappings", version).to_table()
        assert wh.read("pivot_mappings", version=version).equals(through_delta)
        assert wh.count_rows("pivot_mappings", version) == through_delta.num_rows


def test_pairs_are_the_distinct_table_versions_of_every_file(tmp_path):
    """The pairs a refresh plans from, read a file batch at a time, equal the distinct (table_id, content_hash) of
    all rows: a pair repeated within and across files is one pair, and an empty table has none."""
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    assert wh.pairs("columns").num_rows == 0
    rng = np.random.default_rng(5)
    files = []
    for f in range(4):
        rows = _columns_rows(rng.integers(0, 6, 9).tolist(), n_per=2)
        rows = rows.set_column(1, "content_hash", pa.array([f"h{t % 2}" for t in rng.integers(0, 4, rows.num_rows)]))
        files.append(write_data_file(wh.table_uri("columns"), rows, 1, "profile", f"a{f}"))
    wh.commit("columns", files, [], refresh_id=1, stage="profile", attempt="a")
    whole = wh.read("columns", columns=["table_id", "content_hash"]).to_pylist()
    got = wh.pairs("columns")
    assert got.column_names == ["table_id", "content_hash"]
    assert sorted(tuple(r.values()) for r in got.to_pylist()) == sorted({tuple(r.values()) for r in whole})


def test_a_fragmented_small_table_is_merged_into_one_file_with_the_same_rows(tmp_path):
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("columns")
    files = [write_data_file(uri, _columns_rows([t, t + 100]), 1, "profile", "a") for t in range(5, 0, -1)]
    wh.commit("columns", files, [], refresh_id=1, stage="profile", attempt="a")
    before = wh.read("columns")
    assert wh.merge_small_files("columns", refresh_id=1, stage="profile_merge", max_files=5) == 0
    assert wh.merge_small_files("columns", refresh_id=1, stage="profile_merge", max_files=4,
                                max_bytes=100) == 0  # too large to merge in the driver
    assert wh.merge_small_files("columns", refresh_id=1, stage="profile_merge", max_files=4,
                                rows_per_file=20) == 5
    assert wh.files("columns").num_rows == 2
    after = wh.read("columns")
    assert after.column("table_id").to_pylist() == sorted(before.column("table_id").to_pylist())
    key = [("table_id", "ascending"), ("ordinal", "ascending")]
    assert after.sort_by(key).equals(before.sort_by(key))
    # once per refresh, and a narrow table_id range per file again for copy-on-write removal
    assert wh.merge_small_files("columns", refresh_id=1, stage="profile_merge", max_files=1) == 0
    assert _clean(wh, "columns") == []  # the merged files are referenced by versions in the window
    assert {parse_data_file_name(p.rsplit("/", 1)[-1])[2] for p in wh.files("columns").column("path").to_pylist()} \
        - {"a"}, "the merge writes under an attempt of its own"
    assert candidate_files(wh.files("columns"), np.array([1])) != candidate_files(wh.files("columns"), np.array([105]))


def test_every_stage_name_a_file_is_written_under_reads_back():
    """A file whose name does not parse can never be recognised as an orphan, so such names are refused."""
    for stage in ("profile", "profile_merge", "pivots_settle", "pivots_rebalance_2", "model_encoder_join"):
        assert parse_data_file_name(data_file_name(7, stage, "0a1b2c")) == (7, stage, "0a1b2c")
    for stage in ("pivots-settle", "Profile", "", "a.b"):
        with pytest.raises(ValueError, match="stage name"):
            data_file_name(7, stage, "0a1b2c")


def test_files_of_a_merge_whose_commit_failed_are_removed_as_orphans(tmp_path, monkeypatch):
    """The stage's attempt committed to the table, so files of its failed merge must not pass for committed ones."""
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("columns")
    files = [write_data_file(uri, _columns_rows([t]), 1, "profile", "a") for t in range(3)]
    wh.commit("columns", files, [], refresh_id=1, stage="profile", attempt="a")
    before = wh.read("columns")

    def refuse(*args, **kwargs):
        raise CommitFailedError("another writer won")
    monkeypatch.setattr(wh, "commit", refuse)
    with pytest.raises(CommitFailedError):
        wh.merge_small_files("columns", refresh_id=1, stage="profile_merge", max_files=2)
    monkeypatch.undo()
    written = sorted(os.listdir(uri))
    removed = _clean(wh, "columns")
    assert len(removed) == 1 and len([f for f in written if f.endswith(".parquet")]) == 4
    assert wh.read("columns").equals(before) and wh.files("columns").num_rows == 3


def test_candidate_files_and_read_rows_equal_brute_force(tmp_path):
    """Files pruned by table_id statistics (one written without them) and the rows read straight from them equal a
    brute-force scan of every file and a filtered read of the Delta table."""
    rng = np.random.default_rng(4)
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("columns")
    written, groups = [], []
    for _ in range(40):
        ids = sorted(set(rng.integers(1, 400, size=int(rng.integers(1, 6))).tolist()))
        written.append(write_data_file(uri, _columns_rows(ids, n_per=2), 1, "profile", "a"))
        groups.append(ids)
    no_stats = written[7]
    written[7] = DataFile(no_stats.path, no_stats.size, no_stats.mtime_ms, no_stats.rows,
                          f'{{"numRecords": {no_stats.rows:d}}}')
    wh.commit("columns", written, [], refresh_id=1, stage="profile", attempt="a")
    files = wh.files("columns")
    for _ in range(30):
        wanted = rng.integers(1, 420, size=int(rng.integers(1, 12)))
        expected = {f.path for f, ids in zip(written, groups)
                    if f is written[7] or any(min(ids) <= w <= max(ids) for w in wanted)}
        assert set(candidate_files(files, wanted)) == expected
        got = read_rows(uri, SCHEMAS["columns"], files, wanted, ["table_id", "ordinal", "name"])
        want = wh.read("columns", columns=["table_id", "ordinal", "name"],
                       filter=pc.field("table_id").isin(pa.array(wanted, pa.int64())))
        key = [("table_id", "ascending"), ("ordinal", "ascending")]
        assert got.sort_by(key).equals(want.sort_by(key))
    assert candidate_files(files, np.array([], np.int64)) == []
    assert read_rows(uri, SCHEMAS["columns"], files, [10_000], ["table_id"]).num_rows == 0


@pytest.mark.parametrize("value", ["short", "x" * 40, "dag-manual__2026-11-26T02:18:19.580705+00:00",
                                   "y" * 31 + "\U0010FFFF" * 3, "z" * 31 + "\ud7ff" + "a"])
def test_a_filtered_read_finds_rows_of_long_string_values(tmp_path, value):
    """String statistics are cut to 32 characters but stay bounds: a filter on a long value (a DAG run's batch id)
    still finds its rows, and a value just past the bound none."""
    from datetime import datetime

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    row = {"batch_id": value, "query_id": "q", "snapshot_id": 1, "kind": "union", "rank": 1, "table_id": 1,
           "path": "p", "column": None, "score": 1.0, "evidence": "{}", "created_at": datetime.now(UTC)}
    for v in (value, value + "~"):
        wh.append_rows("query_results", pa.Table.from_pylist([{**row, "batch_id": v}], schema=SCHEMAS["query_results"]),
                       refresh_id=1, stage="query_batch", attempt=new_attempt_token(), once=False)
    for v in (value, value + "~"):
        assert wh.read("query_results", filter=pc.field("batch_id") == v).column("batch_id").to_pylist() == [v]
    assert wh.read("query_results", filter=pc.field("batch_id") == value + "~~").num_rows == 0


@pytest.mark.parametrize("n", [3, 50, 51, 200])
def test_a_read_of_many_tables_opens_only_their_files(tmp_path, n):
    """``among`` keeps exactly the rows of the tables asked for, and statistics prune every file outside their
    range whatever the number of tables (``isin`` alone is pruned only up to 50 values)."""
    import pyarrow.dataset as pads
    import pyarrow.parquet as pq

    for f in range(4):
        pq.write_table(pa.table({"table_id": pa.array(np.arange(f * 300, f * 300 + 300), pa.int64())}),
                       tmp_path / f"f{f}.parquet", row_group_size=100)
    wanted = np.arange(300, 300 + 2 * n, 2)   # tables of the second file (and the third beyond 150)
    dataset = pads.dataset(tmp_path)
    flt = among("table_id", wanted[::-1])
    assert dataset.to_table(filter=flt).column("table_id").to_pylist() == wanted.tolist()
    groups = {os.path.basename(fr.path): len(fr.subset(filter=flt).row_groups) for fr in dataset.get_fragments()}
    starts = np.arange(0, 1200, 100)          # row groups of 100 tables, 3 a file
    touched = (starts <= wanted.max()) & (starts + 99 >= wanted.min())
    assert groups == {f"f{f}.parquet": int(touched[3 * f:3 * f + 3].sum()) for f in range(4)}
    assert groups["f0.parquet"] == groups["f3.parquet"] == 0
    assert dataset.to_table(filter=among("table_id", [])).num_rows == 0


def test_snapshots_pin_versions(tmp_path):
    root = str(tmp_path / "wh")
    rid = begin_refresh(session(root))
    wh = Warehouse(root)
    f = write_data_file(wh.table_uri("columns"), _columns_rows([1]), rid, "profile", "a")
    wh.commit("columns", [f], [], refresh_id=rid, stage="profile", attempt="a")
    snap1 = publish_snapshot(Warehouse(root), rid, "/lake")
    assert publish_snapshot(Warehouse(root), rid, "/lake")["published"] is False  # idempotent
    rid2 = begin_refresh(session(root))
    assert rid2 > rid
    f2 = write_data_file(wh.table_uri("columns"), _columns_rows([2]), rid2, "profile", "b")
    wh.commit("columns", [f2], [], refresh_id=rid2, stage="profile", attempt="b")
    # Not yet published: readers still see snapshot 1 with one table's rows.
    latest = load_snapshot(wh)
    assert latest.snapshot_id == snap1["snapshot_id"]
    assert latest.read("columns").num_rows == 3
    publish_snapshot(Warehouse(root), rid2, "/lake")
    assert load_snapshot(wh).read("columns").num_rows == 6
    assert load_snapshot(wh, snap1["snapshot_id"]).read("columns").num_rows == 3


def test_missing_warehouse_and_snapshot_errors(tmp_path):
    with pytest.raises(WarehouseError, match="no Lakescout warehouse"):
        load_snapshot(Warehouse(str(tmp_path / "nothing")))
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    with pytest.raises(WarehouseError, match="no published snapshot"):
        load_snapshot(wh)
    with pytest.raises(WarehouseError, match="no snapshot 42"):
        load_snapshot(wh, 42)


@pytest.mark.parametrize("filtered", [False, True])
def test_a_read_of_the_latest_version_whose_files_were_vacuumed_reads_the_new_latest(tmp_path, monkeypatch, filtered):
    """Maintenance may compact a table and vacuum the files it replaced between a reader's listing of the latest
    version and its reading: the reader then reads the new latest; a read of a named version still refuses."""
    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    uri = wh.table_uri("columns")
    old = write_data_file(uri, _columns_rows([1, 2]), 1, "profile", "a")
    wh.commit("columns", [old], [], refresh_id=1, stage="profile", attempt="a")
    listed = {"dataset": wh.dataset("columns", 1), "parquet_dataset": wh.parquet_dataset("columns", 1)}
    compacted = write_data_file(uri, _columns_rows([1, 2]), 2, "profile", "b")
    wh.commit("columns", [compacted], [old.path], refresh_id=2, stage="profile", attempt="b")
    os.remove(os.path.join(uri, old.path))                          # vacuumed

    def listed_before(name: str):
        """``name`` of the warehouse, whose first call answers the listing made before the vacuum."""
        real, opened = getattr(Warehouse, name), []

        def open_version(table: str, version: int | None = None):
            if not opened:
                opened.append(table)
                return listed[name]
            return real(wh, table, version)
        return open_version

    for name in listed:
        monkeypatch.setattr(wh, name, listed_before(name))
    flt = pc.field("table_id") == 2 if filtered else None
    got = wh.read("columns", filter=flt)
    assert sorted(got.column("table_id").to_pylist()) == ([2] * 3 if filtered else [1] * 3 + [2] * 3)
    with pytest.raises(FileNotFoundError):
        wh.read("columns", version=1, filter=flt)


def test_a_read_since_a_time_reads_the_newest_files_and_equals_the_filter(tmp_path):
    """Rows microseconds apart in files of a few rows each: every cut, including ones inside the millisecond a
    file's (millisecond) statistics end in, returns exactly the rows a plain filter returns."""
    from datetime import datetime, timedelta

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    t0 = datetime(2026, 11, 29, 12, 0, 0, 123000, tzinfo=UTC)
    times = [t0 + timedelta(microseconds=250 * i) for i in range(24)]          # four rows a millisecond
    for f in range(6):
        rows = [{"batch_id": f"b{f}-{i}", "name": "x", "standing": False, "snapshot_id": 1, "queries": 1,
                 "results": 0, "seconds": 0.0, "spec": "{}", "summary": "{}", "created_at": times[4 * f + i]}
                for i in range(4)]
        wh.append_rows("query_batches", pa.Table.from_pylist(rows, schema=SCHEMAS["query_batches"]), refresh_id=1,
                       stage="query_batch", attempt=new_attempt_token(), once=False)
    every = wh.read("query_batches")
    for cut in [times[0] - timedelta(seconds=1), *times, times[-1] + timedelta(microseconds=1)]:
        got = wh.read_since("query_batches", "created_at", cut, ["batch_id", "created_at"])
        want = every.filter(pc.greater_equal(every["created_at"], pa.scalar(cut)))
        assert sorted(got.column("batch_id").to_pylist()) == sorted(want.column("batch_id").to_pylist()), cut
    assert wh.read_since("query_batches", "created_at", times[-1], ["batch_id"]).column("batch_id").to_pylist() \
        == ["b5-3"]


def test_a_model_payload_is_written_raw_and_without_parquet_statistics(tmp_path):
    """A ``models`` payload (a join encoder's 100 MB of weights) is stored uncompressed, with no dictionary and no
    Parquet min / max, whose computation over the whole value cost up to a second of a training task; the other
    columns keep theirs, and the row reads back whole."""
    import pyarrow.parquet as pq

    from discovery.transforms.encoders.stored import model_table

    wh = Warehouse(str(tmp_path / "wh"))
    wh.ensure()
    payload = np.random.default_rng(0).normal(size=50_000).astype(np.float32).tobytes()
    f = write_data_file(wh.table_uri("models"), model_table("encoder.join", "join-1", {}, payload, 7), 7, "embed", "a")
    meta = pq.ParquetFile(os.path.join(wh.table_uri("models"), f.path)).metadata.row_group(0)
    columns = {meta.column(i).path_in_schema: meta.column(i) for i in range(meta.num_columns)}
    assert columns["payload"].compression == "UNCOMPRESSED" and not columns["payload"].is_stats_set
    assert columns["version"].is_stats_set and columns["version"].statistics.min == "join-1"
    read = pq.read_table(os.path.join(wh.table_uri("models"), f.path))
    assert read.column("payload")[0].as_py() == payload
