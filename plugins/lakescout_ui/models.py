"""The JSON API's answers and refusals as OpenAPI schemas, so a client can be generated from ``/openapi.json``.

The routes declare these for the description only (``responses=``), not as ``response_model``: the answers are
what the Python API returns, serialised as it always was (timestamps as ISO 8601 text), with no second validation
per request, and written by :class:`Answer` (the standard library's encoder, FastAPI's only for what that one does
not know), not walked by FastAPI's encoder first: that walk was 16% of a served search's CPU under load.  Every
model allows properties beyond those named, so a field added later is no breaking change; the ones named are those
a client relies on.  ``tests/test_api_server.py`` checks that every answer validates against its model, and a
client generated from the description runs against the real server.
"""
from __future__ import annotations

from typing import Any

import json

from fastapi import HTTPException
from fastapi.encoders import jsonable_encoder
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field


class Answer(JSONResponse):
    """A route's JSON answer, written as FastAPI writes a returned value (``jsonable_encoder``, then Starlette's
    ``json.dumps``: the same text) with the encoder's walk left to the values ``json`` cannot write itself
    (timestamps, sets, enums)."""

    def render(self, content: Any) -> bytes:
        return json.dumps(content, ensure_ascii=False, allow_nan=False, indent=None, separators=(",", ":"),
                          default=jsonable_encoder).encode("utf-8")


class _Open(BaseModel):
    model_config = ConfigDict(extra="allow")


class Refusal(BaseModel):
    """Every refusal (400, 401, 403, 404, 405, 413, 422, 503): one line, and the parameter at fault when one is."""

    status: int = Field(description="the HTTP status, repeated")
    detail: str = Field(description="what is wrong, one line; never a file's content")
    parameter: str | None = Field(default=None, description="the parameter or field at fault, when one is")


class Refused(HTTPException):
    """A refusal that names the parameter at fault (the app's handler answers it as a :class:`Refusal`)."""

    def __init__(self, status: int, detail: str, parameter: str | None = None):
        super().__init__(status, detail)
        self.parameter = parameter


def refused(status: int, exc: Exception) -> Refused:
    """``exc`` (a refused parameter, batch field or query) as a :class:`Refused` naming its parameter."""
    return Refused(status, str(exc), getattr(exc, "param", None) or getattr(exc, "field", None))


class LakeTable(_Open):
    table_id: int
    path: str
    format: str
    status: str = Field(description="ok, stale, error or deleted")
    rows: int | None = None
    cols: int | None = None
    bytes: int | None = None
    version: int | None = Field(default=None, description="the lakehouse table version indexed (null for a file)")
    content_hash: str | None = None
    indexed_at: str | None = Field(default=None, description="ISO 8601")
    refresh_id: int | None = None
    error: str | None = None


class Described(_Open):
    snapshot_id: int
    table: dict[str, Any] = Field(description="the catalog row")
    warnings: list[Any]
    columns: list[dict[str, Any]] = Field(description="each column: type, counts, indexes it is in and why not")


class FoundTable(_Open):
    rank: int
    table_id: int
    path: str
    score: float
    coverage: float
    matches: list[dict[str, Any]]


class Found(_Open):
    snapshot_id: int
    terms: list[str]
    values: bool
    results: list[FoundTable]


class Result(_Open):
    """One result of a search: the ``query_results`` row, its evidence as JSON."""

    batch_id: str | None = Field(description="null when the search was not recorded")
    query_id: str
    snapshot_id: int
    kind: str
    rank: int
    table_id: int | None = None
    path: str | None = None
    column: str | None = Field(default=None, description="the lake column of a join result")
    score: float | None = None
    evidence: dict[str, Any]
    created_at: str = Field(description="ISO 8601")


class SearchAnswer(_Open):
    batch_id: str | None = Field(description="the recorded batch (GET /api/batches/{batch_id}); null when not "
                                             "recorded")
    snapshot_id: int
    seconds: float
    recorded: bool
    kind: str
    query: str
    results: list[Result]
    answer: dict[str, Any] = Field(description="the answer as the Python API returns it (what discovery.connect's "
                                               "methods return)")


class BatchListed(_Open):
    batch_id: str
    name: str
    standing: bool
    snapshot_id: int
    queries: int
    results: int
    seconds: float
    created_at: str = Field(description="ISO 8601")
    summary: dict[str, Any]


class BatchAnswer(_Open):
    summary: dict[str, Any]
    results: list[Result]


class Status(_Open):
    """What the page shows; ``ready`` false (with a first refresh's progress) before the first snapshot."""

    ready: bool
    warehouse: str
    progress: dict[str, Any] | None = None
    status: dict[str, Any] | None = Field(default=None, description="lakescout status --json of the snapshot")
    serving: dict[str, Any] | None = Field(default=None, description="the answering process: snapshot served, "
                                                                       "index cache bytes and entries, memory")


def answers(model: type[BaseModel], *refusals: int) -> dict:
    """``responses=`` of a route: ``model`` for 200 and :class:`Refusal` for each status in ``refusals``, for the
    login's 401 and 403, a parameter's 422 and an unexpected error's 500 (:class:`lakescout_ui.app.Failed`)."""
    out: dict = {200: {"model": model}}
    for status in sorted({401, 403, 422, 500, *refusals}):
        out[status] = {"model": Refusal}
    return out
