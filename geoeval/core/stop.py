"""A stop asked of this process by a signal (SIGTERM), recorded where the code that unwinds can
read it. The signal handler raises KeyboardInterrupt, as Ctrl-C does, but an interrupt that lands
inside a DuckDB query comes out as `RuntimeError("Query interrupted")`: without the record, a job
would count as crashed and a sweep would go on to its next job."""

from __future__ import annotations

_REQUESTED: list[str] = []


def request_stop(signal_name: str) -> None:
    _REQUESTED.append(signal_name)


def stop_requested() -> str | None:
    """The name of the last stop signal this process received, or None."""
    return _REQUESTED[-1] if _REQUESTED else None


def raise_if_stopped() -> None:
    """Unwind as an interrupt when a stop was asked (between a sweep's jobs)."""
    if _REQUESTED:
        raise KeyboardInterrupt


#: Why the job running in this process must start no more model calls (its results can no longer
#: be stored: a full disk, a damaged warehouse). Inspect swallows what its sample-end hook raises,
#: so the evaluation would go on paying for samples that are lost; every generation call checks it.
_HALTED: list[str] = []


def halt(reason: str) -> None:
    _HALTED.append(reason)


def halted() -> str | None:
    return _HALTED[-1] if _HALTED else None


def clear_halt() -> None:
    _HALTED.clear()
