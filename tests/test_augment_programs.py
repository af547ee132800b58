"""A person written in two query columns (``first``, ``last``) joined to a lake column of user names through
``discovery.open``: the matcher learns the program that writes the user names from the rows
(:mod:`discovery.transforms.match .programs`), joins every person it writes, and leaves two people it writes as one user
name unjoined."""
from __future__ import annotations

import json
import os
from collections import Counter

import pytest

import discovery
from discovery.query.resolve import QueryError
from discovery.surfaces.materialize import METADATA_KEY

from lake_edits import write_csv

pytestmark = pytest.mark.spark

PEOPLE = [("Marta", "Kowalski"), ("Lena", "Novak"), ("Omar", "Haddad"), ("Ines", "Duarte"), ("Piet", "de Vries"),
          ("Anna", "Lindqvist"), ("Karl", "Meyer"), ("Sofia", "Rossi"), ("Jonas", "Weber"), ("Elena", "Petrova"),
          ("Hiro", "Sato"), ("Ben", "Berg"), ("Mary Ann", "Lee"), ("José", "Núñez"), ("Tom", "Oduya"),
          ("James", "Smith"), ("John", "Smith")]     # both Smiths write jsmith: two people, one account
PEOPLE += [(f, s) for f, s in zip("Ada Boris Chen Dora Emil Farah Gita Hugo Iris Jan Kofi Lars Mina Nils Olga Pavel "
                                  "Quin Rhea Sami Tara Uma Vik Wes Xia Yara Zane Abe Bea Cyd Dag".split(),
                                  "Adler Brandt Costa Dietz Engel Fuchs Gomez Horn Ito Jansen Klein Lopez Moreau Nagy "
                                  "Olsen Park Quist Roth Silva Tanaka Ueda Vogel Wolff Xu Yilmaz Zhou Abbas Bauer "
                                  "Cruz Dahl".split())]
OTHERS = ["akim", "zwu", "rpatel"]                   # accounts of people the query does not hold


def _user(first: str, last: str) -> str:
    """The lake's convention, by construction: the first name's initial and the last word of the surname."""
    return (first[0] + last.split()[-1]).lower()


@pytest.fixture(scope="module")
def accounts(spark, fast_config, tmp_path_factory):
    from spark_jobs.refresh import refresh

    root = str(tmp_path_factory.mktemp("accounts"))
    lake = os.path.join(root, "lake")
    users = list(dict.fromkeys(_user(f, s) for f, s in PEOPLE)) + OTHERS
    write_csv(os.path.join(lake, "it/accounts.csv"), ["username", "shell"],
           [[u, f"sh{i}"] for i, u in enumerate(users)])
    write_csv(os.path.join(lake, "hr/people.csv"), ["first", "last", "dept"],
           [[f, s, f"d{i % 4}"] for i, (f, s) in enumerate(PEOPLE)])
    wh = os.path.join(root, "warehouse")
    assert refresh(spark, wh, lake, config_path=fast_config).get("published")
    return discovery.open(wh), {u: f"sh{i}" for i, u in enumerate(users)}


def test_first_and_last_name_join_a_user_name_through_a_learned_program(accounts):
    ls, shells = accounts
    out = ls.augment("hr/people.csv", "first,last", table="it/accounts.csv", lake_column="username",
                     columns=["shell"])
    rows = list(zip(out.column("first").to_pylist(), out.column("last").to_pylist()))
    assert rows == PEOPLE                                              # one row per query row, in order
    got = dict(zip(rows, out.column("accounts.shell").to_pylist()))
    written = Counter(_user(f, s) for f, s in PEOPLE)
    for person in PEOPLE:
        expected = shells[_user(*person)] if written[_user(*person)] == 1 else None
        assert got[person] == expected, person
    assert got[("James", "Smith")] is None and got[("John", "Smith")] is None
    rules = set(out.column("accounts.match_rule").drop_null().to_pylist())
    assert rules == {"program: first.w1[:1] + last.last"}
    source = json.loads(out.schema.metadata[METADATA_KEY])["sources"][0]
    assert source["programs"] == ["first.w1[:1] + last.last"]
    # the odds of another person's account: the accounts no row writes (3) times the share of pairs of rows
    # written as one (the Smiths: 1 of 47 * 46 / 2)
    estimate = 1 / (1 + len(OTHERS) / (len(PEOPLE) * (len(PEOPLE) - 1) / 2))
    assert source["estimated_precision"] == pytest.approx(estimate, abs=1e-4)
    scores = out.column("accounts.match_score").drop_null().to_pylist()
    assert len(scores) == len(PEOPLE) - 2 and all(s == pytest.approx(estimate) for s in scores)


def test_pairs_of_two_columns_show_each_row_s_values(accounts):
    ls, _ = accounts
    table = ls.pairs("hr/people.csv", "first,last", table="it/accounts.csv", lake_column="username")
    pairs = {tuple(q): lake for q, lake in zip(table.column("query_value").to_pylist(),
                                                table.column("lake_value").to_pylist())}
    assert pairs[("josé", "núñez")] == "jnúñez" and pairs[("piet", "de vries")] == "pvries"
    assert ("james", "smith") not in pairs and len(pairs) == len(PEOPLE) - 2


def test_a_join_on_several_columns_needs_the_lake_column_and_the_matcher(accounts):
    ls, _ = accounts
    with pytest.raises(QueryError, match="give table and lake_column"):
        ls.augment("hr/people.csv", "first,last")
    with pytest.raises(QueryError, match="matcher 'search' pairs one column"):
        ls.augment("hr/people.csv", "first,last", table="it/accounts.csv", lake_column="username",
                   matcher="search")


def test_every_fan_out_and_the_spark_write_give_the_oracles_rows(accounts, tmp_path):
    """The rows of a two-column join under each fan-out equal a pandas merge of the query with the accounts table
    on the user name each person writes uniquely, and a Spark job writes the same rows as this process."""
    from dataclasses import replace

    import pandas as pd
    import pyarrow.parquet as pq

    ls, shells = accounts
    written = Counter(_user(f, s) for f, s in PEOPLE)
    query = pd.DataFrame({"first": [f for f, _ in PEOPLE], "last": [s for _, s in PEOPLE],
                          "user": [_user(f, s) if written[_user(f, s)] == 1 else None for f, s in PEOPLE]})
    lake = pd.DataFrame({"username": list(shells), "shell": list(shells.values())})
    oracle = query.merge(lake, how="left", left_on="user", right_on="username")
    kwargs = {"table": "it/accounts.csv", "lake_column": "username", "columns": ["shell"]}
    for fan_out in ("nearest", "all"):
        out = ls.augment("hr/people.csv", "first,last", fan_out=fan_out, **kwargs).to_pandas()
        assert out[["first", "last"]].values.tolist() == oracle[["first", "last"]].values.tolist()
        assert out["accounts.shell"].where(out["accounts.shell"].notna(), None).tolist() == \
            oracle["shell"].where(oracle["shell"].notna(), None).tolist()
    counts = ls.augment("hr/people.csv", "first,last", fan_out="aggregate", **kwargs).to_pandas()
    assert counts["accounts.count"].tolist() == oracle["shell"].notna().astype(int).tolist()

    config = ls.config
    on_spark = discovery.open(ls.warehouse.root, config=replace(config, materialize=replace(
        config.materialize, spark_min_bytes=0)))
    here, there = str(tmp_path / "here.parquet"), str(tmp_path / "there.parquet")
    assert ls.augment("hr/people.csv", "first,last", output=here, **kwargs)["engine"] == "local"
    assert on_spark.augment("hr/people.csv", "first,last", output=there, master="local[2]",
                            **kwargs)["engine"] == "spark"
    assert pq.read_table(there).to_pylist() == pq.read_table(here).to_pylist()
