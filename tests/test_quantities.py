"""What a number column measures (:mod:`discovery.transforms.quantities`), and every search leaving out pairs of
incompatible quantities exactly as a brute force that applies the same rule does: union (every exact method, both
indexes) and the numerical join (PEXESO, PNODOM, ``exact``), then through the user's path on a small lake."""
from __future__ import annotations

import os

import numpy as np
import pandas as pd
import pytest

import discovery
from discovery.indexes.numjoin import NumericIndex, brute_force
from discovery.indexes.union import UnionIndex, unionability
from discovery.indexes.union.compact import CompactIndex
from discovery.transforms.quantities import (COMPATIBLE, QUANTITIES, SCALE_DECADES, cells_quantity, codes, compatible,
                                             name_quantity, pair_mask)
from synthetic_lake import SyntheticLake, build_index_inputs, draw_tables, lake_model

from numjoin_data import integer_lake

NAMES = {
    "staff id": "identifier", "customerId": "identifier", "ISBN-13": "identifier",
    "rate_eur": "money:eur", "priceUsd": "money:usd", "boxOffice$m": "money:usd", "GDP (bn USD)": "money:usd",
    "salary": "money", "basePay": "money", "price_min": "money", "min_price": "money",
    "pop": "count", "population": "count", "page count": "count",
    "weight_kg": "mass:kg", "WEIGHT (KG)": "mass:kg", "Shipping Weight": "mass",
    "delay_min": "duration:min", "runtime (min)": "duration:min", "age_years": "duration", "Age": "duration",
    "wind speed (km/h)": "speed:kmh", "windSpeedKmH": "speed:kmh", "wind_kmh": "speed:kmh",
    "elevation (m)": "length", "heightCm": "length:cm", "wavelength_nm": "length:nm",
    "AREA (KM²)": "area:km2", "area_km2": "area:km2", "sq km": "area:km2", "surface_area": "area",
    "temp_min_c": "temperature:c", "max temp (°C)": "temperature:c", "temp_min": "temperature",
    "humidity (%)": "fraction", "votes_pct": "fraction", "share_of_population": "fraction",
    "population_rank": "rank", "stop_lat": "latitude", "Breitengrad": "latitude", "Länge": "longitude",
}
NOTHING = ("Length", "amount", "amount ordered", "number of pages", "deaths_per_100k", "price/sqft", "tax_rate",
           "G", "score", "long_name", "Unnamed: 0", "")


def test_names_say_what_a_column_measures():
    for name, want in NAMES.items():
        dim, unit = name_quantity(name)
        assert (f"{dim}:{unit}" if unit else dim) == want, name
    for name in NOTHING:
        assert name_quantity(name) is None, name


def test_cells_and_values_speak_where_names_do_not():
    years = [str(y) for y in range(1990, 2020)]
    assert cells_quantity("founded", years) == "year"
    assert cells_quantity("released", years) == "year"          # no word: the values are years
    assert cells_quantity("founded", ["3", "12", "40"]) == ""  # a year word, values that are no years
    assert cells_quantity("years", ["2", "7"]) == ""
    assert cells_quantity("cost", ["€12.50", "€7", "€1,200"]) == "money:eur@1"
    assert cells_quantity("change", ["12%", "-3.5%", "40%"]) == "fraction"
    assert cells_quantity("p", ["0.1", "0.25", "0.9"]) == "fraction"
    assert cells_quantity("flag", ["0", "1", "1"]) == ""                  # 0 / 1 is no fraction
    assert cells_quantity("", [str(i) for i in range(25)]) == "identifier"  # a row number
    assert cells_quantity("wins", [str(i % 12) for i in range(25)]) == ""   # repeated: not a row number
    assert cells_quantity("rate_eur", ["30", "45.5"]) == "money:eur@1"


def test_a_row_counter_is_an_identifier_whatever_its_name():
    shuffled = [str(i) for i in np.random.default_rng(3).permutation(np.arange(1, 31))]
    for name in ("Age", "Area", "weight_kg", "founded", "price"):
        assert cells_quantity(name, shuffled) == "identifier", name
        assert cells_quantity(name, [str(i) for i in range(30)]) == "identifier", name   # a written 0-based index
    assert cells_quantity("Age", shuffled[:-1] + [None]) == "duration"         # a cell empty: not 1..n of n rows
    assert cells_quantity("Age", [str(i) for i in range(2, 32)]) == "duration"  # 2..31 is no row counter
    assert cells_quantity("Age", shuffled[:-1] + ["30.5"]) == "duration"        # not all integers
    assert cells_quantity("Age", shuffled[:-1] + [shuffled[0]]) == "duration"   # a value twice
    assert cells_quantity("Age", ["3", "1", "2"]) == "identifier"               # UGEN-V1's counters have 7 rows
    assert cells_quantity("Age", ["2", "1"]) == "duration"                      # two rows: too few to outrank the name


def test_money_carries_its_scale_and_a_salary_is_no_gdp():
    """A money column's scale is the decade of its median non-zero cell (every cell counted), as written; two money
    columns pair when their scales differ by at most two decades."""
    salaries = ["52,000", "61,000", "48,500", "75,000", "52,000"]
    assert cells_quantity("salary", salaries) == "money@4"
    assert cells_quantity("monthly pay", ["4,100", "3,900", "5,200"]) == "money@3"
    assert cells_quantity("gdp", ["1.2e12", "3.4e11", "2.1e13"]) == "money@12"
    # a multiplier the name states is not applied: tables state theirs inconsistently (``box_office_musd``,
    # ``box_office_$m`` and ``gross`` all in millions)
    assert cells_quantity("box_office_musd", ["120", "48", "310"]) == "money:usd@2"
    assert cells_quantity("gross", ["95", "210", "140"]) == "money@2"
    assert cells_quantity("price", ["0", "0", "0"]) == "money"                   # no non-zero cell: no scale
    assert cells_quantity("price", ["-20", "0", "35", "35"]) == "money@1"         # magnitudes; zeros left out
    # the median counts cells, not distinct values: one large value among many small ones moves nothing
    assert cells_quantity("fee", ["5"] * 9 + ["5000"]) == "money@0"
    assert compatible("money@4", "money@3") and compatible("money@4", "money:usd@6")
    assert not compatible("money@4", "money:usd@12") and not compatible("money:eur@4", "money:usd@4")
    assert compatible("money@4", "money") and compatible("money@4", "") and not compatible("money@4", "count")
    assert all(q in QUANTITIES for q in ("money@-2", "money:eur@15", "money:usd@12"))
    assert cells_quantity("revenue", ["9e30"]) == "money@15"                        # clipped to the scales kept


def test_compatibility_is_by_dimension_then_unit():
    assert compatible("", "money:eur") and compatible("money", "money:eur") and compatible("year", "year")
    assert not compatible("identifier", "money:eur") and not compatible("count", "mass:kg")
    assert not compatible("count", "year") and not compatible("money:usd", "money:eur")
    assert not compatible("latitude", "longitude")
    assert COMPATIBLE.shape == (len(QUANTITIES), len(QUANTITIES)) and (COMPATIBLE == COMPATIBLE.T).all()
    assert COMPATIBLE[0].all() and codes([None, "no such quantity", "year"]).tolist()[:2] == [0, 0]


def test_the_compatibility_table_is_the_rule_pair_by_pair():
    """``COMPATIBLE`` (computed over all pairs at once) against the rule applied to each pair of quantity texts."""
    def rule(a: str, b: str) -> bool:
        if not a or not b:
            return True
        (a, _, sa), (b, _, sb) = a.partition("@"), b.partition("@")
        (da, _, ua), (db, _, ub) = a.partition(":"), b.partition(":")
        return (da == db and (not ua or not ub or ua == ub)
                and (not sa or not sb or abs(int(sa) - int(sb)) <= SCALE_DECADES))

    expected = np.array([[rule(a, b) for b in QUANTITIES] for a in QUANTITIES])
    assert (COMPATIBLE == expected).all()
    assert 0 < expected[1:, 1:].sum() < expected[1:, 1:].size  # the rule both allows and forbids pairs


# -- union: every exact method equals a brute force that applies the rule ----------------------------------------------
def _lake(seed: int):
    model = lake_model(12, 30, 6, 8, max_columns=8, noise=(0.1, 0.8), stray=0.2, seed=seed)
    vectors, owner, ordinal = draw_tables(model, 80, seed=seed + 1)
    rng = np.random.default_rng(seed)
    pick = np.array([0] + [codes([q])[0] for q in ("year", "count", "money:eur", "money:usd", "money", "mass:kg",
                                                  "money@4", "money@5", "money:usd@12", "money:eur@3")])
    return model, vectors, owner, ordinal, pick[rng.integers(0, len(pick), len(owner))], pick, rng


def _brute(vectors, owner, ordinal, qty, query, q_qty, tau, k):
    scored = []
    for t in np.unique(owner):
        rows = np.flatnonzero(owner == t)
        rows = rows[np.argsort(ordinal[rows])]
        s = unionability(query, vectors[rows], tau, q_qty, qty[rows]).score
        if s > 0:
            scored.append((-s, int(t)))
    return [(t, -s) for s, t in sorted(scored)[:k]]


@pytest.mark.parametrize("seed", range(3))
def test_union_with_quantities_equals_brute_force_for_every_exact_method(seed, monkeypatch):
    from discovery.indexes.union import compact as compact_module

    model, vectors, owner, ordinal, qty, pick, rng = _lake(seed)
    centroids, parts = build_index_inputs(SyntheticLake(vectors, owner, ordinal, np.zeros((0, vectors.shape[1]))),
                                          seed=0)
    full = UnionIndex.build(vectors, owner, ordinal, centroids, parts, column_quantities=qty)
    compact = CompactIndex.build(vectors, owner, ordinal, qty)
    monkeypatch.setattr(compact_module, "BOUND_PASS_MIN_COLUMNS", 0)   # the bound pass, not the exhaustive path
    qv, qo, _ = draw_tables(model, 4, seed=500 + seed)
    removed = 0
    for i in range(4):
        query = qv[qo == i]
        q_qty = pick[rng.integers(0, len(pick), len(query))]
        for tau in (0.3, 0.6):
            want = _brute(vectors, owner, ordinal, qty, query, q_qty, tau, 10)
            plain = _brute(vectors, owner, ordinal, np.zeros_like(qty), query, np.zeros_like(q_qty), tau, 10)
            removed += want != plain
            every = dict(_brute(vectors, owner, ordinal, qty, query, q_qty, tau, len(owner)))
            for index, method in [(full, m) for m in ("exact", "pgtus", "pgtus++", "pgtus++-approx", "starmie")] + \
                                 [(compact, m) for m in ("exact", "pgtus", "pgtus++")]:
                got = index.search(query, 10, method, tau=tau, query_quantities=q_qty).results
                if method not in ("pgtus++-approx", "starmie"):   # those two may miss tables, never misscore
                    assert [r.table_id for r in got] == [t for t, _ in want], (method, tau)
                np.testing.assert_allclose([r.score for r in got], [every[r.table_id] for r in got], atol=1e-5)
                for r in got:
                    lake_rows = np.flatnonzero(owner == r.table_id)
                    by_ordinal = dict(zip(ordinal[lake_rows].tolist(), qty[lake_rows].tolist()))
                    assert all(COMPATIBLE[q_qty[qc], by_ordinal[lc]] for qc, lc, _ in r.alignment)
    assert removed  # the rule changed some answers: not vacuous


# -- numerical join -------------------------------------------------------------------------------------------------
@pytest.mark.parametrize("seed", range(4))
def test_numeric_search_among_allowed_sets_equals_brute_force(seed):
    sets, query = integer_lake(seed, 1)
    ix = NumericIndex.build(sets, "absolute")
    allowed = np.random.default_rng(seed).random(len(sets)) < 0.6
    empty = np.zeros((0, 1))
    for tau in (0.0, 1.0, 3.0):
        want = brute_force([s if a else empty for s, a in zip(sets, allowed)], query, tau, "absolute", T=0.0)
        want_ids = {s.set_id: s.score for s in want.sets}
        for method in ("pexeso", "pnodom"):
            got = ix.search(query, tau, T=0.0, method=method, exact_scores=True, allowed=allowed)
            assert {s.set_id: s.score for s in got.sets} == want_ids
            top = ix.search(query, tau, k=3, method=method, allowed=allowed)
            assert [s.score for s in top.sets] == sorted(want_ids.values(), reverse=True)[:3]
            assert all(allowed[s.set_id] for s in top.sets)


# -- the user's path ------------------------------------------------------------------------------------------------
def _people_lake(lake: str) -> None:
    rng = np.random.default_rng(5)
    os.makedirs(lake)
    names = [f"person {i}" for i in range(40)]
    pd.DataFrame({"id": range(1, 41), "name": names, "pay": rng.integers(30, 90, 40),
                  "team": rng.choice(["ops", "sales", "it"], 40)}).to_csv(f"{lake}/staff.csv", index=False)
    pd.DataFrame({"contractor": [f"firm {i}" for i in range(40)], "rate_eur": rng.integers(30, 90, 40),
                  "skill": rng.choice(["java", "sql", "ops"], 40)}).to_csv(f"{lake}/contractors.csv", index=False)
    pd.DataFrame({"city": [f"town {i}" for i in range(30)], "population": rng.integers(1000, 2000, 30) * 10,
                  "founded_year": rng.integers(1700, 2000, 30), "weight_kg": rng.integers(10000, 20000, 30)}
                 ).to_csv(f"{lake}/towns.csv", index=False)
    pd.DataFrame({"place": [f"village {i}" for i in range(30)], "pop": rng.integers(1000, 2000, 30) * 10}
                 ).to_csv(f"{lake}/villages.csv", index=False)
    pd.DataFrame({"Age": rng.permutation(np.arange(1, 41)), "member": [f"member {i}" for i in range(40)]}
                 ).to_csv(f"{lake}/register.csv", index=False)   # a row counter named as a measure


@pytest.mark.spark
def test_no_search_pairs_a_population_with_a_weight_or_an_id_with_a_rate(spark, tmp_path, fast_config):
    from spark_jobs.refresh import refresh

    lake, wh = str(tmp_path / "lake"), str(tmp_path / "wh")
    _people_lake(lake)
    assert refresh(spark, wh, lake, config_path=fast_config).get("published")
    ls = discovery.open(wh)
    stored = {(r["path"], r["name"]): r for r in ls.snapshot.read("columns", columns=["table_id", "name"])
              .join(ls.snapshot.read("catalog", columns=["table_id", "path"]), "table_id").to_pylist()}
    assert ("contractors.csv", "rate_eur") in stored
    for method in ("exact", "pgtus++", "pgtus"):
        for r in ls.union("staff.csv", k=5, method=method, tau=0.1)["results"]:
            assert ["id", "rate_eur"] not in [a[:2] for a in r["alignment"]], method
            assert ["pay", "rate_eur"] in [a[:2] for a in r["alignment"]] or r["path"] != "contractors.csv"
        register = [r for r in ls.union("staff.csv", k=10, method=method, tau=0.1)["results"]
                    if r["path"] == "register.csv"]
        assert ["id", "Age"] in [a[:2] for a in register[0]["alignment"]], method   # two row counters align
    for method in ("pexeso", "exact"):
        got = ls.join("villages.csv", "pop", T=0.0, tau=5000.0, method=method)["results"]
        assert [(r["path"], r["column"]) for r in got] == [("towns.csv", "population")], method
        assert got[0]["joinability"] == 1.0
    # what the index stores is what the rule says of the files' columns
    cv = ls.snapshot.read("column_vectors", columns=["table_id", "ordinal", "quantity"]).to_pylist()
    paths = dict(zip(*[ls.snapshot.read("catalog", columns=["table_id", "path"]).column(c).to_pylist()
                       for c in ("table_id", "path")]))
    indexed = {}
    for row in cv:
        df = pd.read_csv(os.path.join(lake, paths[row["table_id"]]), dtype=str)
        name = df.columns[row["ordinal"]]
        want = cells_quantity(name, df[name].tolist()) if pd.read_csv(
            os.path.join(lake, paths[row["table_id"]]))[name].dtype.kind in "if" else ""
        assert row["quantity"] == want, (paths[row["table_id"]], name)
        indexed[(paths[row["table_id"]], name)] = row["quantity"]
    assert {r["quantity"] for r in cv} >= {"identifier", "money:eur@1", "count", "year", "mass:kg", "money@1"}
    assert indexed[("register.csv", "Age")] == "identifier"
    assert pair_mask(codes(["count"]), codes(["mass:kg", "year", "count"])).tolist() == [[False, False, True]]
