"""The storage wing: local folders and object storage (``s3://``, ``gs://``, ``abfs://``) behind one interface.

* :mod:`.uri`: locations as strings (scheme, bucket, joining, one spelling per location): the only scheme tests;
* :mod:`.backends`: one backend object per scheme, chosen once from the URI (:func:`backend`): filesystem handles
  (fsspec for listing and streaming reads, pyarrow for datasets), delta-rs options, the storage walk's listing, a
  file created only if absent and replaced whole, folders put in place and brought back locally;
* :mod:`.credentials`: endpoint, keys and region gathered once from the ``AWS_*`` variables and handed to every
  client (s3fs, boto3, delta-rs, pyiceberg) as explicit properties;
* :mod:`.walk`: the storage tree a lake listing classifies (a folder at a time locally, one paged LIST remotely);
* :mod:`.folders`: the folder writes and the local cache of remote folders;
* :mod:`.errors`: one-line storage errors naming the bucket and the cause.

Everything above this wing holds locations as strings and asks the functions here; the Airflow connection mapping
of the DAGs lives above it (:mod:`discovery.surfaces.connections`).
"""
from __future__ import annotations

from .backends import BACKENDS, Backend, CatalogLocation, LocalBackend, S3Backend, backend, register, s3_client
from .credentials import Credentials, client_env, credentials
from .errors import StorageError, explain
from .folders import MARKER, cache_root
from .uri import (bucket, dataset_name, delta_uri, file_uri, is_catalog, is_remote, join, local_path, nonempty,
                  normalize, scheme, split, under)


def filesystem(uri: str):
    """(fsspec filesystem, path within it) for ``uri``; a local path gets the local filesystem and an absolute
    path."""
    return backend(uri).filesystem(uri)


def arrow_filesystem(uri: str):
    """(pyarrow filesystem, path) for ``uri``."""
    return backend(uri).arrow_filesystem(uri)


def delta_options(uri: str) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for a table at ``uri`` (None for a local table)."""
    return backend(uri).delta_options(uri)


def on_disk(uri: str) -> str | None:
    """The absolute local path of ``uri`` when it is on this machine's filesystem (what links, ``realpath`` and
    memory maps apply to), else None: object storage and catalogs."""
    return None if is_catalog(uri) else backend(uri).on_disk(uri)


def check(uri: str, what: str) -> None:
    """Reach the bucket of a remote ``uri`` once, raising :class:`StorageError` with the bucket and the cause when
    that fails; a local path or a catalog is not checked here (their readers say what is missing)."""
    if not is_catalog(uri):
        backend(uri).check(uri, what)


__all__ = ["BACKENDS", "Backend", "CatalogLocation", "Credentials", "LocalBackend", "MARKER", "S3Backend",
           "StorageError", "arrow_filesystem", "backend", "bucket", "cache_root", "check", "client_env",
           "credentials", "dataset_name", "delta_options", "delta_uri", "explain", "file_uri", "filesystem",
           "is_catalog", "is_remote", "join", "local_path", "nonempty", "normalize", "on_disk", "register",
           "s3_client", "scheme", "split", "under"]
