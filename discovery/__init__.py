"""Lakescout discovery: union, semantic-join and n-ary-join search over a Delta index of a data lake."""
__version__ = "0.1.0"


def open(warehouse: str, snapshot_id: int | None = None):  # noqa: A001 - the public name mirrors the CLI's verb
    """Open a warehouse at its latest (or the given) snapshot; see :class:`discovery.api.Lakescout`."""
    from .allocator import use_query_pool

    use_query_pool()
    from .api import open_warehouse

    return open_warehouse(warehouse, snapshot_id)


def connect(url: str, token: str, timeout: float = 300.0):
    """The same methods as :func:`open`, answered by a Lakescout server (the api-server's base URL and an Airflow
    JWT); see :class:`discovery.client.RemoteLakescout`."""
    from .client import connect as _connect

    return _connect(url, token, timeout)
