"""One backend object per kind of storage, chosen once from a location's scheme (:func:`backend`).

A backend is what differs between a local folder and object storage, and nothing else does: how to get a filesystem
handle (fsspec, for listing and streaming reads) and a pyarrow one, what delta-rs needs, how a whole tree is listed
(a folder at a time locally, one paged recursive LIST on S3), how a file is created only if absent and replaced whole
(the warehouse lease's two atomic steps), and how a folder written locally is put in place (a rename, or an upload
with its completion marker last) and brought back to a local folder a process can map.  The walk (numpy and
pyarrow) is imported when a tree is asked for, so naming a backend, as the CLI does before its first line, is
cheap.  Callers hold locations as
strings and ask :func:`backend`; they never test a scheme themselves (:mod:`.uri` holds the only tests).

Adding a storage is one :class:`Backend` subclass and one :func:`register` call (``tests/test_storage_backends.py``
shows it).  ``file`` (local paths), ``s3``/``s3a`` (:class:`S3Backend`: paged listing with boto3, conditional put)
and, through fsspec, ``gs``/``gcs``/``abfs``/``abfss``/``az`` are registered here.
"""
from __future__ import annotations

import os
import shutil
import tempfile
import threading
import uuid
from functools import lru_cache

from .credentials import Credentials, credentials
from .errors import explain
from .folders import MARKER, download_folder, publish_folder, upload_folder
from .uri import bucket, delta_uri, is_catalog, join, local_path, scheme

#: Keys asked for per LIST request of an S3 listing (the most S3 returns).
PAGE = 1000


class Backend:
    """Storage reached through fsspec (the default for a remote scheme)."""

    remote = True

    def __init__(self, protocol: str):
        self.protocol = protocol

    # -- handles ------------------------------------------------------------------------------------------------
    def filesystem(self, uri: str):
        """(fsspec filesystem, path within it)."""
        try:
            fs = _fsspec(self.protocol, credentials())
        except (ImportError, ValueError) as exc:
            raise ValueError(f"{uri!r}: no filesystem for {self.protocol}:// is installed ({exc})") from None
        return fs, str(uri).split("://", 1)[1].rstrip("/")

    def arrow_filesystem(self, uri: str):
        """(pyarrow filesystem, path): pyarrow's own filesystem for the scheme when it has one (it reads the same
        ``AWS_*`` variables and streams Parquet faster than a wrapper), else the fsspec one wrapped."""
        import pyarrow as pa
        import pyarrow.fs as pafs

        try:
            return pafs.FileSystem.from_uri(delta_uri(uri))
        except (pa.ArrowInvalid, pa.ArrowNotImplementedError):
            fs, path = self.filesystem(uri)
            return pafs.PyFileSystem(pafs.FSSpecHandler(fs)), path

    def delta_options(self, uri: str) -> dict[str, str] | None:
        """delta-rs ``storage_options`` (None: its defaults)."""
        return {}

    def on_disk(self, uri: str) -> str | None:
        """The absolute local path of ``uri`` when this machine reaches it as a file or folder (links, ``realpath``,
        memory maps apply), else None."""
        return None

    # -- listing ------------------------------------------------------------------------------------------------
    def check(self, uri: str, what: str) -> None:
        """Reach the bucket once (one LIST of its top level), raising :class:`~.errors.StorageError` with the bucket
        and the cause when that fails."""
        fs, _ = self.filesystem(uri)
        try:
            fs.ls(bucket(uri), detail=False)
        except Exception as exc:  # botocore, aiohttp and s3fs raise a dozen types for these causes
            raise explain(exc, uri, what) from None

    def pages(self, uri: str):
        """Pages of (key relative to ``uri``, size, mtime_ns) of every object under ``uri``: fsspec's ``find``, one
        page (folder markers, keys ending in ``/``, are not objects)."""
        from .walk import mtime_ns_of

        fs, base = self.filesystem(uri)
        page = []
        for full, info in fs.find(base, detail=True, withdirs=False).items():
            rel = full[len(base):].lstrip("/")
            if rel and info.get("type") != "directory":
                mtime = (info.get("mtime") or info.get("LastModified") or info.get("last_modified")
                         or info.get("updated"))
                page.append((rel, int(info.get("size") or 0), mtime_ns_of(mtime)))
        yield page

    def tree(self, root: str, check: bool = True):
        """The tree under ``root`` (:class:`.walk.Tree`), from one listing; FileNotFoundError when nothing is
        there."""
        from .walk import SortedTree

        if check:
            self.check(root, "lake")
        tree = SortedTree.of(self.pages(root))
        if not len(tree):
            fs, base = self.filesystem(root)
            if not fs.exists(base):
                raise FileNotFoundError(f"lake {root!r} does not exist")
        return tree

    def subtree(self, root: str, name: str):
        """A tree of ``root`` that holds the folder ``name`` and what is below it (one listing of that prefix)."""
        from .walk import SortedTree

        return SortedTree.of([(f"{name}/{key}", size, mtime) for key, size, mtime in page]
                             for page in self.pages(join(root, name)))

    # -- atomic files ---------------------------------------------------------------------------------------------
    def create_exclusive(self, uri: str, data: bytes) -> None:
        """Create the file at ``uri`` holding ``data``; FileExistsError when it exists (a conditional put,
        ``If-None-Match: *``, where the store has one)."""
        fs, path = self.filesystem(uri)
        with fs.open(path, "xb") as fh:
            fh.write(data)

    def replace(self, uri: str, data: bytes) -> None:
        """Replace the file at ``uri`` whole (one put: a reader never sees half of it)."""
        fs, path = self.filesystem(uri)
        with fs.open(path, "wb") as fh:
            fh.write(data)

    # -- folders --------------------------------------------------------------------------------------------------
    def write_folder(self, target: str, fill) -> None:
        """Put a folder at ``target`` whose files ``fill(local_folder)`` writes (:data:`MARKER` last): filled in a
        local temporary folder and uploaded, the marker last, so a reader that finds it finds every other file."""
        with tempfile.TemporaryDirectory(prefix="lakescout-folder-") as tmp:
            fill(tmp)
            upload_folder(self.filesystem(target), tmp)

    def complete(self, target: str) -> bool:
        fs, path = self.filesystem(target)
        return fs.exists(f"{path}/{MARKER}")

    def local_folder(self, root: str, target: str, name: str) -> str | None:
        """A local copy of the complete folder ``target`` (named ``name``, of the warehouse at ``root``), downloaded
        once into the local cache (:func:`.folders.download_folder`), or None."""
        return download_folder(self.filesystem(target), root, name)

    def remove_folder(self, uri: str) -> None:
        fs, path = self.filesystem(uri)
        fs.rm(path, recursive=True)

    def names(self, uri: str) -> list[str]:
        """Names directly under the folder ``uri``; FileNotFoundError when there is none."""
        fs, path = self.filesystem(uri)
        return sorted(entry.rstrip("/").rsplit("/", 1)[-1] for entry in fs.ls(path, detail=False, refresh=True))

    def temporary(self, name: str) -> bool:
        """Whether ``name`` under a folder is a local writer's temporary folder (remote writers upload whole)."""
        return False


class S3Backend(Backend):
    """S3 and S3-compatible servers: a paged listing (boto3's ``list_objects_v2``, :data:`PAGE` keys a request, so
    a listing holds at most a page as Python objects, where fsspec's ``find`` holds about 1 KB an object) and
    conditional put for commits and the lease."""

    def filesystem(self, uri: str):
        try:
            fs = _fsspec("s3", credentials())
        except (ImportError, ValueError) as exc:
            raise ValueError(f"{uri!r}: no filesystem for s3:// is installed ({exc})") from None
        return fs, str(uri).split("://", 1)[1].rstrip("/")

    def delta_options(self, uri: str) -> dict[str, str]:
        return credentials().delta_options()

    def pages(self, uri: str):
        from .walk import mtime_ns_of

        _, base = self.filesystem(uri)
        name, _, key = base.partition("/")
        prefix = f"{key.strip('/')}/" if key.strip("/") else ""
        try:
            for page in s3_client().get_paginator("list_objects_v2").paginate(
                    Bucket=name, Prefix=prefix, PaginationConfig={"PageSize": PAGE}):
                yield [(o["Key"][len(prefix):], int(o.get("Size") or 0), mtime_ns_of(o.get("LastModified")))
                       for o in page.get("Contents", ()) if not o["Key"].endswith("/")]
        except Exception as exc:  # botocore raises a dozen types for a missing bucket, refused keys, no endpoint
            raise explain(exc, uri, "lake") from None


class LocalBackend(Backend):
    """Local folders (and ``file://`` URIs): the walk reads a folder at a time, atomic steps are ``O_EXCL`` creates
    and renames."""

    remote = False

    def __init__(self):
        super().__init__("file")

    def filesystem(self, uri: str):
        import fsspec

        return fsspec.filesystem("file"), local_path(uri)

    def arrow_filesystem(self, uri: str):
        import pyarrow.fs as pafs

        return pafs.LocalFileSystem(), local_path(uri)

    def delta_options(self, uri: str) -> None:
        return None

    def on_disk(self, uri: str) -> str:
        return local_path(uri)

    def check(self, uri: str, what: str) -> None:
        """Nothing to reach: a local path's readers say what is missing."""

    def tree(self, root: str, check: bool = True):
        from .walk import LocalTree

        root = local_path(root)
        if not os.path.isdir(root):
            raise FileNotFoundError(f"lake folder {root!r} does not exist or is not a folder")
        return LocalTree(root)

    def subtree(self, root: str, name: str):
        from .walk import LocalTree

        return LocalTree(local_path(root))

    def create_exclusive(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)

    def replace(self, uri: str, data: bytes) -> None:
        path = local_path(uri)
        folder, name = os.path.split(path)
        tmp = os.path.join(folder, f".{name}.{os.getpid()}.{threading.get_ident()}.{uuid.uuid4().hex[:6]}")
        with open(tmp, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)

    def write_folder(self, target: str, fill) -> None:
        """Filled in a temporary folder beside ``target`` (so the rename is atomic) and renamed into place; a folder
        another writer put there first is kept (see :func:`.folders.publish_folder`)."""
        path = local_path(target)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        tmp = tempfile.mkdtemp(prefix=f".{os.path.basename(path)}.", dir=os.path.dirname(path))
        try:
            fill(tmp)
            publish_folder(tmp, path)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

    def complete(self, target: str) -> bool:
        return os.path.exists(os.path.join(local_path(target), MARKER))

    def local_folder(self, root: str, target: str, name: str) -> str | None:
        """The folder itself when it is complete."""
        return local_path(target) if self.complete(target) else None

    def remove_folder(self, uri: str) -> None:
        shutil.rmtree(local_path(uri))

    def temporary(self, name: str) -> bool:
        """A name starting with a dot: a writer's temporary folder, which its writer removes."""
        return name.startswith(".")


class CatalogLocation(ValueError):
    """An Iceberg catalog names tables, not files: it has no storage backend."""


#: Backends by scheme.
BACKENDS: dict[str, Backend] = {"file": LocalBackend(), "s3": S3Backend("s3"), "s3a": S3Backend("s3")}
for _proto, _fsspec_name in (("gs", "gs"), ("gcs", "gs"), ("abfs", "abfs"), ("abfss", "abfs"), ("az", "az")):
    BACKENDS[_proto] = Backend(_fsspec_name)


def register(name: str, implementation: Backend) -> None:
    """Make ``implementation`` the backend of the scheme ``name`` (``name://...`` locations)."""
    BACKENDS[name.lower()] = implementation


def backend(uri: str) -> Backend:
    """The backend of ``uri``'s scheme: ValueError naming the known ones for another scheme (an Iceberg catalog
    location, ``iceberg://``, is no storage: :class:`CatalogLocation`)."""
    proto = scheme(uri)
    if proto in BACKENDS:
        return BACKENDS[proto]
    if is_catalog(uri):
        raise CatalogLocation(f"{uri!r} is an Iceberg catalog, not a storage location")
    known = ", ".join(f"{s}://" for s in BACKENDS if s != "file")
    raise ValueError(f"{uri!r}: unknown storage scheme {proto!r} (known: local paths, {known})")


@lru_cache(maxsize=8)
def _fsspec(protocol: str, creds: Credentials):
    import fsspec

    kwargs = creds.s3fs_kwargs() if protocol == "s3" else {}
    # Listings must reflect the bucket now: a refresh decides its work from them.
    return fsspec.filesystem(protocol, use_listings_cache=False, skip_instance_cache=True, **kwargs)


def s3_client():
    """A boto3 S3 client with the endpoint, region and keys of :func:`~.credentials.credentials`, one per set of
    credentials, as the filesystems are: a client loads botocore's S3 model, tens of MB."""
    return _s3_client(credentials())


@lru_cache(maxsize=8)
def _s3_client(creds: Credentials):
    import boto3

    return boto3.session.Session().client("s3", **creds.boto_kwargs())
