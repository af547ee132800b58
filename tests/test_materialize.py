"""Writing the union and the joins an answer describes, through ``discovery.open(...)``: on a random lake built by
the real refresh, every written join equals a pandas merge over an independent brute-force value mapping (text,
numbers, coordinates, n-ary keys; every fan-out policy), and every written union the concatenation of the lake
tables' aligned columns, read at the versions the snapshot indexed."""
from __future__ import annotations

import json
import os

import numpy as np
import pandas as pd
import pyarrow as pa
import pytest

import discovery
from conftest import FAST_CONFIG
from discovery.indexes.join.metric import canonical_squared, chord_threshold, prepare_vectors
from discovery.indexes.join.stage import ROW_KEYS
from discovery.indexes.numjoin.metric import get_metric
from discovery.query.resolve import resolve_query
from discovery.query.vectors import query_value_vectors
from discovery.surfaces.materialize import METADATA_KEY
from materialize_data import lake_frame, merge_oracle, text_keys, write_lake
from sessions import session

pytestmark = pytest.mark.spark

#: A small per-column value cap, so query columns have more distinct values than the search samples.
CONFIG = FAST_CONFIG + "join_max_values = 25\n"


@pytest.fixture(scope="module")
def built(spark, tmp_path_factory) -> dict:
    from spark_jobs.refresh import refresh

    root = str(tmp_path_factory.mktemp("materialize"))
    paths = write_lake(root)
    config = os.path.join(root, "lakescout.toml")
    with open(config, "w") as fh:
        fh.write(CONFIG)
    paths["warehouse"] = os.path.join(root, "wh")
    assert refresh(spark, paths["warehouse"], paths["lake"], config_path=config).get("published")
    return paths


@pytest.fixture(scope="module")
def ls(built):
    return discovery.open(built["warehouse"])


def _catalog(ls, table_id: int) -> dict:
    cat = ls.snapshot.read("catalog").to_pylist()
    return next(r for r in cat if r["table_id"] == table_id)


def _added(out: pa.Table, prefix: str, column: str) -> list:
    return out.column(f"{prefix}.{column}").to_pylist()


def _cells(series: pd.Series) -> list:
    """Cells of an oracle frame with pandas' missing markers (NaN after a merge) as None."""
    return [None if v is None or (isinstance(v, float) and np.isnan(v)) else v for v in series]


def _same(written, cell) -> bool:
    """A written value equals the lake cell it came from (cells are written in one spelling per type)."""
    cell = _cells(pd.Series([cell], dtype=object))[0]
    if written is None or cell is None:
        return written is None and cell is None
    if isinstance(written, (int, float)):
        return float(written) == float(cell)
    if hasattr(written, "isoformat"):
        return written.isoformat() == cell
    return written == cell


def _text_mapping(ls, query: str, column: str, table_id: int, lake_column: str, tau: float) -> dict:
    """{normalised query value: (lake value, distance)} by brute force: each query value's nearest lake value vector
    (whole cell or segment, as stored) within tau, ties by the lower row of the column's stored order."""
    snap = ls.snapshot
    q = resolve_query(snap, query)
    qv = query_value_vectors(snap, q, q.ordinal(column), max_values=10 ** 9)
    names = snap.read("columns", columns=["table_id", "ordinal", "name"]).to_pylist()
    ordinal = next(c["ordinal"] for c in names if c["table_id"] == table_id and c["name"] == lake_column)
    vv = snap.read("value_vectors", columns=ROW_KEYS + ["vector"]).to_pandas()
    vv = vv[(vv.table_id == table_id) & (vv.ordinal == ordinal)].sort_values(["value", "segment"], kind="stable")
    lake = prepare_vectors(np.stack(vv.vector.to_numpy()).astype(np.float32), "euclidean")
    mine = prepare_vectors(qv.vectors, "euclidean")
    tau_sq = chord_threshold(tau, "euclidean") ** 2
    out = {}
    for v in range(len(qv.values)):
        best = None
        for row in np.flatnonzero(qv.value_of == v):
            sq = canonical_squared(lake, np.repeat(mine[row:row + 1], len(lake), axis=0))
            for j in np.flatnonzero(sq <= tau_sq):
                if best is None or (sq[j], j) < best:
                    best = (sq[j], j)
        if best is not None:
            out[qv.values[v]] = (vv.value.iloc[best[1]], float(np.sqrt(best[0])))
    return out


def _query_frame(path: str) -> pd.DataFrame:
    frame = pd.read_csv(path, dtype=str, keep_default_na=False).apply(lambda c: c.str.strip()).astype(object)
    return frame.where(frame.notna() & (frame != ""), None)


@pytest.mark.parametrize("mode", ["nearest", "all", "aggregate"])
def test_a_text_join_equals_a_merge_over_the_brute_force_mapping(ls, built, mode):
    answer = ls.join(built["query"], "vendor", tau=0.15, top_k=3)
    assert len(answer["results"]) == 3
    fuzzy = 0
    for result in answer["results"]:
        out = ls.augment(built["query"], "vendor", table=result["table_id"], lake_column=result["column"], tau=0.15,
                         fan_out=mode, max_matches=1000, matcher="search")
        mapping = _text_mapping(ls, built["query"], "vendor", result["table_id"], result["column"], 0.15)
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        query = _query_frame(built["query"])
        want = merge_oracle(query, pd.Series(text_keys(query["vendor"])), mapping, lake,
                            pd.Series(text_keys(lake[result["column"]])), mode)
        prefix = os.path.basename(row["path"]).split(".")[0]
        fuzzy += sum(d > 0 for _, d in mapping.values())
        assert out.num_rows == len(want) >= (40 if mode != "all" else 41)
        assert out.column("vendor").to_pylist() == _cells(want["vendor"])
        for col in ("supplier", "amount", "price", "day", "city"):
            got = _added(out, prefix, col)
            assert all(_same(g, c) for g, c in zip(got, want[f"lake:{col}"])), (mode, col)
        dist = out.column(f"{prefix}.distance").to_pylist()
        has = want["__lrow"].notna()
        assert [d is not None for d in dist] == has.tolist()
        assert np.allclose([d for d in dist if d is not None], want.loc[has, "__d"].astype(float), rtol=0,
                           atol=1e-12)
        if mode == "aggregate":
            assert out.column(f"{prefix}.count").to_pylist() == want["__count"].astype(int).tolist()
            amounts = lake.assign(__k=text_keys(lake[result["column"]])).groupby("__k")["amount"]
            by_key = {k: [int(a) for a in g] for k, g in amounts}
            for key, mn, mx in zip(want["__lk"], _added(out, prefix, "amount.min"), _added(out, prefix, "amount.max")):
                assert (mn, mx) == ((min(by_key[key]), max(by_key[key])) if key in by_key else (None, None))
    assert fuzzy > 0  # pairs of different spellings, not only equal values


def test_the_whole_value_mapping_is_the_search_evidence_and_more(ls, built):
    """Every evidence pair the search shows is a pair of the written mapping, which holds one pair per matched
    query value, with exact row counts."""
    answer = ls.join(built["query"], "vendor", tau=0.15, top_k=2)
    for result in answer["results"]:
        pairs = ls.pairs(built["query"], "vendor", table=result["table_id"], lake_column=result["column"], tau=0.15,
                         matcher="search")
        rows = {(r["query_value"], r["lake_value"]): r for r in pairs.to_pylist()}
        for q, lake, d in result["matches"]:
            assert abs(rows[(q, lake)]["distance"] - d) < 1e-12
        mapping = _text_mapping(ls, built["query"], "vendor", result["table_id"], result["column"], 0.15)
        assert {r["query_value"]: r["lake_value"] for r in pairs.to_pylist()} == {k: v[0] for k, v in mapping.items()}
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        counts = pd.Series(text_keys(lake[result["column"]])).value_counts()
        assert all(r["lake_rows"] == counts[r["lake_value"]] for r in pairs.to_pylist())


@pytest.mark.parametrize("mode", ["nearest", "all"])
def test_the_default_matcher_writes_a_merge_over_its_own_pairs_of_the_lake_columns_values(ls, built, mode):
    """``augment`` pairs text values with the two-table matcher by default: the written rows are a merge over
    ``match_values`` of the query column's and the lake column's distinct keys, read here with pandas at the
    version the snapshot indexed, and every added row carries its pair's score and rule."""
    from discovery.transforms.match import match_values

    answer = ls.join(built["query"], "vendor", tau=0.15, top_k=3)
    for result in answer["results"]:
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        query = _query_frame(built["query"])
        found = match_values([k for k in dict.fromkeys(text_keys(query["vendor"])) if k],
                             [k for k in dict.fromkeys(text_keys(lake[result["column"]])) if k], 0.9)
        mapping = {q: (lk, d) for q, lk, d in zip(found.query, found.lake, found.distance)}
        scores = dict(zip(found.query, found.score))
        out = ls.augment(built["query"], "vendor", table=result["table_id"], lake_column=result["column"],
                         precision=0.9, fan_out=mode, max_matches=1000)
        want = merge_oracle(query, pd.Series(text_keys(query["vendor"])), mapping, lake,
                            pd.Series(text_keys(lake[result["column"]])), mode)
        prefix = os.path.basename(row["path"]).split(".")[0]
        assert out.num_rows == len(want)
        for col in ("supplier", "amount", "day"):
            assert all(_same(g, c) for g, c in zip(_added(out, prefix, col), want[f"lake:{col}"])), col
        keys = text_keys(out.column("vendor").to_pylist())
        has = want["__lrow"].notna().tolist()
        assert _added(out, prefix, "match_score") == [scores[k] if h else None for k, h in zip(keys, has)]
        assert [r is not None for r in _added(out, prefix, "match_rule")] == has
        source = json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]
        assert source["matcher"] == "auto" and source["precision_target"] == 0.9
        assert source["estimated_precision"] == round(found.precision, 4)
        assert source["matched_values"] == len(found.query) > 0


def test_a_join_with_no_matching_value_writes_the_query_rows_and_says_so(ls, built, tmp_path):
    """No query value within tau of the lake column (the search's pairs) or none the matcher pairs: the query's
    rows with null columns and one warning, and zero pairs with one warning; never a traceback."""
    frame = pd.DataFrame({"vendor": ["zq xv wk", "qqq jjj", "vvv kkk"], "n": ["1", "2", "3"]})
    result = ls.join(built["query"], "vendor", tau=0.15, top_k=1)["results"][0]
    for params in ({"matcher": "search", "tau": 1e-9}, {}):
        out = ls.augment(frame, "vendor", table=result["table_id"], lake_column=result["column"], **params)
        described = json.loads(out.schema.metadata[METADATA_KEY])
        assert out.num_rows == 3 and described["matched_rows"] == 0
        assert out.column(out.column_names[2]).null_count == 3
        assert any("no query row matched" in w for w in described["warnings"])
        pairs = ls.pairs(frame, "vendor", table=result["table_id"], lake_column=result["column"], **params)
        assert pairs.num_rows == 0
        assert any("no value of query column 'vendor' matched" in w
                   for w in json.loads(pairs.schema.metadata[METADATA_KEY])["warnings"])


def _numbers_oracle(query_values, lake_values, metric: str, tau: float) -> dict:
    """{query value: (lake value, distance)}: the nearest distinct lake value within tau, ties by the smaller."""
    m = get_metric(metric)
    lake = np.unique(np.asarray(lake_values, dtype=np.float64).reshape(len(lake_values), -1), axis=0)
    out = {}
    for qv in {tuple(np.atleast_1d(v)) for v in query_values}:
        d = m.distance(np.repeat(np.array([qv]), len(lake), axis=0), lake)
        ok = np.flatnonzero(d <= tau)
        if ok.size:
            j = ok[np.lexsort((ok, d[ok]))[0]]
            out[qv] = (tuple(lake[j]), float(d[j]))
    return out


@pytest.mark.parametrize("mode", ["nearest", "all"])
def test_a_numerical_join_equals_a_merge_over_the_nearest_numbers(ls, built, mode):
    answer = ls.join(built["query"], "price", tau=0.3, top_k=2)  # prices are quarters: ties at 0.25 both ways
    assert answer["results"]
    for result in answer["results"]:
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        query = _query_frame(built["query"])
        qkeys = pd.Series([None if v is None else (float(v),) for v in query["price"]])
        lkeys = pd.Series([None if v is None else (float(v),) for v in lake[result["column"]]])
        mapping = _numbers_oracle([k for k in qkeys if k], [k for k in lkeys if k], "absolute", 0.3)
        assert any(d > 0 for _, d in mapping.values())
        out = ls.augment(built["query"], "price", table=result["table_id"], lake_column=result["column"], tau=0.3,
                         fan_out=mode, max_matches=1000)
        want = merge_oracle(query, qkeys, mapping, lake, lkeys, mode)
        prefix = os.path.basename(row["path"]).split(".")[0]
        assert out.num_rows == len(want)
        assert all(_same(g, c) for g, c in zip(_added(out, prefix, "supplier"), want["lake:supplier"]))
        dist = out.column(f"{prefix}.distance").to_pylist()
        assert [d if d is not None else -1 for d in dist] == want["__d"].fillna(-1).astype(float).tolist()


def test_a_coordinate_join_equals_a_merge_over_the_nearest_places(ls, built):
    answer = ls.join(built["query"], "lat,lng", tau=150.0, top_k=2)
    assert answer["results"] and answer["results"][0]["matched"] > 3
    for result in answer["results"]:
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        query = _query_frame(built["query"])
        lat, lng = result["column"].split(",")

        def keys(frame, a, b):
            return pd.Series([None if x is None or y is None else (float(x), float(y))
                              for x, y in zip(frame[a], frame[b])])

        qkeys, lkeys = keys(query, "lat", "lng"), keys(lake, lat, lng)
        mapping = _numbers_oracle([k for k in qkeys if k], [k for k in lkeys if k], "haversine", 150.0)
        out = ls.augment(built["query"], "lat,lng", table=result["table_id"], lake_column=result["column"],
                         tau=150.0)
        want = merge_oracle(query, qkeys, mapping, lake, lkeys, "nearest")
        prefix = os.path.basename(row["path"]).split(".")[0]
        assert all(_same(g, c) for g, c in zip(_added(out, prefix, "supplier"), want["lake:supplier"]))
        dist = out.column(f"{prefix}.distance").to_pylist()
        assert np.allclose([d if d is not None else -1 for d in dist], want["__d"].fillna(-1).astype(float),
                           rtol=0, atol=1e-6)


@pytest.mark.parametrize("mode", ["nearest", "all", "aggregate"])
def test_an_nary_join_equals_a_merge_on_the_normalised_key(ls, built, mode):
    answer = ls.nary(built["query"], ["country", "city"], k=2)
    for result in answer["results"]:
        row = _catalog(ls, result["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        query = _query_frame(built["query"])
        lc = [result["mapping"]["country"], result["mapping"]["city"]]
        qkeys = pd.Series(list(zip(text_keys(query["country"]), text_keys(query["city"]))))
        lkeys = pd.Series(list(zip(text_keys(lake[lc[0]]), text_keys(lake[lc[1]]))))
        mapping = {k: (k, 0.0) for k in qkeys}
        out = ls.augment(built["query"], key="country,city", table=result["table_id"], fan_out=mode,
                         max_matches=1000)
        want = merge_oracle(query, qkeys, mapping, lake, lkeys, mode)
        prefix = os.path.basename(row["path"]).split(".")[0]
        assert out.num_rows == len(want)
        assert all(_same(g, c) for g, c in zip(_added(out, prefix, "supplier"), want["lake:supplier"]))


@pytest.mark.parametrize("dedupe", [False, True])
def test_a_union_is_the_concatenation_of_the_aligned_columns(ls, built, dedupe):
    answer = ls.union(built["query"], k=4)
    out = ls.stack(built["query"], k=4, dedupe=dedupe)
    query = _query_frame(built["query"])
    frames = [query.assign(lakescout_source=built["query"])]
    for r in answer["results"]:
        row = _catalog(ls, r["table_id"])
        lake = lake_frame(built["lake"], row["path"], row["version"])
        aligned = {q: lake[c] for q, c, _ in r["alignment"]}
        frames.append(pd.DataFrame({c: aligned.get(c, pd.Series([None] * len(lake))) for c in query.columns})
                      .assign(lakescout_source=row["path"]))
    want = pd.concat(frames, ignore_index=True)
    if dedupe:
        want = want[~want.drop(columns="lakescout_source").astype(str).duplicated(keep="first")]
    assert out.num_rows == len(want)
    assert out.column("lakescout_source").to_pylist() == want["lakescout_source"].tolist()
    for col in query.columns:
        assert all(_same(g, c) for g, c in zip(out.column(col).to_pylist(), want[col])), col
    described = json.loads(out.schema.metadata[METADATA_KEY])
    assert [s["table_id"] for s in described["sources"]] == [r["table_id"] for r in answer["results"]]


def test_the_delta_table_is_read_at_the_indexed_version(ls, built, tmp_path):
    """A commit to a Delta lake table after the refresh is not in what a materialisation of that snapshot reads."""
    from deltalake import DeltaTable, write_deltalake

    delta = os.path.join(built["lake"], built["delta"])
    table_id = next(r["table_id"] for r in ls.snapshot.read("catalog").to_pylist() if r["path"] == built["delta"])
    indexed = _catalog(ls, table_id)
    before = ls.stack(built["query"], tables=[table_id], query_rows=False)
    extra = DeltaTable(delta).to_pyarrow_table().slice(0, 7)
    write_deltalake(delta, extra, mode="append")
    after = ls.stack(built["query"], tables=[table_id], query_rows=False)
    assert after.equals(before)
    assert set(after.column("lakescout_version").to_pylist()) == {f"delta:{indexed['version']}"}
    assert after.num_rows == len(lake_frame(built["lake"], built["delta"], indexed["version"]))


def test_a_changed_file_is_used_with_a_warning_or_refused_when_strict(ls, built, tmp_path):
    import shutil

    from discovery.surfaces.materialize import PlanError

    path = "csv/orders_3.csv"
    table_id = next(r["table_id"] for r in ls.snapshot.read("catalog").to_pylist() if r["path"] == path)
    full = os.path.join(built["lake"], path)
    saved = str(tmp_path / "saved.csv")
    shutil.copy2(full, saved)
    try:
        with open(full, "a", encoding="utf-8") as fh:
            fh.write("Extra Supplier,France,Paris,3,1.25,2024-01-01,48.8000,2.3000\n")
        out = ls.stack(built["query"], tables=[table_id], query_rows=False)
        warnings = json.loads(out.schema.metadata[METADATA_KEY])["warnings"]
        assert any("changed since snapshot" in w and path in w for w in warnings)
        with pytest.raises(PlanError, match="refused"):
            ls.stack(built["query"], tables=[table_id], strict=True)
    finally:
        shutil.copy2(saved, full)


def test_augmentations_compose_and_names_never_clash(ls, built):
    answer = ls.join(built["query"], "vendor", tau=0.15, top_k=2)
    first, second = answer["results"][:2]
    once = ls.augment(built["query"], "vendor", table=first["table_id"], lake_column=first["column"], tau=0.15)
    twice = ls.augment(once, "vendor", table=second["table_id"], lake_column=second["column"], tau=0.15)
    again = ls.augment(twice, "vendor", table=first["table_id"], lake_column=first["column"], tau=0.15)
    assert twice.column_names[:once.num_columns] == once.column_names
    assert len(set(again.column_names)) == again.num_columns
    assert twice.slice(0, twice.num_rows).select(once.column_names).cast(once.schema).equals(once.cast(once.schema))
    repeated = [n for n in again.column_names if n.endswith("_2")]
    assert repeated and all(n[:-2] in once.column_names for n in repeated)


def test_a_dataframe_is_a_query_and_errors_never_print_it(ls, built):
    from discovery.query.params import ParameterError

    frame = _query_frame(built["query"])
    from_frame = ls.augment(frame, "vendor", tau=0.15)
    from_file = ls.augment(built["query"], "vendor", tau=0.15)
    assert from_frame.num_rows == from_file.num_rows
    assert from_frame.column(from_frame.column_names[-1]).to_pylist() == \
        from_file.column(from_file.column_names[-1]).to_pylist()
    assert ls.union(pa.Table.from_pandas(frame), k=2)["results"]
    with pytest.raises(ParameterError) as err:
        ls.union(frame.to_numpy(), k=2)
    assert "ndarray" in str(err.value) and len(str(err.value)) < 200
    with pytest.raises(Exception) as err:
        ls.augment(frame, "no_such_column")
    assert "Lyon" not in str(err.value) and "no_such_column" in str(err.value)


# -- the same tables on Spark, and written ------------------------------------------------------------------------
def _read(path: str, fmt: str) -> pa.Table:
    if fmt == "delta":
        from deltalake import DeltaTable

        return DeltaTable(path).to_pyarrow_table()
    if fmt == "csv":
        import pyarrow.csv as pacsv

        return pacsv.read_csv(path)
    import pyarrow.parquet as pq

    return pq.read_table(path)


def _plain(table: pa.Table) -> pa.Table:
    return table.replace_schema_metadata(None)


@pytest.mark.parametrize("fmt,dedupe", [("parquet", False), ("delta", True), ("csv", True)])
def test_a_union_written_on_spark_equals_the_one_written_here(ls, built, spark, tmp_path, fmt, dedupe):
    from discovery.surfaces.materialize.actions import stack_plan
    from discovery.surfaces.materialize.output import write_table
    from discovery.surfaces.materialize.execute import run_plan
    from spark_jobs.materialize import run_plan_spark

    plan = stack_plan(ls, built["query"], k=4, dedupe=dedupe)
    here, there = str(tmp_path / f"here.{fmt}"), str(tmp_path / f"there.{fmt}")
    local = run_plan(plan)
    write_table(local.with_metadata(), here, fmt)
    described = run_plan_spark(spark, plan, there, fmt, ls.config.limits)
    assert described["engine"] == "spark" and described["rows"] == local.table.num_rows
    assert _plain(_read(there, fmt)).equals(_plain(_read(here, fmt)))
    if fmt == "csv":
        assert open(here, "rb").read() == open(there, "rb").read()
    assert not [n for n in os.listdir(tmp_path) if n.startswith(".")]  # no staging or temporary file left


@pytest.mark.parametrize("mode", ["nearest", "all", "aggregate"])
def test_a_join_written_on_spark_equals_the_one_written_here(ls, built, spark, tmp_path, mode):
    from discovery.surfaces.materialize.actions import augment_plan
    from discovery.surfaces.materialize.execute import run_plan
    from spark_jobs.materialize import run_plan_spark

    plan = augment_plan(ls, built["query"], "vendor", tau=0.15, fan_out=mode, max_matches=1000)
    described = run_plan_spark(spark, plan, str(tmp_path / "there.parquet"), "parquet", ls.config.limits)
    assert described["matched_rows"] > 0
    assert _plain(_read(str(tmp_path / "there.parquet"), "parquet")).equals(_plain(run_plan(plan).table))


def test_a_plan_read_back_from_its_folder_writes_the_same_table(ls, built, tmp_path):
    """A plan folder carries the plan and the planning session's limits, so a Spark job reads the lake tables as
    the session that planned it, whatever configuration the job's machine has."""
    from dataclasses import replace

    from discovery.surfaces.materialize.actions import augment_plan, stack_plan
    from discovery.surfaces.materialize.plan import load_plan, plan_limits, save_plan
    from discovery.surfaces.materialize.execute import run_plan

    limits = replace(ls.config.limits, max_rows=1234, max_cell_chars=99)
    for i, plan in enumerate([stack_plan(ls, built["query"], k=3),
                              augment_plan(ls, built["query"], key="country,city", fan_out="aggregate")]):
        folder = tmp_path / f"plan{i}"
        folder.mkdir()
        save_plan(plan, str(folder), limits)
        assert run_plan(load_plan(str(folder))).table.equals(run_plan(plan).table)
        assert plan_limits(str(folder)) == limits


@pytest.mark.parametrize("fmt", ["parquet", "csv", "delta"])
def test_an_output_is_written_whole_or_not_at_all(ls, built, tmp_path, fmt):
    from discovery.surfaces.materialize import OutputError
    from discovery.surfaces.materialize.output import write_batches

    table = ls.augment(built["query"], "vendor", tau=0.15)
    target = str(tmp_path / f"out.{fmt}")

    def failing():
        yield from table.to_batches(max_chunksize=10)[:2]
        raise OSError("disk gone")

    with pytest.raises(Exception, match="disk gone"):
        write_batches(failing(), table.schema, target, fmt)
    assert os.listdir(tmp_path) == []
    ls.augment(built["query"], "vendor", tau=0.15, output=target)
    with pytest.raises(OutputError, match="exists|Delta table already"):
        ls.augment(built["query"], "vendor", tau=0.15, output=target)
    described = ls.augment(built["query"], "vendor", tau=0.15, fan_out="all", output=target, overwrite=True)
    assert _read(target, fmt).num_rows == described["rows"] > table.num_rows


def test_a_table_unreadable_since_indexing_is_refused_and_nothing_is_written(ls, built, spark, tmp_path):
    import shutil

    from discovery.surfaces.materialize import PlanError
    from discovery.surfaces.materialize.actions import stack_plan
    from spark_jobs.materialize import run_plan_spark

    path = "pq/shipments_1.parquet"
    table_id = next(r["table_id"] for r in ls.snapshot.read("catalog").to_pylist() if r["path"] == path)
    full = os.path.join(built["lake"], path)
    plan = stack_plan(ls, built["query"], tables=[table_id])
    saved = str(tmp_path / "saved.parquet")
    shutil.move(full, saved)
    try:
        with pytest.raises(PlanError, match="shipments_1.parquet.*cannot be read now"):
            ls.stack(built["query"], tables=[table_id], output=str(tmp_path / "out.parquet"))
        with pytest.raises(ValueError, match="shipments_1.parquet"):
            run_plan_spark(spark, plan, str(tmp_path / "out2.parquet"), "parquet", ls.config.limits)
    finally:
        shutil.move(saved, full)
    assert sorted(os.listdir(tmp_path)) == []


def test_bad_requests_are_one_line_each(ls, built, tmp_path):
    from discovery.surfaces.materialize import FanOutError, PlanError
    from discovery.query.params import ParameterError

    cases = [(PlanError, "no lake table with id 99999", dict(table=99999)),
             (PlanError, "there is no rank 500", dict(rank=500)),
             (PlanError, "has no column 'nope'", dict(columns=["nope"])),
             (FanOutError, "more than max_matches 1", dict(fan_out="all", max_matches=1)),
             (ParameterError, "fan_out must be one of", dict(fan_out="some")),
             (ParameterError, "rank must be at least 1", dict(rank=0))]
    for error, message, params in cases:
        with pytest.raises(error, match=message) as caught:
            ls.augment(built["query"], "vendor", tau=0.15, output=str(tmp_path / "x.parquet"), **params)
        assert "\n" not in str(caught.value)
    assert os.listdir(tmp_path) == []


def test_the_cli_writes_and_refuses_in_one_line(ls, built, tmp_path):
    """``lakescout augment`` / ``stack`` / ``pairs``: a written file described in JSON; bad requests one line on
    stderr, exit code 2, nothing written."""
    import subprocess
    import sys

    cli = os.path.join(os.path.dirname(sys.executable), "lakescout")
    common = ["--warehouse", built["warehouse"], "--query", built["query"]]

    def run(*args):
        return subprocess.run([cli, *args], capture_output=True, text=True, timeout=300)

    out = str(tmp_path / "joined.parquet")
    done = run("augment", *common, "--column", "vendor", "--tau", "0.15", "--output", out, "--json")
    assert done.returncode == 0, done.stderr
    described = json.loads(done.stdout)
    assert described["output"]["path"] == out and described["rows"] == 40
    assert pq_rows(out) == 40
    done = run("stack", *common, "-k", "2", "--output", str(tmp_path / "u.csv"))
    assert done.returncode == 0 and "wrote" in done.stdout and "u.csv (csv)" in done.stdout, done.stderr
    done = run("pairs", *common, "--column", "vendor", "--tau", "0.15", "--json")
    assert done.returncode == 0 and {"query_value", "lake_value", "distance", "score", "rule", "query_rows",
                                     "lake_rows"} <= set(json.loads(done.stdout)[0])
    done = run("pairs", *common, "--column", "vendor", "--tau", "0.15", "--matcher", "search", "--json")
    assert done.returncode == 0 and {r["rule"] for r in json.loads(done.stdout)} == {"search: nearest within tau 0.15"}
    for args, message in [(("augment", *common, "--column", "vendor", "--rank", "99", "--output", out + "2"),
                            "there is no rank 99"),
                          (("augment", *common, "--column", "vendor", "--output", out), "exists"),
                          (("stack", *common, "--tables", "no/such.csv", "--output", out + "3"), "no lake table"),
                          (("augment", *common, "--key", "country,city", "--table", "99999", "--output", out + "4"),
                           "no lake table with id 99999"),
                          (("augment", *common, "--column", "vendor", "--precision", "1.5", "--output", out + "5"),
                           "precision must be a number in (0, 1)"),
                          (("augment", *common, "--column", "vendor", "--output", str(tmp_path / "out.xlsx")),
                           "names no format")]:
        done = run(*args)
        assert done.returncode == 2 and message in done.stderr, (args, done.stderr)
        assert len(done.stderr.strip().splitlines()) == 1
    assert sorted(os.listdir(tmp_path)) == ["joined.parquet", "u.csv"]


def test_a_recorded_answer_is_written_with_the_configuration_its_surface_passes(ls, built):
    """``stored_plans`` (what the materialize DAG and the page write) fills what the recorded spec leaves out from
    the configuration the surface passes, not from this process's: the matcher, its precision target, and the tau
    of the search's own pairs."""
    from dataclasses import replace

    from discovery.surfaces.batch import run_batch
    from discovery.surfaces.materialize.execute import run_plans
    from discovery.surfaces.materialize.stored import stored_plans
    from discovery.data.store import Session

    batch = run_batch(session(built["warehouse"]),
                      [{"id": "v", "kind": "join", "query": built["query"], "column": "vendor"}])
    base = ls.config
    for materialize, join, want in [(replace(base.materialize, precision=0.8), base.join,
                                     {"matcher": "auto", "precision_target": 0.8}),
                                    (replace(base.materialize, matcher="search"), replace(base.join, tau=0.15),
                                     {"matcher": "search", "tau": 0.15})]:
        config = replace(base, materialize=materialize, join=join)
        _, plans = stored_plans(Session.at(built["warehouse"], config), batch["batch_id"], "v", served=False)
        source = run_plans(plans, config.limits).description["sources"][0]
        assert {k: source.get(k) for k in want} == want


def test_a_recorded_text_join_is_paired_on_spark_into_the_pairs_of_the_task(ls, built):
    """Given a Spark master (the materialize DAG's ``spark_conn_id``) and a lake table over ``[materialize]
    spark_min_bytes`` (0 here), ``stored_plans`` pairs a text join's values with the two-table matcher on Spark
    (``spark-submit spark_jobs/match.py``): the same pairs, scores and rules as in the task, and the plan says where
    they were paired."""
    from discovery.surfaces.batch import run_batch

    batch = run_batch(session(built["warehouse"]),
                      [{"id": "v", "kind": "join", "query": built["query"], "column": "vendor"}])
    assert_paired_on_spark_as_here(built["warehouse"], ls.config, batch["batch_id"], served=False)


def assert_paired_on_spark_as_here(warehouse: str, config, batch_id: str, served: bool) -> None:
    """Query ``v`` of the recorded batch ``batch_id`` planned in this process and with a Spark master (``[materialize]
    spark_min_bytes`` 0, so any lake table is paired on Spark): the same pairs, scores, rules and evidence, and each
    plan says where it was paired."""
    from dataclasses import replace

    from discovery.surfaces.materialize.stored import stored_plans
    from discovery.data.store import Session

    at = Session.at(warehouse, replace(config, materialize=replace(config.materialize, spark_min_bytes=0)))
    (_, [here]), (_, [there]) = (stored_plans(at, batch_id, "v", served=served, master=master)
                                 for master in (None, "local[2]"))
    assert here.source.mapping.num_rows > 0 and there.source.mapping.equals(here.source.mapping)
    assert (here.source.evidence["paired_on"], there.source.evidence["paired_on"]) == ("local", "spark")
    assert {k: v for k, v in there.source.evidence.items() if k != "paired_on"} == \
        {k: v for k, v in here.source.evidence.items() if k != "paired_on"}


def pq_rows(path: str) -> int:
    import pyarrow.parquet as pq

    return pq.ParquetFile(path).metadata.num_rows
