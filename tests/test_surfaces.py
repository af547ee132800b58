"""The session of work is built at the surfaces and handed down (``discovery/store/session.py``): no service opens a
warehouse from a location or reads the configuration files by itself.

Counted off the source: every ``Warehouse(...)`` / ``KeptOpenWarehouse(...)`` call and every ``load_config(...)``
call in ``discovery/``, ``spark_jobs/``, ``dags/`` and ``plugins/``.  The session objects build the warehouse
(:class:`discovery.store.Session`, a refresh's :class:`discovery.refresh.context.StageContext`); the surfaces build
the session from what they were given.
"""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGES = ("discovery", "spark_jobs", "dags", "plugins")

#: Where a process of work starts: the CLI, the API object, the served JSON API and page, Airflow's connections,
#: DAGs, operators and triggers, the Spark drivers, and the ``make venv`` warm-up command.
SURFACES = ("discovery/cli/", "discovery/api.py", "discovery/serving.py", "discovery/connections.py",
            "discovery/refresh/stage_task.py", "discovery/refresh/trigger.py", "discovery/join/warmup.py",
            "spark_jobs/", "dags/", "plugins/")
#: The objects that carry a session: they open the warehouse they were given a location of.
SESSION_OBJECTS = ("discovery/store/", "discovery/refresh/context.py")
#: ``load_config`` lives here, and the default warehouse it resolves for the surfaces that have none given.
CONFIGURATION = ("discovery/config.py",)


def calls(names: set[str], root: Path = ROOT) -> list[str]:
    """``path:line name`` of every call of a function or class named in ``names`` under ``root``."""
    found = []
    for package in PACKAGES:
        for path in sorted((root / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(), str(path))):
                if isinstance(node, ast.Call):
                    func = node.func
                    name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                    if name in names:
                        found.append(f"{path.relative_to(root).as_posix()}:{node.lineno} {name}")
    return found


def outside(found: list[str], allowed: tuple[str, ...]) -> list[str]:
    return [f for f in found if not f.split(":")[0].startswith(allowed)]


def test_no_service_opens_a_warehouse_from_a_location():
    found = calls({"Warehouse", "KeptOpenWarehouse"})
    assert any(f.startswith("discovery/store/session.py") for f in found)  # the count sees the one that must be
    assert outside(found, SURFACES + SESSION_OBJECTS) == []


def test_no_service_reads_the_configuration_files():
    found = calls({"load_config"})
    assert any(f.startswith("discovery/cli/") for f in found)
    assert outside(found, SURFACES + CONFIGURATION) == []


def test_the_count_finds_a_made_up_construction_in_a_service(tmp_path):
    """The counter is not blind: a service module that opens a warehouse is named."""
    service = tmp_path / "discovery" / "union"
    service.mkdir(parents=True)
    (service / "made_up.py").write_text("from ..store import Warehouse\n\ndef f(root):\n    return Warehouse(root)\n")
    found = outside(calls({"Warehouse"}, tmp_path), SURFACES + SESSION_OBJECTS)
    assert found == ["discovery/union/made_up.py:4 Warehouse"]
