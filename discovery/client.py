"""``discovery.connect(url, token)``: the :class:`~discovery.api.Lakescout` methods over the JSON API of a server.

A notebook switches from a local warehouse to a served one by one line: ``discovery.open(warehouse)`` becomes
``discovery.connect("http://airflow:8080", token)``, and ``status``, ``tables``, ``describe``, ``find``, ``search``,
``union``, ``join`` and ``nary`` take the same arguments and return the same values (JSON's: timestamps as ISO 8601
text), answered from the server's latest snapshot.  What differs is what a server may read: a query is a lake table
(an id or a catalogued path) or a local file, which is uploaded (its name ends like a table file: ``.csv``,
``.tsv``, ``.jsonl``, compressed or not); never a file of the server.  The token is an Airflow JWT (``POST
/auth/token`` of the auth manager gives one).  A refusal raises :class:`RemoteError` with the server's one-line
message and the parameter it names; searches are not recorded unless ``record=True`` (which needs the permission to
trigger the ``query_batch`` DAG).  HTTP by the standard library.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
import uuid

from .api import given
from .query.params import DEFAULT_K, ParameterError

#: The JSON API's mount point under the api-server's base URL.
API = "/lakescout/api"


class RemoteError(ParameterError):
    """A refusal of the server: ``status`` the HTTP status, ``param`` the parameter it names (or None), the message
    the server's one line.  A :class:`~discovery.query.params.ParameterError`, as the local methods raise for a bad
    parameter."""

    def __init__(self, status: int, message: str, param: str | None = None):
        super().__init__(param, message)
        self.status = status


class RemoteLakescout:
    """The Lakescout methods, answered by the server at ``url`` (see the module docstring)."""

    def __init__(self, url: str, token: str, timeout: float = 300.0):
        self.url = url.rstrip("/")
        self.timeout = timeout
        self._headers = {"Authorization": f"Bearer {token}"}
        #: The batch id of the last search recorded (``record=True``), else None.
        self.last_batch_id: str | None = None

    # -- reading ------------------------------------------------------------------------------------------------
    @property
    def snapshot_id(self) -> int:
        """The snapshot the server answers from now."""
        return self.status()["snapshot"]["snapshot_id"]

    def status(self) -> dict:
        """What ``lakescout status --json`` prints, for the server's snapshot."""
        return self._call("GET", "/status")["status"]

    def tables(self, path: str | list[str] | None = None, format: str | list[str] | None = None,
               status: str | list[str] | None = None) -> list[dict]:
        return self._call("GET", "/tables", query={"path": path, "format": format, "status": status})

    def describe(self, table: str | int) -> dict:
        return self._call("GET", "/tables/" + urllib.parse.quote(str(table)))

    def find(self, words: str | list[str], k: int = DEFAULT_K, values: bool = False) -> dict:
        return self._call("GET", "/find", query={"words": words, "k": k, "values": str(bool(values)).lower()})

    # -- searches -----------------------------------------------------------------------------------------------
    def search(self, kind: str, query: str | int, record: bool = False, **params) -> dict:
        """A search of ``kind`` with its parameters by name, answered as :meth:`Lakescout.search
        <discovery.api.Lakescout.search>` answers it; ``record``: also record it in ``query_results`` (its batch id
        is then ``self.last_batch_id``)."""
        route = f"/search/{urllib.parse.quote(kind)}" + ("?record=true" if record else "")
        if isinstance(query, str) and os.path.isfile(query):
            answer = self._upload(route, query, params)
        else:
            answer = self._call("POST", route, body={"table": query, **params})
        self.last_batch_id = answer["batch_id"]
        return answer["answer"]

    def union(self, query: str | int, k: int = DEFAULT_K, method: str | None = None, **params) -> dict:
        return self.search("union", query, k=k, **given(method=method), **params)

    def join(self, query: str | int, column: str, tau: float | None = None, T: float | None = None,
             top_k: int | None = None, method: str | None = None, **params) -> dict:
        return self.search("join", query, column=column, **given(tau=tau, T=T, top_k=top_k, method=method,
                                                                   **params))

    def nary(self, query: str | int, key: str | list[str], k: int = DEFAULT_K, method: str | None = None,
             **params) -> dict:
        return self.search("nary", query, key=key, k=k, **given(method=method, **params))

    # -- HTTP ---------------------------------------------------------------------------------------------------
    def _call(self, method: str, route: str, query: dict | None = None, body: dict | None = None):
        url = self.url + API + route
        if query:
            pairs = [(k, v) for k, vs in query.items() if vs is not None
                     for v in (vs if isinstance(vs, (list, tuple)) else [vs])]
            url += "?" + urllib.parse.urlencode(pairs)
        data, headers = None, dict(self._headers)
        if body is not None:
            data, headers["Content-Type"] = json.dumps(body).encode(), "application/json"
        return self._send(urllib.request.Request(url, data=data, headers=headers, method=method))

    def _upload(self, route: str, path: str, params: dict) -> dict:
        boundary = uuid.uuid4().hex
        with open(path, "rb") as fh:
            content = fh.read()
        name = os.path.basename(path).replace('"', "")
        head = (f'--{boundary}\r\nContent-Disposition: form-data; name="params"\r\n\r\n{json.dumps(params)}\r\n'
                f'--{boundary}\r\nContent-Disposition: form-data; name="upload"; filename="{name}"\r\n'
                f"Content-Type: application/octet-stream\r\n\r\n")
        body = head.encode() + content + f"\r\n--{boundary}--\r\n".encode()
        headers = {**self._headers, "Content-Type": f"multipart/form-data; boundary={boundary}"}
        return self._send(urllib.request.Request(self.url + API + route, data=body, headers=headers, method="POST"))

    def _send(self, request: urllib.request.Request):
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as r:
                return json.loads(r.read())
        except urllib.error.HTTPError as exc:
            try:
                refusal = json.loads(exc.read())
            except ValueError:
                refusal = {}
            raise RemoteError(exc.code, refusal.get("detail") or f"HTTP {exc.code} from {request.full_url}",
                              refusal.get("parameter")) from None


def connect(url: str, token: str, timeout: float = 300.0) -> RemoteLakescout:
    """The Lakescout methods of the server at ``url`` (the api-server's base URL) for the Airflow JWT ``token``."""
    return RemoteLakescout(url, token, timeout)
