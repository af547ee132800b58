"""Configuration is resolved at the surfaces and passed down: inside ``discovery/`` only the surfaces call
``load_config()`` (the CLI, the session object ``discovery.api.Lakescout``, the configuration module itself, and a
module's own command-line entry under ``if __name__ == "__main__"``), and the fallbacks not yet threaded through are
named here, so a new call inside a service fails this test and a removed fallback must be struck from the list."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "discovery"
SURFACES = ("cli/", "api.py", "config.py")
#: Services that still fall back to this process's configuration when a caller passes none (issue: the session
#: object threads it through batches, standing queries, serving and the refresh's lease).
FALLBACKS = {"searches/kind.py", "refresh/runs.py"}


def _is_main_guard(node: ast.stmt) -> bool:
    return isinstance(node, ast.If) and isinstance(node.test, ast.Compare) and \
        isinstance(node.test.left, ast.Name) and node.test.left.id == "__name__"


def _calls(tree: ast.Module) -> int:
    """``load_config(...)`` calls outside the module's ``if __name__ == "__main__"`` block."""
    count = 0
    for top in tree.body:
        if _is_main_guard(top):
            continue
        for node in ast.walk(top):
            if isinstance(node, ast.Call):
                name = node.func.id if isinstance(node.func, ast.Name) else getattr(node.func, "attr", None)
                count += name == "load_config"
    return count


def test_only_the_surfaces_and_the_named_fallbacks_read_the_configuration():
    calling = {}
    for path in sorted(ROOT.rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        if rel.startswith(SURFACES):
            continue
        n = _calls(ast.parse(path.read_text(encoding="utf-8")))
        if n:
            calling[rel] = n
    assert set(calling) == FALLBACKS, calling
    assert all(n == 1 for n in calling.values()), calling


def test_the_counter_sees_a_call_and_skips_the_command_line_entry():
    assert _calls(ast.parse("from x import load_config\ndef f():\n    return load_config().join\n")) == 1
    assert _calls(ast.parse("import x\ncfg = x.load_config()\n")) == 1
    assert _calls(ast.parse("if __name__ == '__main__':\n    print(load_config())\n")) == 0
