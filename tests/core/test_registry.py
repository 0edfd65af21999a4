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
    assert (suite.scoring_version, suite.uses_judges, suite.has_meta_eval) == ("1", False, False)
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
    assert get_suite("probe_plain").scoring_version == "1"  # the defaults are mixed in


def test_a_schema_must_be_a_pydantic_model():
    class BadSchema(ProbeSuite):
        name = "probe_bad_schema"
        config_schema = dict

    with pytest.raises(GeoevalError, match="config_schema"):
        register_suite(BadSchema)
