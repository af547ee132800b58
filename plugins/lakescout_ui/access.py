"""What every route of the app shares: the session it serves and whether a user may record a search.

The warehouse is served by one :class:`~discovery.surfaces.serving.Served` per process (its pinned snapshot, group
commit and memoised page shared by every request).  Reading, searches that record nothing included, needs only a login
(the app's ``get_user`` dependency); a search that records commits to ``query_results`` as a ``query_batch`` run does,
so it needs what triggering that DAG needs: the auth manager is asked
``is_authorized_dag(method="POST", access_entity=RUN)`` for ``query_batch``, the question Airflow's own trigger
route asks (without a team: the page is not part of a team's bundle).
"""
from __future__ import annotations

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from discovery.config import Config, default_warehouse, load_config
from discovery.data.store import Warehouse
from discovery.surfaces.serving import Served, served

BATCH_DAG = "query_batch"


def serving() -> Served:
    """The process's :class:`Served` of the page's warehouse, its session built by the first request with the
    api-server's configuration."""
    return served(default_warehouse(), load_config)


def warehouse() -> Warehouse:
    return serving().warehouse


def config() -> Config:
    """The configuration the page answers and writes with: its session's, resolved once per process."""
    return serving().session.config


def may_search(user) -> bool:
    """Whether ``user`` may trigger the ``query_batch`` DAG, which is what a search from the app amounts to."""
    return get_auth_manager().is_authorized_dag(method="POST", access_entity=DagAccessEntity.RUN,
                                                details=DagDetails(id=BATCH_DAG), user=user)
