"""The "Lake discovery" page of the Airflow UI: a FastAPI app (server-rendered HTML) over the Lakescout warehouse."""
