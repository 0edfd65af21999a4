"""What keeps one test's trouble inside that test (a pytest plugin, loaded by tests/conftest.py).

A test session once stopped with INTERNALERROR and exit status 3, naming no test, on a machine at
load 30. Two things can end a session that way, and both are closed here:

- an exception that leaves a test's protocol outside pytest's own guard (the call phase is
  guarded; what runs around it, making and logging the report, is not): a signal handler that
  raises (a hang guard's alarm, Ray's SIGTERM handler, which calls `sys.exit`) while pytest
  itself runs. `pytest_runtest_protocol` below reports any such exception as a failure of the
  test it arrived in, and the session goes on;
- a test that leaves a signal armed or a handler changed, so that it fires in a later test or in
  pytest's own code: `signals_left_as_found` puts them back after every test and fails the test
  that left them, naming what it left.

Tests never limit wall time (a busy machine slows the clock, not the work): a hang guard counts
this process's CPU time (`tests.conftest.deadline`), and speed is measured in `bench/`.
"""

from __future__ import annotations

import signal
import traceback
from collections.abc import Iterator

import pytest
from _pytest.reports import TestReport

#: The signals a test may arm or take over: the timers' and the stop signals.
WATCHED_SIGNALS = (signal.SIGALRM, signal.SIGVTALRM, signal.SIGPROF, signal.SIGTERM, signal.SIGINT)
TIMERS = {
    "ITIMER_REAL (signal.alarm)": signal.ITIMER_REAL,
    "ITIMER_VIRTUAL": signal.ITIMER_VIRTUAL,
    "ITIMER_PROF": signal.ITIMER_PROF,
}


@pytest.fixture(autouse=True)
def signals_left_as_found() -> Iterator[None]:
    """After each test (and its fixtures' teardown): no timer armed, every watched handler as it
    was. What a test left is put back, and the test fails with what it left."""
    before = {sig: signal.getsignal(sig) for sig in WATCHED_SIGNALS}
    yield
    left = []
    for name, timer in TIMERS.items():
        remaining, _interval = signal.getitimer(timer)
        if remaining:
            signal.setitimer(timer, 0)
            left.append(f"{name} armed ({remaining:.1f} s to go)")
    for sig, handler in before.items():
        now = signal.getsignal(sig)
        if now != handler and handler is not None:  # None: set outside Python, nothing to put back
            signal.signal(sig, handler)
            left.append(f"the {sig.name} handler changed to {now!r}")
    if left:
        pytest.fail(
            "this test left " + "; ".join(left) + " (put back now: it would have fired in another test or in pytest)",
            pytrace=False,
        )


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    """Runs pytest's protocol for `item` (setup, call, teardown, their reports); an exception that
    escapes it (other than Ctrl-C and `pytest.exit`) is that test's failure, not the session's
    INTERNALERROR."""
    try:
        return (yield)
    except (KeyboardInterrupt, pytest.exit.Exception):
        raise
    except BaseException as exc:  # noqa: BLE001 -- reported as the test's failure below
        _report_escaped(item, nextitem, exc)
        return True


def _report_escaped(item: pytest.Item, nextitem: pytest.Item | None, exc: BaseException) -> None:
    text = "".join(traceback.format_exception(type(exc), exc, exc.__traceback__))
    report = TestReport(
        item.nodeid,
        item.location,
        {name: 1 for name in item.keywords},
        "failed",
        f"{type(exc).__name__} escaped the test's protocol (raised outside the test's own code, "
        f"e.g. by a signal handler while pytest reported it):\n{text}",
        "call",
    )
    item.ihook.pytest_runtest_logreport(report=report)
    setup_state = getattr(item.session, "_setupstate", None)  # pytest's own: tear down what the test set up
    if setup_state is not None:
        try:
            setup_state.teardown_exact(nextitem)
        except BaseException as teardown_exc:  # noqa: BLE001 -- shown, the session goes on
            print(f"\n{item.nodeid}: teardown after the escaped exception failed too: {teardown_exc!r}")
    item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)
