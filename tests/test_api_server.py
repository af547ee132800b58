"""The JSON API of the plugin on a real Airflow api-server (SimpleAuthManager, an admin and a viewer, tokens from
``POST /auth/token``) over a copy of the indexed sample lake: every reading route answers as the Python API does,
searches by table id, lake path and upload answer as the Python API does and are recorded when asked, a viewer
searches but may not record, every refusal is one line in one shape naming its parameter, every answer validates
against the model the OpenAPI description gives it, and ``discovery.connect`` answers as ``discovery.open``.  The
api-server is started once for the module."""
from __future__ import annotations

import json
import os
import secrets
import sys

import httpx
import pytest
from fastapi.encoders import jsonable_encoder

from airflow_server import api_server, bearer_token
from discovery.orchestration.demo_lake import load_ground_truth
from test_readme import linked_copy

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "plugins"))

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]


@pytest.fixture(scope="module")
def server(indexed_lake, tmp_path_factory):
    lake, indexed = indexed_lake
    root = tmp_path_factory.mktemp("api")
    warehouse = str(root / "wh")
    linked_copy(indexed, warehouse)                     # searches record into it; the session's index stays as it is
    users = {name: (name, secrets.token_urlsafe(12)) for name in ("admin", "viewer")}   # the role is the name
    with api_server(str(root / "airflow"), warehouse, users, lake=lake) as url:
        yield {"url": url + "/lakescout", "base": url, "warehouse": warehouse, "lake": lake,
               "tokens": {u: bearer_token(url, u, pw) for u, (_, pw) in users.items()}}


def call(server: dict, method: str, path: str, user: str | None = "viewer", headers: dict | None = None,
         **kwargs) -> httpx.Response:
    headers = {**(headers or {}), **({"Authorization": f"Bearer {server['tokens'][user]}"} if user else {})}
    return httpx.request(method, server["url"] + path, headers=headers, timeout=300, **kwargs)


def same(value) -> object:
    """``value`` as the API sends it (datetimes as ISO strings)."""
    return json.loads(json.dumps(jsonable_encoder(value)))


def recorded(server: dict) -> int:
    from discovery.data.store import Warehouse

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
    process = status.json()["serving"]
    assert process["snapshot_id"] == ls.snapshot_id and process["rss_bytes"] > 0
    assert 0 < process["index_cache"]["bytes"] <= process["index_cache"]["budget_bytes"]


def test_searches_by_id_path_and_upload_are_recorded_and_exact(server):
    import discovery
    from discovery.surfaces.batch import batch_results
    from discovery.data.store import Warehouse

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
        answer = call(server, "POST", f"/api/search/{kind}?record=true", user="admin", **body)
        assert answer.status_code == 200, answer.text
        got = answer.json()
        assert got["recorded"] and got["answer"]["results"] == same(direct["results"])
        assert [r["table_id"] for r in got["results"]] == [r["table_id"] for r in direct["results"]]
        assert [r["score"] for r in got["results"]] == pytest.approx(
            [r.get("score", r.get("joinability")) for r in direct["results"]])
        assert recorded(server) == before + 1
        rows = same(batch_results(Warehouse(server["warehouse"]), got["batch_id"]).to_pylist())
        assert [r["table_id"] for r in rows] == [r["table_id"] for r in got["results"]]
        again = call(server, "GET", f"/api/batches/{got['batch_id']}")
        assert again.status_code == 200 and again.json()["results"] == got["results"]
        assert again.json()["summary"]["batch_id"] == got["batch_id"]
    unrecorded = call(server, "POST", "/api/search/union", user="admin", json={"table": union_id, "k": 5})
    assert unrecorded.status_code == 200 and recorded(server) == before + 1
    assert unrecorded.json()["batch_id"] is None and not unrecorded.json()["recorded"]
    assert unrecorded.json()["answer"]["results"] == same(searches[0][2]["results"])
    nary_answer = answer.json()["results"][0]["evidence"]
    assert nary_answer["matched_tuples"] and nary_answer["tuples_not_found"] >= 0
    latest = call(server, "GET", "/api/batches", params={"limit": 1})
    assert latest.json()[0]["batch_id"] == answer.json()["batch_id"]


def test_a_viewer_searches_but_may_not_record(server):
    before = recorded(server)
    for body in ({"json": {"table": 1, "k": 3}},
                 {"data": {"key": "a,b"}, "files": {"upload": ("q.csv", b"a,b\nx,y\n", "text/csv")}}):
        refused = call(server, "POST", "/api/search/union?record=true", user="viewer", **body)
        assert refused.status_code == 403 and "permission to trigger the query_batch DAG" in refused.json()["detail"]
        assert refused.json()["parameter"] == "record"
    answered = call(server, "POST", "/api/search/union", user="viewer", json={"table": 1, "k": 3})
    assert answered.status_code == 200 and answered.json()["results"] and not answered.json()["recorded"]
    assert call(server, "GET", "/api/tables", user="viewer").status_code == 200
    assert recorded(server) == before


def _resigned(server: dict, expired: bool) -> str:
    """The admin's token signed again as the server signs it, its lifetime moved into the past when ``expired`` (a
    valid token but for its expiry)."""
    import jwt

    from airflow_server import JWT_SECRET

    token = server["tokens"]["admin"]
    header = jwt.get_unverified_header(token)
    claims = jwt.decode(token, options={"verify_signature": False})
    if expired:
        claims.update(iat=claims["iat"] - 7200, nbf=claims.get("nbf", claims["iat"]) - 7200, exp=claims["iat"] - 3600)
    return jwt.encode(claims, JWT_SECRET, algorithm=header["alg"], headers={k: v for k, v in header.items()
                                                                           if k not in ("alg", "typ")})


def test_refusals_are_one_clear_message(server):
    for method, path in (("GET", "/api/tables"), ("GET", "/api/find?words=x"), ("POST", "/api/search/union"),
                         ("GET", "/api/batches"), ("GET", "/openapi.json")):
        assert call(server, method, path, user=None).status_code == 401
        forged = httpx.request(method, server["url"] + path, headers={"Authorization": "Bearer not.a.jwt"})
        assert forged.status_code == 403
    for expired in (False, True):
        answer = call(server, "GET", "/api/tables", user=None,
                      headers={"Authorization": f"Bearer {_resigned(server, expired)}"})
        assert answer.status_code == (401 if expired else 200), answer.text
    assert set(answer.json()) == {"status", "detail", "parameter"}
    before = recorded(server)
    secret = os.path.join(os.path.dirname(server["warehouse"]), "secret.csv")
    with open(secret, "w") as fh:
        fh.write("user,entry\nada,SECRET-VALUE\n")
    outside = call(server, "POST", "/api/search/nary", user="admin", json={"table": secret, "key": ["user", "entry"]})
    assert outside.status_code == 400 and "is refused: it is outside the lake" in outside.json()["detail"]
    assert "SECRET" not in outside.text
    bad = call(server, "POST", "/api/search/union?record=true", user="admin", json={"table": 1, "k": 0})
    assert bad.status_code == 400 and "field 'k'" in bad.json()["detail"]
    large = call(server, "POST", "/api/search/union", user="admin", json={"table": 1, "pad": "x" * 70000})
    assert large.status_code == 413 and "larger than 65,536 bytes" in large.json()["detail"]
    assert recorded(server) == before
    refusals = [
        (bad, 400, "k"), (large, 413, None), (outside, 400, "query"),
        (call(server, "GET", "/api/tables/no/such.csv"), 404, "table"),
        (call(server, "GET", "/api/batches/no-such-batch"), 404, "batch_id"),
        (call(server, "GET", "/api/find", params={"words": "2024"}), 400, None),
        (call(server, "GET", "/api/batches", params={"limit": "many"}), 422, "limit"),
        (call(server, "GET", "/api/find"), 422, "words"),
        (call(server, "POST", "/api/search/union", content=b"{not json", headers={"Content-Type": "application/json"},
              user="admin"), 400, None),
        (call(server, "POST", "/api/search/union", user="admin", json={"table": 1, "k": "ten"}), 400, "k"),
        (call(server, "POST", "/api/search/sideways", user="admin", json={"table": 1}), 404, "kind"),
        (call(server, "GET", "/api/no-such-route"), 404, None),
        (call(server, "DELETE", "/api/tables"), 405, None),
        (call(server, "GET", "/api/tables", user=None), 401, None),
    ]
    for answer, status, parameter in refusals:
        body = answer.json()
        assert (answer.status_code, body["status"]) == (status, status), answer.text
        assert set(body) == {"status", "detail", "parameter"} and body["parameter"] == parameter, body
        assert body["detail"] and "\n" not in body["detail"]


def test_the_openapi_description_lists_the_json_api(server):
    spec = call(server, "GET", "/openapi.json").json()
    assert spec["servers"] == [{"url": "/lakescout"}]
    assert set(spec["paths"]) == {"/api/status", "/api/tables", "/api/tables/{table}", "/api/find", "/api/batches",
                                  "/api/batches/{batch_id}", "/api/search/{kind}"}
    body = spec["paths"]["/api/search/{kind}"]["post"]["requestBody"]["content"]
    assert set(body) == {"application/json", "multipart/form-data"}
    for path, methods in spec["paths"].items():
        for method, route in methods.items():
            assert route["responses"]["200"]["content"]["application/json"]["schema"], (method, path)
            assert "Refusal" in route["responses"]["401"]["content"]["application/json"]["schema"]["$ref"]


def test_every_answer_validates_against_its_described_model(server):
    from pydantic import TypeAdapter

    from lakescout_ui import models

    union = call(server, "POST", "/api/search/union?record=true", user="admin", json={"table": 1, "k": 3}).json()
    nary = load_ground_truth(server["lake"])["nary"][0]
    answers = [
        (models.Status, call(server, "GET", "/api/status")),
        (list[models.LakeTable], call(server, "GET", "/api/tables")),
        (models.Described, call(server, "GET", "/api/tables/1")),
        (models.Found, call(server, "GET", "/api/find", params={"words": "salary"})),
        (list[models.BatchListed], call(server, "GET", "/api/batches")),
        (models.BatchAnswer, call(server, "GET", f"/api/batches/{union['batch_id']}")),
        (models.SearchAnswer, call(server, "POST", "/api/search/nary", user="admin",
                                   json={"table": nary["query_table"], "key": list(nary["query_columns"]), "k": 2})),
    ]
    assert models.SearchAnswer.model_validate(union).recorded
    for model, answer in answers:
        assert answer.status_code == 200, answer.text
        TypeAdapter(model).validate_python(answer.json(), strict=False)


def test_connect_answers_as_open(server):
    import discovery
    from discovery.client import RemoteError

    local, remote = discovery.open(server["warehouse"]), discovery.connect(server["base"], server["tokens"]["viewer"])
    truth = load_ground_truth(server["lake"])
    join, nary = truth["join"][0], truth["nary"][0]
    assert remote.snapshot_id == local.snapshot_id
    assert remote.tables(format="csv") == same(local.tables(format="csv"))
    assert remote.describe(3) == same(local.describe(3))
    assert remote.find("salary", k=3) == same(local.find("salary", k=3))
    pairs = [(remote.union(truth["union"][0]["query_table"], k=4), local.union(truth["union"][0]["query_table"], k=4)),
             (remote.join(join["query_table"], join["query_column"], top_k=3),
              local.join(join["query_table"], join["query_column"], top_k=3)),
             (remote.nary(nary["query_table"], list(nary["query_columns"]), k=3),
              local.nary(nary["query_table"], list(nary["query_columns"]), k=3))]
    copy = os.path.join(os.path.dirname(server["warehouse"]), "uploaded_" + os.path.basename(nary["query_table"]))
    with open(os.path.join(server["lake"], nary["query_table"]), "rb") as src, open(copy, "wb") as dst:
        dst.write(src.read())
    key = list(nary["query_columns"])
    pairs.append((remote.nary(copy, key, k=3), local.nary(copy, key, k=3)))
    for got, direct in pairs:
        assert got["results"] == same(direct["results"])
    with pytest.raises(RemoteError) as refused:
        remote.union(1, k=0)
    assert refused.value.status == 400 and refused.value.param == "k"
    with pytest.raises(RemoteError, match="permission to trigger"):
        remote.search("union", 1, record=True)


def test_a_client_generated_from_the_description_runs_against_the_server(server, tmp_path):
    """openapi-python-client (``make client-generator``) generates a client from ``/openapi.json``; its typed calls
    answer as the Python API does and parse refusals as the described :class:`Refusal`."""
    import subprocess

    import discovery

    tools = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), ".venv-tools", "bin")
    assert os.path.exists(os.path.join(tools, "openapi-python-client")), (
        "the OpenAPI client generator is missing: `make client-generator` installs it (`make test` does)")
    spec = tmp_path / "openapi.json"
    spec.write_text(call(server, "GET", "/openapi.json").text)
    subprocess.run([os.path.join(tools, "openapi-python-client"), "generate", "--path", str(spec), "--output-path",
                    str(tmp_path / "lakescout_client"), "--meta", "none"], check=True, capture_output=True,
                   cwd=tmp_path, env={**os.environ, "PATH": tools + os.pathsep + os.environ["PATH"]})
    sys.path.insert(0, str(tmp_path))
    try:
        from lakescout_client import AuthenticatedClient
        from lakescout_client.api.lakescout import describe_table, find_tables, list_tables, search, status
        from lakescout_client.models import Refusal, SearchJsonBody
    finally:
        sys.path.remove(str(tmp_path))
    local = discovery.open(server["warehouse"])
    client = AuthenticatedClient(base_url=server["url"], token=server["tokens"]["viewer"])
    assert status.sync(client=client).status["snapshot"]["snapshot_id"] == local.snapshot_id
    tables = list_tables.sync(client=client, format_=["csv"])
    assert [t.to_dict() for t in tables] == same(local.tables(format="csv"))
    assert describe_table.sync("3", client=client).to_dict() == same(local.describe(3))
    assert find_tables.sync(client=client, words=["salary"], k=3).to_dict() == same(local.find(["salary"], k=3))
    body = SearchJsonBody.from_dict({"table": 1, "k": 4})
    answer = search.sync("union", client=client, body=body)
    assert answer.recorded is False and answer.batch_id is None
    assert answer.answer.to_dict()["results"] == same(local.union(1, k=4)["results"])
    assert [r.table_id for r in answer.results] == [r["table_id"] for r in local.union(1, k=4)["results"]]
    refused = search.sync("union", client=client, body=SearchJsonBody.from_dict({"table": 1, "k": 0}))
    assert isinstance(refused, Refusal) and refused.status == 400 and refused.parameter == "k"
    denied = search.sync("union", client=client, body=body, record=True)
    assert isinstance(denied, Refusal) and denied.status == 403


def test_an_answer_is_written_as_fastapi_writes_a_returned_value():
    """:class:`lakescout_ui.models.Answer` writes the bytes FastAPI writes for the same returned value (its encoder's
    walk, then ``json.dumps``): timestamps, dates, sets, enums, tuples, nested lists, numbers, text beyond ASCII; a
    NaN is refused by both."""
    import datetime
    import enum

    from fastapi.responses import JSONResponse

    from lakescout_ui.models import Answer

    class Kind(enum.StrEnum):
        UNION = "union"

    value = {"at": datetime.datetime(2026, 11, 29, 21, 5, 3, 120000, tzinfo=datetime.UTC),
             "day": datetime.date(2026, 11, 29), "tags": {"a"}, "kind": Kind.UNION, "pair": (1, 2.5),
             "rows": [{"rank": 1, "score": 0.1 + 0.2, "path": "münchen/ü.csv", "none": None, "ok": True}],
             "big": 10 ** 20, "neg": -0.0}
    assert Answer(value).body == JSONResponse(jsonable_encoder(value)).body
    with pytest.raises(ValueError):
        Answer({"score": float("nan")})
    with pytest.raises(ValueError):
        JSONResponse(jsonable_encoder({"score": float("nan")}))
