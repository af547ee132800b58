"""Object-storage credentials, gathered in one place and handed to every client as explicit properties.

They come from the standard ``AWS_*`` variables (``AWS_ENDPOINT_URL`` or ``AWS_ENDPOINT_URL_S3``,
``AWS_ACCESS_KEY_ID``, ``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION`` or ``AWS_DEFAULT_REGION``),
the ones boto, object_store and pyiceberg document, so one set of variables configures every reader and writer.
:class:`Credentials` spells them for each client: s3fs and boto3 keyword arguments, delta-rs storage options,
pyiceberg FileIO properties.  Spark tasks and batch shares carry :func:`client_env` from the driver and set it in
their process before they open anything (their JVM may have been started with another environment).
"""
from __future__ import annotations

import os
from dataclasses import dataclass


@dataclass(frozen=True)
class Credentials:
    """Endpoint, keys and region of one object store (unset fields: the client's own defaults)."""

    endpoint: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    region: str | None = None

    @classmethod
    def from_env(cls, env=None) -> Credentials:
        env = os.environ if env is None else env
        return cls(endpoint=env.get("AWS_ENDPOINT_URL") or env.get("AWS_ENDPOINT_URL_S3") or None,
                   access_key_id=env.get("AWS_ACCESS_KEY_ID") or None,
                   secret_access_key=env.get("AWS_SECRET_ACCESS_KEY") or None,
                   session_token=env.get("AWS_SESSION_TOKEN") or None,
                   region=env.get("AWS_REGION") or env.get("AWS_DEFAULT_REGION") or None)

    def s3fs_kwargs(self) -> dict:
        """s3fs's keyword arguments."""
        pairs = (("key", self.access_key_id), ("secret", self.secret_access_key), ("token", self.session_token),
                 ("endpoint_url", self.endpoint))
        kwargs: dict = {k: v for k, v in pairs if v}
        if self.region:
            kwargs["client_kwargs"] = {"region_name": self.region}
        return kwargs

    def boto_kwargs(self) -> dict:
        return {"endpoint_url": self.endpoint, "region_name": self.region, "aws_access_key_id": self.access_key_id,
                "aws_secret_access_key": self.secret_access_key, "aws_session_token": self.session_token}

    def delta_options(self) -> dict[str, str]:
        """delta-rs (object_store) storage options: the keys and endpoint given explicitly, plain HTTP allowed for
        an ``http://`` endpoint, and conditional put (``If-None-Match``) for commits, which AWS S3, MinIO, R2 and most
        S3-compatible servers honour: two writers racing for one log version cannot both win, so a commit is atomic
        and a lost race is retried, as on a local disk.  A server without conditional put refuses the commit with
        an error that says so; it never silently overwrites."""
        opts = {"aws_conditional_put": "etag"}
        for key, value in (("AWS_ENDPOINT_URL", self.endpoint), ("AWS_ACCESS_KEY_ID", self.access_key_id),
                           ("AWS_SECRET_ACCESS_KEY", self.secret_access_key),
                           ("AWS_SESSION_TOKEN", self.session_token), ("AWS_REGION", self.region)):
            if value:
                opts[key] = value
        if (self.endpoint or "").startswith("http://"):
            opts["AWS_ALLOW_HTTP"] = "true"
        return opts

    def iceberg_properties(self) -> dict[str, str]:
        """pyiceberg FileIO properties."""
        pairs = (("s3.endpoint", self.endpoint), ("s3.access-key-id", self.access_key_id),
                 ("s3.secret-access-key", self.secret_access_key), ("s3.session-token", self.session_token),
                 ("s3.region", self.region))
        return {k: v for k, v in pairs if v}

    def describe_endpoint(self) -> str:
        return self.endpoint or "the default AWS endpoint"


def credentials() -> Credentials:
    """The credentials of this process's environment now."""
    return Credentials.from_env()


def client_env() -> dict[str, str]:
    """The environment variables that configure object-storage clients (``AWS_*``, ``PYICEBERG_*``), as a driver
    hands them to its tasks."""
    return {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "PYICEBERG_"))}
