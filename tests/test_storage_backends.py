"""The storage wing: a new backend is one class and one registry entry, and the lake listing, the lake readers, the
warehouse lease and the query-array folders take it from there; the locations a user writes are spelled one way."""
from __future__ import annotations

import os
from types import SimpleNamespace

import fsspec
import pytest

from discovery import storage
from discovery.config import Limits
from discovery.data.lake import list_lake, locate, read_lake_table
from discovery.data.store.arrays import ArrayFolder
from discovery.data.store.lease import Lease, LeaseHeld, current


class MemoryBackend(storage.Backend):
    """fsspec's in-process memory filesystem as a storage: the whole backend a new scheme needs."""

    def __init__(self):
        super().__init__("memory")

    def filesystem(self, uri: str):
        return fsspec.filesystem("memory"), "/" + uri.split("://", 1)[1].strip("/")


@pytest.fixture
def memory(monkeypatch, tmp_path):
    monkeypatch.setitem(storage.BACKENDS, "memory", MemoryBackend())
    monkeypatch.setenv("LAKESCOUT_ARRAY_CACHE", str(tmp_path / "cache"))
    fs = fsspec.filesystem("memory")
    root = f"memory://lake-{os.getpid()}-{id(tmp_path)}"
    yield root, fs
    fs.rm("/" + root.split("://", 1)[1], recursive=True)


def _put(fs, uri: str, text: str) -> None:
    with fs.open("/" + uri.split("://", 1)[1], "wb") as fh:
        fh.write(text.encode())


def test_a_registered_backend_serves_listing_reading_the_lease_and_array_folders(memory):
    root, fs = memory
    _put(fs, f"{root}/lake/cities.csv", "city,country\nOslo,Norway\nLima,Peru\n")
    _put(fs, f"{root}/lake/sales/year=2024/part-0.csv", "store,amount\nA,1\n")
    _put(fs, f"{root}/lake/sales/year=2025/part-0.csv", "store,amount\nB,2\n")
    _put(fs, f"{root}/lake/_notes.csv", "hidden,names\n1,2\n")

    listing = list_lake(f"{root}/lake")
    assert [(t.path, t.format) for t in listing] == [("cities.csv", "csv"), ("sales", "hive/csv")]
    table = listing[0]
    parsed = read_lake_table(f"{root}/lake", table.path, table.format, table.size, Limits())
    assert parsed.names == ["city", "country"] and parsed.columns[0].to_pylist() == ["Oslo", "Lima"]
    assert locate(f"{root}/lake/sales")[1].format == "hive/csv"

    warehouse = f"{root}/warehouse"
    lease = Lease.acquire(warehouse, "refresh", run="one")
    with pytest.raises(LeaseHeld, match="another refresh is running"):
        Lease.acquire(warehouse, "refresh", run="two")
    lease.release()
    assert current(warehouse).state == "released"

    def fill(wh, versions, folder):
        with open(os.path.join(folder, "values.txt"), "w") as fh:
            fh.write(str(versions["catalog"]))
        with open(os.path.join(folder, storage.MARKER), "w") as fh:
            fh.write("{}")

    folder = ArrayFolder(name=lambda versions: f"demo-v{versions['catalog']}", fill=fill)
    wh = SimpleNamespace(root=warehouse)  # what an array folder needs of a warehouse: its root
    assert folder.open(wh, {"catalog": 3}) is None
    target = folder.write(wh, {"catalog": 3})
    assert target == f"{warehouse}/query_arrays/demo-v3"
    local = folder.open(wh, {"catalog": 3})
    assert open(os.path.join(local, "values.txt")).read() == "3" and not storage.is_remote(local)


def test_an_unknown_scheme_is_refused_naming_the_known_ones():
    with pytest.raises(ValueError, match=r"unknown storage scheme 'ftp'.*s3://"):
        storage.filesystem("ftp://host/lake")
    with pytest.raises(storage.CatalogLocation):
        storage.backend("iceberg://catalog/namespace")


@pytest.mark.parametrize("given, spelled", [
    ("s3://bucket/lake/", "s3://bucket/lake"),
    ("file:///tmp/lake", "/tmp/lake"),
    ("/tmp/lake/", "/tmp/lake"),
])
def test_one_spelling_per_location(given, spelled):
    assert storage.normalize(given) == spelled
    assert storage.on_disk(given) == (None if spelled.startswith("s3://") else spelled)


def test_a_warehouse_given_as_a_file_uri_is_local(tmp_path):
    """``file://`` is a local path everywhere (the warehouse once took it for object storage)."""
    from discovery.data.store import Warehouse

    wh = Warehouse(f"file://{tmp_path}/wh")
    assert wh.root == f"{tmp_path}/wh" and not wh.backend.remote
    assert wh.table_uri("catalog") == os.path.join(str(tmp_path), "wh", "catalog")


def test_credentials_reach_every_client_as_explicit_properties(monkeypatch):
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:9")
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "key")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "secret")
    monkeypatch.setenv("AWS_REGION", "eu-north-1")
    monkeypatch.delenv("AWS_SESSION_TOKEN", raising=False)
    creds = storage.credentials()
    assert storage.delta_options("s3://b/t") == {
        "aws_conditional_put": "etag", "AWS_ENDPOINT_URL": "http://127.0.0.1:9", "AWS_ACCESS_KEY_ID": "key",
        "AWS_SECRET_ACCESS_KEY": "secret", "AWS_REGION": "eu-north-1", "AWS_ALLOW_HTTP": "true"}
    assert creds.iceberg_properties() == {"s3.endpoint": "http://127.0.0.1:9", "s3.access-key-id": "key",
                                          "s3.secret-access-key": "secret", "s3.region": "eu-north-1"}
    assert creds.s3fs_kwargs() == {"key": "key", "secret": "secret", "endpoint_url": "http://127.0.0.1:9",
                                   "client_kwargs": {"region_name": "eu-north-1"}}
    assert storage.delta_options("/local/table") is None
