"""Progress a person can watch: a stage's live task counts (log lines and the warehouse record), the refresh
command's bars and plain lines, and the running refresh on the Lake discovery page.

The CLI's plain lines on a real refresh are checked by ``test_cluster`` (its refresh output is not a terminal).
"""
from __future__ import annotations

import io
import os
import sys
import threading
import time
from dataclasses import replace

import pytest
from rich.console import Console

from discovery.orchestration.refresh import begin_refresh, publish_snapshot

from discovery.data.store import new_attempt_token
from discovery.orchestration.refresh.display import RefreshDisplay, plain_line
from discovery.stages import StageContext, StageReport
from discovery.stages.progress import STALE_SECONDS, Progress, read_progress, write_progress
from spark_jobs.common import execute
from spark_jobs.stages import STAGES
from sessions import session
from discovery.data.store import Warehouse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "plugins"))

STEPS = len(STAGES) + 1
#: Longest wait for a record before the test lets the held task go and fails (only ever reached when it is broken).
GIVE_UP_SECONDS = 600


def _ctx(tmp_path) -> StageContext:
    warehouse = str(tmp_path / "wh")
    return StageContext(warehouse, str(tmp_path / "lake"), begin_refresh(session(warehouse)), new_attempt_token())


@pytest.mark.spark
def test_a_stage_records_its_tasks_while_they_run(spark, tmp_path, capsys):
    """Three tasks, one held until the warehouse record shows the other two done: the record must get there."""
    ctx = _ctx(tmp_path)
    gate, seen = tmp_path / "gate", {}

    def watch():
        deadline = time.time() + GIVE_UP_SECONDS
        while time.time() < deadline:
            p = read_progress(ctx.warehouse)
            if p is not None and p.stage == "profile" and (p.done, p.total) == (2, 3):
                seen["during"] = p
                break
            time.sleep(0.2)
        gate.touch()

    def held(i: int) -> int:
        while i == 1 and not gate.exists():
            time.sleep(0.1)
        return i

    def body(spark, ctx):
        seen["start"] = read_progress(ctx.warehouse)
        watcher = threading.Thread(target=watch)
        watcher.start()
        assert sorted(spark.sparkContext.parallelize(range(3), 3).map(held).collect()) == [0, 1, 2]
        watcher.join()
        return StageReport("profile")

    assert execute(spark, "profile", body, ctx) == 0
    position = (ctx.refresh_id, "profile", list(STAGES).index("profile") + 1, STEPS)
    start, during, end = seen["start"], seen.get("during"), read_progress(ctx.warehouse)
    assert (start.refresh_id, start.stage, start.step, start.steps) == position
    assert (start.state, start.done, start.total) == ("running", 0, 0)
    assert during is not None and during.state == "running"
    assert (end.state, end.done, end.total) == ("done", 3, 3) and end.updated >= during.updated

    # The same reports went to standard output (the Airflow task log), ahead of the stage's summary line.
    out = capsys.readouterr().out.splitlines()
    lines = [p for p in map(Progress.parse, out) if p is not None]
    assert (lines[0].done, lines[0].total, lines[0].state) == (0, 0, "running")
    assert any((p.done, p.total, p.state) == (2, 3, "running") for p in lines)
    assert (lines[-1].done, lines[-1].total, lines[-1].state) == (3, 3, "done")
    assert out[-1].startswith('{"stage": "profile"')


@pytest.mark.spark
def test_a_failed_stage_says_so_and_publish_ends_the_refresh(spark, tmp_path):
    ctx = _ctx(tmp_path)

    def fails(spark, ctx):
        spark.sparkContext.parallelize(range(2), 2).count()
        raise RuntimeError("disk full")

    assert execute(spark, "embed", fails, ctx) == 1
    p = read_progress(ctx.warehouse)
    assert (p.stage, p.state, p.done, p.total) == ("embed", "failed", 2, 2)
    publish_snapshot(Warehouse(ctx.warehouse), ctx.refresh_id, ctx.lake)
    p = read_progress(ctx.warehouse)
    assert (p.refresh_id, p.stage, p.state, p.step, p.steps) == (ctx.refresh_id, "publish", "published", STEPS, STEPS)


def _progress(state="running", done=12, total=40, updated=None, stage="embed") -> Progress:
    now = time.time() if updated is None else updated
    return Progress(1795000000000, stage, 3, STEPS, state, done, total, "tasks", now - 62, now)


def test_terminal_gets_a_bar_per_stage():
    out = io.StringIO()
    console = Console(file=out, force_terminal=True, width=120, color_system=None)
    with RefreshDisplay(console=console) as display:
        display.progress(_progress(stage="scan", done=5, total=19))
        display.progress(_progress(stage="scan", state="done", done=19, total=19))
        display.stage_finished({"stage": "scan", "status": "ok", "tables_processed": 300, "tables_added": 300,
                                "tables_changed": 0, "tables_deleted": 0, "tables_failed": 8})
        display.progress(_progress(stage="profile", done=3, total=19))
    text = out.getvalue()
    assert "━" in text and "19/19 tasks" in text and "3/19" in text
    assert "  scan       ok      processed    300  added 300" in text


def test_plain_lines_are_few_and_end_with_the_final_count(capsys):
    console = Console(file=io.StringIO())          # not a terminal
    with RefreshDisplay(console=console) as display:
        for done in (0, 1, 2, 3):
            display.progress(_progress(done=done, total=40))
        display.progress(_progress(state="done", done=40, total=40))
    lines = capsys.readouterr().out.splitlines()
    assert lines == [plain_line(_progress(done=0, total=40)), plain_line(_progress(state="done", done=40, total=40))]
    assert lines[0].split() == ["embed", "0/40", "tasks", "0%", "elapsed", "1:02", "eta", "?"]
    assert plain_line(_progress(done=10, total=40)).split()[-1] == "3:06"


# -- the Lake discovery page ---------------------------------------------------------------------------------------
@pytest.fixture(scope="module")
def cookies():
    from airflow.api_fastapi.app import create_auth_manager
    from airflow.api_fastapi.auth.managers.simple.user import SimpleAuthManagerUser

    return {"_token": create_auth_manager().generate_jwt(SimpleAuthManagerUser(username="ada", role="viewer"))}


@pytest.fixture
def page(tmp_path, monkeypatch, cookies):
    """GET the page (and its JSON) of a warehouse with one published snapshot."""
    from fastapi.testclient import TestClient
    from lakescout_ui.app import create_app

    warehouse = str(tmp_path / "wh")
    publish_snapshot(Warehouse(warehouse), begin_refresh(session(warehouse)), str(tmp_path / "lake"))
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", warehouse)
    client = TestClient(create_app())
    return warehouse, lambda path="/": client.get(path, cookies=cookies)


def test_page_shows_the_running_refresh(page):
    warehouse, get = page
    write_progress(warehouse, _progress())
    text = get().text
    assert "Refresh 1795000000000 is running" in text
    assert '<b id="progress-stage">embed</b>' in text and f"(3 of {STEPS})" in text
    assert "12 of 40 tasks (30%)" in text and 'max="40" value="12"' in text
    assert "elapsed 1:02" in text and "about 2:25 left" in text and 'data-state="running"' in text
    shown = get("/api/status").json()["progress"]
    assert (shown["state"], shown["stage"], shown["done"], shown["total"], shown["percent"]) == (
        "running", "embed", 12, 40, 30)


def test_page_tells_a_stalled_or_failed_refresh_and_hides_a_published_one(page):
    warehouse, get = page
    write_progress(warehouse, _progress(updated=time.time() - STALE_SECONDS - 60))
    assert "has reported no progress since" in get().text
    write_progress(warehouse, _progress(state="failed"))
    assert "failed in stage embed" in get().text
    write_progress(warehouse, replace(_progress(state="published"), stage="publish"))
    text = get().text
    assert 'id="refresh-progress" data-state="" hidden' in text and "is running" not in text


def test_page_shows_the_first_refresh_before_any_snapshot(tmp_path, monkeypatch, cookies):
    from fastapi.testclient import TestClient
    from lakescout_ui.app import create_app

    warehouse = str(tmp_path / "fresh")
    begin_refresh(session(warehouse))
    write_progress(warehouse, _progress(stage="scan", done=0, total=0))
    monkeypatch.setenv("LAKESCOUT_WAREHOUSE", warehouse)
    text = TestClient(create_app()).get("/", cookies=cookies).text
    assert "No snapshot has been published yet" in text
    assert "Refresh 1795000000000 is running" in text and "preparing" in text
