"""Dependencies point one way: suites, agents and judges use the core; the core imports none of
them (not even inside a function). It finds them through the registry's entry points, as it
finds any plugin."""

from __future__ import annotations

import ast
from pathlib import Path

CORE = Path(__file__).resolve().parents[2] / "geoeval" / "core"
FORBIDDEN = ("geoeval.suites", "geoeval.agents", "geoeval.judges")


def _imports(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), filename=str(path))
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            found += [(node.lineno, f"{node.module}.{alias.name}") for alias in node.names]
    return found


def test_the_core_imports_no_suite_agent_or_judge():
    offending = [f"{path.name}:{line} imports {name}"
                 for path in sorted(CORE.glob("*.py")) for line, name in _imports(path)
                 if name.startswith(FORBIDDEN)]
    assert offending == []


def test_the_check_sees_a_function_local_import(tmp_path):
    sample = tmp_path / "m.py"
    sample.write_text("def f():\n    from geoeval.suites.maptab import suite\n")
    assert (2, "geoeval.suites.maptab") in _imports(sample)


PLUGINS = Path(__file__).resolve().parents[2] / "plugins"


def test_the_example_plugins_use_only_a_suites_public_api():
    """A plugin builds on `geoeval.suites.<suite>.api` and the core, never on a suite's internals."""
    offending = []
    for path in sorted(PLUGINS.rglob("*.py")):
        for line, name in _imports(path):
            parts = name.split(".")
            if name.startswith("geoeval.suites.") and len(parts) >= 4 and parts[3] != "api":
                offending.append(f"{path.relative_to(PLUGINS)}:{line} imports {name}")
    assert offending == []
