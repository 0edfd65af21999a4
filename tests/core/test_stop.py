"""A stop asked by SIGTERM is a stop however it unwinds: DuckDB turns an interrupt that lands in a
query into `RuntimeError("Query interrupted")`, which must not count as a crashed job."""

from __future__ import annotations

import pytest

from geoeval.core import stop
from geoeval.core.tracking.values import status_for_exception


@pytest.fixture(autouse=True)
def _no_stop_left(monkeypatch):
    monkeypatch.setattr(stop, "_REQUESTED", [])


def test_an_error_after_a_stop_ends_the_run_killed_not_failed():
    assert status_for_exception(RuntimeError("Query interrupted")) == "FAILED"
    stop.request_stop("SIGTERM")
    assert status_for_exception(RuntimeError("Query interrupted")) == "KILLED"
    with pytest.raises(KeyboardInterrupt):
        stop.raise_if_stopped()  # a sweep starts no other job


def test_the_command_reports_a_stop_that_a_library_turned_into_another_error(monkeypatch, capsys):
    import geoeval.cli.app as app
    from geoeval.cli import main as cli

    def interrupted_query() -> None:
        stop.request_stop("SIGTERM")
        raise RuntimeError("Query interrupted")

    monkeypatch.setattr("geoeval.core.config.precheck.precheck", lambda args: list(args))
    monkeypatch.setattr(app, "hydra_main", interrupted_query)
    assert cli.main(["model=oracle"]) == 143
    assert "geoeval: stopped by SIGTERM" in capsys.readouterr().err


def test_without_a_stop_an_error_is_raised_as_it_is(monkeypatch):
    import geoeval.cli.app as app
    from geoeval.cli import main as cli

    def crash() -> None:
        raise RuntimeError("a real bug")

    monkeypatch.setattr("geoeval.core.config.precheck.precheck", lambda args: list(args))
    monkeypatch.setattr(app, "hydra_main", crash)
    with pytest.raises(RuntimeError, match="a real bug"):
        cli.main(["model=oracle"])
