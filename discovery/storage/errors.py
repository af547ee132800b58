"""Storage failures said in one line: which location, which bucket, what went wrong."""
from __future__ import annotations

from .credentials import credentials
from .uri import bucket


class StorageError(ValueError):
    """A location that cannot be reached: a missing bucket, refused credentials, an endpoint that does not answer.
    The message is one line naming the location's bucket and the cause."""


def explain(exc: BaseException, uri: str, what: str) -> StorageError:
    """A :class:`StorageError` for ``exc`` raised while reaching ``uri`` (``what``: lake, warehouse, query)."""
    name, text = bucket(uri), " ".join(str(exc).split())[:200] or type(exc).__name__
    if isinstance(exc, FileNotFoundError):
        return StorageError(f"{what} {uri}: bucket {name!r} does not exist (or holds no such prefix)")
    if isinstance(exc, PermissionError) or "403" in text or "Forbidden" in text or "AccessDenied" in text:
        return StorageError(f"{what} {uri}: access to bucket {name!r} was refused ({text}); check "
                            f"AWS_ACCESS_KEY_ID / AWS_SECRET_ACCESS_KEY")
    if "404" in text or "NoSuchBucket" in text:
        return StorageError(f"{what} {uri}: bucket {name!r} does not exist")
    return StorageError(f"{what} {uri}: cannot reach bucket {name!r} at {credentials().describe_endpoint()} "
                        f"({text})")
