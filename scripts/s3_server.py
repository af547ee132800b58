"""An S3-compatible server on 127.0.0.1 (moto's), for trying a lake or warehouse on object storage, the tests and
the benchmarks.

    python scripts/s3_server.py --port 9000          # then AWS_ENDPOINT_URL=http://127.0.0.1:9000 (any keys)

It counts the requests it answers by S3 operation (LIST, GET, HEAD, PUT, DELETE, POST), so a benchmark can say how
many requests a refresh made at the server: ``GET /_requests`` returns the counts as JSON (``"GET"`` for all
buckets, ``"GET <bucket>"`` for one), ``DELETE /_requests`` sets them to zero.
Objects live in the server's memory and are gone when it stops.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import threading
import time
import urllib.request
from collections import Counter

COUNTS_PATH = "/_requests"


def _operation(environ) -> str:
    method = environ["REQUEST_METHOD"]
    path = environ.get("PATH_INFO", "/").strip("/")
    query = environ.get("QUERY_STRING", "")
    if method == "GET" and ("/" not in path or "list-type" in query or "prefix=" in query
                            or query.startswith("delimiter")):
        return "LIST" if path else "LIST_BUCKETS"
    return method


class _Counting:
    """WSGI middleware: counts each request's operation and answers the counts endpoint."""

    def __init__(self, app):
        self.app, self.counts, self.lock = app, Counter(), threading.Lock()

    def __call__(self, environ, start_response):
        if environ.get("PATH_INFO") == COUNTS_PATH:
            with self.lock:
                body = json.dumps(dict(self.counts)).encode()
                if environ["REQUEST_METHOD"] == "DELETE":
                    self.counts.clear()
            start_response("200 OK", [("Content-Type", "application/json"), ("Content-Length", str(len(body)))])
            return [body]
        op = _operation(environ)
        bucket = environ.get("PATH_INFO", "/").strip("/").split("/", 1)[0]
        with self.lock:
            self.counts[op] += 1
            if bucket:
                self.counts[f"{op} {bucket}"] += 1
        return self.app(environ, start_response)


def serve(host: str, port: int) -> None:
    from moto.moto_server.werkzeug_app import DomainDispatcherApplication, MotoRequestHandler, create_backend_app
    from werkzeug.serving import make_server

    app = _Counting(DomainDispatcherApplication(create_backend_app))
    server = make_server(host, port, app, threaded=True, request_handler=MotoRequestHandler)
    print(f"S3 server on http://{host}:{server.server_port}", flush=True)
    server.serve_forever()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    """A server in a child process; ``env`` holds the ``AWS_*`` variables that point clients at it."""

    def __init__(self, port: int | None = None, require_auth: bool = False):
        """``require_auth``: refuse every request whose keys the server does not know (all of them: a server that
        answers as one does to wrong credentials)."""
        self.port = port or _free_port()
        self.require_auth = require_auth
        self.endpoint = f"http://127.0.0.1:{self.port}"
        self.env = {"AWS_ENDPOINT_URL": self.endpoint, "AWS_ACCESS_KEY_ID": "lakescout",
                    "AWS_SECRET_ACCESS_KEY": "lakescout", "AWS_REGION": "us-east-1"}
        self.proc: subprocess.Popen | None = None

    def start(self, timeout: float = 60.0) -> S3Server:
        env = dict(os.environ, INITIAL_NO_AUTH_ACTION_COUNT="0") if self.require_auth else None
        self.proc = subprocess.Popen([sys.executable, os.path.abspath(__file__), "--port", str(self.port)],
                                     stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env)
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                self.requests()
                return self
            except OSError:
                if self.proc.poll() is not None:
                    raise RuntimeError(f"the S3 server exited with code {self.proc.returncode}") from None
                time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"the S3 server did not answer on {self.endpoint} within {timeout:.0f} s")

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()

    def requests(self, reset: bool = False, bucket: str | None = None) -> dict[str, int]:
        """Requests answered so far by operation, of every bucket or of ``bucket``; ``reset`` zeroes the counts
        after reading them."""
        req = urllib.request.Request(self.endpoint + COUNTS_PATH, method="DELETE" if reset else "GET")
        with urllib.request.urlopen(req, timeout=10) as resp:
            counts = json.loads(resp.read())
        if bucket is None:
            return {k: v for k, v in counts.items() if " " not in k}
        return {k.split(" ")[0]: v for k, v in counts.items() if k.endswith(" " + bucket)}

    def create_bucket(self, name: str) -> str:
        """Create bucket ``name`` and return ``s3://name``."""
        import boto3

        boto3.client("s3", endpoint_url=self.endpoint, region_name="us-east-1",
                     aws_access_key_id="lakescout", aws_secret_access_key="lakescout").create_bucket(Bucket=name)
        return f"s3://{name}"

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc):
        self.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=9000)
    args = parser.parse_args()
    serve(args.host, args.port)
    return 0


if __name__ == "__main__":
    sys.exit(main())
