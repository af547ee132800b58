"""Lakescout discovery: union, semantic-join and n-ary-join search over a Delta index of a data lake."""
from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from .api import ConfigLike, Lakescout
    from .client import RemoteLakescout

__version__ = "0.1.0"


def open(warehouse: str, snapshot_id: int | None = None,  # noqa: A001 - the public name mirrors the CLI's verb
         config: ConfigLike = None) -> Lakescout:
    """Open a warehouse at its latest (or the given) snapshot, with ``config`` (a :class:`discovery.config.Config`,
    a TOML file's path, or None: the file :func:`discovery.config.load_config` finds) resolved once and kept for
    every search and write of the object; see :class:`discovery.api.Lakescout`."""
    from .ground.allocator import use_query_pool

    use_query_pool()
    from .api import open_warehouse

    return open_warehouse(warehouse, snapshot_id, config)


def connect(url: str, token: str, timeout: float = 300.0) -> RemoteLakescout:
    """The same methods as :func:`open`, answered by a Lakescout server (the api-server's base URL and an Airflow
    JWT); see :class:`discovery.client.RemoteLakescout`."""
    from .client import connect as _connect

    return _connect(url, token, timeout)
