"""The JSON API of the plugin on a real Airflow api-server (SimpleAuthManager, an admin and a viewer, tokens from
``POST /auth/token``) over a copy of the indexed sample lake: every reading route answers as the Python API does,
searches by table id, lake path and upload are recorded and answer as the Python API does, a viewer reads but may not
search, and refusals are one clear message.  The api-server is started once for the module."""
from __future__ import annotations

import json
import os
import secrets

import httpx
import pytest
from fastapi.encoders import jsonable_encoder

from airflow_server import api_server, bearer_token
from test_readme import linked_copy

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(indexed_lake, tmp_path_factory):
    lake, indexed = indexed_lake
    root = tmp_path_factory.mktemp("api")
    warehouse = str(root / "wh")
    linked_copy(indexed, warehouse)                     # searches record into it; the session's index stays as it is
    users = {name: (name, secrets.token_urlsafe(12)) for name in ("admin", "viewer")}   # the role is the name
    with api_server(str(root / "airflow"), warehouse, users, lake=lake) as url:
        yield {"url": url + "/lakescout", "warehouse": warehouse, "lake": lake,
               "tokens": {u: bearer_token(url, u, pw) for u, (_, pw) in users.items()}}


def call(server: dict, method: str, path: str, user: str | None = "viewer", **kwargs) -> httpx.Response:
    headers = {"Authorization": f"Bearer {server['tokens'][user]}"} if user else {}
    return httpx.request(method, server["url"] + path, headers=headers, timeout=300, **kwargs)


def same(value) -> object:
    """``value`` as the API sends it (datetimes as ISO strings)."""
    return json.loads(json.dumps(jsonable_encoder(value)))


def recorded(server: dict) -> int:
    from discovery.store import Warehouse

    return Warehouse(server["warehouse"]).read("query_batches", columns=["batch_id"]).num_rows


def test_reading_routes_answer_as_the_python_api(server):
    import discovery

    ls = discovery.open(server["warehouse"])
    listing = call(server, "GET", "/api/tables", params={"path": ["finance/", "*.tsv"], "status": "ok"})
    assert listing.status_code == 200 and listing.json() == same(ls.tables(path=["finance/", "*.tsv"], status="ok"))
    path = listing.json()[0]["path"]
    described = call(server, "GET", f"/api/tables/{path}")
    assert described.status_code == 200 and described.json() == same(ls.describe(path))
    by_id = call(server, "GET", f"/api/tables/{listing.json()[0]['table_id']}")
    assert by_id.json() == described.json()
    found = call(server, "GET", "/api/find", params={"words": ["salary", "hire date"], "k": 3})
    assert found.status_code == 200 and found.json() == same(ls.find(["salary", "hire date"], k=3))
    status = call(server, "GET", "/api/status")
    assert status.status_code == 200 and status.json()["status"]["snapshot"]["snapshot_id"] == ls.snapshot_id


def test_searches_by_id_path_and_upload_are_recorded_and_exact(server):
    import discovery
    from discovery.batch import batch_results
    from discovery.demo_lake import load_ground_truth

    ls = discovery.open(server["warehouse"])
    truth = load_ground_truth(server["lake"])
    union_q = truth["union"][0]["query_table"]
    union_id = next(r["table_id"] for r in ls.tables() if r["path"] == union_q)
    join_q, join_col = truth["join"][0]["query_table"], truth["join"][0]["query_column"]
    nary = truth["nary"][0]
    key = list(nary["query_columns"])
    with open(os.path.join(server["lake"], nary["query_table"]), "rb") as fh:
        upload = fh.read()
    copy = os.path.join(os.path.dirname(server["warehouse"]), os.path.basename(nary["query_table"]))
    with open(copy, "wb") as fh:                     # an upload is no lake table: nothing is left out of its results
        fh.write(upload)
    searches = [
        ("union", {"json": {"table": union_id, "k": 5}}, ls.union(union_q, k=5)),
        ("join", {"json": {"table": join_q, "column": join_col, "top_k": 3}}, ls.join(join_q, join_col, top_k=3)),
        ("nary", {"data": {"key": ",".join(key), "k": "4"},
                  "files": {"upload": (os.path.basename(nary["query_table"]), upload, "text/csv")}},
         ls.nary(copy, key, k=4)),
    ]
    for kind, body, direct in searches:
        before = recorded(server)
        answer = call(server, "POST", f"/api/search/{kind}", user="admin", **body)
        assert answer.status_code == 200, answer.text
        got = answer.json()
        assert [r["table_id"] for r in got["results"]] == [r["table_id"] for r in direct["results"]]
        assert [r["score"] for r in got["results"]] == pytest.approx(
            [r.get("score", r.get("joinability")) for r in direct["results"]])
        assert recorded(server) == before + 1
        rows = same(batch_results(server["warehouse"], got["batch_id"]).to_pylist())
        assert [r["table_id"] for r in rows] == [r["table_id"] for r in got["results"]]
        again = call(server, "GET", f"/api/batches/{got['batch_id']}")
        assert again.status_code == 200 and again.json()["results"] == got["results"]
        assert again.json()["summary"]["batch_id"] == got["batch_id"]
    nary_answer = answer.json()["results"][0]["evidence"]
    assert nary_answer["matched_tuples"] and nary_answer["tuples_not_found"] >= 0
    latest = call(server, "GET", "/api/batches", params={"limit": 1})
    assert latest.json()[0]["batch_id"] == answer.json()["batch_id"]


def test_a_viewer_reads_but_may_not_search(server):
    before = recorded(server)
    for body in ({"json": {"table": 1, "k": 3}},
                 {"data": {"key": "a,b"}, "files": {"upload": ("q.csv", b"a,b\nx,y\n", "text/csv")}}):
        refused = call(server, "POST", "/api/search/nary", user="viewer", **body)
        assert refused.status_code == 403 and "permission to trigger the query_batch DAG" in refused.json()["detail"]
    assert call(server, "GET", "/api/tables", user="viewer").status_code == 200
    assert recorded(server) == before


def test_refusals_are_one_clear_message(server):
    for method, path in (("GET", "/api/tables"), ("GET", "/api/find?words=x"), ("POST", "/api/search/union"),
                         ("GET", "/api/batches"), ("GET", "/openapi.json")):
        assert call(server, method, path, user=None).status_code == 401
        forged = httpx.request(method, server["url"] + path, headers={"Authorization": "Bearer not.a.jwt"})
        assert forged.status_code == 403
    before = recorded(server)
    secret = os.path.join(os.path.dirname(server["warehouse"]), "secret.csv")
    with open(secret, "w") as fh:
        fh.write("user,entry\nada,SECRET-VALUE\n")
    outside = call(server, "POST", "/api/search/nary", user="admin", json={"table": secret, "key": ["user", "entry"]})
    assert outside.status_code == 400 and "is refused: it is outside the lake" in outside.json()["detail"]
    assert "SECRET" not in outside.text
    bad = call(server, "POST", "/api/search/union", user="admin", json={"table": 1, "k": 0})
    assert bad.status_code == 400 and "field 'k'" in bad.json()["detail"]
    large = call(server, "POST", "/api/search/union", user="admin", json={"table": 1, "pad": "x" * 70000})
    assert large.status_code == 413 and "larger than 65,536 bytes" in large.json()["detail"]
    assert recorded(server) == before
    assert call(server, "GET", "/api/tables/no/such.csv").status_code == 404
    assert call(server, "GET", "/api/batches/no-such-batch").status_code == 404
    assert call(server, "GET", "/api/find", params={"words": "2024"}).status_code == 400


def test_the_openapi_description_lists_the_json_api(server):
    spec = call(server, "GET", "/openapi.json").json()
    assert spec["servers"] == [{"url": "/lakescout"}]
    assert set(spec["paths"]) == {"/api/status", "/api/tables", "/api/tables/{table}", "/api/find", "/api/batches",
                                  "/api/batches/{batch_id}", "/api/search/{kind}"}
    body = spec["paths"]["/api/search/{kind}"]["post"]["requestBody"]["content"]
    assert set(body) == {"application/json", "multipart/form-data"}
