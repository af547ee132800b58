"""End to end on a real Airflow api-server with the plugin (SimpleAuthManager, an admin and a viewer): who may
search from the "Lake discovery" page, searches by table id, lake path and upload over HTTP, a search naming a file
of the server refused, and in headless Chromium a login through the Airflow UI, an n-ary search through the form and
a screenshot under ``artifacts/``.  With ``LAKESCOUT_SCREENSHOT`` set, the screenshot of the page is also written to
``docs/lake_discovery.png``, the picture the README shows.  The api-server is started once for the module."""
from __future__ import annotations

import html
import os
import re
import secrets
import urllib.error
import urllib.request

import httpx
import pytest

from airflow_server import api_server, bearer_token, browser_login

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ARTIFACTS = os.path.join(ROOT, "artifacts")
#: Where the README's picture of the page lives; written only when ``LAKESCOUT_SCREENSHOT`` is set.
README_SCREENSHOT = os.path.join(ROOT, "docs", "lake_discovery.png")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]


@pytest.fixture(scope="module")
def airflow_server(spark, demo_lake, tmp_path_factory):
    """The api-server over a warehouse of the n-ary test lake, with an ``admin`` and a ``viewer``, and their JWTs."""
    from test_batch import nary_lake, refresh_for_nary

    root = tmp_path_factory.mktemp("ui")
    env_lake = nary_lake(demo_lake, str(root / "lake"))
    warehouse = str(root / "wh")
    refresh_for_nary(spark, warehouse, env_lake["lake"])
    users = {name: (name, secrets.token_urlsafe(12)) for name in ("admin", "viewer")}   # the role is the name
    home = str(root / "airflow")
    with api_server(home, warehouse, users) as url:
        yield {"url": url, "warehouse": warehouse, "passwords": {u: pw for u, (_, pw) in users.items()},
               "password_file": os.path.join(home, "passwords.json"),
               "tokens": {u: bearer_token(url, u, pw) for u, (_, pw) in users.items()}, **env_lake}


def _search(server: dict, user: str, data: dict, files: dict | None = None) -> httpx.Response:
    return httpx.post(f"{server['url']}/lakescout/search", data=data, files=files, timeout=300,
                      headers={"Authorization": f"Bearer {server['tokens'][user]}"})


def _recorded(server: dict, response: httpx.Response) -> list[tuple]:
    """(rank, table id, score) of the batch a successful search recorded, read back from ``query_results``."""
    from discovery.surfaces.batch import batch_results
    from discovery.data.store import Warehouse

    batch_id = re.search(r"\(batch <code>(ui-[0-9a-f]+)</code>\)", response.text).group(1)
    rows = batch_results(Warehouse(server["warehouse"]), batch_id).to_pylist()
    return [(r["rank"], r["table_id"], r["score"]) for r in rows]


def _expected(server: dict, query) -> list[tuple]:
    import discovery

    answer = discovery.open(server["warehouse"]).nary(query, server["key"], k=5)
    return [(r["rank"], r["table_id"], float(r["joinability"])) for r in answer["results"]]


def test_a_viewer_reads_the_page_and_gets_403_on_search(airflow_server):
    from discovery.data.store import Warehouse

    page = httpx.get(f"{airflow_server['url']}/lakescout/", timeout=60,
                     headers={"Authorization": f"Bearer {airflow_server['tokens']['viewer']}"})
    assert page.status_code == 200 and "signed in as viewer" in page.text and 'id="search-denied"' in page.text
    before = Warehouse(airflow_server["warehouse"]).read("query_results").num_rows
    table_id = _table_id(airflow_server["warehouse"], airflow_server["query"])
    refused = _search(airflow_server, "viewer", {"kind": "nary", "table": str(table_id),
                                                 "key": ",".join(airflow_server["key"])})
    assert refused.status_code == 403 and "permission to trigger the query_batch DAG" in refused.text
    assert Warehouse(airflow_server["warehouse"]).read("query_results").num_rows == before


def test_an_admin_searches_by_table_id_lake_path_and_upload(airflow_server, tmp_path):
    key = ",".join(airflow_server["key"])
    table_id = _table_id(airflow_server["warehouse"], airflow_server["query"])
    expected = _expected(airflow_server, table_id)
    assert expected
    for table in (str(table_id), airflow_server["query"]):
        found = _search(airflow_server, "admin", {"kind": "nary", "table": table, "key": key, "k": "5"})
        assert found.status_code == 200 and 'id="search-results"' in found.text, found.text[-2000:]
        assert _recorded(airflow_server, found) == expected, table
    upload = tmp_path / "my stores.csv"
    upload.write_bytes(open(os.path.join(airflow_server["lake"], airflow_server["query"]), "rb").read())
    with open(upload, "rb") as fh:
        found = _search(airflow_server, "admin", {"kind": "nary", "key": key, "k": "5"},
                        files={"upload": ("my stores.csv", fh, "text/csv")})
    assert found.status_code == 200, found.text[-2000:]
    assert re.search(r"search on\s+my stores\.csv\s+from snapshot", found.text)
    assert _recorded(airflow_server, found) == _expected(airflow_server, str(upload))


def test_a_search_naming_a_file_of_the_server_is_refused(airflow_server):
    path = airflow_server["password_file"]
    assert airflow_server["passwords"]["admin"] in open(path).read()      # a real file of the server, with secrets
    refused = _search(airflow_server, "admin", {"kind": "nary", "table": path, "key": "admin"})
    assert refused.status_code == 400, refused.text[-2000:]
    message = html.unescape(re.search(r'id="search-error">(.*?)</p>', refused.text, re.S).group(1))
    assert f"query {path!r} is refused: it is outside the lake" in message
    assert not any(p in refused.text for p in airflow_server["passwords"].values())


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium is not installed")
def test_login_open_page_search_and_screenshot(airflow_server):
    from playwright.sync_api import sync_playwright

    import discovery

    url = airflow_server["url"]
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{url}/lakescout/api/status", timeout=10)
    assert refused.value.code == 401                            # the plugin is behind Airflow's login
    os.makedirs(ARTIFACTS, exist_ok=True)
    expected = discovery.open(airflow_server["warehouse"]).nary(airflow_server["query"], airflow_server["key"], k=5)
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            browser_login(page, url, "admin", airflow_server["passwords"]["admin"])

            page.goto(f"{url}/lakescout/")
            assert page.locator("h1").inner_text() == "Lake discovery"
            assert "signed in as admin" in page.content()
            _nary_search_in_page(page, airflow_server, 5)
            cells = page.locator("#search-results tr td:nth-child(2)").all_inner_texts()
            scores = page.locator("#search-results tr td:nth-child(4)").all_inner_texts()
            assert [c.split(" (")[0] for c in cells] == [r["path"] for r in expected["results"]]
            assert [float(s) for s in scores] == [float(r["joinability"]) for r in expected["results"]]
            assert "mapping" in page.locator("#search-results").inner_text()
            assert page.evaluate("!!window.Chart && !!Chart.getChart('timings-chart')")
            page.screenshot(path=os.path.join(ARTIFACTS, "lake_discovery.png"), full_page=True)
            if os.environ.get("LAKESCOUT_SCREENSHOT"):
                os.makedirs(os.path.dirname(README_SCREENSHOT), exist_ok=True)
                page.screenshot(path=README_SCREENSHOT, full_page=True)
                assert open(README_SCREENSHOT, "rb").read(8) == b"\x89PNG\r\n\x1a\n"

            page.goto(f"{url}/plugin/lake-discovery")
            page.wait_for_selector("iframe", timeout=30000)
            page.frame_locator("iframe").locator("h1").wait_for(timeout=30000)
            page.screenshot(path=os.path.join(ARTIFACTS, "lake_discovery_in_airflow.png"))
        finally:
            browser.close()


def _nary_search_in_page(page, server: dict, k: int) -> None:
    """Fill the page's form with an n-ary search of the server's query table and run it, until results show."""
    page.select_option("#kind", "nary")
    page.select_option("#table", value=str(_table_id(server["warehouse"], server["query"])))
    page.fill("input[name='k']", str(k))
    page.fill("input[name='key']", ",".join(server["key"]))
    page.click("#run-search")
    page.wait_for_selector("#search-results", timeout=60000)


def _table_id(warehouse: str, path: str) -> int:
    import pyarrow.compute as pc

    from discovery.data.store import Warehouse

    cat = Warehouse(warehouse).read("catalog")
    return cat.filter(pc.equal(cat["path"], path))["table_id"][0].as_py()


def _links(response: httpx.Response) -> list[tuple[str, str]]:
    """(preview, download) links of each result row of a search page."""
    previews = re.findall(r'<a class="preview" href="([^"]+)"', response.text)
    downloads = re.findall(r'<a class="download" href="([^"]+)"', response.text)
    return list(zip(previews, downloads))


def _as_csv(table) -> str:
    import io

    import pyarrow.csv as pacsv

    from discovery.surfaces.materialize.output import writable

    buffer = io.BytesIO()
    pacsv.write_csv(writable(table.replace_schema_metadata(None)), buffer)
    return buffer.getvalue().decode()


def test_a_result_row_previews_and_downloads_its_joined_rows(airflow_server, tmp_path):
    """Each result row of a search links a preview of the joined rows and a CSV of all of them: the rows the API
    writes for that result, for a lake-table query and for an upload; a viewer may do neither."""
    import discovery

    url, key = airflow_server["url"], ",".join(airflow_server["key"])
    auth = {"Authorization": f"Bearer {airflow_server['tokens']['admin']}"}
    found = _search(airflow_server, "admin", {"kind": "nary", "table": airflow_server["query"], "key": key, "k": "2"})
    links = _links(found)
    assert len(links) == 2
    ls = discovery.open(airflow_server["warehouse"])
    results = ls.nary(airflow_server["query"], airflow_server["key"], k=2)["results"]
    for (preview, download), result in zip(links, results):
        expected = ls.augment(airflow_server["query"], key=airflow_server["key"], table=result["table_id"])
        page = httpx.get(url + html.unescape(preview), headers=auth, timeout=300)
        assert page.status_code == 200 and 'id="preview-rows"' in page.text, page.text[-2000:]
        assert f"{expected.num_rows} rows" in page.text and result["path"] in page.text
        csv = httpx.get(url + html.unescape(download), headers=auth, timeout=300)
        assert csv.status_code == 200 and csv.headers["content-type"].startswith("text/csv")
        assert csv.text == _as_csv(expected)
        viewer = {"Authorization": f"Bearer {airflow_server['tokens']['viewer']}"}
        assert httpx.get(url + html.unescape(download), headers=viewer, timeout=60).status_code == 403
    upload = tmp_path / "stores.csv"
    upload.write_bytes(open(os.path.join(airflow_server["lake"], airflow_server["query"]), "rb").read())
    with open(upload, "rb") as fh:
        found = _search(airflow_server, "admin", {"kind": "nary", "key": key, "k": "1"},
                        files={"upload": ("stores.csv", fh, "text/csv")})
    (_, download), = _links(found)
    csv = httpx.get(url + html.unescape(download), headers=auth, timeout=300)
    expected = ls.augment(str(upload), key=airflow_server["key"], rank=1)  # an upload is no lake table: its twin
    assert csv.status_code == 200 and csv.text == _as_csv(expected)             # in the lake can rank first
    missing = httpx.get(f"{url}/lakescout/results/ui-000000000000/search/1/rows.csv", headers=auth, timeout=60)
    assert missing.status_code == 400 and "no recorded batch" in missing.json()["detail"]


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium is not installed")
def test_preview_and_download_in_the_browser(airflow_server, tmp_path):
    from playwright.sync_api import sync_playwright

    import discovery

    url = airflow_server["url"]
    ls = discovery.open(airflow_server["warehouse"])
    first = ls.nary(airflow_server["query"], airflow_server["key"], k=1)["results"][0]
    expected = ls.augment(airflow_server["query"], key=airflow_server["key"], table=first["table_id"])
    with sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
        try:
            context = browser.new_context(accept_downloads=True, viewport={"width": 1400, "height": 1000})
            page = context.new_page()
            browser_login(page, url, "admin", airflow_server["passwords"]["admin"])
            page.goto(f"{url}/lakescout/")
            _nary_search_in_page(page, airflow_server, 1)
            with context.expect_page() as opened:
                page.click("#search-results a.preview")
            preview = opened.value
            preview.wait_for_selector("#preview-rows", timeout=60000)
            header = preview.locator("#preview-rows tr th").all_inner_texts()
            assert header == expected.column_names
            shown = preview.locator("#preview-rows tr").count() - 1
            assert shown == min(expected.num_rows, 50)
            with preview.expect_download() as download:
                preview.click("#download")
            path = tmp_path / "rows.csv"
            download.value.save_as(str(path))
            assert path.read_text() == _as_csv(expected)
        finally:
            browser.close()


def test_the_page_and_the_api_say_when_the_lake_is_ahead_of_the_index(airflow_server):
    """A table lands and the lake watcher checks: the page marks the lake as ahead and the JSON API's status names
    it, read from what the watcher saw (nothing else of the module's warehouse changes; the file and the watcher's
    state are removed after)."""
    from discovery.orchestration.refresh.watch import STATE, Watch
    from discovery.data.store import Warehouse

    headers = {"Authorization": f"Bearer {airflow_server['tokens']['viewer']}"}
    landed = os.path.join(airflow_server["lake"], "landed_towns.csv")
    state = os.path.join(airflow_server["warehouse"], STATE)
    try:
        watch = Watch(airflow_server["lake"], Warehouse(airflow_server["warehouse"]))
        assert watch.check() is None                                      # the index holds the lake
        page = httpx.get(f"{airflow_server['url']}/lakescout/", timeout=60, headers=headers)
        assert 'id="lake-current"' in page.text and 'id="lake-ahead"' not in page.text
        with open(landed, "w") as fh:
            fh.write("town,population\nOslo,709000\nBergen,291000\n")
        watch.check()
        page = httpx.get(f"{airflow_server['url']}/lakescout/", timeout=60, headers=headers)
        assert 'id="lake-ahead"' in page.text and "1 added" in page.text and "landed_towns.csv" in page.text
        status = httpx.get(f"{airflow_server['url']}/lakescout/api/status", timeout=60, headers=headers).json()
        assert status["status"]["freshness"]["lake"]["paths"]["added"] == ["landed_towns.csv"]
    finally:
        for path in (landed, state):
            if os.path.exists(path):
                os.remove(path)
