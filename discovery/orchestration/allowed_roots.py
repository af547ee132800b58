"""Where a DAG run may point Lakescout: the deployment's own lake and warehouse, or folders under roots it allows.

The ``lake`` and ``warehouse`` params of the DAGs are typed by whoever triggers a run, and Airflow's permission to
trigger a DAG is not a permission on files: unchecked, a run could index any folder the worker can read (a home
directory, ``/etc``) into a warehouse whose values the page then serves, or write a warehouse anywhere the worker can
write.  A run's location must therefore be the deployment's own (``LAKESCOUT_LAKE`` / ``LAKESCOUT_WAREHOUSE``, the
params' defaults) or lie under one of the roots in ``LAKESCOUT_ALLOWED_ROOTS`` (separated by commas: a colon, the
path separator, is part of every URI), which a deployment sets to serve several lakes or warehouses from one Airflow.

Local paths are compared after resolving symbolic links and ``..``, so neither leads out of an allowed root; a URI
(``s3://bucket/lake``) must equal an allowed one or continue it after a ``/``.
"""
from __future__ import annotations

import os

from .. import storage

#: Environment variable listing extra roots under which DAG runs may place lakes and warehouses.
ALLOWED_ROOTS = "LAKESCOUT_ALLOWED_ROOTS"


class LocationError(ValueError):
    """A DAG run's lake or warehouse outside the locations the deployment allows; ``param`` names it."""

    def __init__(self, param: str, message: str):
        super().__init__(message)
        self.param = param


def _canonical(location: str) -> str:
    local = storage.on_disk(os.path.expanduser(location))
    return os.path.realpath(local) if local else storage.normalize(location)


def _within(location: str, root: str) -> bool:
    if location == root:
        return True
    return location.startswith(root if root.endswith("/") else root + "/")


def check_location(param: str, value, default: str) -> str:
    """``value`` when a DAG run may use it as its ``param`` (``lake`` or ``warehouse``), else a
    :class:`LocationError` that names the param and where it may point (the value itself is not echoed back)."""
    if not isinstance(value, str) or not value.strip():
        raise LocationError(param, f"param '{param}': expected a folder or URI")
    roots = [default] + [r.strip() for r in os.environ.get(ALLOWED_ROOTS, "").split(",") if r.strip()]
    location = _canonical(value)
    if any(_within(location, _canonical(root)) for root in roots):
        return value
    raise LocationError(param, f"param '{param}': a run may use only the configured {param} or a location under "
                         f"{ALLOWED_ROOTS}; the one given is outside them")
