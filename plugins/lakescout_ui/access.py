"""What every route of the app shares: the warehouse it reads and whether a user may run a search.

Reading needs only a login (the app's ``get_user`` dependency); a search commits to ``query_results`` as a
``query_batch`` run does, so it needs what triggering that DAG needs: the auth manager is asked
``is_authorized_dag(method="POST", access_entity=RUN)`` for ``query_batch``, the question Airflow's own trigger
route asks (without a team: the page is not part of a team's bundle).
"""
from __future__ import annotations

from airflow.api_fastapi.app import get_auth_manager
from airflow.api_fastapi.auth.managers.models.resource_details import DagAccessEntity, DagDetails
from discovery.config import default_warehouse
from discovery.store import Warehouse

BATCH_DAG = "query_batch"


def warehouse() -> Warehouse:
    return Warehouse(default_warehouse())


def may_search(user) -> bool:
    """Whether ``user`` may trigger the ``query_batch`` DAG, which is what a search from the app amounts to."""
    return get_auth_manager().is_authorized_dag(method="POST", access_entity=DagAccessEntity.RUN,
                                                details=DagDetails(id=BATCH_DAG), user=user)
