"""The house's shape, read off the source: ``discovery`` is laid out in floors, one folder each, imported in one
direction, storage at the bottom, and the folders around it (the Spark drivers, the DAGs, the page) import only
downward (:data:`FOLDERS`).

A module's floor is the folder under ``discovery/`` that holds it; the only modules at the root are the public face
(:data:`PUBLIC_FACE`), each on a stated floor.  Every import of every module counts, at the top of a file or inside
a function (what runs when it runs); imports under ``if TYPE_CHECKING:`` do not run and do not count.  Importing
``a.b.c`` runs the packages ``a`` and ``a.b`` too, so those count for circles.  The floors, bottom to top (a module
may import its own floor and those below, never above):
"""
from __future__ import annotations

import ast
import glob
import os
from collections import defaultdict

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

#: Bottom to top, each a folder of ``discovery/``.  Storage knows nothing of the index; the ground floor (memory,
#: threads, value normalisation, the configuration) nothing of lakes; the lake readers and the index tables know
#: storage; the transforms (encoders, the lexicon of names, the two-table matcher, quantities, value segments) the
#: data; the query side (query tables, vectors, parameter checks) the transforms; the refresh's stage kit (context,
#: plans, per-table tasks) what stages share; the indexes and searches everything below; the refresh's publishing,
#: the search registry and the reports above them; the surfaces (batches, standing queries, acting on answers,
#: maintenance, the CLI, the server, the Spark launcher, Airflow connections) on top.
FLOORS = ["storage", "ground", "data", "transforms", "query", "stages", "indexes", "orchestration", "surfaces"]

#: The modules at the root of ``discovery/``: what users import by name, each on the floor it would have in a folder.
PUBLIC_FACE = {"discovery": "surfaces", "discovery.api": "surfaces", "discovery.client": "surfaces",
               "discovery.config": "ground"}
__doc__ += "".join(f"\n{i}. {name}" for i, name in enumerate(FLOORS))


def modules() -> dict[str, str]:
    """Every module of ``discovery`` by dotted name, with its file."""
    out = {}
    for folder, _, files in os.walk(os.path.join(ROOT, "discovery")):
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                dotted = os.path.relpath(path, ROOT)[:-3].replace(os.sep, ".")
                out[dotted.removesuffix(".__init__")] = path
    return out


def _type_checking(node: ast.AST) -> bool:
    test = getattr(node, "test", None)
    return isinstance(node, ast.If) and (getattr(test, "id", None) == "TYPE_CHECKING"
                                         or getattr(test, "attr", None) == "TYPE_CHECKING")


def _imports(tree: ast.AST):
    """Import statements that run (not under ``if TYPE_CHECKING:``)."""
    stack = [tree]
    while stack:
        node = stack.pop()
        if _type_checking(node):
            stack.extend(node.orelse)
            continue
        if isinstance(node, (ast.Import, ast.ImportFrom)):
            yield node
        stack.extend(ast.iter_child_nodes(node))


def imports(mods: dict[str, str]) -> dict[str, set[str]]:
    """Module -> the ``discovery`` modules it imports (the module named, or the one holding the name imported)."""
    graph: dict[str, set[str]] = defaultdict(set)
    for mod, path in mods.items():
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        with open(path, encoding="utf-8") as fh:
            tree = ast.parse(fh.read(), path)
        for node in _imports(tree):
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            else:
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base for a in node.names]
            for target in targets:
                while target not in mods and "." in target:
                    target = target.rpartition(".")[0]
                if target in mods and target != mod and target.startswith("discovery"):
                    graph[mod].add(target)
    return graph


def layer(mod: str) -> int:
    """The floor of ``mod``: the folder under ``discovery/`` that holds it, or the public face's stated floor."""
    if mod in PUBLIC_FACE:
        return FLOORS.index(PUBLIC_FACE[mod])
    floor = mod.split(".")[1] if mod.count(".") else ""
    assert floor in FLOORS, f"{mod} is on no floor: put it in one of the folders {FLOORS}"
    return FLOORS.index(floor)


def test_the_root_holds_the_floors_and_the_public_face_only():
    entries = {e.removesuffix(".py") for e in os.listdir(os.path.join(ROOT, "discovery"))
               if e != "__pycache__" and (e.endswith(".py") or os.path.isdir(os.path.join(ROOT, "discovery", e)))}
    face = {m.removeprefix("discovery.") for m in PUBLIC_FACE if m != "discovery"} | {"__init__"}
    assert entries == set(FLOORS) | face
    assert all(os.path.isfile(os.path.join(ROOT, "discovery", f, "__init__.py")) for f in FLOORS)


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out, counter = {}, {}, set(), [], [], [0]
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph.get(start, ()))))]
        index[start] = low[start] = counter[0]
        counter[0] += 1
        stack.append(start)
        on.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter[0]
                    counter[0] += 1
                    stack.append(child)
                    on.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    out.append(sorted(component))
    return out


def with_packages(graph: dict[str, set[str]], mods: dict[str, str]) -> dict[str, set[str]]:
    """Importing ``a.b.c`` runs ``a.b`` first: each import also reaches the packages above its target."""
    out = {m: set(targets) for m, targets in graph.items()}
    for mod, targets in graph.items():
        for target in targets:
            parts = target.split(".")
            for i in range(2, len(parts)):
                package = ".".join(parts[:i])
                if package in mods and not mod.startswith(package + ".") and package != mod:
                    out[mod].add(package)
    return out


def test_discovery_has_no_import_circle():
    mods = modules()
    assert circles(with_packages(imports(mods), mods)) == []


def test_no_module_imports_from_a_layer_above_its_own():
    mods = modules()
    upward = sorted(f"{mod} ({FLOORS[layer(mod)]}) imports {target} ({FLOORS[layer(target)]})"
                    for mod, targets in imports(mods).items() for target in targets if layer(target) > layer(mod))
    assert upward == []


def test_discovery_imports_nothing_from_the_other_folders():
    mods = modules()
    others = ("spark_jobs", "dags", "plugins", "benchmarks", "tests")
    found = []
    for mod, path in mods.items():
        with open(path, encoding="utf-8") as fh:
            for node in _imports(ast.parse(fh.read(), path)):
                names = [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                found += [f"{mod} imports {n}" for n in names if n.split(".")[0] in others and not node.level]
    assert found == []


def test_the_checks_see_a_circle_and_an_upward_import():
    """The graph and the layers are what the assertions above rely on: a made-up circle and a made-up upward import
    are found."""
    graph = {"discovery.storage.uri": {"discovery.data.store.warehouse"}, "discovery.data.store.warehouse":
             {"discovery.storage.uri"}}
    assert circles(graph) == [["discovery.data.store.warehouse", "discovery.storage.uri"]]
    assert layer("discovery.storage.uri") < layer("discovery.data.store.warehouse") < layer("discovery.api")
    assert layer("discovery.stages.plan") < layer("discovery.indexes.union.stage") \
        < layer("discovery.orchestration.refresh.runs")
    with pytest.raises(AssertionError, match="on no floor"):
        layer("discovery.loose")                                    # a module beside the floors
    mods = modules()
    graph = imports(mods)
    assert "discovery.storage" in graph["discovery.data.store.warehouse"]     # from ...storage import ...
    assert "discovery.transforms.encoders.base" in graph["discovery.transforms.encoders.registry"]  # from .base


#: The folders around ``discovery``, bottom to top: the Spark drivers; the DAGs and the page (side by side: neither
#: imports the other); the scripts, benchmarks and tests.  A module may import ``discovery``, its own folder and the
#: folders below its own, never one beside or above.
FOLDERS = [("spark_jobs",), ("dags", "plugins"), ("scripts", "benchmarks", "tests")]


def _folder_of_name() -> dict[str, str]:
    """Top-level import name -> the folder it comes from (``dags`` and ``plugins`` are on Airflow's path, so their
    files and packages import by their own names; ``benchmarks``, ``tests`` and ``scripts`` on the scripts' path)."""
    out = {"spark_jobs": "spark_jobs"}
    for folder in ("dags", "plugins", "scripts", "benchmarks", "tests"):
        for entry in os.listdir(os.path.join(ROOT, folder)):
            name = entry[:-3] if entry.endswith(".py") else entry
            if entry.endswith(".py") or os.path.isfile(os.path.join(ROOT, folder, entry, "__init__.py")):
                out.setdefault(name, folder)
    return out


def _folder_level(folder: str) -> int:
    return next(i for i, group in enumerate(FOLDERS) if folder in group)


def outer_upward(folder: str, source: str, names: dict[str, str]) -> list[str]:
    """The imports in ``source`` (a module of ``folder``) of a folder beside or above it."""
    found = []
    for node in _imports(ast.parse(source)):
        if isinstance(node, ast.ImportFrom) and node.level:
            continue
        for name in ([a.name for a in node.names] if isinstance(node, ast.Import) else [node.module or ""]):
            other = names.get(name.split(".")[0])
            if other is None or other == folder:
                continue
            if _folder_level(other) >= _folder_level(folder):
                found.append(f"imports {name} ({other})")
    return found


def test_the_drivers_the_dags_and_the_page_import_only_downward():
    names = _folder_of_name()
    found = []
    for folder in ("spark_jobs", "dags", "plugins"):
        for path in sorted(glob.glob(os.path.join(ROOT, folder, "**", "*.py"), recursive=True)):
            with open(path, encoding="utf-8") as fh:
                found += [f"{os.path.relpath(path, ROOT)} {f}" for f in outer_upward(folder, fh.read(), names)]
    assert found == []


def test_the_outer_check_sees_a_made_up_upward_import():
    names = _folder_of_name()
    assert outer_upward("spark_jobs", "from lakescout_ui.access import serving\n", names) == \
        ["imports lakescout_ui.access (plugins)"]
    assert outer_upward("spark_jobs", "import harness\n", names) == ["imports harness (benchmarks)"]
    assert outer_upward("plugins", "def f():\n    from query_batch import WAREHOUSE\n", names) == \
        ["imports query_batch (dags)"]
    assert outer_upward("plugins", "from spark_jobs.fanout import map_items\nimport discovery\n", names) == []
    assert outer_upward("dags", "from spark_jobs.query_batch import run_batch_on_master\n", names) == []
