"""The Lake discovery FastAPI app through TestClient with Airflow's real auth manager (JWT) and a real warehouse.

The searches that succeed need an index built by Spark and run against a real api-server in ``test_ui_browser``;
here, without Spark, the refusals: a viewer may not search, and a served search reads nothing outside the lake; and a
numerical join, whose index rows the ``numeric`` stage's per-table work writes without Spark.
"""
from __future__ import annotations

import asyncio
import gzip
import html
import os
import re
import sys
from datetime import datetime, UTC
from types import SimpleNamespace

import pyarrow as pa
import pytest

from discovery.data.store import SCHEMAS, Warehouse
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from sessions import session

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plugins"))

ROUTES = [("get", "/"), ("get", "/api/status"), ("get", "/static/chart.umd.min.js"), ("post", "/search")]


@pytest.fixture
def warehouse(tmp_path, monkeypatch):
    """A published snapshot whose catalog holds one good and one failed lake table."""
    wh = Warehouse(str(tmp_path / "wh"))
    refresh_id = begin_refresh(session(wh.root))
    now = datetime.now(UTC)
    base = {"format": "csv", "bytes": 10, "mtime_ns": 1, "content_hash": "h", "warnings": "[]", "encoding": "utf-8",
            "delimiter": ",", "refresh_id": refresh_id, "indexed_at": now}
    rows = [{**base, "table_id": 1, "path": "good/cities.csv", "rows": 3, "cols": 2, "status": "ok", "error": None},
            {**base, "table_id": 2, "path": "bad/broken.csv", "rows": 0, "cols": 0, "status": "error",
             "error": "malformed quoting on line 3"}]
    wh.append_rows("catalog", pa.Table.from_pylist(rows, schema=SCHEMAS["catalog"]), refresh_id=refresh_id,
                   stage="scan", attempt="t1")
    publish_snapshot(Warehouse(wh.root), refresh_id, str(tmp_path / "lake"))
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", wh.root)
    return wh


@pytest.fixture(scope="module")
def auth():
    """JWTs of a viewer (``token``: may read the page) and of an admin (``admin``: may trigger query_batch)."""
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    manager = create_auth_manager()
    return {"token": manager.generate_jwt(SimpleAuthManagerUser(username="ada", role="viewer")),
            "admin": manager.generate_jwt(SimpleAuthManagerUser(username="root", role="admin"))}


@pytest.fixture
def client(auth):
    from fastapi.testclient import TestClient
    from lakescout_ui.app import create_app

    return TestClient(create_app())


@pytest.mark.parametrize("method, path", ROUTES)
def test_anonymous_requests_are_refused(client, warehouse, method, path):
    response = getattr(client, method)(path)
    assert response.status_code == 401
    assert "snapshot" not in response.text.lower()


@pytest.mark.parametrize("method, path", ROUTES)
def test_forged_tokens_are_refused(client, warehouse, method, path):
    response = getattr(client, method)(path, headers={"Authorization": "Bearer not.a.jwt"})
    assert response.status_code == 403


def test_anonymous_browser_gets_a_login_link(client, warehouse):
    response = client.get("/", headers={"Accept": "text/html"})
    assert response.status_code == 401 and "/auth/login?next=" in response.text


def test_page_for_a_logged_in_user_cookie_or_bearer(client, auth, warehouse):
    by_cookie = client.get("/", cookies={"_token": auth["token"]})
    by_header = client.get("/", headers={"Authorization": f"Bearer {auth['token']}"})
    assert by_cookie.status_code == by_header.status_code == 200
    page = by_cookie.text
    assert "signed in as ada" in page
    assert re.search(r'id="snapshot-id">1<', page)
    assert "bad/broken.csv" in page and "malformed quoting on line 3" in page
    assert 'id="sizes"' in page and "catalog" in page
    assert "good/cities.csv (csv, id 1)" in page                  # the search form's lake table picker
    assert client.get("/static/chart.umd.min.js", cookies={"_token": auth["token"]}).text.startswith("/*!")
    assert client.get("/static/../app.py", cookies={"_token": auth["token"]}).status_code == 404


def test_status_json(client, auth, warehouse):
    data = client.get("/api/status", headers={"Authorization": f"Bearer {auth['token']}"}).json()
    assert data["ready"] and [s["snapshot_id"] for s in data["snapshots"]] == [1]
    assert data["snapshots"][0]["ok"] == 1 and data["snapshots"][0]["error"] == 1
    assert {s["table"] for s in data["sizes"]} == set(SCHEMAS)


def test_search_form_errors_are_shown_not_raised(client, auth, warehouse):
    cookies = {"_token": auth["admin"]}
    unknown = client.post("/search", data={"kind": "fuzzy", "table": "1"}, cookies=cookies)
    assert unknown.status_code == 400 and "not available" in unknown.text
    nothing = client.post("/search", data={"kind": "union"}, cookies=cookies)
    assert nothing.status_code == 400 and "pick a lake table or upload a table file" in nothing.text


def test_a_new_search_kind_is_on_the_page_with_its_methods_and_fields(client, auth, warehouse, monkeypatch):
    """A kind added to the registry (:mod:`discovery.orchestration.searches`) is a choice of the page's form, with its
    methods, and the form's fields go to it as the parameters it takes."""
    from discovery.query.params import Param, column_name, count
    from discovery.orchestration.searches import SEARCHES, SearchKind
    from lakescout_ui.searching import form_params

    kind = SearchKind("same_name", lambda: {"column": Param(column_name, required=True), "k": Param(count)},
                      lambda: ("name", "name-exact"), lambda checked, table, config: None)
    monkeypatch.setitem(SEARCHES, "same_name", kind)
    page = client.get("/", cookies={"_token": auth["admin"]})
    assert '<option value="same_name"' in page.text
    assert 'data-kind="same_name" value="name">same_name: name<' in page.text
    form = {"tau_value": 0.3, "k": 4, "method": "name", "column": " city ", "key": "a,b"}
    assert form_params("same_name", form) == {"k": 4, "column": "city"}


def test_a_viewer_reads_the_page_but_may_not_search(client, auth, warehouse):
    viewer = {"_token": auth["token"]}
    page = client.get("/", cookies=viewer)
    assert page.status_code == 200 and 'id="search-denied"' in page.text
    assert re.search(r'id="run-search"\s+disabled>', page.text)
    admin_page = client.get("/", cookies={"_token": auth["admin"]}).text
    assert 'id="search-denied"' not in admin_page and re.search(r'id="run-search"\s+>', admin_page)
    form = {"kind": "nary", "table": "1", "key": "city"}
    for refused in (client.post("/search", data=form, cookies=viewer),
                    client.post("/search", data=form, headers={"Authorization": f"Bearer {auth['token']}"})):
        assert refused.status_code == 403
        assert "permission to trigger the query_batch DAG" in refused.text and 'id="snapshot-id"' in refused.text
    assert warehouse.read("query_batches").num_rows == warehouse.read("query_results").num_rows == 0


@pytest.fixture
def outside(tmp_path, warehouse):
    """A CSV outside the lake whose cells must never reach a browser, and the lake's good table, catalogued as
    ``good/cities.csv`` (id 1), made a link to it."""
    secret = tmp_path / "outside" / "secret.csv"
    secret.parent.mkdir()
    secret.write_text("user,entry\nada,postgres:x:101:104:SECRET\nbob,root:x:0:0:SECRET\n")
    lake = tmp_path / "lake"
    (lake / "good").mkdir(parents=True)
    (lake / "good" / "cities.csv").symlink_to(secret)
    return {"secret": str(secret), "lake": str(lake), "root": str(tmp_path)}


SERVED_REFUSALS = [
    # (what the search names, the folder it is named from, the reason in the message)
    ("{secret}", "{root}", "outside the lake"),
    ("outside/secret.csv", "{root}", "not a table of the lake"),
    ("../outside/secret.csv", "{lake}", "'..' may not appear"),
    ("{lake}/../outside/secret.csv", "{lake}", "'..' may not appear"),
    ("good/cities.csv", "{lake}", "link to a file outside the lake"),
    ("{lake}/good/cities.csv", "{root}", "link to a file outside the lake"),
    ("1", "{root}", "link to a file outside the lake"),
]


@pytest.mark.parametrize("named, cwd, reason", SERVED_REFUSALS)
def test_a_search_reads_nothing_outside_the_lake(client, auth, warehouse, outside, monkeypatch, named, cwd, reason):
    from discovery.query.resolve import QueryError, resolve_query
    from discovery.data.store import load_snapshot

    query, folder = named.format(**outside), cwd.format(**outside)
    monkeypatch.chdir(folder)
    if reason.startswith("link"):
        # a catalogued lake table that became a link out of the lake is not read by any path, the Python API included
        with pytest.raises(QueryError, match="leads out of the lake"):
            resolve_query(load_snapshot(warehouse), query)
    else:
        # the Python API (its user owns the machine) reads the same name; a search from the page must not
        assert "SECRET" in str(resolve_query(load_snapshot(warehouse), query).columns[1].to_pylist())
    response = client.post("/search", data={"kind": "nary", "table": query, "key": "user", "k": 3},
                           cookies={"_token": auth["admin"]})
    message = re.search(r'id="search-error">(.*?)</p>', response.text, re.S)
    assert response.status_code == 400 and message, response.text[-2000:]
    text = html.unescape(message.group(1))
    assert f"query {query!r} is refused" in text and reason in text, text
    assert "SECRET" not in response.text and "postgres" not in response.text
    assert warehouse.read("query_batches").num_rows == warehouse.read("query_results").num_rows == 0


def test_page_before_the_first_snapshot(client, auth, tmp_path, monkeypatch):
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", str(tmp_path / "empty"))
    page = client.get("/", cookies={"_token": auth["token"]})
    assert page.status_code == 200 and "No snapshot has been published yet" in page.text


def test_plugin_registers_app_and_nav_entry():
    from lakescout_plugin import LakescoutPlugin

    assert LakescoutPlugin.fastapi_apps[0]["url_prefix"] == "/lakescout"
    view = LakescoutPlugin.external_views[0]
    assert view["name"] == "Lake discovery" and view["href"] == "/lakescout/" and view["destination"] == "nav"


def _reading(app, received: list):
    """``app`` with every body message it asks for recorded in ``received`` (the byte count of each)."""
    async def wrapped(scope, receive, send):
        async def counted():
            message = await receive()
            if message["type"] == "http.request":
                received.append(len(message.get("body", b"")))
            return message
        await app(scope, counted, send)
    return wrapped


async def _post_in_chunks(app, chunks: list[bytes], headers: dict) -> tuple[int, str]:
    """POST /search to ``app`` as a server streams a chunked body: one message per chunk, as the app asks."""
    body, sent = iter(chunks), []

    async def receive():
        chunk = next(body, None)
        return {"type": "http.request", "body": chunk or b"", "more_body": chunk is not None}

    async def send(message):
        sent.append(message)

    scope = {"type": "http", "asgi": {"version": "3.0"}, "http_version": "1.1", "method": "POST", "scheme": "http",
             "path": "/search", "raw_path": b"/search", "root_path": "", "query_string": b"",
             "headers": [(k.encode(), v.encode()) for k, v in headers.items()], "client": ("127.0.0.1", 1),
             "server": ("testserver", 80)}
    await app(scope, receive, send)
    start = next(m for m in sent if m["type"] == "http.response.start")
    return start["status"], b"".join(m.get("body", b"") for m in sent if m["type"] == "http.response.body").decode()


@pytest.fixture
def upload_env(auth, tmp_path, monkeypatch):
    """A client whose app records what it reads of request bodies, a 1 KiB upload limit and a temporary folder of
    its own, so a test sees every temporary file the app leaves behind."""
    import tempfile

    from fastapi.testclient import TestClient
    import lakescout_ui.app as page

    temp = tmp_path / "temp"
    temp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(temp))
    monkeypatch.setattr(page, "MAX_UPLOAD_BYTES", 1024)
    received: list[int] = []
    return {"client": TestClient(_reading(page.create_app(), received)), "received": received, "temp": temp}


def test_a_search_body_is_not_read_before_the_user_may_search(upload_env, auth, warehouse):
    client, received = upload_env["client"], upload_env["received"]
    body = {"upload": ("q.csv", b"city\nOslo\n" * 50, "text/csv")}
    anonymous = client.post("/search", data={"kind": "nary"}, files=body)
    viewer = client.post("/search", data={"kind": "nary"}, files=body, cookies={"_token": auth["token"]})
    assert (anonymous.status_code, viewer.status_code) == (401, 403)
    assert received == [] and list(upload_env["temp"].iterdir()) == []


@pytest.mark.parametrize("how", ["declared", "chunked", "file"])
def test_an_oversized_upload_is_refused_with_413_and_leaves_no_temporary_file(upload_env, auth, warehouse, how):
    """The limit is 1 KiB for the file, plus 64 KiB for the form around it."""
    client, received = upload_env["client"], upload_env["received"]
    cookies = {"_token": auth["admin"]}
    if how == "chunked":    # no Content-Length: the limit holds on the bytes as they stream in
        boundary = "lakescout-test"
        part = (f'--{boundary}\r\nContent-Disposition: form-data; name="upload"; filename="q.csv"\r\n'
                f'Content-Type: text/csv\r\n\r\ncity\n').encode()
        chunks = [part] + [b"Oslo\n" * 200] * 200 + [f"\r\n--{boundary}--\r\n".encode()]
        status, text = asyncio.run(_post_in_chunks(client.app, chunks, {
            "content-type": f"multipart/form-data; boundary={boundary}", "cookie": f"_token={auth['admin']}"}))
        response = SimpleNamespace(status_code=status, text=text)
        assert 0 < sum(received) <= 1024 + 64 * 1024 + 1000 < sum(map(len, chunks))
    else:
        size = 100 * 1024 if how == "declared" else 2 * 1024
        response = client.post("/search", data={"kind": "nary", "key": "city"}, cookies=cookies,
                               files={"upload": ("q.csv", b"city\n" + b"x" * size, "text/csv")})
        if how == "declared":   # a declared length past the limit is refused before a byte is read
            assert received == []
    assert response.status_code == 413 and "the upload is larger than 1,024 bytes" in response.text
    assert list(upload_env["temp"].iterdir()) == []


@pytest.mark.parametrize("name, body", [
    ("my stores.csv", b"city,country\nOslo,NO\n"),
    ("my stores.csv.gz", gzip.compress(b"city,country\nOslo,NO\n")),
    ("my stores.jsonl", b'{"city": "Oslo", "country": "NO"}\n'),
])
def test_an_upload_is_read_as_the_query_and_its_temporary_folder_removed(upload_env, auth, warehouse, name, body):
    response = upload_env["client"].post(
        "/search", data={"kind": "nary", "key": "nosuch,city"}, cookies={"_token": auth["admin"]},
        files={"upload": (name, body, "application/octet-stream")})
    message = html.unescape(re.search(r'id="search-error">(.*?)</p>', response.text, re.S).group(1))
    assert response.status_code == 400
    assert "has no column 'nosuch' (columns: city, country)" in message and f"upload:{name}" in message
    assert list(upload_env["temp"].iterdir()) == []


def test_a_numerical_join_from_the_search_form(client, auth, tmp_path, monkeypatch):
    """The form's column field takes ``lat,lng`` and its tau field a distance in metres; the results name the lake
    table whose coordinates lie within it (the ``numeric_sets`` rows made by the stage's own per-table work)."""
    from discovery.indexes.numjoin.stage import numeric_batch
    from discovery.stages import StageContext

    lake = tmp_path / "lake"
    (lake / "a").mkdir(parents=True)
    (lake / "a" / "stations.csv").write_text("name,lat,lng\nx,48.85,2.35\ny,48.86,2.36\nz,48.87,2.37\n")
    (lake / "a" / "sensors.csv").write_text("id,latitude,longitude\n1,48.85001,2.35\n2,48.86,2.36002\n3,40,3\n")
    wh = Warehouse(str(tmp_path / "wh"))
    refresh_id = begin_refresh(session(wh.root))
    now = datetime.now(UTC)
    rows = [{"table_id": i, "path": p, "format": "csv", "bytes": (lake / p).stat().st_size, "mtime_ns": 1,
             "content_hash": "h", "warnings": "[]", "encoding": "utf-8", "delimiter": ",", "refresh_id": refresh_id,
             "indexed_at": now, "rows": 3, "cols": 3, "status": "ok", "error": None}
            for i, p in ((1, "a/stations.csv"), (2, "a/sensors.csv"))]
    catalog = pa.Table.from_pylist(rows, schema=SCHEMAS["catalog"])
    wh.append_rows("catalog", catalog, refresh_id=refresh_id, stage="scan", attempt="t1")
    sets, _ = numeric_batch(catalog, StageContext(wh.root, str(lake), refresh_id, "t1"))
    wh.append_rows("numeric_sets", sets, refresh_id=refresh_id, stage="numeric", attempt="t1")
    publish_snapshot(Warehouse(wh.root), refresh_id, str(lake))
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", wh.root)
    page = client.post("/search", data={"kind": "join", "table": "1", "column": "lat,lng", "tau": "5"},
                       cookies={"_token": auth["admin"]})
    assert page.status_code == 200, page.text[-2000:]
    results = page.text[page.text.index('id="search-results"'):]
    assert "a/sensors.csv" in results and "latitude,longitude" in results
    assert re.search(r'<td class="num">0\.6667</td>', results)   # two of the three stations, within 5 m
    bad = client.post("/search", data={"kind": "join", "table": "1", "column": "lat,lng", "tau": "far"},
                      cookies={"_token": auth["admin"]})
    assert bad.status_code == 400 and "tau must be a number" in bad.text


def test_kept_uploads_survive_a_folder_pruned_by_another_request(tmp_path, monkeypatch):
    """Two requests pruning at once: one lists a folder the other has just removed (seen under load as a 500)."""
    import lakescout_ui.kept as kept_uploads

    monkeypatch.setattr(kept_uploads.tempfile, "gettempdir", lambda: str(tmp_path))
    upload = tmp_path / "q.csv"
    upload.write_text("a,b\n1,2\n")
    listdir = os.listdir
    monkeypatch.setattr(kept_uploads.os, "listdir",
                        lambda path: listdir(path) + (["ui-gone"] if path == kept_uploads._root() else []))
    kept_uploads.keep("ui-1", "upload:q.csv", str(upload))
    assert kept_uploads.kept("ui-1") == {"upload:q.csv": os.path.join(kept_uploads._root(), "ui-1", "q.csv")}
    assert kept_uploads.kept("ui-gone") == {}


FORKED_READ = r"""
import importlib.util, os, sys, threading
sys.path.insert(0, sys.argv[1])
spec = importlib.util.spec_from_file_location("lakescout_plugin", os.path.join(sys.argv[1], "lakescout_plugin.py"))
spec.loader.exec_module(importlib.util.module_from_spec(spec))
assert "lakescout-open" not in [t.name for t in threading.enumerate()], "the plugin's import warmed the snapshot"
pid = os.fork()
if pid == 0:
    from deltalake import DeltaTable
    DeltaTable(sys.argv[2]).version()
    os._exit(0)
_, status = os.waitpid(pid, 0)
sys.exit(os.waitstatus_to_exitcode(status))
"""


def test_importing_the_plugin_opens_no_warehouse_so_a_forked_child_reads_delta(warehouse, tmp_path):
    """Every Airflow process imports the plugins, and the triggerer forks the process that runs the lake watcher: the
    plugin's import must leave no Delta runtime behind (delta-rs' runtime refuses a forked child: the watcher's
    reads panicked), so the served snapshot is pinned by the api-server's root middleware alone."""
    import subprocess

    done = subprocess.run([sys.executable, "-c", FORKED_READ, os.path.join(ROOT, "plugins"),
                           os.path.join(warehouse.root, "catalog")],
                          capture_output=True, text=True, timeout=300, env=dict(os.environ, RUST_BACKTRACE="0"))
    assert done.returncode == 0, done.stderr[-2000:]


def test_the_api_servers_root_middleware_pins_the_served_snapshot_as_it_starts(warehouse, auth):
    """Built as the server starts (Starlette builds the middleware stack on the lifespan's first call), the root
    middleware pins the snapshot in a thread; a request then passes through it unchanged."""
    import threading

    from fastapi import FastAPI
    from fastapi.testclient import TestClient
    from lakescout_ui import access
    from lakescout_ui.app import WarmUp, create_app
    from lakescout_plugin import LakescoutPlugin

    assert [m["middleware"] for m in LakescoutPlugin.fastapi_root_middlewares] == [WarmUp]
    root = FastAPI()
    root.mount("/lakescout", create_app())
    root.add_middleware(WarmUp)
    with TestClient(root) as client:
        warming = [t for t in threading.enumerate() if t.name == "lakescout-open"]
        assert warming, "the middleware started no warm-up"
        for thread in warming:
            thread.join(120)
        assert access.serving().lakescout().snapshot_id is not None
        response = client.get("/lakescout/api/status", headers={"Authorization": f"Bearer {auth['token']}"})
        assert response.status_code == 200


def test_an_unexpected_error_is_a_json_refusal_and_the_connection_stays_open(warehouse, auth, monkeypatch):
    """On a real server (uvicorn, as the api-server runs it): a route that raises answers 500 in the refusal shape,
    naming the error's type and not its message, and the client's kept connection answers its next request."""
    import http.client
    import json
    import socket
    import threading
    import time

    import uvicorn
    from lakescout_ui import api as json_api
    from lakescout_ui.app import create_app

    def broken(served):
        raise RuntimeError("unreadable cell 'Ada Lovelace'")

    monkeypatch.setattr(json_api, "served_page", broken)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    server = uvicorn.Server(uvicorn.Config(create_app(), host="127.0.0.1", port=port, log_level="critical"))
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + 60
        while not server.started and time.monotonic() < deadline and thread.is_alive():
            time.sleep(0.05)
        assert server.started
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
        headers = {"Authorization": f"Bearer {auth['token']}"}
        answers = []
        for path in ("/api/status", "/api/tables"):
            conn.request("GET", path, headers=headers)
            response = conn.getresponse()
            answers.append((response.status, response.getheader("content-type"), json.loads(response.read())))
        conn.close()
    finally:
        server.should_exit = True
        thread.join(60)
    (status, kind, body), (after, _, tables) = answers
    assert (status, kind) == (500, "application/json")
    assert body == {"status": 500, "detail": "the server failed to answer (RuntimeError); its log has the details",
                    "parameter": None}
    assert after == 200 and sorted(t["path"] for t in tables) == ["bad/broken.csv", "good/cities.csv"]
