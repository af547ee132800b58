"""``RowLookup`` finds exactly the rows a filter over the whole table finds (by table id and by path), with repeated
ids, repeated and missing paths and ids the table lacks; and the served resolution of a query by id or path through
it names the catalog's own row."""
from __future__ import annotations

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from discovery.data.store import Warehouse, load_snapshot
from discovery.data.store.snapshot import RowLookup
from discovery.query.resolve import catalog_entry


@pytest.mark.parametrize("seed", range(5))
def test_positions_equal_a_filter_over_the_table(seed):
    rng = np.random.default_rng(seed)
    n = int(rng.integers(1, 400))
    ids = rng.integers(0, n, size=n)                                    # repeated ids, as the columns table has
    names = [None if rng.random() < 0.05 else f"dir{rng.integers(0, 5)}/t{rng.integers(0, n // 2 + 1)}.csv"
             for _ in range(n)]
    rows = pa.table({"table_id": pa.array(ids, pa.int64()), "path": pa.array(names, pa.string()),
                     "row": pa.array(np.arange(n))}).combine_chunks()
    at = RowLookup(rows)
    for wanted in ([], [int(ids[0])], rng.integers(-2, n + 3, size=7).tolist()):
        want = rows.filter(pc.is_in(rows["table_id"], pa.array(wanted, pa.int64())))
        got = rows.take(at.by_ids(wanted))
        assert sorted(got.column("row").to_pylist()) == sorted(want.column("row").to_pylist())
    for path in {p for p in names if p is not None} | {"dir9/none.csv", ""}:
        want = rows.filter(pc.equal(rows["path"], path)).column("row").to_pylist()
        assert rows.take(at.by_path(path)).column("row").to_pylist() == want    # in row order


def test_a_query_by_id_or_path_resolves_to_the_catalogs_row(indexed_lake):
    _, warehouse = indexed_lake
    snap = load_snapshot(Warehouse(warehouse))
    catalog = snap.read("catalog", columns=["table_id", "path", "status"]).to_pylist()
    for row in catalog:
        assert catalog_entry(snap, row["table_id"])["path"] == row["path"]
        assert catalog_entry(snap, str(row["table_id"]))["table_id"] == row["table_id"]
        if row["status"] != "deleted":
            assert catalog_entry(snap, row["path"])["table_id"] == row["table_id"]
    assert catalog_entry(snap, "no/such/table.csv") is None
    assert catalog_entry(snap, max(r["table_id"] for r in catalog) + 1) is None
    assert catalog_entry(snap, "9" * 30) is None                        # beyond int64: no table, not an error
