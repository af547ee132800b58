"""The app's JSON API (``/lakescout/api/...``): what other tools call, behind the same login as the page.

Every route needs a logged-in Airflow user (the app's ``get_user`` dependency: a JWT in ``Authorization: Bearer``,
as ``POST /auth/token`` of the auth manager gives one).  Reading (status, tables, describe, find, batches) needs
nothing more; a search records its results in ``query_results`` as a ``query_batch`` run does, so it needs the
permission to trigger that DAG (:func:`lakescout_ui.access.may_search`), asked before its body is read.  A search takes
the bounds and refusals of the page's form: a lake table (id or catalogued path) or an uploaded file, the same byte
limit, messages that name table, row and column without quoting cells.  The OpenAPI description of these routes is
``/lakescout/openapi.json``.
"""
from __future__ import annotations

from typing import Literal

from fastapi import APIRouter, Depends, HTTPException, Query, Request
from fastapi.responses import JSONResponse
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.api import Lakescout
from discovery.batch import BatchError, batch_results, recent_batches, recorded_batch
from discovery.query import QueryError
from discovery.store import WarehouseError
from lakescout_ui.access import BATCH_DAG, may_search, warehouse
from lakescout_ui.data import page_data
from lakescout_ui.searching import decoded, form_fields, form_params, run_search
from lakescout_ui.upload import FormRefused, received_form, received_json

router = APIRouter(prefix="/api", tags=["lakescout"])

#: The request bodies ``POST /api/search/{kind}`` takes, for the OpenAPI description (the route reads its body itself,
#: after the permission check, so FastAPI cannot infer them).
SEARCH_BODY = {"required": True, "content": {
    "application/json": {"schema": {
        "type": "object", "required": ["table"], "additionalProperties": True,
        "description": "table: a lake table id or catalogued lake path; every other key is a parameter of the "
                       "search (union: k, method, tau, ...; join: column, tau, T, top_k, method, ...; nary: key, "
                       "k, method, bits, initial_column), checked as in a query batch",
        "properties": {"table": {"oneOf": [{"type": "integer"}, {"type": "string"}]}}}},
    "multipart/form-data": {"schema": {
        "type": "object", "description": "the page's search form: a lake table or an uploaded table file",
        "properties": {"table": {"type": "string"}, "upload": {"type": "string", "format": "binary"},
                       "k": {"type": "integer"}, "method": {"type": "string"}, "column": {"type": "string"},
                       "key": {"type": "string", "description": "COL1,COL2[,...]"}, "tau": {"type": "number"}}}}}}


def _lakescout() -> Lakescout:
    try:
        return Lakescout(warehouse().root)
    except WarehouseError as exc:
        raise HTTPException(404, str(exc)) from None


def _read(call):
    """``call()``'s answer; a bad name or parameter is 400 with its one-line message."""
    try:
        return call()
    except (QueryError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from None


@router.get("/status", summary="What the page shows: snapshots, tables by status, failed tables, index sizes, "
                               "recent batches")
def status():
    try:
        return JSONResponse(page_data(warehouse()))
    except WarehouseError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/tables", summary="The lake tables of the latest snapshot (lakescout tables)")
def tables(path: list[str] = Query(default=[], description="gitignore-style path patterns (any)"),
           format: list[str] = Query(default=[], description="formats, or their first part (hive, csv)"),
           status: list[str] = Query(default=[], description="ok, stale, error, deleted (default: all but deleted)")):
    ls = _lakescout()
    return _read(lambda: ls.tables(path=path or None, format=format or None, status=status or None))


@router.get("/tables/{table:path}",
            summary="One lake table's columns and the indexes each is in (lakescout describe)")
def describe(table: str):
    ls = _lakescout()
    try:
        return ls.describe(table)
    except QueryError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/find", summary="Lake tables whose names match a few words (lakescout find)")
def find(words: list[str] = Query(description="names or parts of names, one per parameter"),
         k: int = Query(default=10, description="number of results"),
         values: bool = Query(default=False, description="also match the sampled values of text columns")):
    ls = _lakescout()
    return _read(lambda: ls.find(words, k=k, values=values))


@router.get("/batches", summary="The most recent recorded query batches, newest first")
def batches(limit: int = Query(default=20, ge=1, le=1000)):
    return _read(lambda: recent_batches(warehouse(), limit))


@router.get("/batches/{batch_id}", summary="A recorded batch: its summary and result rows")
def batch(batch_id: str):
    summary = _read(lambda: recorded_batch(warehouse(), batch_id))
    if summary is None:
        raise HTTPException(404, f"no recorded batch {batch_id!r}")
    return {"summary": summary, "results": decoded(batch_results(warehouse(), batch_id).to_pylist())}


@router.post("/search/{kind}", openapi_extra={"requestBody": SEARCH_BODY},
             summary="Search (union, join or nary) for a lake table or an uploaded file; the results are recorded "
                     "in query_results")
async def search(kind: Literal["union", "join", "nary"], request: Request, user=Depends(get_user)):
    if not may_search(user):
        raise HTTPException(403, "searching records results, so it needs the permission to trigger the "
                                 f"{BATCH_DAG} DAG, which your Airflow role does not have")
    try:
        if request.headers.get("content-type", "").startswith("application/json"):
            body = await received_json(request)
            table = body.pop("table", None)
            answer = await run_in_threadpool(run_search, user, kind, table, body)
        else:
            async with received_form(request, request.app.state.max_upload_bytes) as received:
                form = form_fields(received.fields)
                params = form_params(kind, form)
                answer = await run_in_threadpool(run_search, user, kind, form["table"], params, received.path,
                                                 received.filename)
    except FormRefused as exc:
        raise HTTPException(exc.status, str(exc)) from None
    except (BatchError, WarehouseError, ValueError) as exc:
        raise HTTPException(400, str(exc)) from None
    return {**{k: answer["summary"][k] for k in ("batch_id", "snapshot_id", "seconds")},
            "kind": kind, "query": answer["summary"]["queries"][0]["query"], "results": decoded(answer["rows"])}
