"""The suite contract at registration: a suite that lacks a required member is refused with a
message naming the suite and the member; optional members take `Suite`'s typed defaults."""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from pydantic import BaseModel

from geoeval.core import registry
from geoeval.core.errors import GeoevalError
from geoeval.core.registry import Suite, get_suite, register_suite


class _Schema(BaseModel):
    name: str = "probe"


@pytest.fixture(autouse=True)
def _forget_probe_suites():
    """The registry is one per process: the suites these tests register must not outlive them."""
    yield
    for name in [n for n in registry._REG.suites if n.startswith("probe_")]:
        del registry._REG.suites[name]


class ProbeSuite(Suite):
    name = "probe_registry_suite"
    config_schema = _Schema
    env_schema = _Schema

    def build_env(self, spec):
        return SimpleNamespace()

    def build_samples(self, spec, env):
        return []

    def build_task(self, spec, env, samples):
        return None


def test_a_suite_subclass_gets_the_optional_members_defaults():
    register_suite(ProbeSuite)
    suite = get_suite("probe_registry_suite")
    assert isinstance(suite, Suite)
    assert (suite.uses_judges, suite.has_meta_eval, suite.has_score_answers) == (False, False, False)
    assert suite.scoring_version.startswith("code-")  # a hash of its scoring code (see below)
    assert suite.after_run(None, None, [], None) == []
    assert dict(suite.agent_versions) == {} and tuple(suite.report_dimensions) == ()


def test_a_suite_without_build_task_is_refused_naming_it():
    class NoTask(Suite):
        name = "probe_no_task"
        config_schema = _Schema
        env_schema = _Schema

        def build_env(self, spec):
            return None

        def build_samples(self, spec, env):
            return []

    with pytest.raises(GeoevalError, match=r"probe_no_task|NoTask") as err:
        register_suite(NoTask)
    assert "build_task" in str(err.value)
    with pytest.raises(GeoevalError):
        get_suite("probe_no_task")


def test_a_plain_class_suite_is_checked_too():
    class Plain:  # a plugin written without subclassing Suite
        name = "probe_plain"
        env_schema = _Schema

        def build_env(self, spec):
            return None

        def build_samples(self, spec, env):
            return []

        def build_task(self, spec, env, samples):
            return None

    with pytest.raises(GeoevalError, match="config_schema"):
        register_suite(Plain)

    Plain.config_schema = _Schema
    register_suite(Plain)
    assert get_suite("probe_plain").scoring_version.startswith("code-")  # the defaults are mixed in


def test_a_schema_must_be_a_pydantic_model():
    class BadSchema(ProbeSuite):
        name = "probe_bad_schema"
        config_schema = dict

    with pytest.raises(GeoevalError, match="config_schema"):
        register_suite(BadSchema)


def _suite_module(tmp_path, monkeypatch, name: str, metric_body: str, declared: str = ""):
    """A plugin package on disk whose suite and metric live in two modules."""
    import importlib
    import sys

    package = tmp_path / name
    package.mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "metrics.py").write_text(
        "from geoeval.core.registry import register_metric\n"
        f"@register_metric('probe_metric', suites=['{name}'])\n"
        f"def probe_metric(inp):\n    return {metric_body}\n"
    )
    (package / "suite.py").write_text(
        "from pydantic import BaseModel\n"
        "from geoeval.core.registry import Suite, register_suite\n"
        f"from {name} import metrics  # noqa: F401\n"
        "class S(BaseModel):\n    name: str = 'x'\n"
        f"class ProbeSuite(Suite):\n    name = '{name}'\n    config_schema = S\n    env_schema = S\n{declared}"
        "    def build_env(self, spec): return None\n"
        "    def build_samples(self, spec, env): return []\n"
        "    def build_task(self, spec, env, samples): return None\n"
        "register_suite(ProbeSuite)\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    for module in [m for m in sys.modules if m == name or m.startswith(name + ".")]:
        del sys.modules[module]
    importlib.invalidate_caches()
    importlib.import_module(f"{name}.suite")
    return get_suite(name).scoring_version


def test_a_plugin_scoring_version_follows_its_scoring_code(tmp_path, monkeypatch):
    """An edit of a plugin's metric re-scores by itself (a new version); the same code keeps it."""
    first = _suite_module(tmp_path / "a", monkeypatch, "probe_hashed", "1.0")
    same = _suite_module(tmp_path / "b", monkeypatch, "probe_hashed", "1.0")
    edited = _suite_module(tmp_path / "c", monkeypatch, "probe_hashed", "0.5")
    assert first == same and edited != first and edited.startswith("code-")
    declared = _suite_module(tmp_path / "d", monkeypatch, "probe_hashed", "0.5", '    scoring_version = "7"\n')
    assert declared == "7"  # a declared version wins


def test_the_built_in_suites_keep_their_declared_scoring_versions():
    from geoeval.suites.lifeplanner import SCORING_VERSION as LIFEPLANNER
    from geoeval.suites.mapsatisfy import SCORING_VERSION as MAPSATISFY
    from geoeval.suites.maptab import SCORING_VERSION as MAPTAB

    versions = {name: get_suite(name).scoring_version for name in ("maptab", "lifeplanner", "mapsatisfy")}
    assert versions == {"maptab": MAPTAB, "lifeplanner": LIFEPLANNER, "mapsatisfy": MAPSATISFY}


class TieredSuite(ProbeSuite):
    """A suite that declares only an answer reader and meta-eval tiers (the public API)."""

    name = "probe_tiered"

    def extract_answer(self, raw, protocol="robust", metadata=None):
        text = raw.strip().removeprefix("Answer:").strip() if protocol == "robust" else raw.strip()
        return text, "" if text else "empty answer"

    def meta_eval_tiers(self, spec, env, sample):
        return [
            registry.MetaEvalAnswer.reference(sample.target),
            registry.MetaEvalAnswer.defect("wrong", "nowhere", lowers=["probe_exact"]),
            registry.MetaEvalAnswer.worthless("empty", ""),
        ]


@registry.register_metric("probe_exact", suites=["probe_tiered"])
def _probe_exact(inp):
    return float(inp.answer == inp.target[0])


def test_extract_answer_gives_a_suite_the_scoring_entry_point_and_tiers_its_meta_eval():
    from inspect_ai.dataset import Sample

    from geoeval.core.analysis.meta_eval import ordering_report
    from geoeval.core.records import AnswerToScore

    register_suite(TieredSuite)
    suite = get_suite("probe_tiered")
    assert (suite.has_score_answers, suite.has_meta_eval) == (True, True)
    spec = SimpleNamespace(metrics=SimpleNamespace(metrics=["probe_exact"]), scoring=SimpleNamespace(protocol="robust"))
    samples = {"s1": Sample(id="s1", input="q", target="Oslo", metadata={"suite": "probe_tiered"})}
    scored = suite.score_answers(spec, None, samples, [AnswerToScore("s1", "Answer: Oslo"), AnswerToScore("s1", "")])
    assert [a.scores["probe_exact"] for a in scored] == [1.0, 0.0]
    assert scored[0].protocol_disagreement == {"probe_exact": {"robust": 1.0, "paper": 0.0}}
    assert scored[1].explanation == "empty answer"

    answers = suite.meta_eval_answers(spec, None, list(samples.values()))
    assert [(a.tier.name, a.tier.level, a.scores["probe_exact"]) for a in answers] == [
        ("reference", 0, 1.0),
        ("defect:wrong", 1, 0.0),
        ("empty", 2, 0.0),
    ]
    assert ordering_report(answers)["probe_exact"]["met"]


def test_a_suite_without_either_hook_says_so():
    register_suite(ProbeSuite)
    suite = get_suite("probe_registry_suite")
    with pytest.raises(GeoevalError, match="meta_eval_tiers"):
        suite.meta_eval_answers(None, None, [])
    with pytest.raises(GeoevalError, match="extract_answer"):
        suite.score_answers(None, None, {}, [])


def test_choosing_a_suite_imports_only_the_entry_points_named_after_it(monkeypatch):
    """The config check of one suite does not import the others (issue 27: 2.4 s of every run)."""
    imported: list[str] = []

    def entry(name: str, registers: str | None = None):
        def load():
            imported.append(name)
            if registers:
                register_suite(type("Found", (ProbeSuite,), {"name": registers}))

        return SimpleNamespace(name=name, value=f"pkg_{name}", load=load)

    found = [
        entry("builtin_agents"),
        entry("builtin_probe_alpha", "probe_alpha"),
        entry("builtin_probe_beta", "probe_beta"),
        entry("builtin_lifeplanner"),
        entry("builtin_mapsatisfy"),
        entry("builtin_maptab"),
        entry("other", "probe_gamma"),
    ]
    monkeypatch.setattr(registry, "_REG", registry._Registry())
    monkeypatch.setattr(registry, "entry_points", lambda group: found)
    monkeypatch.delenv("GEOEVAL_PLUGINS", raising=False)
    get_suite("probe_alpha")
    assert sorted(imported) == ["builtin_agents", "builtin_probe_alpha"]
    get_suite("probe_gamma")  # named otherwise: found by importing the rest
    assert sorted(imported) == sorted(e.name for e in found)  # each imported once
