"""The page's routes: the server-rendered "Lake discovery" page, its static files and its search form.

A search runs as a served batch (:mod:`discovery.batch`): it names a lake table (id or catalogued path) or an uploaded
file, never another file of the server, and its errors name the table, row and column without quoting cells.  Its
form is read only once the user may search, within the app's byte limit (``app.state.max_upload_bytes``), and the
upload is removed after (:mod:`.upload`).

The page is rendered on the server (Jinja2); charts use Chart.js vendored under ``static/`` so it works offline.
"""
from __future__ import annotations

import os
import uuid

from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import FileResponse, HTMLResponse
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.batch import BatchError, available_kinds, batch_results, run_batch, search_parameters
from discovery.store import WarehouseError
from lakescout_ui.access import BATCH_DAG, may_search, warehouse
from lakescout_ui.data import page_data
from lakescout_ui.rendering import HERE, render
from lakescout_ui.upload import FormRefused, received_form

STATIC = {"chart.umd.min.js": "application/javascript", "chart.js.LICENSE.md": "text/plain"}

router = APIRouter()


def _render(request: Request, user, search: dict | None = None, status: int = 200) -> HTMLResponse:
    wh = warehouse()
    try:
        data = page_data(wh)
    except WarehouseError as exc:
        data = {"ready": False, "warehouse": wh.root, "problem": str(exc)}
    return render(request, "page.html", status, data=data, search=search, user=user.get_name(),
                  may_search=may_search(user), batch_dag=BATCH_DAG)


def _search_params(kind: str, k: int, method: str, column: str, key: str, tau: float | None = None) -> dict:
    """Form fields -> parameters of the search of ``kind`` (only those its method accepts)."""
    accepted = search_parameters(kind)
    params: dict = {}
    if tau is not None and "tau" in accepted:
        params["tau"] = tau
    for name in ("k", "top_k"):
        if name in accepted:
            params[name] = k
            break
    if method and "method" in accepted:
        params["method"] = method
    if column and "column" in accepted:
        params["column"] = column.strip()
    if key and "key" in accepted:
        params["key"] = [c.strip() for c in key.split(",") if c.strip()]
    return params


def _form(fields: dict[str, str]) -> dict:
    """The search form's fields, with the page's defaults for those not sent; raises BatchError for a bad ``k``."""
    form = {name: fields.get(name, "") for name in ("kind", "table", "method", "column", "key", "tau")}
    try:
        form["k"] = int(fields.get("k") or 10)
    except ValueError:
        raise BatchError(f"k must be a whole number, got {fields['k']!r}") from None
    try:
        form["tau_value"] = float(form["tau"]) if form["tau"].strip() else None
    except ValueError:
        raise BatchError(f"tau must be a number, got {form['tau']!r}") from None
    return form


def _answer(request: Request, user, form: dict, upload_path: str | None) -> HTMLResponse:
    """Run the search the form asks for as a served one-query batch and render the page with its results."""
    kind, uploads = form["kind"], {}
    try:
        if kind not in available_kinds():
            raise BatchError(f"{kind!r} search is not available (available: "
                             f"{', '.join(available_kinds()) or 'none'})")
        if upload_path is not None:
            query = f"upload:{os.path.basename(form['upload'])}"
            uploads[query] = upload_path
        elif form["table"].strip():
            query = form["table"].strip()
        else:
            raise BatchError("pick a lake table or upload a table file (CSV, TSV, JSON Lines, compressed or not)")
        params = _search_params(kind, form["k"], form["method"], form["column"], form["key"], form["tau_value"])
        spec = {"name": f"ui:{user.get_name()}", "queries": [{"id": "search", "kind": kind, "query": query, **params}]}
        summary = run_batch(warehouse(), spec, batch_id=f"ui-{uuid.uuid4().hex[:12]}", served=True, uploads=uploads)
        rows = batch_results(warehouse(), summary["batch_id"]).to_pylist()
        return _render(request, user, {"form": form, "summary": summary, "rows": rows})
    except (BatchError, WarehouseError, ValueError) as exc:
        return _render(request, user, {"form": form, "error": str(exc)}, status=400)


@router.get("/", response_class=HTMLResponse)
def page(request: Request, user=Depends(get_user)):
    return _render(request, user)


@router.get("/static/{name}")
def static(name: str):
    if name not in STATIC:
        raise HTTPException(404, "no such file")
    return FileResponse(HERE / "static" / name, media_type=STATIC[name])


@router.post("/search", response_class=HTMLResponse)
async def search(request: Request, user=Depends(get_user)):
    # No Form or File parameters: FastAPI would read (and spool) the whole body before this check.
    form = _form({})
    if not may_search(user):
        return await run_in_threadpool(
            _render, request, user, {"form": form, "error": f"searching needs the permission to trigger the "
                                     f"{BATCH_DAG} DAG, which your Airflow role does not have"}, 403)
    try:
        async with received_form(request, request.app.state.max_upload_bytes) as received:
            form = _form(received.fields)
            if received.path is not None:
                form["upload"] = received.filename
            # Searching and rendering read Delta tables and run numpy for seconds: off the event loop, so
            # concurrent requests (and the rest of the api-server) are not queued behind one search.
            return await run_in_threadpool(_answer, request, user, form, received.path)
    except FormRefused as exc:
        return await run_in_threadpool(_render, request, user, {"form": form, "error": str(exc)}, exc.status)
    except BatchError as exc:
        return await run_in_threadpool(_render, request, user, {"form": form, "error": str(exc)}, 400)
