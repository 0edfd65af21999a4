"""`geoeval.api`, the public face of the core (issue 42): every name it promises resolves to the
core's own object, and importing it stays cheap (Inspect, pyarrow, matplotlib, DuckDB, Ray and
MLflow are loaded only when a name that needs them is used)."""

from __future__ import annotations

import importlib
import subprocess
import sys

import geoeval.api as api

HEAVY = ("inspect_ai", "matplotlib", "pyarrow", "duckdb", "ray", "mlflow", "pandas")


def test_every_public_name_resolves_once_and_is_the_cores_object():
    assert len(api.__all__) == len(set(api.__all__)) >= 90
    missing = [name for name in api.__all__ if not hasattr(api, name)]
    assert missing == []
    for name, module in api._LAZY.items():  # the lazy ones are the very objects of their modules
        assert name in api.__all__ and getattr(api, name) is getattr(importlib.import_module(module), name)
    assert set(dir(api)) >= set(api.__all__)


def test_an_unknown_name_is_an_attribute_error():
    try:
        api.no_such_name  # noqa: B018
    except AttributeError as exc:
        assert "geoeval.api" in str(exc) and "no_such_name" in str(exc)
    else:
        raise AssertionError("no AttributeError")


def test_importing_the_api_imports_no_heavy_library():
    probe = f"import sys, geoeval.api; print(sorted(m for m in {HEAVY!r} if m in sys.modules))"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "[]"
    lazy = "import sys; from geoeval.api import MetricInput; print('inspect_ai' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", lazy], capture_output=True, text=True, timeout=300, check=True)
    assert out.stdout.strip() == "True"  # the check above can see a heavy import
