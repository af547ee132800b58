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


from fastapi import APIRouter, Depends, HTTPException, Query, Request
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.api import Lakescout
from discovery.data.store import WarehouseError
from discovery.orchestration.searches import SEARCHES
from discovery.query.resolve import QueryError
from discovery.surfaces.batch import BatchError, batch_results, recent_batches, recorded_batch
from lakescout_ui.access import BATCH_DAG, may_search, serving, warehouse
from lakescout_ui.data import served_page
from lakescout_ui.models import (Answer, BatchAnswer, BatchListed, Described, Found, LakeTable, Refused,
                                 SearchAnswer, Status, answers, refused)
from lakescout_ui.searching import decoded, form_fields, form_params, run_search
from lakescout_ui.upload import FormRefused, form_json, received_form, received_json

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
                       "key": {"type": "string", "description": "COL1,COL2[,...]"}, "tau": {"type": "number"},
                       "params": {"type": "string", "description": "a JSON object of the search's parameters, "
                                                                   "in place of the fields above"}}}}}}


def _lakescout() -> Lakescout:
    try:
        return serving().lakescout()
    except WarehouseError as exc:
        raise HTTPException(404, str(exc)) from None


def _read(call):
    """``call()``'s answer; a bad name or parameter is 400 with its one-line message."""
    try:
        return call()
    except (QueryError, ValueError) as exc:
        raise refused(400, exc) from None


@router.get("/status", operation_id="status", responses=answers(Status, 404),
            summary="What the page shows: snapshots, tables by status, failed tables, index sizes, "
                               "recent batches")
def status():
    try:
        return Answer(served_page(serving()))
    except WarehouseError as exc:
        raise HTTPException(404, str(exc)) from None


@router.get("/tables", operation_id="list_tables", responses=answers(list[LakeTable], 400),
            summary="The lake tables of the latest snapshot (lakescout tables)")
def tables(path: list[str] = Query(default=[], description="gitignore-style path patterns (any)"),
           format: list[str] = Query(default=[], description="formats, or their first part (hive, csv)"),
           status: list[str] = Query(default=[], description="ok, stale, error, deleted (default: all but deleted)")):
    ls = _lakescout()
    return Answer(_read(lambda: ls.tables(path=path or None, format=format or None, status=status or None)))


@router.get("/tables/{table:path}", operation_id="describe_table", responses=answers(Described, 404),
            summary="One lake table's columns and the indexes each is in (lakescout describe)")
def describe(table: str):
    ls = _lakescout()
    try:
        return Answer(ls.describe(table))
    except QueryError as exc:
        raise Refused(404, str(exc), "table") from None


@router.get("/find", operation_id="find_tables", responses=answers(Found, 400),
            summary="Lake tables whose names match a few words (lakescout find)")
def find(words: list[str] = Query(description="names or parts of names, one per parameter"),
         k: int = Query(default=10, description="number of results"),
         values: bool = Query(default=False, description="also match the sampled values of text columns")):
    ls = _lakescout()
    return Answer(_read(lambda: ls.find(words, k=k, values=values)))


@router.get("/batches", operation_id="list_batches", responses=answers(list[BatchListed], 400),
            summary="The most recent recorded query batches, newest first")
def batches(limit: int = Query(default=20, ge=1, le=1000)):
    return Answer(_read(lambda: recent_batches(warehouse(), limit)))


@router.get("/batches/{batch_id}", operation_id="get_batch", responses=answers(BatchAnswer, 400, 404),
            summary="A recorded batch: its summary and result rows")
def batch(batch_id: str):
    summary = _read(lambda: recorded_batch(warehouse(), batch_id))
    if summary is None:
        raise Refused(404, f"no recorded batch {batch_id!r}", "batch_id")
    return Answer({"summary": summary, "results": decoded(batch_results(warehouse(), batch_id).to_pylist())})


@router.post("/search/{kind}", operation_id="search", openapi_extra={"requestBody": SEARCH_BODY},
             responses=answers(SearchAnswer, 400, 404, 413),
             summary="Search (a kind of discovery.orchestration.searches.SEARCHES: union, join, nary) for a lake "
                     "table or an uploaded file, answered from the server's snapshot; recorded in query_results when "
                     "asked")
async def search(kind: str, request: Request, user=Depends(get_user),
                 record: bool = Query(default=False, description="record the results in query_results (a batch "
                                      "the page and GET /api/batches list); needs the permission to trigger the "
                                      "query_batch DAG")):
    if kind not in SEARCHES:
        raise Refused(404, f"no search kind {kind!r} (kinds: {', '.join(SEARCHES)})", "kind")
    if record and not may_search(user):
        raise Refused(403, "recording a search needs the permission to trigger the "
                                 f"{BATCH_DAG} DAG, which your Airflow role does not have", "record")
    try:
        if request.headers.get("content-type", "").startswith("application/json"):
            body = await received_json(request)
            table = body.pop("table", None)
            answer = await run_in_threadpool(run_search, user, kind, table, body, record=record)
        else:
            async with received_form(request, request.app.state.max_upload_bytes) as received:
                form = form_fields(received.fields)
                # a client's "params" (JSON, every parameter) stands for the page's fields and their defaults
                given = received.fields.get("params")
                params = form_json(given) if given else form_params(kind, form)
                answer = await run_in_threadpool(run_search, user, kind, form["table"], params, received.path,
                                                 received.filename, record=record)
    except FormRefused as exc:
        raise HTTPException(exc.status, str(exc)) from None
    except (BatchError, WarehouseError, ValueError) as exc:
        raise refused(400, exc) from None
    summary = answer["summary"]
    return Answer({**{k: summary[k] for k in ("batch_id", "snapshot_id", "seconds", "recorded", "kind", "query")},
                   "results": decoded(answer["rows"]), "answer": answer["answer"]})
