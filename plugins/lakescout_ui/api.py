"""The app's JSON API (``/api/...``): what other tools call, behind the same login as the page."""
from __future__ import annotations

from fastapi import APIRouter, HTTPException
from fastapi.responses import JSONResponse

from discovery.store import WarehouseError
from lakescout_ui.access import warehouse
from lakescout_ui.data import page_data

router = APIRouter(prefix="/api")


@router.get("/status")
def status():
    try:
        return JSONResponse(page_data(warehouse()))
    except WarehouseError as exc:
        raise HTTPException(404, str(exc)) from None
