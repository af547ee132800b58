"""The app's HTML: one Jinja2 environment over ``templates/`` (autoescaped), shared by every page route."""
from __future__ import annotations

from pathlib import Path

from fastapi import Request
from fastapi.responses import HTMLResponse
from jinja2 import Environment, FileSystemLoader, select_autoescape

from lakescout_ui.data import evidence_text

HERE = Path(__file__).parent

templates = Environment(loader=FileSystemLoader(HERE / "templates"), autoescape=select_autoescape(["html"]))
templates.filters["evidence"] = evidence_text


def render(request: Request, name: str, status: int = 200, **context) -> HTMLResponse:
    """Template ``name`` with ``context`` and ``base``, the app's mount point (``/lakescout``) for its links."""
    page = templates.get_template(name).render(base=request.scope.get("root_path", ""), **context)
    return HTMLResponse(page, status_code=status)
