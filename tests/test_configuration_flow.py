"""The warehouse and the configuration are resolved at the surfaces and passed down in a session object: inside
``discovery/`` only the surfaces call ``load_config()`` (the CLI, the API object ``discovery.api.Lakescout``, the DAG
tasks' :func:`discovery.surfaces.connections.task_session`, the configuration module itself, and a module's own
command-line entry under ``if __name__ == "__main__"``), and only the session objects and the surfaces build a
``Warehouse``; a service takes a :class:`discovery.data.store.Session` or an opened warehouse.  A new call inside a
service fails here."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "discovery"
#: Where a process starts its work: the CLI, the API object, the DAG tasks' session, the configuration module.
SURFACES = ("surfaces/cli/", "api.py", "config.py", "surfaces/connections.py")
#: The session objects, each opening its warehouse once: a unit of work's, a refresh stage's.
SESSIONS = ("data/store/session.py", "stages/context.py")
#: Airflow's entries: the refresh stage's operator (a DAG task, which reads its warehouse from the rendered
#: arguments) and the lake watcher's trigger (the triggerer's, which opens the warehouse its watcher checks).
TASK_ENTRIES = ("orchestration/refresh/stage_task.py", "orchestration/refresh/trigger.py")


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
        isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"


def _calls(tree: ast.Module, callee: str) -> int:
    """``callee(...)`` calls (by name or attribute) outside the module's ``if __name__ == "__main__"`` block."""
    count = 0
    for top in tree.body:
        if _is_main_guard(top):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                count += name == callee
    return count


def _calling(callee: str, allowed: tuple[str, ...]) -> dict[str, int]:
    out = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(allowed):
            continue
        n = _calls(ast.parse(path.read_text(encoding="utf-8")), callee)
        if n:
            out[rel] = n
    return out


def test_only_the_surfaces_read_the_configuration():
    assert _calling("load_config", SURFACES) == {}


def test_only_the_session_objects_and_the_surfaces_open_a_warehouse():
    assert _calling("Warehouse", SURFACES + SESSIONS + TASK_ENTRIES) == {}


def test_each_session_object_opens_its_warehouse_once():
    """A session object builds its warehouse in one place (a constructor or a property kept for its life)."""
    for rel in SESSIONS:
        assert _calls(ast.parse((ROOT / rel).read_text(encoding="utf-8")), "Warehouse") == 1, rel


def test_the_counter_sees_a_call_and_skips_the_command_line_entry():
    assert _calls(ast.parse("from x import load_config\ndef f():\n    return load_config().join\n"), "load_config") == 1
    assert _calls(ast.parse("import x\ncfg = x.load_config()\n"), "load_config") == 1
    assert _calls(ast.parse("if __name__ == '__main__':\n    print(load_config())\n"), "load_config") == 0
    assert _calls(ast.parse("from s import Warehouse\nwh = Warehouse('/w')\n"), "Warehouse") == 1
