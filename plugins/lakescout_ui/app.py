"""FastAPI app of the "Lake discovery" page, mounted by Airflow's api-server under ``/lakescout``.

Plugin apps are not behind Airflow's authentication by default, so every route here depends on Airflow's own
``get_user``: the auth manager's JWT from an ``Authorization: Bearer`` header, or the ``_token`` cookie the Airflow
UI sets at login (the page is opened in the UI, so the browser sends that cookie).  Without a valid token a request
gets 401 (403 for a forged one) and nothing is read from the warehouse.  What a logged-in user may do beyond reading
is decided in :mod:`.access`.

The routes live in one router per surface: the page (:mod:`.pages`), its view of the lake tables (:mod:`.tables`),
the previews and downloads of a result's rows (:mod:`.deliver`) and the JSON API (:mod:`.api`), whose OpenAPI
description is ``/lakescout/openapi.json`` (the page's routes are left out of it; no interactive docs are served:
they would load scripts from the internet).
"""
from __future__ import annotations

import html
import logging
import threading
from urllib.parse import quote

from fastapi import Depends, FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import HTMLResponse, JSONResponse
from starlette.exceptions import HTTPException

from airflow.api_fastapi.core_api.security import get_user
from discovery import __version__
from lakescout_ui import access, api, deliver, pages, tables

log = logging.getLogger(__name__)

#: The largest uploaded query file a search reads (the form around it has its own small allowance).
MAX_UPLOAD_BYTES = 64 * 1024 * 1024


def refusal(status: int, detail: str, parameter: str | None = None, headers: dict | None = None) -> JSONResponse:
    """A refusal in the one shape every route answers (:class:`lakescout_ui.models.Refusal`)."""
    return JSONResponse({"status": status, "detail": detail.splitlines()[0] if detail else "", "parameter": parameter},
                        status_code=status, headers=headers)


def open_served() -> None:
    """Pin the served snapshot as the server process starts, so that its warm-up (:mod:`discovery.surfaces.serving`: the
    newest recorded searches, the name search's lexicon) runs before the first request, not during it."""
    try:
        access.serving().lakescout()
    except Exception as exc:  # noqa: BLE001 - no published snapshot yet, or storage down: the first request opens it
        log.info("lake discovery: nothing served yet (%s)", exc)


class WarmUp:
    """The api-server's root middleware that starts :func:`open_served` in a thread when it is built, and otherwise
    passes every request through.

    Why a middleware: every Airflow process imports the plugins (the scheduler, the dag-processor, the triggerer, the
    executor's workers), and a warm-up started as the app is created opened the warehouse in each.  Its Delta reads
    start delta-rs' runtime, which a forked child cannot use: the triggerer's process that runs the lake watcher is
    forked from it, and every Delta read of the watcher then panicked ("Forked process detected"), so the lake
    watcher never fired.  Airflow adds root middlewares in the api-server alone, and Starlette builds them as the
    server starts (its lifespan's first call), so the warm-up runs there and nowhere else.  A mounted app's own
    lifespan events are not run by its parent, which is why the app cannot start it itself."""

    def __init__(self, app):
        self.app = app
        threading.Thread(target=open_served, daemon=True, name="lakescout-open").start()

    async def __call__(self, scope, receive, send):
        await self.app(scope, receive, send)


class Failed:
    """Answers a request whose route raised an unexpected error with a 500 refusal in the shape of every other
    (:func:`refusal`; the error's type only, never its message, which may quote a cell or a path), and logs the
    traceback.

    Starlette's outermost middleware sends its own plain-text 500 and then re-raises the error for the server to
    log, and uvicorn closes the connection of an application that raised: a client that keeps its connections
    (``requests.Session``, the generated client) then saw its next request fail on the closed one as well.  Caught
    here, inside that middleware, the error ends with this answer and the connection stays open.  A response whose
    start was already sent (a download failing mid-stream) cannot be answered again and is left to the server."""

    def __init__(self, app):
        self.app = app

    async def __call__(self, scope, receive, send):
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = False

        async def sending(message):
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        try:
            await self.app(scope, receive, sending)
        except Exception as exc:
            if started:
                raise
            log.exception("lake discovery: %s %s failed", scope.get("method"), scope.get("path"))
            await refusal(500, f"the server failed to answer ({type(exc).__name__}); its log has the details")(
                scope, receive, send)


def create_app() -> FastAPI:
    app = FastAPI(title="Lakescout", version=__version__, dependencies=[Depends(get_user)],
                  description="Lake discovery in the Airflow UI and its JSON API (routes under /api): status, lake "
                              "tables, describe, find by name, union / join / n-ary search, recorded batches.  "
                              "Every route needs an Airflow login (Authorization: Bearer <JWT>); a search needs the "
                              "permission to trigger the query_batch DAG.",
                  docs_url=None, redoc_url=None, openapi_url=None)
    app.state.max_upload_bytes = MAX_UPLOAD_BYTES
    app.add_middleware(Failed)
    app.include_router(pages.router)
    app.include_router(tables.router)
    app.include_router(api.router)
    app.include_router(deliver.router)

    @app.get("/openapi.json", include_in_schema=False)
    def openapi(request: Request):
        """The OpenAPI description of the JSON API, behind the login like every route (FastAPI's own is not), its
        server the mount point (``/lakescout``)."""
        root = request.scope.get("root_path", "").rstrip("/")
        return {**app.openapi(), **({"servers": [{"url": root}]} if root else {})}

    @app.exception_handler(HTTPException)
    async def refused(request: Request, exc: HTTPException):
        if exc.status_code in (401, 403) and "text/html" in request.headers.get("accept", ""):
            login = html.escape("/auth/login?next=" + quote(str(request.url.path)))
            return HTMLResponse(f'<p>Lake discovery needs an Airflow login: <a href="{login}">log in</a>.</p>',
                                status_code=exc.status_code)
        return refusal(exc.status_code, str(exc.detail), getattr(exc, "parameter", None), exc.headers)

    @app.exception_handler(RequestValidationError)
    async def invalid(request: Request, exc: RequestValidationError):
        """FastAPI's list of errors as one line naming the first parameter at fault (a query parameter of the
        wrong type, one missing)."""
        first = exc.errors()[0] if exc.errors() else {}
        where = [str(p) for p in first.get("loc", ()) if p not in ("query", "path", "body", "header")]
        name = where[0] if where else None
        message = str(first.get("msg", "invalid request")).removeprefix("Value error, ")
        return refusal(422, f"parameter {name!r}: {message}" if name else message, name)

    return app
