"""Airflow plugin: the Lakescout FastAPI app under ``/lakescout`` and a "Lake discovery" entry in the UI nav.

The app lives in the ``lakescout_ui`` package next to this file (excluded from plugin discovery by
``.airflowignore``, so only this module is loaded as a plugin); Airflow puts the plugins folder on ``sys.path``.
"""
from __future__ import annotations

from airflow.plugins_manager import AirflowPlugin

from lakescout_ui.app import WarmUp, create_app


class LakescoutPlugin(AirflowPlugin):
    name = "lakescout"
    fastapi_apps = [{"app": create_app(), "url_prefix": "/lakescout", "name": "Lakescout"}]
    # the served snapshot is pinned where the app is served, not in every Airflow process (lakescout_ui.app.WarmUp)
    fastapi_root_middlewares = [{"middleware": WarmUp, "args": [], "kwargs": {}, "name": "lakescout_warm_up"}]
    external_views = [{"name": "Lake discovery", "href": "/lakescout/", "destination": "nav",
                       "url_route": "lake-discovery"}]
