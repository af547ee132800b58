"""The lake's table formats: what the listing calls a table, and each reader's rows, versions and errors."""
from __future__ import annotations

import gzip
import json
import os
import shutil

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from discovery.config import Limits
from discovery.data.lake import LakeFileError, list_lake, locate, read_lake_table, table_version
from discovery.orchestration.demo_lake import layouts
from discovery.query.resolve import QueryError, read_query_file
from discovery.storage.walk import KEPT, SortedTree

TABLE = pa.table({"city": ["Oslo", "Bergen", "Paris", None], "country": ["NO", "NO", "FR", None],
                  "pop": [700, 280, 2100, 5]})
OLDER = pa.table({"city": ["Gone"], "country": ["XX"], "pop": [1]})


def _rows(parsed) -> set[tuple]:
    cols = dict(zip(parsed.names, (c.to_pylist() for c in parsed.columns)))
    return set(zip(cols["city"], cols["country"], cols["pop"]))


EXPECTED = {("Oslo", "NO", "700"), ("Bergen", "NO", "280"), ("Paris", "FR", "2100"), (None, None, "5")}


def _read(root, table, limits=None):
    return read_lake_table(root, table.path, table.format, table.size, limits or Limits())


@pytest.fixture(scope="module")
def lakehouse(tmp_path_factory) -> str:
    root = str(tmp_path_factory.mktemp("lakehouse"))
    layouts.write_delta(f"{root}/sales/orders_delta", TABLE, older=OLDER)
    layouts.write_hive(f"{root}/sales/orders_hive", TABLE, ["country"])
    layouts.write_spark_parts(f"{root}/sales/orders_parts", TABLE)
    layouts.write_spark_parts(f"{root}/sales/orders_csv_parts", TABLE, fmt="csv")
    layouts.write_compressed_csv(f"{root}/exports/orders.csv.gz", TABLE)
    layouts.write_compressed_csv(f"{root}/exports/orders.csv.bz2", TABLE, "bz2")
    layouts.write_compressed_csv(f"{root}/exports/orders.csv.xz", TABLE, "xz")
    layouts.write_json_lines(f"{root}/exports/orders.jsonl", TABLE)
    layouts.write_iceberg(f"{root}/iceberg", f"{root}/catalog.db", "sales", "orders", TABLE, older=OLDER)
    os.makedirs(f"{root}/sales/orders_delta/_spark_metadata")
    open(f"{root}/sales/orders_delta/_spark_metadata/0", "w").write("{}")
    open(f"{root}/sales/orders_parts/_committed_123", "w").write("{}")
    return root


def test_listing_decides_what_a_table_is(lakehouse):
    tables = {t.path: t.format for t in list_lake(lakehouse)}
    assert tables == {
        "exports/orders.csv.bz2": "csv.bz2", "exports/orders.csv.gz": "csv.gz", "exports/orders.csv.xz": "csv.xz",
        "exports/orders.jsonl": "json", "iceberg/sales/orders": "iceberg", "sales/orders_csv_parts": "parts/csv",
        "sales/orders_delta": "delta", "sales/orders_hive": "hive/parquet", "sales/orders_parts": "parts/parquet",
    }


@pytest.mark.parametrize("path", ["exports/orders.csv.bz2", "exports/orders.csv.gz", "exports/orders.csv.xz",
                                  "exports/orders.jsonl", "iceberg/sales/orders", "sales/orders_csv_parts",
                                  "sales/orders_delta", "sales/orders_hive", "sales/orders_parts"])
def test_every_layout_reads_the_same_rows(lakehouse, path):
    table = {t.path: t for t in list_lake(lakehouse)}[path]
    parsed = _read(lakehouse, table)
    assert _rows(parsed) == EXPECTED          # the latest version only: the older rows never show
    assert sorted(parsed.names) == ["city", "country", "pop"]


def test_types_come_from_the_schema(lakehouse):
    table = {t.path: t for t in list_lake(lakehouse)}["sales/orders_delta"]
    parsed = _read(lakehouse, table)
    assert dict(zip(parsed.names, parsed.types)) == {"city": None, "country": None, "pop": "int"}


def test_hive_partition_keys_are_columns_and_default_partition_is_null(tmp_path):
    t = pa.table({"v": [1, 2, 3], "year": ["2020", None, "2021"], "region": ["eu", "us", "eu"]})
    layouts.write_hive(str(tmp_path / "ds"), t, ["year", "region"])
    assert (tmp_path / "ds" / "year=__HIVE_DEFAULT_PARTITION__").is_dir()
    [table] = list_lake(str(tmp_path))
    assert (table.path, table.format) == ("ds", "hive/parquet")
    parsed = _read(str(tmp_path), table)
    rows = set(zip(*(c.to_pylist() for c in parsed.columns)))
    assert dict(zip(parsed.names, range(3))) == {"v": 0, "year": 1, "region": 2}
    assert rows == {("1", "2020", "eu"), ("2", None, "us"), ("3", "2021", "eu")}


def test_delta_version_ignores_vacuum_and_follows_commits(tmp_path):
    from deltalake import DeltaTable, write_deltalake

    root = str(tmp_path)
    layouts.write_delta(f"{root}/t", TABLE, older=OLDER)
    [before] = list_lake(root)
    v1 = table_version(root, before.path, before.format, before.fingerprint)
    DeltaTable(f"{root}/t").vacuum(retention_hours=0, enforce_retention_duration=False, dry_run=False)
    [after_vacuum] = list_lake(root)
    assert after_vacuum.fingerprint != before.fingerprint          # vacuum commits: the listing sees a new version
    v2 = table_version(root, after_vacuum.path, after_vacuum.format, after_vacuum.fingerprint)
    assert v2.content == v1.content and int(v2.label) > int(v1.label)    # ... but the rows did not change
    write_deltalake(f"{root}/t", OLDER, mode="append")
    [appended] = list_lake(root)
    assert table_version(root, appended.path, appended.format, appended.fingerprint).content != v1.content
    assert len(_read(root, appended).columns[0]) == 5


def test_delta_column_mapping_reads_logical_names(tmp_path):
    from deltalake import write_deltalake

    write_deltalake(str(tmp_path / "t"), pa.table({"Col A": [1, 2], "b": ["x", "y"]}),
                    configuration={"delta.columnMapping.mode": "name", "delta.minReaderVersion": "2",
                                   "delta.minWriterVersion": "5"})
    [table] = list_lake(str(tmp_path))
    parsed = _read(str(tmp_path), table)
    assert parsed.names == ["Col A", "b"] and [c.to_pylist() for c in parsed.columns] == [["1", "2"], ["x", "y"]]


def test_iceberg_hadoop_layout_reads_newest_metadata(lakehouse, tmp_path):
    src = os.path.join(lakehouse, "iceberg/sales/orders")
    dest = tmp_path / "lake" / "orders"
    shutil.copytree(src, dest)
    meta = dest / "metadata"
    catalog_style = sorted(p for p in os.listdir(meta) if p.endswith(".metadata.json"))
    for i, name in enumerate(catalog_style, 1):
        os.rename(meta / name, meta / f"v{i}.metadata.json")
    (meta / "version-hint.text").write_text(str(len(catalog_style)))
    [table] = list_lake(str(tmp_path / "lake"))
    assert (table.format, table.fingerprint) == ("iceberg", f"v{len(catalog_style)}.metadata.json")
    assert _rows(_read(str(tmp_path / "lake"), table)) == EXPECTED


def test_iceberg_catalog_root(lakehouse, monkeypatch):
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKESCOUT__URI", f"sqlite:///{lakehouse}/catalog.db")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKESCOUT__TYPE", "sql")
    root = "iceberg://lakescout/sales"
    [table] = list_lake(root)
    assert (table.path, table.format) == ("orders", "iceberg")
    assert _rows(_read(root, table)) == EXPECTED
    assert table_version(root, table.path, table.format, table.fingerprint).label.isdigit()


def test_iceberg_catalog_lists_every_table_with_its_metadata_location(tmp_path, monkeypatch):
    """More tables than the metadata loads run at once: each is listed once, by name, fingerprinted by its current
    metadata location, and a table whose metadata file is gone is listed as unreadable (the scan says why)."""
    from discovery.data.lake import iceberg

    db = str(tmp_path / "catalog.db")
    written = {f"t{i:02d}": layouts.write_iceberg(str(tmp_path / "wh"), db, "many", f"t{i:02d}", TABLE)
               for i in range(iceberg._LOADS + 5)}
    os.remove(written["t03"].metadata_location.removeprefix("file://"))
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKESCOUT__URI", f"sqlite:///{db}")
    monkeypatch.setenv("PYICEBERG_CATALOG__LAKESCOUT__TYPE", "sql")
    listed = {t.path: t.fingerprint for t in list_lake("iceberg://lakescout/many")}
    assert sorted(listed) == sorted(written)
    assert listed.pop("t03").startswith("unreadable: ")
    assert listed == {name: written[name].metadata_location for name in listed}


def test_metadata_never_a_table(tmp_path):
    for rel in ("_delta_log/00000000000000000000.json", "t/_SUCCESS", "t/.part-0.crc", "_spark_metadata/0",
                "t/_committed_1", "t/_started_1", "x/metadata/notes.json"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("{}")
    (tmp_path / "x" / "data.csv").write_text("a\n1\n")
    assert [t.path for t in list_lake(str(tmp_path))] == ["x/data.csv", "x/metadata/notes.json"]


def test_include_and_exclude_patterns(lakehouse):
    kept = [t.path for t in list_lake(lakehouse, include=("/sales/",), exclude=("*_parts",))]
    assert kept == ["sales/orders_delta", "sales/orders_hive"]
    # gitignore semantics: a folder pattern without a leading '/' matches at any depth
    assert "iceberg/sales/orders" in [t.path for t in list_lake(lakehouse, include=("sales/",))]
    assert [t.path for t in list_lake(lakehouse, include=("*.csv.*",))] == [
        "exports/orders.csv.bz2", "exports/orders.csv.gz", "exports/orders.csv.xz"]


def test_json_shapes(tmp_path):
    (tmp_path / "nested.ndjson").write_text('{"id": 1, "addr": {"city": "Oslo", "geo": {"lat": 59.9}}}\n'
                                             '{"id": 2, "addr": {"city": "Rome"}}\n')
    (tmp_path / "array.json").write_text(json.dumps([{"a": 1, "b": "x"}, {"a": 2, "b": "y"}], indent=2))
    (tmp_path / "settings.json").write_text(json.dumps({"a": {"b": 1}}, indent=2))
    tables = {t.path: t for t in list_lake(str(tmp_path))}
    nested = _read(str(tmp_path), tables["nested.ndjson"])
    assert nested.names == ["id", "addr.city", "addr.geo.lat"]
    assert [c.to_pylist() for c in nested.columns] == [["1", "2"], ["Oslo", "Rome"], ["59.9", None]]
    assert [c.to_pylist() for c in _read(str(tmp_path), tables["array.json"]).columns] == [["1", "2"], ["x", "y"]]
    with pytest.raises(LakeFileError, match="single JSON object"):
        _read(str(tmp_path), tables["settings.json"])


def test_zstd_is_read_as_a_stream(tmp_path):
    import pyarrow as pa_

    raw = layouts.csv_bytes(TABLE)
    with pa_.CompressedOutputStream(str(tmp_path / "t.csv.zst"), "zstd") as out:
        out.write(raw)
    [table] = list_lake(str(tmp_path))
    assert table.format == "csv.zst" and _rows(_read(str(tmp_path), table)) == EXPECTED


def test_compressed_content_is_bounded_by_the_bytes_read(tmp_path):
    (tmp_path / "big.csv.gz").write_bytes(gzip.compress(b"a,b\n" + b"1,2\n" * 50_000))
    [table] = list_lake(str(tmp_path))
    with pytest.raises(LakeFileError, match="larger than the limit of 1000 bytes"):
        _read(str(tmp_path), table, Limits(max_file_bytes=1000))


def test_row_bound_reads_only_the_first_rows(tmp_path):
    pq.write_table(pa.table({"n": list(range(100_000))}), tmp_path / "big.parquet", row_group_size=10_000)
    layouts.write_delta(str(tmp_path / "d"), pa.table({"n": list(range(50_000))}))
    for table in list_lake(str(tmp_path)):
        parsed = _read(str(tmp_path), table, Limits(max_rows=1000))
        assert parsed.num_rows == 1000
        assert any("only the first 1000 indexed" in w for w in parsed.warnings)


# -- bad input: one table fails with its reason ------------------------------------------------------------------
def test_truncated_gzip(tmp_path):
    data = gzip.compress(layouts.csv_bytes(TABLE) * 50)
    (tmp_path / "cut.csv.gz").write_bytes(data[: len(data) // 2])
    [table] = list_lake(str(tmp_path))
    with pytest.raises(LakeFileError, match="damaged or cut short"):
        _read(str(tmp_path), table)


def test_unreadable_delta_log(tmp_path):
    layouts.write_delta(str(tmp_path / "t"), TABLE)
    (tmp_path / "t" / "_delta_log" / "00000000000000000001.json").write_text("not json\n")
    [table] = list_lake(str(tmp_path))
    with pytest.raises(LakeFileError, match="Delta"):
        table_version(str(tmp_path), table.path, table.format, table.fingerprint)
        _read(str(tmp_path), table)


def test_delta_log_naming_a_missing_file(tmp_path):
    layouts.write_delta(str(tmp_path / "t"), TABLE)
    for name in os.listdir(tmp_path / "t"):
        if name.endswith(".parquet"):
            os.remove(tmp_path / "t" / name)
    [table] = list_lake(str(tmp_path))
    with pytest.raises(LakeFileError, match="Delta table cannot be read"):
        _read(str(tmp_path), table)


def test_iceberg_missing_manifest(lakehouse, tmp_path):
    dest = tmp_path / "lake" / "orders"
    shutil.copytree(os.path.join(lakehouse, "iceberg/sales/orders"), dest)
    # the metadata names absolute paths of the original: point it at the copy, then lose a manifest list
    for name in os.listdir(dest / "metadata"):
        if name.endswith(".metadata.json"):
            p = dest / "metadata" / name
            p.write_text(p.read_text().replace(os.path.join(lakehouse, "iceberg/sales/orders"), str(dest)))
        if name.startswith("snap-"):
            os.remove(dest / "metadata" / name)
    [table] = list_lake(str(tmp_path / "lake"))
    with pytest.raises(LakeFileError, match="Iceberg"):
        _read(str(tmp_path / "lake"), table)


def test_partitions_with_conflicting_schemas(tmp_path):
    (tmp_path / "ds" / "k=1").mkdir(parents=True)
    (tmp_path / "ds" / "k=2").mkdir(parents=True)
    pq.write_table(pa.table({"v": [1, 2], "w": [1, 2]}), tmp_path / "ds" / "k=1" / "a.parquet")
    pq.write_table(pa.table({"v": [1.5], "x": ["new"]}), tmp_path / "ds" / "k=2" / "b.parquet")
    [table] = list_lake(str(tmp_path))
    parsed = _read(str(tmp_path), table)     # widening and missing columns follow the stated rule
    assert dict(zip(parsed.names, parsed.types)) == {"v": "float", "w": "int", "k": None, "x": None}
    pq.write_table(pa.table({"v": ["text"]}), tmp_path / "ds" / "k=2" / "b.parquet")
    with pytest.raises(LakeFileError, match="conflicting column types"):
        _read(str(tmp_path), list_lake(str(tmp_path))[0])


def test_empty_dataset(tmp_path):
    (tmp_path / "ds" / "k=1").mkdir(parents=True)
    (tmp_path / "ds" / "k=1" / "notes.md").write_text("x")
    (tmp_path / "ds" / "k=2").mkdir(parents=True)
    [table] = list_lake(str(tmp_path))
    with pytest.raises(LakeFileError, match="empty dataset"):
        _read(str(tmp_path), table)


# -- query tables given by their own path ------------------------------------------------------------------------
@pytest.mark.parametrize("path", ["exports/orders.csv.gz", "exports/orders.jsonl", "sales/orders_delta",
                                  "sales/orders_hive", "iceberg/sales/orders"])
def test_query_file_takes_every_layout(lakehouse, path):
    q = read_query_file(os.path.join(lakehouse, path))
    assert _rows(q) == EXPECTED


def test_query_folder_that_is_no_table(lakehouse):
    with pytest.raises(QueryError, match="is not a table"):
        read_query_file(os.path.join(lakehouse, "exports"))
    root, table = locate(os.path.join(lakehouse, "sales/orders_parts"))
    assert (root, table.path, table.format) == (os.path.join(lakehouse, "sales"), "orders_parts", "parts/parquet")


@pytest.mark.parametrize("small", [0, 256])
def test_folder_at_a_time_listing_equals_one_whole_walk(lakehouse, tmp_path, monkeypatch, small):
    """The local walk (a folder at a time, few folders cached) classifies exactly as one listing of every file, as
    object storage gives it, does (its folders cut with Arrow kernels or in Python); with more folders than the cache
    holds, keys that sort around a folder's prefix, and links that are not walked."""
    from discovery.data.lake import listing
    from discovery.storage import walk

    monkeypatch.setattr(walk, "SMALL", small)
    root = tmp_path / "lake"
    shutil.copytree(lakehouse, root)
    for n in range(KEPT + 6):
        folder = root / "many" / f"f{n:03d}" / ("deep" if n % 3 else "")
        folder.mkdir(parents=True, exist_ok=True)
        (folder / f"t{n}.csv").write_text("a,b\n1,2\n")
    for rel in ("g/t.csv", "g-x/t.csv", "g.csv", "g0/t.csv", "é/t.csv", "e/t.csv"):  # keys sorting around 'g/'
        (root / "near" / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / "near" / rel).write_text("a\n1\n")
    os.symlink(root / "sales", root / "many" / "linked_folder")
    os.symlink(root / "missing.csv", root / "many" / "dangling.csv")

    def entry(path: str):  # a link's target, or the link itself when it dangles
        st = os.stat(path) if os.path.exists(path) else os.lstat(path)
        return st.st_size, st.st_mtime_ns

    whole = []
    for dirpath, _, filenames in os.walk(root):
        rel = os.path.relpath(dirpath, root).replace(os.sep, "/")
        whole += [(name if rel == "." else f"{rel}/{name}", *entry(os.path.join(dirpath, name))) for name in filenames]
    expected = listing._Rows()
    listing._classify(SortedTree.of([whole[:7], whole[7:]]), "", expected)
    walked = list_lake(str(root))
    assert walked.table.equals(expected.listing().table)
    assert "many/dangling.csv" in walked.table["path"].to_pylist()
    assert not any(p.startswith("many/linked_folder") for p in walked.table["path"].to_pylist())
    assert len(walked) == 9 + KEPT + 6 + 1 + 6
    assert [t.path for t in walked] == sorted(walked.table["path"].to_pylist()) and walked[-1] == list(walked)[-1]
