"""A lake and a warehouse on a real S3-compatible server (moto's, on 127.0.0.1): the same index and answers as a
local build, incremental refreshes, CLI and page queries, and one-line errors for unreachable storage."""
from __future__ import annotations

import csv
import os
import shutil
import subprocess
import sys

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import discovery
from discovery import storage
from discovery.config import Limits
from discovery.data.lake import read_lake_table
from discovery.data.store import Warehouse, load_snapshot
from discovery.orchestration.demo_lake import layouts
from spark_jobs.refresh import refresh
from sessions import session

pytestmark = [pytest.mark.spark, pytest.mark.slow]

UNION_QUERY = "finance/registers/firms.tsv"
JOIN_QUERY, JOIN_COLUMN = "partners/vendor_master.csv", "Vendor"
NARY_QUERY, NARY_KEY = "retail/stores/store_locations.csv", "country,city"
NUMERIC_QUERY, NUMERIC_COLUMN = "geo/weather_stations.csv", "lat,lng"
#: Union-family members laid out as lakehouse tables (the rest stay files).
RELAID = {"delta": "finance/registers/companies.csv", "hive": "finance/registers/companies.tsv",
          "jsonl": "finance/payables/purchase_orders.csv"}


def _ground_truth(demo_lake: str, name: str) -> list[dict]:
    with open(os.path.join(demo_lake, "_ground_truth", f"{name}.csv"), newline="") as fh:
        return list(csv.DictReader(fh))


def _pick(demo_lake: str) -> list[str]:
    """A small lake around the demo queries: the union query's family, the join pair, the n-ary group, the planted
    coordinate join with its distractor, and two broken files."""
    union = [r["lake_table"] for r in _ground_truth(demo_lake, "union")
             if r["query_table"] == UNION_QUERY and r["unionable"] == "1"]
    nary = [r["lake_table"] for r in _ground_truth(demo_lake, "nary") if r["query_table"] == NARY_QUERY]
    broken = [r["path"] for r in _ground_truth(demo_lake, "broken")][:2]
    numeric = [r["lake_table"] for r in _ground_truth(demo_lake, "numeric") if r["query_table"] == NUMERIC_QUERY]
    picked = {UNION_QUERY, JOIN_QUERY, NARY_QUERY, NUMERIC_QUERY, *RELAID.values(), *union[:6], *nary[:4], *broken,
              *numeric}
    return sorted(p for p in picked if os.path.exists(os.path.join(demo_lake, p)))


@pytest.fixture(scope="module")
def lakes(spark, s3_server, demo_lake, tmp_path_factory):
    """(local lake, local warehouse, s3 lake, s3 warehouse), both built by the real refresh."""
    local = str(tmp_path_factory.mktemp("s3lake") / "lake")
    for rel in _pick(demo_lake):
        os.makedirs(os.path.dirname(os.path.join(local, rel)), exist_ok=True)
        shutil.copy2(os.path.join(demo_lake, rel), os.path.join(local, rel))
    for layout, rel in RELAID.items():
        parsed = read_lake_table(local, rel, rel.rsplit(".", 1)[1], os.path.getsize(os.path.join(local, rel)),
                                 Limits())
        table = pa.table(dict(zip(parsed.names, parsed.columns)))
        layouts.relayout(local, rel, layout, table, older=table.slice(0, 3) if layout == "delta" else None)
    lake_uri = s3_server.create_bucket("lake-bucket") + "/lake"
    wh_uri = s3_server.create_bucket("wh-bucket") + "/wh"
    fs, _ = storage.filesystem(lake_uri)
    fs.put(local, "lake-bucket/lake", recursive=True)
    local_wh = str(tmp_path_factory.mktemp("s3wh") / "wh")
    assert refresh(spark, local_wh, local)["published"]
    assert refresh(spark, wh_uri, lake_uri)["published"]
    return local, local_wh, lake_uri, wh_uri


def _catalog(warehouse: str) -> dict:
    cat = load_snapshot(Warehouse(warehouse)).read("catalog")
    keep = ("format", "rows", "cols", "status", "error", "warnings", "encoding", "delimiter")
    return {r["path"]: {k: r[k] for k in keep} for r in cat.to_pylist()}


def _answers(warehouse: str) -> dict:
    ls = discovery.open(warehouse)
    union = ls.union(UNION_QUERY, k=5)
    join = ls.join(JOIN_QUERY, column=JOIN_COLUMN, top_k=5)
    nary = ls.nary(NARY_QUERY, key=NARY_KEY, k=5)

    def strip(result: dict) -> list:
        return [{k: v for k, v in r.items() if k not in ("table_id",)} for r in result["results"]]

    return {"union": strip(union), "join": strip(join), "nary": strip(nary)}


def test_s3_build_equals_local_build(lakes):
    local, local_wh, lake_uri, wh_uri = lakes
    s3_cat = _catalog(wh_uri)
    assert s3_cat == _catalog(local_wh)
    formats = {c["format"] for c in s3_cat.values()}
    assert {"delta", "json"} <= formats and any(f.startswith(("hive/", "parts/")) for f in formats)
    answers = _answers(wh_uri)
    assert answers == _answers(local_wh)
    assert answers["union"] and answers["join"] and answers["nary"]


def test_numerical_join_on_s3_maps_the_published_arrays(lakes, demo_lake, monkeypatch, tmp_path):
    """The refresh uploads the numerical join arrays (``meta.json`` last); a query process downloads them once into
    its array cache, maps the copy, and answers as the local build: the planted coordinate join first."""
    from discovery.indexes.numjoin.arrays import numeric_arrays_name, open_numeric
    from discovery.data.store.arrays import ARRAYS_DIR

    _, local_wh, _, wh_uri = lakes
    monkeypatch.setenv("LAKESCOUT_ARRAY_CACHE", str(tmp_path / "cache"))
    snapshot = load_snapshot(Warehouse(wh_uri))
    name = numeric_arrays_name(snapshot.versions)
    fs, path = storage.filesystem(f"{wh_uri}/{ARRAYS_DIR}/{name}")
    assert fs.exists(f"{path}/meta.json") and fs.exists(f"{path}/haversine/sets.arrow")
    families = open_numeric(snapshot.warehouse, snapshot.versions)
    assert "haversine" in families
    local = storage.backend(wh_uri).local_folder(wh_uri, f"{wh_uri}/{ARRAYS_DIR}/{name}", name)
    assert os.path.exists(os.path.join(local, "haversine", "centers.npy"))
    assert local.startswith(str(tmp_path / "cache"))

    def strip(result: dict) -> list:
        return [{k: v for k, v in r.items() if k != "table_id"} for r in result["results"]]

    planted = [r["lake_table"] for r in _ground_truth(demo_lake, "numeric")
               if r["query_table"] == NUMERIC_QUERY and r["planted"] == "1"]
    for method in ("pexeso", "exact"):
        got = discovery.open(wh_uri).join(NUMERIC_QUERY, NUMERIC_COLUMN, method=method)
        assert strip(got) == strip(discovery.open(local_wh).join(NUMERIC_QUERY, NUMERIC_COLUMN, method=method))
        assert got["join"] == "numeric" and got["results"][0]["path"] == planted[0]


def test_cli_queries_an_s3_warehouse(lakes):
    import json

    _, local_wh, _, wh_uri = lakes
    out = subprocess.run([os.path.join(os.path.dirname(sys.executable), "lakescout"), "union", "--warehouse", wh_uri,
                          "--query", UNION_QUERY, "-k", "5", "--json"], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    got = [r["path"] for r in json.loads(out.stdout)["results"]]
    assert got == [r["path"] for r in discovery.open(local_wh).union(UNION_QUERY, k=5)["results"]]


def test_served_batch_reads_the_s3_lake(lakes):
    """The page's searches run as served batches: a lake table named by path is read from the bucket."""
    from discovery.surfaces.batch import run_batch

    _, local_wh, _, wh_uri = lakes
    spec = {"queries": [{"kind": "nary", "query": NARY_QUERY, "key": NARY_KEY, "k": 3}]}
    summary = run_batch(session(wh_uri), spec, batch_id="s3-served", served=True)
    local = run_batch(session(local_wh), spec, batch_id="local-served", served=True)
    assert summary["queries"][0]["results"] > 0
    assert summary["queries"][0]["top"] == local["queries"][0]["top"]


def test_a_spark_batch_on_the_s3_warehouse_records_the_in_process_rows(lakes, spark):
    """A batch on the S3 warehouse answered in the session's Spark tasks records what the in-process run records.
    (The tasks get the driver's S3 settings from the share they unpickle, as the refresh stages' do; that step is
    tested in ``test_batch_spark``, since this session's reused Python workers already hold them.)"""
    from discovery.surfaces.batch import batch_results, run_batch
    from spark_jobs.query_batch import run_batch_spark

    _, _, _, wh_uri = lakes
    spec = {"queries": [{"id": "u", "kind": "union", "query": UNION_QUERY, "k": 4},
                        {"id": "j", "kind": "join", "query": JOIN_QUERY, "column": JOIN_COLUMN, "top_k": 4},
                        {"id": "n", "kind": "nary", "query": NARY_QUERY, "key": NARY_KEY, "k": 3}]}
    summary = run_batch_spark(spark, session(wh_uri), spec, batch_id="s3-spark", served=True)
    run_batch(session(wh_uri), spec, batch_id="s3-here", served=True)
    strip = lambda t: [{k: v for k, v in r.items() if k not in ("batch_id", "created_at")}  # noqa: E731
                       for r in t.to_pylist()]
    assert summary["spark_tasks"] >= 1 and summary["results"] > 0
    assert strip(batch_results(Warehouse(wh_uri), "s3-spark")) == strip(batch_results(Warehouse(wh_uri), "s3-here"))


def test_the_recent_batches_of_an_s3_warehouse_are_its_newest_first_runs(lakes):
    """The recent batches read the newest files by their statistics (``Warehouse.read_since``) on the S3 server as
    on a local folder: the plain definition's list, for every limit."""
    from discovery.surfaces.batch import first_run, recent_batches, run_batch

    _, _, _, wh_uri = lakes
    wh = Warehouse(wh_uri)
    for i in range(3):
        run_batch(session(wh), [{"id": "u", "kind": "union", "query": UNION_QUERY, "k": 2}],
                  batch_id=f"s3-recent-{i}", served=True)
    every = first_run(wh.read("query_batches"), ["batch_id"]).sort_by([("created_at", "descending")])
    for limit in (1, 3, every.num_rows + 2):
        assert [b["batch_id"] for b in recent_batches(wh, limit)] == \
            every.slice(0, limit).column("batch_id").to_pylist()


def test_answers_on_the_s3_lake_are_written_to_s3_as_the_local_ones(lakes, spark, s3_server):
    """A union and a join of the S3 warehouse, read from the S3 lake (a Delta, a Hive and a JSON Lines table among
    them) and written to the bucket as Parquet and Delta, in this process and on Spark, hold what the local build's
    writes hold."""
    from deltalake import DeltaTable
    import pyarrow.parquet as pq

    from discovery.surfaces.materialize.actions import stack_plan
    from spark_jobs.materialize import run_plan_spark

    local, local_wh, lake_uri, wh_uri = lakes
    out = s3_server.create_bucket("out-bucket")
    s3, here = discovery.open(wh_uri), discovery.open(local_wh)
    fs, _ = storage.filesystem(out)

    def plain(table: pa.Table) -> pa.Table:
        return table.replace_schema_metadata(None)

    union = here.stack(UNION_QUERY, k=5)
    import json

    formats = {src["format"] for src in json.loads(union.schema.metadata[b"lakescout"])["sources"]}
    assert "delta" in formats and len(formats) >= 2
    described = s3.stack(UNION_QUERY, k=5, output=f"{out}/union.parquet")
    assert described["rows"] == union.num_rows
    with fs.open("out-bucket/union.parquet", "rb") as fh:
        assert plain(pq.read_table(fh)).equals(plain(union))
    run_plan_spark(spark, stack_plan(s3, UNION_QUERY, k=5), f"{out}/union_delta", "delta", s3.config.limits)
    written = DeltaTable(f"{out}/union_delta", storage_options=storage.delta_options(out)).to_pyarrow_table()
    assert plain(written).equals(plain(union))
    assert not [p for p in fs.ls("out-bucket", detail=False) if ".staging-" in p]
    join = here.augment(JOIN_QUERY, JOIN_COLUMN)
    s3.augment(JOIN_QUERY, JOIN_COLUMN, output=f"{out}/join.csv")
    with fs.open("out-bucket/join.csv", "rb") as fh:
        import pyarrow.csv as pacsv

        assert pacsv.read_csv(fh).column(JOIN_COLUMN).to_pylist() == join.column(JOIN_COLUMN).to_pylist()


def test_a_text_join_of_the_s3_lake_is_paired_on_spark_as_in_process(lakes):
    """The two-table matcher on Spark (``spark_jobs/match.py``, the materialize DAG's write with a Spark master)
    reads the lake column's units from the bucket on its executors and pairs the values as this process does: the
    same pairs, scores and rules, and the plan says where they were paired."""
    from discovery.surfaces.batch import run_batch
    from test_materialize import assert_paired_on_spark_as_here

    _, _, _, wh_uri = lakes
    batch = run_batch(session(Warehouse(wh_uri)), [{"id": "v", "kind": "join", "query": JOIN_QUERY,
                                                   "column": JOIN_COLUMN}], batch_id="s3-paired", served=True)
    assert_paired_on_spark_as_here(wh_uri, discovery.open(wh_uri).config, batch["batch_id"], served=True)


def test_incremental_refresh_on_s3_processes_exactly_the_changes(lakes, spark, s3_server):
    """Changes the S3 lake and republishes its warehouse: the tests that compare it with the local build come
    before this one (pytest runs a module's tests in the order they are written)."""
    from deltalake import write_deltalake

    local, _, lake_uri, wh_uri = lakes
    fs, _ = storage.filesystem(lake_uri)
    before = _catalog(wh_uri)
    added, changed_file, removed = "new/extra_table.csv", "finance/registers/firms.tsv", NARY_QUERY
    fs.pipe_file(f"lake-bucket/lake/{added}", b"city,country\nOslo,Norway\nLima,Peru\n")
    data = fs.cat_file(f"lake-bucket/lake/{changed_file}")
    fs.pipe_file(f"lake-bucket/lake/{changed_file}", data + data.splitlines(keepends=True)[-1])
    fs.rm_file(f"lake-bucket/lake/{removed}")
    delta = f"{lake_uri}/finance/registers/companies"
    write_deltalake(delta, pa.table({"extra": ["a", "b"]}), mode="overwrite", schema_mode="overwrite",
                    storage_options=storage.delta_options(delta))
    s3_server.requests(reset=True)
    out = refresh(spark, wh_uri, lake_uri)
    assert out["published"]
    runs = Warehouse(wh_uri).read("refresh_runs")
    scan = runs.filter(pc.and_(pc.equal(runs["refresh_id"], out["refresh_id"]), pc.equal(runs["stage"], "scan")))
    row = [r for r in scan.to_pylist() if r["status"] == "ok"][0]
    assert (row["tables_added"], row["tables_changed"], row["tables_deleted"]) == (1, 2, 1)
    after = _catalog(wh_uri)
    assert after[removed]["status"] == "deleted" and after[added]["status"] == "ok"
    assert after["finance/registers/companies"]["cols"] == 1
    unchanged = set(before) - {changed_file, removed, "finance/registers/companies"}
    assert all(after[p] == before[p] for p in unchanged)


def _cli(*args, env=None) -> subprocess.CompletedProcess:
    return subprocess.run([os.path.join(os.path.dirname(sys.executable), "lakescout"), *args], capture_output=True,
                          text=True, timeout=300, env=env)


def test_missing_bucket_is_one_line_exit_2(s3_server, tmp_path):
    out = _cli("status", "--warehouse", "s3://no-such-bucket/wh")
    assert out.returncode == 2
    assert out.stderr.strip().count("\n") == 0 and "no-such-bucket" in out.stderr and "does not exist" in out.stderr
    lake = tmp_path / "lake"
    lake.mkdir()
    (lake / "t.csv").write_text("a\n1\n")
    out = _cli("refresh", "--lake", str(lake), "--warehouse", "s3://no-such-bucket/wh")
    assert out.returncode == 2 and "no-such-bucket" in out.stderr and "Traceback" not in out.stderr


def test_wrong_keys_and_unreachable_endpoint(s3_server):
    import socket

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "scripts"))
    from s3_server import S3Server

    with S3Server(require_auth=True) as strict:
        env = dict(os.environ, **strict.env)
        out = _cli("status", "--warehouse", "s3://wh-bucket/wh", env=env)
        assert out.returncode == 2 and "wh-bucket" in out.stderr and "refused" in out.stderr
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = s.getsockname()[1]
    env = dict(os.environ, AWS_ENDPOINT_URL=f"http://127.0.0.1:{closed}")
    out = _cli("status", "--warehouse", "s3://wh-bucket/wh", env=env)
    assert out.returncode == 2 and "cannot reach bucket 'wh-bucket'" in out.stderr
    assert out.stderr.strip().count("\n") == 0


def test_iceberg_table_on_s3_reads_its_current_snapshot(s3_server, tmp_path):
    """An Iceberg table whose metadata and data files live on S3 (written through a SQL catalog) reads back as its
    current snapshot, through the same ``AWS_*`` settings as every other reader."""
    lake = s3_server.create_bucket("iceberg-lake") + "/lake"
    table = pa.table({"city": ["Oslo", "Lima", "Pune", "Kiev"],
                      "population": [709_000, 9_750_000, 3_124_000, 2_950_000]})
    rel = layouts.relayout(lake, "iceberg/cities.csv", "iceberg", table, older=table.slice(0, 1),
                           catalog_db=str(tmp_path / "catalog.db"))
    parsed = read_lake_table(lake, rel, "iceberg", 0, Limits())
    assert parsed.names == ["city", "population"]
    assert [v.as_py() for v in parsed.columns[0]] == ["Oslo", "Lima", "Pune", "Kiev"]


def test_s3_listing_pages_equal_the_local_listing(s3_server, tmp_path, monkeypatch):
    """A lake listed from S3 a few keys per request (page boundaries inside datasets and folders, keys that sort
    around a folder's prefix, folder markers) names the same tables, formats and sizes as the same lake on disk; a
    dataset folder on S3 is located as one table."""
    from discovery.data.lake import list_lake, locate
    from discovery.storage import backends

    local = tmp_path / "lake"
    table = pa.table({"city": ["Oslo", "Lima", "Pune"], "pop": [709, 9750, 3124]})
    layouts.write_delta(str(local / "sales/orders_delta"), table, older=table.slice(0, 1))
    layouts.write_hive(str(local / "sales/orders_hive"), table, ["city"])
    layouts.write_spark_parts(str(local / "sales/orders_parts"), table)
    layouts.write_compressed_csv(str(local / "exports/orders.csv.gz"), table)
    for rel in ("g/t.csv", "g-x/t.csv", "g.csv", "g0/t.csv", "é/t.csv", "_hidden/t.csv", "top.csv"):
        (local / "near" / rel).parent.mkdir(parents=True, exist_ok=True)
        (local / "near" / rel).write_text("a\n1\n")
    uri = s3_server.create_bucket("paged-lake") + "/lake"
    fs, base = storage.filesystem(uri)
    fs.put(str(local), base, recursive=True)
    fs.pipe(f"{base}/near/marker/", b"")                       # a folder marker is no object of the lake
    monkeypatch.setattr(backends, "PAGE", 3)

    def tables(root):
        return [(t.path, t.format, t.size) for t in list_lake(root)]

    assert tables(uri) == tables(str(local))
    assert len(tables(uri)) == 4 + 6
    root, found = locate(f"{uri}/sales/orders_hive")
    assert (root, found.path, found.format) == (uri + "/sales", "orders_hive", "hive/parquet")


def test_maintenance_prunes_the_query_arrays_of_an_s3_warehouse(s3_server):
    """Remote array folders no retained snapshot pins (and a half-uploaded one) are deleted; the pinned ones stay."""
    from types import SimpleNamespace

    from discovery.indexes.numjoin.arrays import numeric_arrays_name
    from discovery.orchestration.refresh.runs import query_array_folders
    from discovery.data.store.arrays import ARRAYS_DIR, prune_folders
    from discovery.indexes.union.arrays import arrays_name

    root = s3_server.create_bucket("prune-bucket") + "/wh"
    kept = {"column_vectors": 5, "centroid_partitions": 4, "numeric_sets": 7}
    old = {"column_vectors": 3, "centroid_partitions": 4, "numeric_sets": 6}
    fs, path = storage.filesystem(f"{root}/{ARRAYS_DIR}")
    for name in (arrays_name(kept), arrays_name(old), numeric_arrays_name(kept), numeric_arrays_name(old)):
        fs.pipe_file(f"{path}/{name}/codes.npy", b"x")
        fs.pipe_file(f"{path}/{name}/meta.json", b"{}")
    fs.pipe_file(f"{path}/union-half-written/codes.npy", b"x")  # a killed refresh's upload: no meta.json
    removed = prune_folders(SimpleNamespace(root=root), {folder.name(kept) for folder in query_array_folders()})
    assert sorted(removed) == sorted([arrays_name(old), numeric_arrays_name(old), "union-half-written"])
    left = sorted(p.rsplit("/", 1)[-1] for p in fs.ls(path, detail=False, refresh=True))
    assert left == sorted([arrays_name(kept), numeric_arrays_name(kept)])
    assert fs.cat_file(f"{path}/{arrays_name(kept)}/codes.npy") == b"x"
    assert prune_folders(SimpleNamespace(root=s3_server.create_bucket("empty-bucket") + "/wh"), set()) == []


def test_a_scheme_arrow_cannot_open_goes_through_fsspec_or_says_what_to_install():
    """``az://`` is a scheme pyarrow does not parse (``abfss://`` it does): the store falls back to the fsspec
    filesystem wrapped for pyarrow, and where that filesystem's package is missing the error names the URI and it."""
    import importlib.util

    import pyarrow.fs as pafs

    uri = "az://container/warehouse"
    with pytest.raises(pa.ArrowInvalid):
        pafs.FileSystem.from_uri(uri)
    if importlib.util.find_spec("adlfs") is None:
        with pytest.raises(ValueError, match=r"'az://container/warehouse': no filesystem for az:// is installed"):
            storage.arrow_filesystem(uri)
    else:
        assert isinstance(storage.arrow_filesystem(uri)[0], pafs.PyFileSystem)
