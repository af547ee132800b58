"""What ``augment`` and ``stack`` write on a small lake of staff tables, through ``discovery.open``: a colleague who
shares a surname is not joined as the same person while a typo of a name is; a category column (``country``) is
written with its lookup table (one row per country), not with another staff table whose rows repeat the countries;
a union keeps the tables that fill the query, names what it leaves out, and gives the query's rows their table."""
from __future__ import annotations

import json
import os

import pyarrow as pa
import pyarrow.compute as pc
import pytest

import discovery
from discovery.surfaces.materialize import METADATA_KEY

from lake_edits import write_csv

pytestmark = pytest.mark.spark

COUNTRIES = ["Sweden", "Japan", "Poland", "Spain", "Brazil", "Kenya", "Canada", "Egypt", "India", "Mexico", "Norway",
             "Turkey"]
EU = ["Ben Berg", "Hiro Sato", "Marta Kowalski", "Lena Novak", "Omar Haddad", "Ines Duarte", "Piet de Vries",
      "Anna Lindqvist", "Karl Meyer", "Sofia Rossi", "Jonas Weber", "Elena Petrova"]
# the query's people: Sven Berg and Aiko Sato are not Ben Berg and Hiro Sato; the rest are EU's, two with typos
US = ["Sven Berg", "Aiko Sato", "Marta Kowalsky", "Lena Novak", "Omar Hadad", "Ines Duarte", "Piet de Vries",
      "Anna Lindqvist", "Karl Meyer", "Sofia Rossi", "Jonas Weber", "Elena Petrova"]


@pytest.fixture(scope="module")
def staff(spark, fast_config, tmp_path_factory):
    from spark_jobs.refresh import refresh

    root = str(tmp_path_factory.mktemp("staff"))
    lake = os.path.join(root, "lake")
    # level: whole numbers but for one cell of a name's second row; grade: whole numbers and a null token
    write_csv(os.path.join(lake, "hr/staff_eu.csv"), ["name", "nation", "dept", "level", "grade"],
           [[n, COUNTRIES[i % 12], f"d{i % 3}", "x" if i == 13 else str(i % 5 + 1), "N/A" if i == 2 else str(i)]
            for i, n in enumerate(EU * 2)])
    write_csv(os.path.join(lake, "ref/country_codes.csv"), ["english_name", "iso2", "capital"],
           [[c, c[:3].upper(), f"{c} City"] for c in COUNTRIES + ["Chile", "Ghana", "Nepal", "Peru"]])
    write_csv(os.path.join(lake, "hr/staff_us.csv"), ["name", "country", "salary"],
           [[n, COUNTRIES[(i + 5) % 12], 50_000 + i] for i, n in enumerate(US * 2)])
    wh = os.path.join(root, "warehouse")
    assert refresh(spark, wh, lake, config_path=fast_config).get("published")
    return discovery.open(wh)


def test_a_shared_surname_is_another_person_and_a_typo_the_same(staff):
    out = staff.augment("hr/staff_us.csv", "name", table="hr/staff_eu.csv", lake_column="name", columns=["dept"])
    dept = dict(zip(out.column("name").to_pylist(), out.column("staff_eu.dept").to_pylist()))
    assert dept["Sven Berg"] is None and dept["Aiko Sato"] is None
    assert dept["Marta Kowalsky"] == "d2" and dept["Omar Hadad"] == "d1"       # Marta Kowalski's, Omar Haddad's
    assert all(dept[n] is not None for n in US[3:])
    rules = dict(zip(out.column("name").to_pylist(), out.column("staff_eu.match_rule").to_pylist()))
    assert rules["Lena Novak"] == "equal" and rules["Sven Berg"] is None
    source = json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]
    assert source["matcher"] == "auto" and source["matched_values"] == 10 and source["query_values"] == 12


def test_a_category_column_is_written_with_its_lookup_table(staff):
    answer = staff.join("hr/staff_us.csv", "country", top_k=5)
    paths = [r["path"] for r in answer["results"]]
    assert paths[:2] == ["hr/staff_eu.csv", "ref/country_codes.csv"]  # both join every country; context lifts staff
    out = staff.augment("hr/staff_us.csv", "country")
    source = json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]
    assert source["path"] == "ref/country_codes.csv" and source["lake_columns"] == ["english_name"]
    assert "category" in source["chosen"]
    iso = dict(zip(out.column("country").to_pylist(), out.column("country_codes.iso2").to_pylist()))
    assert iso == {c: c[:3].upper() for c in COUNTRIES}
    ranked = staff.augment("hr/staff_us.csv", "country", rank=1)    # a rank named is that result
    assert json.loads(ranked.schema.metadata[METADATA_KEY])["sources"][0]["path"] == paths[0]


def test_stack_keeps_tables_that_fill_the_query_and_names_what_it_leaves_out(staff):
    answer = staff.union("hr/staff_us.csv", k=10)["results"]
    width = {r["path"]: len(r["alignment"]) for r in answer}
    assert width.get("hr/staff_eu.csv", 0) >= 2 and 0 < width.get("ref/country_codes.csv", 0) < 2
    out = staff.stack("hr/staff_us.csv")
    described = json.loads(out.schema.metadata[METADATA_KEY])
    assert [s["path"] for s in described["sources"]] == [p for p in width if width[p] >= 1.5]
    assert any("'ref/country_codes.csv'" in w and "is not stacked" in w for w in described["warnings"])
    eu = next(s for s in described["sources"] if s["path"] == "hr/staff_eu.csv")
    assert "dept" in eu["left_out"] and any("'dept'" in w and "not written" in w for w in described["warnings"])
    own = out.filter(pc.equal(out.column("lakescout_source"), "hr/staff_us.csv"))
    table_id = next(r["table_id"] for r in staff.tables() if r["path"] == "hr/staff_us.csv")
    assert own.num_rows == 24 and set(own.column("lakescout_table_id").to_pylist()) == {table_id}
    assert own.column("lakescout_version").null_count == 0
    every = staff.stack("hr/staff_us.csv", min_columns=0.0)
    assert "ref/country_codes.csv" in {s["path"] for s in json.loads(every.schema.metadata[METADATA_KEY])["sources"]}


def test_a_written_type_is_the_lake_columns_whatever_the_fan_out(staff):
    """``level`` holds a cell that is no number on a row only ``all`` matches: every fan-out writes it as text, with
    the same note; ``grade``'s ``N/A`` is a null, so it stays a number under every fan-out."""
    types = {}
    for mode in ("nearest", "all", "aggregate"):
        out = staff.augment("hr/staff_us.csv", "name", table="hr/staff_eu.csv", lake_column="name",
                            columns=["level", "grade"], fan_out=mode)
        types[mode] = (out.schema.field("staff_eu.level").type, out.schema.field("staff_eu.grade").type)
        warnings = json.loads(out.schema.metadata[METADATA_KEY])["warnings"]
        assert any("'level'" in w and "written as text" in w for w in warnings), mode
        assert not any("'grade'" in w for w in warnings), mode
    assert set(types.values()) == {(pa.string(), pa.int64())}
