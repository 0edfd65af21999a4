"""Checking a finished case: replay τ* and check that it shows the required evidence, that its legs
add up to the reference totals, and that the reference answer passes its own A, SC and RP checks."""

from __future__ import annotations

from typing import Any, cast

from geoeval.suites.lifeplanner.cases.case import Case, replay
from geoeval.suites.lifeplanner.scoring.answers import parse_answer
from geoeval.suites.lifeplanner.scoring.judging import attribute_accuracy_of, constraint_results, purity_checks
from geoeval.suites.lifeplanner.scoring.trajectory import ToolCallRecord, Trajectory, observed_items, route_legs
from geoeval.suites.lifeplanner.tools import arguments as tool_arguments
from geoeval.suites.lifeplanner.tools import city as city_handle


def trajectory_of(tau: list[dict[str, Any]], results: list[tool_arguments.ToolResult]) -> Trajectory:
    """The trajectory an agent that walks τ* would have (for checking the reference)."""

    traj = Trajectory()
    for step, res in zip(tau, results):
        traj.calls.append(ToolCallRecord(step["tool"], dict(step["arguments"]), res.failure_class, res.payload))
        traj.observed |= observed_items(step["tool"], res.payload)
        traj.legs.update(route_legs(step["tool"], res.payload))
    return traj


def check_case(city: city_handle.City, case: Case) -> list[str]:
    """What is wrong with a case (empty: nothing). Replays τ* and checks that it shows every
    required identity, that its routing legs add up to the reference totals along the reference
    order, and that the reference answer scores A = 1, meets every constraint (SC = 1) and is
    grounded in what τ* returns (RP = 1)."""
    problems: list[str] = []
    results = replay(city, case.tau_star)
    for step, res in zip(case.tau_star, results):
        if res.failure_class == "parameter_error":
            problems.append(f"τ* call {step['tool']} fails: {res.error}")
    traj = trajectory_of(case.tau_star, results)
    missing = [e for e in case.evidence if e not in traj.observed]
    if missing:
        problems.append(f"τ* does not show the required evidence {missing}")
    try:
        parsed = parse_answer(case.task, case.level, case.answer)
    except ValueError as exc:
        return problems + [f"the reference answer does not follow the schema: {exc}"]
    if case.task in ("routing", "trip"):
        # a route answer states both (`parse_answer` requires them)
        vehicle, mode = cast(str, parsed.vehicle), cast(str, parsed.mode)
        legs = [traj.leg(a, b, vehicle, mode) for a, b in zip(case.reference_order, case.reference_order[1:])]
        if any(leg is None for leg in legs):
            problems.append("τ* does not compute every leg of the reference order")
        else:
            computed = cast("list[tuple[float, float]]", legs)  # no None among them
            d = sum(leg[0] for leg in computed)
            t = sum(leg[1] for leg in computed)
            if (d, t) != (case.answer["total_distance_m"], case.answer["total_time_s"]):
                problems.append(
                    f"the legs of τ* add up to ({d}, {t}), not the reference totals "
                    f"({case.answer['total_distance_m']}, {case.answer['total_time_s']})"
                )
    if attribute_accuracy_of(city, case.to_dict(), parsed) != 1.0:
        problems.append("the reference answer fails its own attribute requirements (A < 1)")
    failed = [c["text"] for c, ok in zip(case.constraints, constraint_results(city, case.to_dict(), parsed)) if not ok]
    if failed:
        problems.append(f"the reference answer breaks constraints {failed}")
    impure = [name for name, ok in purity_checks(city, parsed, traj) if not ok]
    if impure:
        problems.append(f"the reference answer is not grounded in τ*: {impure}")
    return problems
