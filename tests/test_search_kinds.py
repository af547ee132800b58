"""The registry of search kinds: a new kind is one module and one entry of ``SEARCHES``, and the API, batches and the
CLI's ``batch`` command take it from there (the page: ``test_plugin.py``); a join decides its route once per search."""
from __future__ import annotations

import contextlib
import io
import json
import shutil

import pyarrow.compute as pc
import pytest

from discovery.api import Lakescout
from discovery.orchestration.demo_lake import load_ground_truth
from discovery.orchestration.searches import SEARCHES, Plan, SearchKind, search_kind
from discovery.orchestration.searches import join as join_kind
from discovery.query.params import DEFAULT_K, Param, ParameterError, check_ordinals, column_name, count
from discovery.surfaces.batch import batch_results, run_batch
from discovery.surfaces.cli import main
from sessions import session
from discovery.data.store import Warehouse

pytestmark = [pytest.mark.spark]


# -- a new kind, as its module would define it ------------------------------------------------------------------------
def same_name(snapshot, table, column: str, k: int) -> dict:
    """Lake columns named as the query's ``column`` (case aside), one per table, by table id: a trivial search."""
    columns = snapshot.cached("columns", ["table_id", "ordinal", "name"])
    hit = columns.filter(pc.equal(pc.utf8_lower(columns["name"]), column.lower()))
    catalog = snapshot.cached("catalog", ["table_id", "path"])
    paths = dict(zip(catalog.column("table_id").to_pylist(), catalog.column("path").to_pylist()))
    found = sorted(dict(zip(hit.column("table_id").to_pylist(), hit.column("name").to_pylist())).items())
    results = [{"rank": i + 1, "table_id": t, "path": paths[t], "column": name, "score": 1.0}
               for i, (t, name) in enumerate(found[:k])]
    return {"snapshot_id": snapshot.snapshot_id, "query": table.label, "method": "name", "results": results,
            "stats": {}}


def _plan(checked: dict, table, config) -> Plan:
    ordinals = check_ordinals("column", [checked["column"]], table)
    return Plan("same_name", table, {"k": DEFAULT_K, **checked}, same_name, ordinals)


SAME_NAME = SearchKind("same_name", lambda: {"column": Param(column_name, required=True),
                                             "k": Param(count, capped="tables"), "method": Param(column_name)},
                       lambda: ("name",), _plan)


@pytest.fixture
def registered(monkeypatch):
    monkeypatch.setitem(SEARCHES, "same_name", SAME_NAME)


@pytest.fixture(scope="module")
def env(indexed_lake, tmp_path_factory):
    lake, warehouse = indexed_lake
    wh = str(tmp_path_factory.mktemp("kinds") / "warehouse")
    shutil.copytree(warehouse, wh)
    query = sorted({r["query_table"] for r in load_ground_truth(lake)["union"]})[0]
    return {"warehouse": wh, "query": query}


def _expected(ls: Lakescout, query: str) -> tuple[str, list[int]]:
    """A column of the query and the tables holding a column of that name, by a read of the index here."""
    table = ls.snapshot.read("columns", columns=["table_id", "name"])
    own = ls.plan("union", query).table
    name = own.names[0]
    ids = sorted(set(table.filter(pc.equal(pc.utf8_lower(table["name"]), name.lower()))
                     .column("table_id").to_pylist()))
    return name, ids


def test_a_new_kind_answers_through_the_api(env, registered):
    ls = Lakescout(env["warehouse"])
    name, ids = _expected(ls, env["query"])
    out = ls.search("same_name", env["query"], column=name, k=500)
    assert [r["table_id"] for r in out["results"]] == ids and ids
    assert len(ls.search("same_name", env["query"], column=name)["results"]) == min(DEFAULT_K, len(ids))
    with pytest.raises(ParameterError) as bad:
        ls.search("same_name", env["query"], column="no such column")
    assert bad.value.param == "column"
    with pytest.raises(ParameterError, match="'colour' is not a parameter of same_name search"):
        ls.search("same_name", env["query"], column=name, colour="blue")
    assert search_kind("same_name") is SAME_NAME


def test_a_new_kind_runs_in_batches_and_the_batch_command(env, registered):
    ls = Lakescout(env["warehouse"])
    name, ids = _expected(ls, env["query"])
    spec = {"name": "names", "queries": [{"id": "s", "kind": "same_name", "query": env["query"], "column": name,
                                          "k": 3}]}
    summary = run_batch(session(env["warehouse"]), spec, batch_id="same-name")
    assert batch_results(Warehouse(env["warehouse"]), "same-name").column("table_id").to_pylist() == ids[:3]
    assert summary["queries"][0]["kind"] == "same_name"
    path = f"{env['warehouse']}-spec.json"
    with open(path, "w") as fh:
        json.dump(spec, fh)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["batch", "--warehouse", env["warehouse"], "--spec", path, "--batch-id", "same-name-cli",
                     "--json"])
    assert code == 0 and json.loads(out.getvalue())["results"] == min(3, len(ids))


def test_an_unknown_kind_names_the_kinds_there_are():
    with pytest.raises(ParameterError, match="kind must be one of union, join, nary"):
        search_kind("fuzzy")


def test_a_join_decides_its_route_once(env, monkeypatch):
    """The route (text or numbers) is taken once per search, by the plan, and the defaults follow it."""
    calls = []
    real = join_kind.route
    monkeypatch.setattr(join_kind, "route", lambda params, table: calls.append(1) or real(params, table))
    ls = Lakescout(env["warehouse"])
    table = ls.plan("union", env["query"]).table
    text = next(n for n, k in zip(table.names, table.kinds()) if k == "string")
    plan = ls.plan("join", env["query"], column=text)
    assert calls == [1] and plan.route == "text" and plan.params["tau"] > 0
    calls.clear()
    out = ls.join(env["query"], text)
    assert calls == [1] and out["tau"] == plan.params["tau"]
