"""Receiving a search (the page's form, or the JSON API's body): read only for a user who may search, bounded while
it streams, no file left.

FastAPI parses a route's ``Form`` and ``File`` parameters before the route and its dependencies run, spooling an
upload whole to disk before anyone is asked whether the user may search.  The search route therefore declares none
and reads its body here, once the permission check has passed.  A declared ``Content-Length`` past the limit is
refused unread; otherwise Starlette's own form parsers read the body from a stream that stops with HTTP 413 as soon as
more than the limit has arrived (a chunked body declares no length).  The uploaded file is copied into a fresh
temporary folder, which :func:`received_form` removes on every path out -- a search answered, refused or failed --
and Starlette's spooled copy is closed with the form.
"""
from __future__ import annotations

import json
import os
import shutil
import tempfile
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass

from fastapi import Request
from starlette.datastructures import UploadFile
from starlette.formparsers import FormParser, MultiPartException, MultiPartParser

from discovery.data.lake.formats import file_format

#: Room for the form's text fields and the multipart framing, beside the uploaded file.
FORM_BYTES = 64 * 1024
_FIELDS = 16


class FormRefused(Exception):
    """A search form that is not read: ``status`` is the HTTP status, the message says why."""

    def __init__(self, status: int, message: str):
        self.status = status
        super().__init__(message)


class _TooLarge(MultiPartException):
    """The body passed the limit; a MultiPartException, so the multipart parser closes the files it spooled."""


@dataclass
class ReceivedForm:
    fields: dict[str, str]        # text fields, the first value of each name
    filename: str | None = None   # the uploaded file's name as the browser sent it
    path: str | None = None       # where it is saved, in a temporary folder of its own


async def _bounded(request: Request, limit: int, what: str) -> AsyncIterator[bytes]:
    read = 0
    async for chunk in request.stream():
        read += len(chunk)
        if read > limit:
            raise _TooLarge(what)
        yield chunk


def _saved(upload: UploadFile, folder: str) -> str:
    """Save the upload under its own name when it ends like a table file (``.csv``, ``.tsv``, ``.jsonl``,
    ``.csv.gz``, ...: the reader picks the format and decompression from it), else as ``query.csv``."""
    name = os.path.basename(upload.filename or "").lstrip(".")
    if file_format(name) is None:
        name = (os.path.splitext(name)[0] or "query") + ".csv"
    path = os.path.join(folder, name)
    upload.file.seek(0)
    with open(path, "wb") as fh:
        shutil.copyfileobj(upload.file, fh)
    return path


@asynccontextmanager
async def received_form(request: Request, max_upload_bytes: int) -> AsyncIterator[ReceivedForm]:
    """The form of ``request``, its file (field ``upload``) saved while the context lasts; raises
    :class:`FormRefused`: 413 past ``max_upload_bytes`` plus :data:`FORM_BYTES` (a form without a file: past
    :data:`FORM_BYTES`), 400 for a malformed form."""
    multipart = request.headers.get("content-type", "").startswith("multipart/form-data")
    if multipart:
        limit, too_large = max_upload_bytes + FORM_BYTES, f"the upload is larger than {max_upload_bytes:,} bytes"
    else:
        limit, too_large = FORM_BYTES, f"the search form is larger than {FORM_BYTES:,} bytes"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        raise FormRefused(413, too_large)
    stream = _bounded(request, limit, too_large)
    if multipart:
        parser = MultiPartParser(request.headers, stream, max_files=1, max_fields=_FIELDS, max_part_size=FORM_BYTES)
    else:
        parser = FormParser(request.headers, stream)
    form, folder = None, None
    try:
        try:
            form = await parser.parse()
        except _TooLarge as exc:
            raise FormRefused(413, str(exc)) from None
        except MultiPartException as exc:
            raise FormRefused(400, f"the search form is malformed: {exc.message}") from None
        received = ReceivedForm({})
        for name, value in form.multi_items():
            if isinstance(value, str):
                received.fields.setdefault(name, value)
            elif name == "upload" and value.filename and received.path is None:
                if value.size is not None and value.size > max_upload_bytes:
                    raise FormRefused(413, too_large)
                folder = tempfile.mkdtemp(prefix="lakescout-upload-")
                received.filename, received.path = value.filename, _saved(value, folder)
        yield received
    finally:
        if form is not None:
            await form.close()
        if folder is not None:
            shutil.rmtree(folder, ignore_errors=True)


def form_json(text: str) -> dict:
    """The ``params`` field of a search form: a JSON object of the search's parameters (how a client sends every
    parameter beside an upload); raises :class:`FormRefused` (400) for anything else."""
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise FormRefused(400, f"the form's params field is not valid JSON (at byte {exc.pos})") from None
    if not isinstance(value, dict):
        raise FormRefused(400, "the form's params field must be a JSON object of the search's parameters")
    return value


async def received_json(request: Request) -> dict:
    """The JSON object of ``request``'s body, read within :data:`FORM_BYTES`; raises :class:`FormRefused` (413 past
    the limit, 400 for a body that is not a JSON object)."""
    too_large = f"the search request is larger than {FORM_BYTES:,} bytes"
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > FORM_BYTES:
        raise FormRefused(413, too_large)
    body = bytearray()
    try:
        async for chunk in _bounded(request, FORM_BYTES, too_large):
            body += chunk
    except _TooLarge as exc:
        raise FormRefused(413, str(exc)) from None
    try:
        value = json.loads(bytes(body))
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise FormRefused(400, f"the search request is not valid JSON (at byte {getattr(exc, 'pos', 0)})") from None
    if not isinstance(value, dict):
        raise FormRefused(400, "the search request must be a JSON object: {\"table\": ..., parameters of the search}")
    return value
