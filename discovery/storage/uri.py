"""Locations as strings: which backend a URI names, its bucket, joining and normalising paths.

These are the only scheme tests of the code base.  A location is a local path (or a ``file://`` URI, the same
thing), a remote URI ``scheme://bucket/key`` (``s3``, ``s3a``, ``gs``, ``gcs``, ``abfs``, ``abfss``, ``az``), or an
Iceberg catalog ``iceberg://<catalog>/<namespace>``, which names tables a catalog keeps rather than a folder.
"""
from __future__ import annotations

import os


def scheme(uri: str) -> str:
    """The URI's scheme, lower case; ``file`` for a local path."""
    return str(uri).split("://", 1)[0].lower() if "://" in str(uri) else "file"


def is_remote(uri: str) -> bool:
    """Whether ``uri`` names object storage (or a catalog) rather than a local path."""
    return scheme(uri) != "file"


def is_catalog(uri: str) -> bool:
    """Whether ``uri`` names an Iceberg catalog (``iceberg://<catalog>/<namespace>``)."""
    return scheme(uri) == "iceberg"


def nonempty(uri: str, what: str) -> str:
    """``uri`` itself, or a ValueError naming ``what`` when it is empty or blank.  :func:`local_path` reads ``""`` as
    the working folder (``os.path.abspath("")``), yet a location left empty is a slip (an unset variable in a script,
    a lost quote), never a wish to put an index wherever the command happens to run: the entries that take a
    location from a user refuse it before anything is read or written."""
    if not str(uri).strip():
        raise ValueError(f"{what} {uri!r} is empty: give a folder or URI (an empty location is not the working "
                         "folder)")
    return uri


def local_path(uri: str) -> str:
    """A local path for a local location given as a path or a ``file://`` URI (absolute)."""
    uri = str(uri)
    return os.path.abspath(uri[len("file://"):] if uri.startswith("file://") else uri)


def normalize(uri: str) -> str:
    """One spelling per location: an absolute local path, or a remote URI without a trailing ``/``."""
    return str(uri).rstrip("/") if is_remote(uri) else local_path(uri)


def file_uri(uri: str) -> str:
    """A URI for readers that take URIs only (pyiceberg, some catalogs): ``file://`` + the absolute path of a local
    location, a remote URI as it is."""
    return str(uri) if is_remote(uri) else "file://" + local_path(uri)


def bucket(uri: str) -> str:
    """The bucket (or container) a remote URI names, for error messages."""
    return str(uri).split("://", 1)[1].split("/", 1)[0] if is_remote(uri) else ""


def split(uri: str) -> tuple[str, str]:
    """``(parent, name)`` of a location: its last path segment and what holds it."""
    if is_remote(uri):
        parent, _, name = str(uri).rstrip("/").rpartition("/")
        return parent, name
    path = local_path(uri)
    return os.path.dirname(path), os.path.basename(path)


def join(root: str, rel: str) -> str:
    """``rel`` ('/'-separated) under ``root``, as a URI for a remote root and a native path for a local one."""
    if not rel:
        return root
    if is_remote(root):
        return str(root).rstrip("/") + "/" + rel.lstrip("/")
    return os.path.join(root, *rel.split("/"))


def under(root: str, name: str) -> str:
    """``name`` as given when it is a location of its own (a remote URI or an absolute path), else joined under
    ``root`` (how an output named relative to an output folder is placed)."""
    return name if is_remote(name) or os.path.isabs(name) else join(root, name)


def delta_uri(uri: str) -> str:
    """The URI delta-rs and pyarrow take: ``s3a://`` is spelled ``s3://``."""
    return "s3://" + uri.split("://", 1)[1] if scheme(uri) == "s3a" else uri


def dataset_name(location: str) -> tuple[str, str]:
    """``(namespace, name)`` of a file or folder as the OpenLineage naming spec names a dataset: a local path is
    namespace ``file`` and its absolute path (as Airflow's own ``file`` assets are named); ``scheme://bucket/key`` is
    namespace ``scheme://bucket`` and name ``key`` (``s3a`` written ``s3``)."""
    if not is_remote(location):
        return "file", local_path(location)
    proto = "s3" if scheme(location) == "s3a" else scheme(location)
    rest = str(location).split("://", 1)[1]
    return f"{proto}://{bucket(location)}", rest.split("/", 1)[1].rstrip("/") if "/" in rest else ""
