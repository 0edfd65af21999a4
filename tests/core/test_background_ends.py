"""The MLflow ends of a sweep's jobs on one background thread (`tracking/background_ends.py`):
sent one at a time in the order submitted, each submitter told how its end went before
`wait_all` returns, a failure carried to the submitter, and `wait_for` waiting only for the
end of its own run."""

from __future__ import annotations

import threading
from pathlib import Path

import pytest

from geoeval.core.tracking import background_ends


@pytest.fixture(autouse=True)
def _nothing_left_in_flight():
    yield
    assert background_ends.wait_all(timeout_s=10)


def test_ends_are_sent_in_order_and_told_before_wait_all_returns():
    sent: list[str] = []
    told: list[tuple[str, Path | None, BaseException | None]] = []
    gate = threading.Event()

    def send(name: str, kept: Path | None):
        def run() -> Path | None:
            gate.wait(10)
            sent.append(name)
            return kept

        return run

    def then(name: str):
        return lambda kept, error: told.append((name, kept, error))

    background_ends.submit("a", send("a", None), then("a"))
    background_ends.submit("b", send("b", Path("kept.json")), then("b"))
    assert background_ends.in_flight() == 2 and sent == []  # the submitter went on
    assert not background_ends.wait_all(timeout_s=0.05)
    gate.set()
    assert background_ends.wait_all(timeout_s=10)
    assert sent == ["a", "b"]
    assert told == [("a", None, None), ("b", Path("kept.json"), None)]  # told before wait_all returned
    assert background_ends.in_flight() == 0


def test_a_failed_end_is_told_with_its_error():
    told: list[BaseException | None] = []

    def broken() -> Path | None:
        raise ValueError("the store refused")

    future = background_ends.submit("x", broken, lambda kept, error: told.append(error))
    assert background_ends.wait_all(timeout_s=10)
    assert isinstance(told[0], ValueError) and isinstance(future.exception(), ValueError)


def test_wait_for_waits_for_its_own_run_only():
    first, second = threading.Event(), threading.Event()
    background_ends.submit("run-1", lambda: first.wait(10) and None, lambda kept, error: None)
    background_ends.submit("run-2", lambda: second.wait(10) and None, lambda kept, error: None)
    background_ends.wait_for("run-3")  # nothing of its own in flight: returns at once
    waiter = threading.Thread(target=background_ends.wait_for, args=("run-1",))
    waiter.start()
    waiter.join(0.1)
    assert waiter.is_alive()  # run-1's end is not sent yet
    first.set()
    waiter.join(10)
    assert not waiter.is_alive()  # sent: run-2's end, still in flight, is not waited for
    assert background_ends.in_flight() == 1
    second.set()


def test_an_end_waits_while_the_driver_prepares_a_job():
    started = threading.Event()
    background_ends.driver_busy()  # the next job's environment, samples and MLflow run
    background_ends.submit("run-1", lambda: started.set() or None, lambda kept, error: None)
    assert not started.wait(0.2)  # it would contend with the job's own MLflow run for the store
    background_ends.driver_waits()  # the job evaluates: the end goes
    assert started.wait(10)
