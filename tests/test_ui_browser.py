"""End to end: a real Airflow api-server with the plugin, a login through the Airflow UI in headless Chromium, the
"Lake discovery" page, an n-ary search through its form, and a screenshot under ``artifacts/``."""
from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request

import pytest

from airflow_env import airflow_env

pytestmark = [
    pytest.mark.browser, pytest.mark.airflow, pytest.mark.spark, pytest.mark.slow,
    pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium is not installed"),
]

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.dirname(sys.executable)
ARTIFACTS = os.path.join(ROOT, "artifacts")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
USER, PASSWORD = "ada", "lake-discovery-test"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_healthy(url: str, proc: subprocess.Popen, log_path: str, timeout: float = 150) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise AssertionError("api-server exited:\n" + open(log_path).read()[-4000:])
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise AssertionError("api-server did not become healthy:\n" + open(log_path).read()[-4000:])


@pytest.fixture(scope="module")
def airflow_server(spark, demo_lake, tmp_path_factory):
    from test_batch import nary_lake, refresh_for_nary

    root = tmp_path_factory.mktemp("ui")
    env_lake = nary_lake(demo_lake, str(root / "lake"))
    warehouse = str(root / "wh")
    refresh_for_nary(spark, warehouse, env_lake["lake"])
    home = root / "airflow"
    home.mkdir()
    (home / "passwords.json").write_text(json.dumps({USER: PASSWORD}))
    port = _free_port()
    env = airflow_env(
        str(home), warehouse,
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=f"{USER}:viewer",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=str(home / "passwords.json"),
        AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{port}",
        AIRFLOW__API_AUTH__JWT_SECRET="lakescout-browser-test-secret-of-a-reasonable-length-0123456789",
    )
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    log_path = str(root / "api-server.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([airflow, "api-server", "--host", "127.0.0.1", "--port", str(port), "--workers", "1"],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        _wait_healthy(f"http://127.0.0.1:{port}/api/v2/monitor/health", proc, log_path)
        yield {"url": f"http://127.0.0.1:{port}", "warehouse": warehouse, **env_lake}
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


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
            page.goto(f"{url}/auth/login")
            page.fill("input[name='username']", USER)
            page.fill("input[name='password']", PASSWORD)
            page.click("button[type='submit']")
            page.wait_for_function("document.cookie.includes('_token=')", timeout=30000)

            page.goto(f"{url}/lakescout/")
            assert page.locator("h1").inner_text() == "Lake discovery"
            assert f"signed in as {USER}" in page.content()
            page.select_option("#kind", "nary")
            page.select_option("#table", label=f"{airflow_server['query']} (id "
                               f"{_table_id(airflow_server['warehouse'], airflow_server['query'])})")
            page.fill("input[name='k']", "5")
            page.fill("input[name='key']", ",".join(airflow_server["key"]))
            page.click("#run-search")
            page.wait_for_selector("#search-results", timeout=60000)
            cells = page.locator("#search-results tr td:nth-child(2)").all_inner_texts()
            scores = page.locator("#search-results tr td:nth-child(4)").all_inner_texts()
            assert [c.split(" (")[0] for c in cells] == [r["path"] for r in expected["results"]]
            assert [float(s) for s in scores] == [float(r["joinability"]) for r in expected["results"]]
            assert "mapping" in page.locator("#search-results").inner_text()
            assert page.evaluate("!!window.Chart && !!Chart.getChart('timings-chart')")
            page.screenshot(path=os.path.join(ARTIFACTS, "lake_discovery.png"), full_page=True)

            page.goto(f"{url}/plugin/lake-discovery")
            page.wait_for_selector("iframe", timeout=30000)
            page.frame_locator("iframe").locator("h1").wait_for(timeout=30000)
            page.screenshot(path=os.path.join(ARTIFACTS, "lake_discovery_in_airflow.png"))
        finally:
            browser.close()


def _table_id(warehouse: str, path: str) -> int:
    import pyarrow.compute as pc

    from discovery.store import Warehouse

    cat = Warehouse(warehouse).read("catalog")
    return cat.filter(pc.equal(cat["path"], path))["table_id"][0].as_py()
