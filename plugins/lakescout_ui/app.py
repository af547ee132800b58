"""FastAPI app of the "Lake discovery" page, mounted by Airflow's api-server under ``/lakescout``.

Plugin apps are not behind Airflow's authentication by default, so every route here depends on Airflow's own
``get_user``: the auth manager's JWT from an ``Authorization: Bearer`` header, or the ``_token`` cookie the Airflow
UI sets at login (the page is opened in the UI, so the browser sends that cookie).  Without a valid token a request
gets 401 (403 for a forged one) and nothing is read from the warehouse.

The page is rendered on the server (Jinja2); charts use Chart.js vendored under ``static/`` so it works offline.
"""
from __future__ import annotations

import html
import os
import tempfile
import uuid
from pathlib import Path
from urllib.parse import quote

from fastapi import Depends, FastAPI, File, Form, HTTPException, Request, UploadFile
from fastapi.responses import FileResponse, HTMLResponse, JSONResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from airflow.api_fastapi.core_api.security import get_user
from discovery.batch import BatchError, available_kinds, batch_results, run_batch, search_parameters
from discovery.store import Warehouse, WarehouseError
from lakescout_ui.data import evidence_text, page_data

HERE = Path(__file__).parent
STATIC = {"chart.umd.min.js": "application/javascript", "chart.js.LICENSE.md": "text/plain"}
MAX_UPLOAD_BYTES = 64 * 1024 * 1024

_templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
_templates.filters["evidence"] = evidence_text


def _warehouse() -> Warehouse:
    return Warehouse(os.environ.get("LAKESCOUT_WAREHOUSE", os.path.abspath("warehouse")))


def _render(request: Request, user, search: dict | None = None, status: int = 200) -> HTMLResponse:
    wh = _warehouse()
    try:
        data = page_data(wh)
    except WarehouseError as exc:
        data = {"ready": False, "warehouse": wh.root, "problem": str(exc)}
    page = _templates.get_template("page.html").render(data=data, search=search, user=user.get_name(),
                                                       base=request.scope.get("root_path", ""))
    return HTMLResponse(page, status_code=status)


def _search_params(kind: str, k: int, method: str, column: str, key: str) -> dict:
    """Form fields -> parameters of the search of ``kind`` (only those its method accepts)."""
    accepted = search_parameters(kind)
    params: dict = {}
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


async def _saved_upload(upload: UploadFile) -> str:
    name = os.path.basename(upload.filename or "query.csv")
    suffix = os.path.splitext(name)[1].lower() if os.path.splitext(name)[1].lower() in (".csv", ".tsv") else ".csv"
    folder = tempfile.mkdtemp(prefix="lakescout-upload-")
    path = os.path.join(folder, f"{os.path.splitext(name)[0] or 'query'}{suffix}")
    data = await upload.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        raise BatchError(f"the uploaded file is larger than {MAX_UPLOAD_BYTES // (1024 * 1024)} MiB")
    with open(path, "wb") as fh:
        fh.write(data)
    return path


def create_app() -> FastAPI:
    app = FastAPI(title="Lakescout", description="Lake discovery page of the Airflow UI",
                  dependencies=[Depends(get_user)])

    @app.get("/", response_class=HTMLResponse)
    def page(request: Request, user=Depends(get_user)):
        return _render(request, user)

    @app.get("/api/status")
    def status():
        wh = _warehouse()
        try:
            return JSONResponse(page_data(wh))
        except WarehouseError as exc:
            raise HTTPException(404, str(exc)) from None

    @app.get("/static/{name}")
    def static(name: str):
        if name not in STATIC:
            raise HTTPException(404, "no such file")
        return FileResponse(HERE / "static" / name, media_type=STATIC[name])

    @app.post("/search", response_class=HTMLResponse)
    async def search(request: Request, user=Depends(get_user), kind: str = Form(...), table: str = Form(""),
                     upload: UploadFile | None = File(None), k: int = Form(10), method: str = Form(""),
                     column: str = Form(""), key: str = Form("")):
        form = {"kind": kind, "table": table, "k": k, "method": method, "column": column, "key": key}
        path = None
        try:
            if kind not in available_kinds():
                raise BatchError(f"{kind!r} search is not available (available: "
                                 f"{', '.join(available_kinds()) or 'none'})")
            if upload is not None and upload.filename:
                path = await _saved_upload(upload)
                query = path
                form["upload"] = upload.filename
            elif table.strip():
                query = table.strip()
            else:
                raise BatchError("pick a lake table or upload a CSV file")
            spec = {"name": f"ui:{user.get_name()}", "queries": [
                {"id": "search", "kind": kind, "query": query, **_search_params(kind, k, method, column, key)}]}
            summary = run_batch(_warehouse(), spec, batch_id=f"ui-{uuid.uuid4().hex[:12]}")
            rows = batch_results(_warehouse(), summary["batch_id"]).to_pylist()
            return _render(request, user, {"form": form, "summary": summary, "rows": rows})
        except (BatchError, WarehouseError, ValueError) as exc:
            return _render(request, user, {"form": form, "error": str(exc)}, status=400)
        finally:
            if path is not None:
                os.unlink(path)
                os.rmdir(os.path.dirname(path))

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException):
        if exc.status_code in (401, 403) and "text/html" in request.headers.get("accept", ""):
            login = html.escape("/auth/login?next=" + quote(str(request.url.path)))
            return HTMLResponse(f'<p>Lake discovery needs an Airflow login: <a href="{login}">log in</a>.</p>',
                                status_code=exc.status_code)
        return JSONResponse({"detail": exc.detail}, status_code=exc.status_code, headers=exc.headers)

    return app
