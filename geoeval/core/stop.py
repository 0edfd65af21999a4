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
