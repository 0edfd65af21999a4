"""A plugin written against the previous release's names still loads for one release (issue 42):
`from geoeval.core.config import Strict` and `import geoeval.core.meta_eval` work, each with a
deprecation warning that names the new import (docs/plugins.md, "Moved names"). The plugin
(`previous_release/geoeval_previous_plugin`) is loaded as a user's would be, in a fresh process
through `GEOEVAL_PLUGINS`, with Python's default warning filters."""

from __future__ import annotations

import importlib
import os
import re
import subprocess
import sys
import textwrap
import warnings
from pathlib import Path

import pytest

from geoeval.core.errors import GeoevalDeprecationWarning

PREVIOUS = Path(__file__).resolve().parent / "previous_release"

_LOAD = textwrap.dedent(
    """
    from types import SimpleNamespace

    from geoeval.api import get_suite
    from geoeval.core.registry import get_metric
    from geoeval.core.scoring import MetricInput

    suite = get_suite("previous_station_lines")
    spec = SimpleNamespace(seed=0, env=SimpleNamespace(n_maps=1), suite=SimpleNamespace(n_questions=3))
    samples = suite.build_samples(spec, suite.build_env(spec))
    metric = get_metric("line_set_acc", "previous_station_lines").fn
    scores = [metric(MetricInput(answer=s.target, raw=s.target, target=[s.target])) for s in samples]
    print("samples", len(samples), "scores", scores, "version", suite.scoring_version[:5])
    """
)


def test_a_plugin_of_the_previous_release_loads_with_deprecation_warnings_naming_the_new_imports():
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(PREVIOUS), os.environ.get("PYTHONPATH", "")]),
        "GEOEVAL_PLUGINS": "geoeval_previous_plugin",
        "PYTHONWARNINGS": "",  # Python's default filters, as a user's shell has them
    }
    proc = subprocess.run(
        [sys.executable, "-c", _LOAD], env=env, capture_output=True, text=True, timeout=300, cwd=PREVIOUS
    )
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "samples 3 scores [1.0, 1.0, 1.0] version code-" in proc.stdout
    # shown by default (a plain DeprecationWarning outside __main__ is not), pointing at the plugin's line
    assert re.search(
        r"geoeval_previous_plugin/__init__.py:\d+: GeoevalDeprecationWarning: `geoeval.core.config.Strict`", proc.stderr
    )
    assert "use `from geoeval.api import Strict`" in proc.stderr
    assert re.search(
        r"geoeval_previous_plugin/__init__.py:\d+: GeoevalDeprecationWarning: `geoeval.core.meta_eval`", proc.stderr
    )


@pytest.mark.parametrize(
    ("name", "new"),
    [
        ("Strict", "geoeval.api"),
        ("RunSpec", "geoeval.api"),
        ("validate_config", "geoeval.api"),
        ("to_container", "geoeval.core.config.schema"),
    ],
)
def test_each_name_of_the_old_config_module_warns_and_is_the_moved_object(name, new):
    import geoeval.core.config as config

    with pytest.warns(DeprecationWarning, match=rf"use `from {new} import {name}`"):
        value = getattr(config, name)
    assert value is getattr(importlib.import_module(new), name)


def test_the_config_packages_own_names_and_submodules_do_not_warn():
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        from geoeval.core.config import precheck, schema

        assert schema.Strict is not None and precheck is not None
    import geoeval.core.config as config

    with pytest.raises(AttributeError, match="has no attribute 'Nope'"):
        config.Nope  # noqa: B018


def test_the_old_meta_eval_module_warns_on_import_and_has_its_names():
    sys.modules.pop("geoeval.core.meta_eval", None)
    with pytest.warns(GeoevalDeprecationWarning, match=r"geoeval.core.meta_eval.*geoeval\.api"):
        old = importlib.import_module("geoeval.core.meta_eval")
    from geoeval.api import DEFECT, REFERENCE, WORTHLESS, ScoredAnswer, Tier
    from geoeval.core.analysis.meta_eval import ordering_report

    assert (old.REFERENCE, old.DEFECT, old.WORTHLESS) == (REFERENCE, DEFECT, WORTHLESS)
    assert old.Tier is Tier and old.ScoredAnswer is ScoredAnswer and old.ordering_report is ordering_report
