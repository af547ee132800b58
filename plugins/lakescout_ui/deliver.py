"""The page's previews and downloads of a result's rows: the union or join a search result describes.

A result row of a search offers a preview (the first ``[materialize] preview_rows`` rows of the union of the query
with that lake table, or of the query joined to it through the matched values) and a CSV download of all of them.
Both write what the recorded answer describes (:mod:`discovery.surfaces.materialize.stored`, served: the query is a lake
table or the search's upload, kept for a while by :mod:`.kept`) and need the permission a search needs, since they read
lake tables on the user's behalf.  They run in the api-server process, so a result whose lake tables hold more than
``[materialize] spark_min_bytes`` is refused with a pointer to the ``materialize`` DAG, which runs large writes on
Spark.
"""
from __future__ import annotations

import io

import pyarrow.csv as pacsv
from fastapi import APIRouter, Depends, HTTPException, Request
from fastapi.responses import HTMLResponse, Response
from starlette.concurrency import run_in_threadpool

from airflow.api_fastapi.core_api.security import get_user
from discovery.data.store import WarehouseError
from discovery.surfaces.materialize.execute import run_plans
from discovery.surfaces.materialize.output import writable
from discovery.surfaces.materialize.stored import stored_plans
from lakescout_ui.access import BATCH_DAG, config, may_search, serving
from lakescout_ui.kept import kept
from lakescout_ui.rendering import render

router = APIRouter(include_in_schema=False)  # page routes: HTML and a CSV file, not the JSON API


def _rows(batch_id: str, query_id: str, rank: int):
    """The materialised rows of one recorded result, or HTTPException (400 bad request, 413 too large)."""
    cfg = config()
    try:
        _, plans = stored_plans(serving().session, batch_id, query_id, [rank], uploads=kept(batch_id))
        size = sum(s.table.bytes for p in plans for s in p.sources)
        if size > cfg.materialize.spark_min_bytes:
            raise HTTPException(413, f"the lake tables of this result hold {size:,} bytes, more than the page writes "
                                     f"({cfg.materialize.spark_min_bytes:,}); write it with the materialize DAG")
        return run_plans(plans, cfg.limits)
    except (ValueError, WarehouseError) as exc:
        raise HTTPException(400, str(exc).splitlines()[0]) from None


def _allowed(user) -> None:
    if not may_search(user):
        raise HTTPException(403, f"previews and downloads need the permission to trigger the {BATCH_DAG} DAG, which "
                                 "your Airflow role does not have")


@router.get("/results/{batch_id}/{query_id}/{rank}/preview", response_class=HTMLResponse)
async def preview(request: Request, batch_id: str, query_id: str, rank: int, user=Depends(get_user)):
    _allowed(user)
    m = await run_in_threadpool(_rows, batch_id, query_id, rank)
    shown = m.table.slice(0, config().materialize.preview_rows)
    return render(request, "preview.html", description=m.description, columns=shown.column_names,
                  rows=[list(r.values()) for r in shown.to_pylist()],
                  download=f"{request.scope.get('root_path', '')}/results/{batch_id}/{query_id}/{rank}/rows.csv")


@router.get("/results/{batch_id}/{query_id}/{rank}/rows.csv")
async def download(batch_id: str, query_id: str, rank: int, user=Depends(get_user)):
    _allowed(user)
    m = await run_in_threadpool(_rows, batch_id, query_id, rank)
    buffer = io.BytesIO()
    pacsv.write_csv(writable(m.table.replace_schema_metadata(None)), buffer)
    name = f"{batch_id}-{query_id}-{rank}.csv"
    return Response(buffer.getvalue(), media_type="text/csv",
                    headers={"Content-Disposition": f'attachment; filename="{name}"'})
