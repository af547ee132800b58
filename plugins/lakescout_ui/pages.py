"""The page's routes: the server-rendered "Lake discovery" page, its static files and its search form.

A search from the form is :func:`lakescout_ui.searching.run_search`, as one from the JSON API: a served batch on a
lake table or an uploaded file, its form read only once the user may search, within the app's byte limit
(``app.state.max_upload_bytes``), and the upload removed after (:mod:`.upload`).

The page is rendered on the server (Jinja2); charts use Chart.js vendored under ``static/`` so it works offline.
"""
from __future__ import annotations

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.data.store import WarehouseError
from discovery.orchestration.searches import SEARCHES
from discovery.surfaces.batch import BatchError
from lakescout_ui.access import BATCH_DAG, may_search, serving
from lakescout_ui.data import served_page
from lakescout_ui.rendering import HERE, render
from lakescout_ui.searching import form_fields, form_params, run_search
from lakescout_ui.upload import FormRefused, received_form

STATIC = {"chart.umd.min.js": "application/javascript", "chart.js.LICENSE.md": "text/plain"}

router = APIRouter()


def _render(request: Request, user, search: dict | None = None, status: int = 200) -> HTMLResponse:
    try:
        data = served_page(serving())
    except WarehouseError as exc:
        data = {"ready": False, "warehouse": serving().warehouse.root, "problem": str(exc)}
    return render(request, "page.html", status, data=data, search=search, user=user.get_name(),
                  may_search=may_search(user), batch_dag=BATCH_DAG)


def _answer(request: Request, user, form: dict, upload_path: str | None) -> HTMLResponse:
    """Run the search the form asks for (:func:`~lakescout_ui.searching.run_search`) and render the page with its
    results."""
    try:
        params = form_params(form["kind"], form) if form["kind"] in SEARCHES else {}
        answer = run_search(user, form["kind"], form["table"], params, upload_path, form.get("upload"))
        return _render(request, user, {"form": form, **answer})
    except (BatchError, WarehouseError, ValueError) as exc:
        return _render(request, user, {"form": form, "error": str(exc)}, status=400)


@router.get("/", response_class=HTMLResponse, include_in_schema=False)
def page(request: Request, user=Depends(get_user)):
    return _render(request, user)


@router.get("/static/{name}", include_in_schema=False)
def static(name: str):
    if name not in STATIC:
        raise HTTPException(404, "no such file")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])


@router.post("/search", response_class=HTMLResponse, include_in_schema=False)
async def search(request: Request, user=Depends(get_user)):
    # No Form or File parameters: FastAPI would read (and spool) the whole body before this check.
    form = form_fields({})
    if not may_search(user):
        return await run_in_threadpool(
            _render, request, user, {"form": form, "error": f"searching needs the permission to trigger the "
                                     f"{BATCH_DAG} DAG, which your Airflow role does not have"}, 403)
    try:
        async with received_form(request, request.app.state.max_upload_bytes) as received:
            form = form_fields(received.fields)
            if received.path is not None:
                form["upload"] = received.filename
            # Searching and rendering read Delta tables and run numpy for seconds: off the event loop, so
            # concurrent requests (and the rest of the api-server) are not queued behind one search.
            return await run_in_threadpool(_answer, request, user, form, received.path)
    except FormRefused as exc:
        return await run_in_threadpool(_render, request, user, {"form": form, "error": str(exc)}, exc.status)
    except BatchError as exc:
        return await run_in_threadpool(_render, request, user, {"form": form, "error": str(exc)}, 400)
