"""A search from the app, the page's form or the JSON API alike: a served one-query batch, answered from the
server's pinned snapshot and recorded in ``query_results`` when asked (the page's form always asks: its previews and
downloads read the recorded rows).

It names a lake table (id or catalogued path) or an uploaded file, never another file of the server, and its errors
name the table, row and column without quoting cells (:mod:`discovery.surfaces.batch`, ``served=True``).  Who may run
one is decided before the request body is read (:func:`lakescout_ui.access.may_search`); the body is read within the
app's byte limit and the upload removed after (:mod:`.upload`).
"""
from __future__ import annotations

import json
import os

from discovery.orchestration.searches import SEARCHES
from discovery.surfaces.batch import BatchError
from lakescout_ui.access import serving
from lakescout_ui.kept import keep

#: The page form's fields (strings), besides the uploaded file.
FORM_FIELDS = ("kind", "table", "method", "column", "key", "tau")


def form_fields(fields: dict[str, str]) -> dict:
    """The search form's fields, with the page's defaults for those not sent; raises BatchError for a bad ``k`` or
    ``tau``."""
    form = {name: fields.get(name, "") for name in FORM_FIELDS}
    try:
        form["k"] = int(fields.get("k") or 10)
    except ValueError:
        raise BatchError(f"k must be a whole number, got {fields['k']!r}") from None
    try:
        form["tau_value"] = float(form["tau"]) if form["tau"].strip() else None
    except ValueError:
        raise BatchError(f"tau must be a number, got {form['tau']!r}") from None
    return form


def form_params(kind: str, form: dict) -> dict:
    """Form fields -> parameters of the search of ``kind`` (only those it accepts)."""
    accepted = SEARCHES[kind].parameters
    params: dict = {}
    if form["tau_value"] is not None and "tau" in accepted:
        params["tau"] = form["tau_value"]
    for name in ("k", "top_k"):
        if name in accepted:
            params[name] = form["k"]
            break
    if form["method"] and "method" in accepted:
        params["method"] = form["method"]
    if form["column"] and "column" in accepted:
        params["column"] = form["column"].strip()
    if form["key"] and "key" in accepted:
        params["key"] = [c.strip() for c in form["key"].split(",") if c.strip()]
    return params


def run_search(user, kind: str, table: str | int | None, params: dict, upload_path: str | None = None,
               upload_name: str | None = None, record: bool = True) -> dict:
    """Run one served search of ``kind`` on the lake ``table`` or the uploaded file (:meth:`Served.search
    <discovery.surfaces.serving.Served.search>`), recorded when ``record``: its summary (batch id, None when not
    recorded, snapshot id, result count, seconds) and its ``query_results`` rows.  Raises BatchError (and
    WarehouseError) naming what is wrong."""
    if kind not in SEARCHES:
        raise BatchError(f"{kind!r} search is not available (available: {', '.join(SEARCHES)})")
    uploads = {}
    if upload_path is not None:
        query = f"upload:{os.path.basename(upload_name or 'query.csv')}"
        uploads[query] = upload_path
    elif table is not None and str(table).strip():
        query = table.strip() if isinstance(table, str) else table
    else:
        raise BatchError("pick a lake table or upload a table file (CSV, TSV, JSON Lines, compressed or not)")
    answer = serving().search(kind, query, params, user=user.get_name(), record=record, uploads=uploads)
    if record:
        for label, path in uploads.items():  # its results' previews and downloads read it again
            keep(answer["batch_id"], label, path)
    summary = {k: answer[k] for k in ("batch_id", "snapshot_id", "seconds", "kind", "query", "recorded")}
    return {"summary": {**summary, "results": len(answer["rows"])}, "rows": answer["rows"], "answer": answer["answer"]}


def decoded(rows: list[dict]) -> list[dict]:
    """``query_results`` rows with their evidence as JSON values rather than text."""
    return [{**r, "evidence": json.loads(r["evidence"] or "{}")} for r in rows]
