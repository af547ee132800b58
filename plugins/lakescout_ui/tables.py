"""The page's view of the index: the lake tables of the latest snapshot, filtered or found by name, and one table
described.

Read from the warehouse only (:mod:`discovery.indexes.browse`), behind the app's login like the rest of the page.
"""
from __future__ import annotations

import shlex

from fastapi import APIRouter, Depends, Request
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.data.store import WarehouseError
from discovery.query.resolve import QueryError
from lakescout_ui.access import serving
from lakescout_ui.rendering import render

router = APIRouter()


def _browse(request: Request, user, what: str, **args):
    """Render ``tables.html`` with the listing (``what="tables"``), the tables found by name (``"find"``) or the
    description (``"describe"``) asked for."""
    context = {"user": user.get_name(), "args": args, "what": what, "query": args.get("words")}
    try:
        ls = serving().lakescout()
        context["snapshot_id"] = ls.snapshot_id
        context[what] = getattr(ls, what)(**args)
    except (QueryError, WarehouseError, ValueError) as exc:
        return render(request, "tables.html", 404 if isinstance(exc, WarehouseError) or what == "describe" else 400,
                      error=str(exc), **context)
    return render(request, "tables.html", **context)


@router.get("/tables", include_in_schema=False)
async def tables(request: Request, path: str = "", format: str = "", status: str = "", find: str = "",
                 values: bool = False, user=Depends(get_user)):
    if find.strip():
        try:
            words = shlex.split(find)       # a quoted phrase is one term, as on the command line
        except ValueError:
            words = find.replace('"', " ").split()
        return await run_in_threadpool(_browse, request, user, "find", words=words, values=values)
    args = {"path": [path] if path.strip() else None, "format": [format] if format.strip() else None,
            "status": [status] if status.strip() else None}
    return await run_in_threadpool(_browse, request, user, "tables", **args)


@router.get("/tables/{table:path}", include_in_schema=False)
async def describe(request: Request, table: str, user=Depends(get_user)):
    return await run_in_threadpool(_browse, request, user, "describe", table=table)
