"""The one filesystem layer: local folders and object storage (``s3://``, ``gs://``, ``abfs://``) take the same path.

Lake readers and the warehouse reach storage through :func:`filesystem` (fsspec, for listing and streaming reads),
:func:`arrow_filesystem` (pyarrow datasets over the same fsspec filesystem) and :func:`delta_options` (delta-rs).
Endpoint and credentials come from the standard ``AWS_*`` variables (``AWS_ENDPOINT_URL``, ``AWS_ACCESS_KEY_ID``,
``AWS_SECRET_ACCESS_KEY``, ``AWS_SESSION_TOKEN``, ``AWS_REGION``), which boto (s3fs) and object_store (delta-rs)
both read, so one set of variables configures every reader and writer; a DAG can set them from an Airflow
connection (``dags/connections.py``).

Query arrays (the union's and the numerical join's ``.npy`` folders) are mapped from local files: on object storage
the refresh uploads a folder (:func:`upload_folder`, ``meta.json`` last) and a query process maps its local copy
(:func:`cached_folder`).

Commits to Delta tables on S3 use conditional put (``If-None-Match``), which AWS S3, MinIO, R2 and most
S3-compatible servers honour: two writers racing for one log version cannot both win, so a commit is atomic and a
lost race is retried, as on a local disk.  A server without conditional put refuses the commit with an error that
says so; it never silently overwrites.
"""
from __future__ import annotations

import os
from functools import lru_cache

import pyarrow as pa

#: URI schemes read through fsspec; anything without ``://`` is a local path.
REMOTE_SCHEMES = ("s3", "s3a", "gs", "gcs", "abfs", "abfss", "az")


def is_remote(uri: str) -> bool:
    return "://" in str(uri) and not str(uri).startswith("file://")


def local_path(uri: str) -> str:
    """A local path for a local location given as a path or a ``file://`` URI (absolute)."""
    uri = str(uri)
    return os.path.abspath(uri[len("file://"):] if uri.startswith("file://") else uri)


def scheme(uri: str) -> str:
    return str(uri).split("://", 1)[0].lower() if "://" in str(uri) else "file"


def bucket(uri: str) -> str:
    """The bucket (or container) a remote URI names, for error messages."""
    return str(uri).split("://", 1)[1].split("/", 1)[0] if is_remote(uri) else ""


def dataset_name(location: str) -> tuple[str, str]:
    """``(namespace, name)`` of a file or folder as the OpenLineage naming spec names a dataset: a local path is
    namespace ``file`` and its absolute path (as Airflow's own ``file`` assets are named); ``scheme://bucket/key`` is
    namespace ``scheme://bucket`` and name ``key`` (``s3a`` written ``s3``)."""
    if not is_remote(location):
        return "file", local_path(location)
    proto = "s3" if scheme(location) == "s3a" else scheme(location)
    rest = str(location).split("://", 1)[1]
    return f"{proto}://{bucket(location)}", rest.split("/", 1)[1].rstrip("/") if "/" in rest else ""


def join(root: str, rel: str) -> str:
    """``rel`` ('/'-separated) under ``root``, as a URI for a remote root and a native path for a local one."""
    if not rel:
        return root
    if is_remote(root):
        return root.rstrip("/") + "/" + rel.lstrip("/")
    return os.path.join(root, *rel.split("/"))


def _s3_kwargs() -> dict:
    endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3")
    kwargs: dict = {}
    if endpoint:
        kwargs["endpoint_url"] = endpoint
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        kwargs["client_kwargs"] = {"region_name": region}
    return kwargs


@lru_cache(maxsize=8)
def _remote_fs(proto: str, env_key: tuple):
    import fsspec

    proto = "s3" if proto == "s3a" else proto
    kwargs = _s3_kwargs() if proto == "s3" else {}
    # Listings must reflect the bucket now: a refresh decides its work from them.
    return fsspec.filesystem(proto, use_listings_cache=False, skip_instance_cache=True, **kwargs)


def s3_client():
    """A boto3 S3 client with the same endpoint, region and ``AWS_*`` credentials as the s3fs filesystem, for the
    paged listing s3fs does not expose (:func:`discovery.lake.listing._remote_pages`).  One per set of variables, as
    the filesystems are: a client loads botocore's S3 model, tens of MB."""
    return _s3_client(_env_key())


@lru_cache(maxsize=8)
def _s3_client(env_key: tuple):
    import boto3

    kwargs = _s3_kwargs()
    return boto3.session.Session().client("s3", endpoint_url=kwargs.get("endpoint_url"),
                                          region_name=kwargs.get("client_kwargs", {}).get("region_name"))


def connection_env(login: str | None, password: str | None, extra: dict | None) -> dict[str, str]:
    """The ``AWS_*`` variables of an Airflow AWS connection (login: access key id, password: secret key; extra:
    ``endpoint_url``, ``region_name``, ``aws_session_token``), for DAG tasks that take one by id."""
    extra = extra or {}
    pairs = {"AWS_ACCESS_KEY_ID": login, "AWS_SECRET_ACCESS_KEY": password,
             "AWS_SESSION_TOKEN": extra.get("aws_session_token"),
             "AWS_ENDPOINT_URL": extra.get("endpoint_url") or extra.get("host"),
             "AWS_REGION": extra.get("region_name")}
    return {k: str(v) for k, v in pairs.items() if v}


#: What the DAGs' ``aws_conn_id`` param means, as their trigger forms show it.
AIRFLOW_CONN_HELP = ("Airflow connection (AWS type) with the object-storage keys, endpoint and region; empty: the "
                     "workers' own AWS_* environment")


def airflow_connection_env(conn_id: str) -> dict[str, str]:
    """The ``AWS_*`` variables of Airflow connection ``conn_id`` (none for an empty id), for DAG tasks: the DAGs take
    the id as their ``aws_conn_id`` param.  Airflow is imported only here, so nothing else of ``discovery`` needs it."""
    if not conn_id:
        return {}
    from airflow.sdk import BaseHook

    conn = BaseHook.get_connection(conn_id)
    return connection_env(conn.login, conn.password, conn.extra_dejson)


def use_airflow_connection(params: dict) -> None:
    """Put a DAG run's object-storage credentials (its ``aws_conn_id`` param) into this task's environment."""
    os.environ.update(airflow_connection_env(params.get("aws_conn_id") or ""))


def client_env() -> dict[str, str]:
    """The environment variables that configure object-storage clients (``AWS_*``, ``PYICEBERG_*``)."""
    return {k: v for k, v in os.environ.items() if k.startswith(("AWS_", "PYICEBERG_"))}


def _env_key() -> tuple:
    return tuple(os.environ.get(k) for k in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_S3", "AWS_ACCESS_KEY_ID",
                                              "AWS_SECRET_ACCESS_KEY", "AWS_SESSION_TOKEN", "AWS_REGION",
                                              "AWS_DEFAULT_REGION"))


def filesystem(uri: str):
    """(fsspec filesystem, path within it) for ``uri``; local paths get the local filesystem and an absolute path."""
    if not is_remote(uri):
        import fsspec

        return fsspec.filesystem("file"), local_path(uri)
    proto, rest = str(uri).split("://", 1)
    if proto.lower() not in REMOTE_SCHEMES:
        raise ValueError(f"{uri!r}: unknown storage scheme {proto!r} (known: local paths, "
                         f"{', '.join(s + '://' for s in REMOTE_SCHEMES)})")
    try:
        fs = _remote_fs(proto.lower(), _env_key())
    except (ImportError, ValueError) as exc:
        raise ValueError(f"{uri!r}: no filesystem for {proto}:// is installed ({exc})") from None
    return fs, rest.rstrip("/")


def arrow_filesystem(uri: str):
    """(pyarrow filesystem, path) for ``uri``: the local filesystem, pyarrow's own S3 / GCS / Azure filesystem
    (which read the same ``AWS_*`` variables, and stream Parquet faster than a wrapper), else the fsspec filesystem
    wrapped for pyarrow."""
    import pyarrow.fs as pafs

    if not is_remote(uri):
        return pafs.LocalFileSystem(), local_path(uri)  # not through fsspec: every query opens a warehouse
    try:
        return pafs.FileSystem.from_uri(delta_uri(uri))
    except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
        fs, path = filesystem(uri)
        return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path


def delta_options(uri: str) -> dict[str, str] | None:
    """delta-rs ``storage_options`` for a table at ``uri``: None for a local table.

    object_store reads the ``AWS_*`` variables itself; what it needs beyond them is plain HTTP for a local endpoint
    and conditional put for safe commits (see the module docstring).
    """
    if not is_remote(uri):
        return None
    opts: dict[str, str] = {}
    if scheme(uri) in ("s3", "s3a"):
        opts["aws_conditional_put"] = "etag"
        endpoint = os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3") or ""
        if endpoint.startswith("http://"):
            opts["AWS_ALLOW_HTTP"] = "true"
    return opts


class StorageError(ValueError):
    """A location that cannot be reached: a missing bucket, refused credentials, an endpoint that does not answer.
    The message is one line naming the location's bucket and the cause."""


def _endpoint() -> str:
    return os.environ.get("AWS_ENDPOINT_URL") or os.environ.get("AWS_ENDPOINT_URL_S3") or "the default AWS endpoint"


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
    return StorageError(f"{what} {uri}: cannot reach bucket {name!r} at {_endpoint()} ({text})")


def check(uri: str, what: str) -> None:
    """Reach the bucket of a remote ``uri`` once (one LIST of its top level), raising :class:`StorageError` with
    the bucket and the cause when that fails; a local path is not checked here (its readers say what is missing)."""
    if not is_remote(uri) or scheme(uri) == "iceberg":
        return
    fs, _ = filesystem(uri)
    try:
        fs.ls(bucket(uri), detail=False)
    except Exception as exc:  # botocore, aiohttp and s3fs raise a dozen types for these causes
        raise explain(exc, uri, what) from None


def delta_uri(uri: str) -> str:
    """The URI delta-rs takes: ``s3a://`` is spelled ``s3://``."""
    return "s3://" + uri.split("://", 1)[1] if scheme(uri) == "s3a" else uri


def publish_folder(tmp: str, path: str) -> None:
    """Rename a complete local folder (its ``meta.json`` written last) into place at ``path``; a folder another
    writer put there first is as good, since both were built from the same pinned versions."""
    os.chmod(tmp, 0o755)
    try:
        os.rename(tmp, path)
    except OSError:
        if not os.path.exists(os.path.join(path, "meta.json")):
            raise


def upload_folder(local: str, target: str) -> None:
    """Copy a complete local folder (subfolders too) to the remote ``target``, ``meta.json`` last: it marks the
    remote folder complete, so a reader that finds it finds every other file."""
    fs, path = filesystem(target)
    rels = sorted(os.path.relpath(os.path.join(d, f), local).replace(os.sep, "/")
                  for d, _, files in os.walk(local) for f in files)
    for rel in sorted(rels, key=lambda r: r == "meta.json"):
        fs.put_file(os.path.join(local, *rel.split("/")), f"{path}/{rel}")


def cache_root() -> str:
    """Local folder holding downloaded query arrays of remote warehouses (``$LAKESCOUT_ARRAY_CACHE``)."""
    return os.environ.get("LAKESCOUT_ARRAY_CACHE") or os.path.join(os.path.expanduser("~"), ".cache", "lakescout",
                                                                    "query_arrays")


def _written(info: dict) -> str:
    """What tells one upload of a file from another at the same path: its ETag and modification time (whatever of
    them the store reports)."""
    keys = ("etag", "lastmodified", "last_modified", "mtime", "updated", "generation", "versionid")
    return repr(sorted((k.lower(), str(v)) for k, v in info.items() if k.lower() in keys))


def cached_folder(root: str, target: str, name: str) -> str | None:
    """A local copy of the remote folder ``target`` (named ``name``, of the warehouse at ``root``), downloaded once
    into :func:`cache_root`.  The name pins the content within one warehouse, but a warehouse deleted and written
    again at the same URI reuses names for other content, so the copy is keyed by the warehouse, the name and the
    upload of the remote ``meta.json`` (one HEAD per call, no GET once copied).  None when the remote folder is not
    complete (no ``meta.json``) or no local copy can be written; the caller then builds what the folder holds in
    memory."""
    import hashlib
    import shutil
    import tempfile
    import uuid

    fs, path = filesystem(target)
    try:
        info = fs.info(f"{path}/meta.json")
    except FileNotFoundError:
        return None
    stamp = hashlib.blake2b(_written(info).encode(), digest_size=6).hexdigest()
    local = os.path.join(cache_root(), hashlib.blake2b(root.encode(), digest_size=8).hexdigest(), f"{name}-{stamp}")
    if os.path.exists(os.path.join(local, "meta.json")):
        return local
    try:
        os.makedirs(os.path.dirname(local), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{name}.{uuid.uuid4().hex[:8]}.", dir=os.path.dirname(local))
    except OSError:  # no local cache here
        return None
    try:
        rels = sorted(f[len(path) + 1:] for f in fs.find(path))
        for rel in sorted(rels, key=lambda r: r == "meta.json"):  # meta.json last: it marks the copy complete
            dest = os.path.join(tmp, *rel.split("/"))
            os.makedirs(os.path.dirname(dest), exist_ok=True)
            fs.get_file(f"{path}/{rel}", dest)
        publish_folder(tmp, local)
    except OSError:
        return None
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    return local
