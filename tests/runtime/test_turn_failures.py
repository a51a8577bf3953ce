"""An exception while a finished turn is handled is a failed attempt with backoff, never a storm.

Before, an exception escaping a worker (a result file's integer too long for
Python, a bug in recording the outcome) left the turn unrecorded, and the next
tick dispatched it again at once: a hundred agent runs a minute, the issue
never blocked. Now it is caught at the turn's boundary, logged once without a
traceback, and recorded as a failed attempt that waits its backoff and counts
toward ``orchestration.max_failed_attempts``.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from datetime import datetime
from itertools import pairwise
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

import orchestrator.agent.runner as runner_module
import orchestrator.turns.runner as turns_module
from orchestrator.domain.snapshot import OutcomeKind
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import Flow, flow_for

BACKOFF_S = 1.0
POLICY = {
    "agent": {"max_retry_backoff_ms": int(BACKOFF_S * 1000)},
    "orchestration": {"max_failed_attempts": 2},
}


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def run_until(flow: Flow, until: Callable[[], bool], timeout_s: float = 60.0) -> None:
    """Tick (with a pause, so backoffs can expire) until ``until()`` holds."""
    deadline = time.monotonic() + timeout_s
    while not until():
        assert time.monotonic() < deadline, f"not reached; phases {flow.history[-10:]}"
        flow.step()
        time.sleep(0.1)


def as_naive(moment: datetime) -> datetime:
    return moment.replace(tzinfo=None)


def assert_backoff_between_runs(flow: Flow, expected_runs: int) -> None:
    runs = sorted(flow.d.db.runs.for_issue(1), key=lambda run: run.id)
    assert len(runs) == expected_runs, [(r.outcome, r.error) for r in runs]
    for earlier, later in pairwise(runs):
        assert earlier.ended_at is not None
        waited = (as_naive(later.started_at) - as_naive(earlier.ended_at)).total_seconds()
        assert waited >= BACKOFF_S * 0.9, f"re-dispatched after {waited:.2f} s"


def events(logs: list[dict[str, Any]], name: str) -> list[dict[str, Any]]:
    return [entry for entry in logs if entry.get("event") == name]


def test_an_exception_recording_the_outcome_is_a_failed_attempt_with_backoff(
    tmp_path: Path, world: SimWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    real = turns_module.record_outcome

    def broken(record: Any, outcome: Any, *args: Any) -> Any:
        if outcome.kind is OutcomeKind.SUCCEEDED:
            raise RuntimeError("cannot fold this outcome: " + "x" * 20_000)
        return real(record, outcome, *args)

    monkeypatch.setattr(turns_module, "record_outcome", broken)
    with flow_for(tmp_path, world, policy=POLICY) as flow, capture_logs() as logs:
        number = flow.open_issue()
        flow.step()
        record = flow.record(number)
        assert record is not None and record.attempt == 1
        assert record.last_outcome is not None
        assert record.last_outcome.kind is OutcomeKind.FAILED
        assert record.retry_due_at is not None
        assert record.retry_due_at > record.last_outcome.finished_at

        flow.step()  # within the backoff: nothing is dispatched
        assert len(flow.d.db.runs.for_issue(1)) == 1

        run_until(flow, lambda: flow.phase(number) == "blocked")
        assert_backoff_between_runs(flow, expected_runs=2)
        failures = events(logs, "turn_record_failed")
        assert len(failures) == 2
        for failure in failures:
            assert failure["error_type"] == "RuntimeError"
            assert len(failure["error"]) < 600
            assert "exc_info" not in failure
            assert failure["error_at"].startswith("test_turn_failures.py:")


def test_an_exception_reading_the_results_is_a_failed_attempt_with_its_error(
    tmp_path: Path, world: SimWorld, monkeypatch: pytest.MonkeyPatch
) -> None:
    """What a 5000-digit integer in fix-summary.json used to do: a ValueError out of the turn."""

    def exploding(*args: Any, **kwargs: Any) -> Any:
        raise ValueError("Exceeds the limit (4300 digits) for integer string conversion")

    monkeypatch.setattr(runner_module, "read_results", exploding)
    with flow_for(tmp_path, world, policy=POLICY) as flow, capture_logs() as logs:
        number = flow.open_issue()
        run_until(flow, lambda: flow.phase(number) == "blocked")
        assert_backoff_between_runs(flow, expected_runs=2)
        for run in flow.d.db.runs.for_issue(1):
            assert run.outcome == "failed"
            assert run.error == (
                "ValueError: Exceeds the limit (4300 digits) for integer string conversion"
            )
        crashed = events(logs, "turn_crashed")
        assert len(crashed) == 2
        assert all(entry["run_started"] for entry in crashed)
        assert not events(logs, "turn_job_failed")
