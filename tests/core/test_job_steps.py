"""The steps a job takes that decide something by themselves: the run's status from what the
warehouse holds (`evaluate.run_status`) and the budget's start-at-a-time loop
(`cost.budget.run_within_budget`), on hand-made inputs."""

from __future__ import annotations

from types import SimpleNamespace

from geoeval.core.cost.budget import BUDGET_EXCEEDED, run_within_budget
from geoeval.core.run.evaluate import run_status


def _results(n: int, errors: int = 0) -> list:
    return [SimpleNamespace(status="error" if i < errors else "scored") for i in range(n)]


def _counts(n: int, errors: int) -> dict[str, float]:
    return {"n_samples": float(n), "n_scored": float(n - errors), "n_errors": float(errors)}


def test_the_run_status_says_what_the_warehouse_holds():
    assert run_status(4, _results(4), _counts(4, 0), None, False) == ("finished", None)
    status, why = run_status(4, _results(3), _counts(3, 0), None, False)
    assert status == "incomplete (1 missing)" and why == "1 sample(s) missing from the warehouse"
    # errors: counted against fail_on_error (a share, a count, or any)
    assert run_status(10, _results(10, 2), _counts(10, 2), None, 0.25)[0] == "finished"  # 20 % <= 25 %
    status, why = run_status(10, _results(10, 3), _counts(10, 3), None, 0.25)
    assert status == "failed" and why == "3 of 10 sample(s) errored, past fail_on_error=0.25"
    assert run_status(10, _results(10, 1), _counts(10, 1), None, True)[0] == "failed"
    assert run_status(10, _results(10, 2), _counts(10, 2), None, 2)[0] == "finished"  # not more than 2
    # a budget stop wins over what is missing, and says how to go on
    status, why = run_status(8, _results(2), _counts(2, 0), "budget.usd=$0.5: $0.6 spent", False)
    assert status == BUDGET_EXCEEDED.lower()
    assert why.startswith(f"{BUDGET_EXCEEDED}: budget.usd=$0.5") and "6 sample(s) not started" in why


class _Guard:
    """Admits at most `room` samples in all, as many at a time as fit."""

    def __init__(self, room: int):
        self.room, self.asked, self.reason = room, [], "budget.tokens=100: 100 spent"

    def admit(self, candidates):
        self.asked.append(list(candidates))
        n = min(len(candidates), self.room)
        self.room -= n
        return n


def test_the_budget_starts_what_fits_and_stops_before_the_rest(capsys):
    guard = _Guard(room=5)
    ran: list[list[int]] = []

    def run_batch(batch):
        ran.append(batch)
        return [f"log{len(ran)}"]

    logs, why = run_within_budget(guard, list(range(7)), 3, pending=lambda s: (1, 0), run_batch=run_batch)
    assert ran == [[0, 1, 2], [3, 4]] and logs == ["log1", "log2"]
    assert why == guard.reason and "no new sample starts: budget.tokens=100" in capsys.readouterr().err
    assert [len(c) for c in guard.asked] == [3, 3, 2]  # the next `size` samples each time
    logs, why = run_within_budget(_Guard(room=9), list(range(7)), 3, pending=lambda s: (1, 0), run_batch=run_batch)
    assert why is None and len(logs) == 3  # all of it fitted: 3 starts
