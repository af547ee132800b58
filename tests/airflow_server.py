"""A real Airflow api-server on 127.0.0.1 serving this repository's plugin, for tests and benchmarks that drive the
"Lake discovery" page over HTTP (no tests of its own).

The server runs with a private AIRFLOW_HOME (:func:`airflow_env.airflow_env`), the simple auth manager with the
users given, and a fixed JWT secret; :func:`bearer_token` logs a user in through ``POST /auth/token`` as an API client
would.  The process group is ended when the ``with`` block leaves.
"""
from __future__ import annotations

import contextlib
import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator

from airflow_env import airflow_env

BIN = os.path.dirname(sys.executable)
HEALTH = "/api/v2/monitor/health"
#: The server's JWT signing secret (a test may sign a token of its own with it, e.g. an expired one).
JWT_SECRET = "lakescout-test-secret-of-a-reasonable-length-0123456789abcdef"


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def api_server(home: str, warehouse: str, users: dict[str, tuple[str, str]], lake: str | None = None,
               startup_seconds: float = 150, workers: int = 1) -> Iterator[str]:
    """Migrate a fresh metadata DB under ``home`` and run ``airflow api-server`` (``workers`` processes) until the
    block ends.

    ``users`` maps a user name to ``(role, password)``; yields the base URL.
    """
    os.makedirs(home, exist_ok=True)
    passwords = os.path.join(home, "passwords.json")
    with open(passwords, "w") as fh:
        json.dump({u: pw for u, (_, pw) in users.items()}, fh)
    port = free_port()
    env = airflow_env(
        home, warehouse, lake,
        AIRFLOW__CORE__UNIT_TEST_MODE="False",
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_USERS=",".join(f"{u}:{role}" for u, (role, _) in users.items()),
        AIRFLOW__CORE__SIMPLE_AUTH_MANAGER_PASSWORDS_FILE=passwords,
        AIRFLOW__API__BASE_URL=f"http://127.0.0.1:{port}",
        AIRFLOW__API_AUTH__JWT_SECRET=JWT_SECRET,
    )
    airflow = os.path.join(BIN, "airflow")
    subprocess.run([airflow, "db", "migrate"], env=env, check=True, capture_output=True, timeout=600)
    log_path = os.path.join(home, "api-server.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([airflow, "api-server", "--host", "127.0.0.1", "--port", str(port),
                                 "--workers", str(workers)],
                                env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    url = f"http://127.0.0.1:{port}"
    try:
        _wait_healthy(url + HEALTH, proc, log_path, startup_seconds)
        yield url
    finally:
        os.killpg(proc.pid, 15)
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, 9)
            proc.wait()


def _wait_healthy(url: str, proc: subprocess.Popen, log_path: str, timeout: float) -> None:
    deadline = time.time() + timeout
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError("api-server exited:\n" + open(log_path).read()[-4000:])
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(1)
    raise RuntimeError("api-server did not become healthy:\n" + open(log_path).read()[-4000:])


def bearer_token(url: str, user: str, password: str) -> str:
    """A JWT for ``user`` from the simple auth manager's ``POST /auth/token``."""
    body = json.dumps({"username": user, "password": password}).encode()
    req = urllib.request.Request(f"{url}/auth/token", data=body, headers={"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=30) as r:
        return json.loads(r.read())["access_token"]


def browser_login(page, url: str, user: str, password: str) -> None:
    """Log a Playwright page in through the api-server's login form; returns once the UI's token cookie is set."""
    page.goto(f"{url}/auth/login")
    page.fill("input[name='username']", user)
    page.fill("input[name='password']", password)
    page.click("button[type='submit']")
    page.wait_for_function("document.cookie.includes('_token=')", timeout=30000)
