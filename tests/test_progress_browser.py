"""The Lake discovery page in headless Chromium while a refresh stage runs, on a real Airflow api-server.

A real stage (``execute`` with the stage's progress reporting) runs three Spark tasks, one of them held until the
browser has seen the others counted, so the page is always caught mid-stage; the screenshot goes to
``artifacts/lake_discovery_refresh.png``.  Then the stage ends, the refresh publishes, and the page's own polling
replaces the running refresh with the note that it finished.
"""
from __future__ import annotations

import os
import secrets
import threading
import time

import pytest

from airflow_server import api_server, browser_login
from discovery.data.store import new_attempt_token
from discovery.orchestration.refresh import begin_refresh, publish_snapshot
from discovery.stages import StageContext, StageReport
from discovery.stages.progress import read_progress
from spark_jobs.common import execute
from sessions import session
from discovery.data.store import Warehouse

pytestmark = [pytest.mark.airflow, pytest.mark.spark, pytest.mark.browser, pytest.mark.slow]

ARTIFACTS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "artifacts")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync"]
#: Longest wait for the stage to report its first two tasks (only ever reached when reporting is broken).
GIVE_UP_SECONDS = 600


@pytest.mark.skipif(not os.path.exists("/usr/bin/chromium"), reason="/usr/bin/chromium is not installed")
def test_page_shows_a_running_refresh_then_its_end(spark, tmp_path):
    from playwright.sync_api import sync_playwright

    warehouse = str(tmp_path / "wh")
    publish_snapshot(Warehouse(warehouse), begin_refresh(session(warehouse)), str(tmp_path / "lake"))  # answering
    ctx = StageContext(warehouse, str(tmp_path / "lake"), begin_refresh(session(warehouse)), new_attempt_token())
    gate, outcome = tmp_path / "gate", {}

    def held(i: int) -> int:
        while i == 1 and not gate.exists():
            time.sleep(0.1)
        return i

    def body(spark, ctx):
        spark.sparkContext.parallelize(range(3), 3).map(held).collect()
        return StageReport("embed")

    stage = threading.Thread(target=lambda: outcome.update(code=execute(spark, "embed", body, ctx)))
    password = secrets.token_urlsafe(12)
    with api_server(str(tmp_path / "airflow"), warehouse, {"admin": ("admin", password)}) as url:
        stage.start()
        try:
            deadline = time.time() + GIVE_UP_SECONDS
            while time.time() < deadline:
                p = read_progress(warehouse)
                if p is not None and p.refresh_id == ctx.refresh_id and (p.done, p.total) == (2, 3):
                    break
                time.sleep(0.5)
            with sync_playwright() as pw:
                browser = pw.chromium.launch(executable_path="/usr/bin/chromium", args=CHROMIUM_ARGS)
                try:
                    page = browser.new_page(viewport={"width": 1400, "height": 900})
                    browser_login(page, url, "admin", password)
                    page.goto(f"{url}/lakescout/")
                    card = page.locator("#refresh-progress")
                    text = card.inner_text()
                    assert f"Refresh {ctx.refresh_id} is running" in text and "2 of 3 tasks (67%)" in text, text
                    assert page.locator("#progress-stage").inner_text() == "embed"
                    assert page.eval_on_selector("#refresh-progress progress", "p => [p.value, p.max]") == [2, 3]
                    os.makedirs(ARTIFACTS, exist_ok=True)
                    page.screenshot(path=os.path.join(ARTIFACTS, "lake_discovery_refresh.png"))

                    gate.touch()
                    stage.join()
                    publish_snapshot(Warehouse(warehouse), ctx.refresh_id, ctx.lake)
                    page.wait_for_selector("#progress-finished", timeout=60000)   # the page's 5-second polling
                finally:
                    browser.close()
        finally:
            gate.touch()
            stage.join()
    assert outcome["code"] == 0
