"""The other columns of both rows as evidence (:mod:`discovery.transforms.match.evidence`): a column pair the sure pairs
agree on, and entities do not share by chance, refuses a fuzzy pair whose rows disagree on it; a column that agrees by
chance, or too few pairs to tell, refuses nothing; pairs of equal values always stand.  And through
``discovery.open``: ``George W. Bush`` is not joined to the lake's only Bush, born 22 years before him."""
from __future__ import annotations

import json
import os

import pytest

import discovery
from discovery.surfaces.materialize import METADATA_KEY
from discovery.transforms.match.evidence import MIN_PAIRS, evidence_columns, judge

from lake_edits import write_csv

YEARS = {f"p{i}": str(1900 + i) for i in range(20)}


def _cells(years: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    return {"born": {k: {v} for k, v in years.items()}}


def test_a_fuzzy_pair_whose_rows_disagree_on_an_evidence_column_is_refused():
    pairs = [(k, k, "equal") for k in YEARS] + [("z", "z", "equal"), ("x", "y", "soft <= 0.200"),
                                                 ("u", "v", "edit <= 0.100")]
    query = _cells({**YEARS, "z": "1800", "x": "1946", "u": "1950"})
    lake = _cells({**YEARS, "z": "1801", "y": "1924", "v": "1950"})
    keep, evidence = judge(pairs, query, lake)
    assert keep == [True] * 21 + [False, True]          # equal values stand even where the years differ
    assert [(e.query_column, e.lake_column, e.pairs, e.agreement, e.chance, e.refused) for e in evidence] == \
        [("born", "born", 21, 20 / 21, pytest.approx(20 / 21 ** 2), 1)]   # 20 years on both sides, each 1 in 21


def test_a_column_entities_share_by_chance_or_too_few_pairs_is_no_evidence():
    two_values = {k: str(int(i >= 12)) for i, k in enumerate(YEARS)}    # 12 and 8: entities agree 0.52 of the time
    pairs = [(k, k, "equal") for k in YEARS] + [("x", "y", "soft <= 0.200")]
    keep, evidence = judge(pairs, _cells({**two_values, "x": "0"}), _cells({**two_values, "y": "1"}))
    assert keep == [True] * 21 and evidence == []
    few = list(YEARS)[:MIN_PAIRS - 1]
    pairs = [(k, k, "equal") for k in few] + [("x", "y", "soft <= 0.200")]
    keep, evidence = judge(pairs, _cells({**YEARS, "x": "1946"}), _cells({**YEARS, "y": "1924"}))
    assert keep == [True] * len(few) + [True] and evidence == []


def test_without_enough_equal_pairs_every_matched_pair_is_read_and_equal_pairs_always_stand():
    # names written two ways everywhere: the matched pairs themselves are the sure ones
    pairs = [(k, k.upper(), "order <= 0.100") for k in YEARS] + [("x", "y", "order <= 0.100"), ("e", "e", "equal")]
    query = _cells({**YEARS, "x": "1946", "e": "1800"})
    lake = _cells({**{k.upper(): v for k, v in YEARS.items()}, "y": "1924", "e": "1800"})
    keep, evidence = judge(pairs, query, lake)
    assert keep == [True] * 20 + [False, True]
    assert [(e.pairs, e.agreement, e.refused) for e in evidence] == [(22, 21 / 22, 1)]
    # two pairs in 22 disagreeing is below the agreement an evidence column needs: nothing is refused
    lake["born"]["e"] = {"1801"}
    assert judge(pairs, query, lake) == ([True] * 22, [])
    assert evidence_columns([(q, lk) for q, lk, _ in pairs[:20]], query, lake) == \
        [("born", "born", 20, 1.0, pytest.approx(1 / 20))]


PEOPLE = [("George Washington", 1732), ("John Adams", 1735), ("Thomas Jefferson", 1743), ("James Madison", 1751),
          ("James Monroe", 1758), ("Andrew Jackson", 1767), ("Martin Van Buren", 1782), ("John Tyler", 1790),
          ("James K. Polk", 1795), ("Zachary Taylor", 1784), ("Millard Fillmore", 1800), ("Franklin Pierce", 1804),
          ("James Buchanan", 1791), ("Abraham Lincoln", 1809), ("Andrew Johnson", 1808), ("Ulysses S. Grant", 1822)]


@pytest.mark.spark
def test_a_name_inside_another_name_is_refused_by_the_years_both_tables_hold(spark, fast_config, tmp_path):
    from spark_jobs.refresh import refresh

    lake = str(tmp_path / "lake")
    # the lake holds George H. W. Bush (1924) and not his son; Millard Fillmore is written with a typo in the query
    write_csv(os.path.join(lake, "ref/presidents.csv"), ["name", "born", "party"],
           [[n, y, "p"] for n, y in PEOPLE] + [["George H. W. Bush", 1924, "Republican"]])
    query = [[n, y] for n, y in PEOPLE if n != "Millard Fillmore"] + [["Milard Fillmore", 1800],
                                                                     ["George W. Bush", 1946]]
    write_csv(os.path.join(lake, "hr/people.csv"), ["name", "born"], query)
    wh = str(tmp_path / "warehouse")
    assert refresh(spark, wh, lake, config_path=fast_config).get("published")
    ls = discovery.open(wh)
    out = ls.augment("hr/people.csv", "name", table="ref/presidents.csv", lake_column="name", columns=["name"])
    got = dict(zip(out.column("name").to_pylist(), out.column("presidents.name").to_pylist()))
    assert got["George W. Bush"] is None and got["Milard Fillmore"] == "Millard Fillmore"
    assert all(got[n] == n for n, _ in PEOPLE if n != "Millard Fillmore")
    source = json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]
    assert source["evidence"] == [{"query_column": "born", "lake_column": "born", "sure_pairs": 15,
                                   "agreement": 1.0, "chance": round(1 / 15, 4), "refused": 1}]
    assert source["matched_values"] == 16
