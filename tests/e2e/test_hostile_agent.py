"""A hostile agent plants links, FIFOs and absurd numbers in its workspace; the daemon holds.

The scripted agent runs for real and leaves in ``.orchestrator/`` what a
hostile agent would. The daemon must never write through a link, never block
on a FIFO, never crash on a number, and a turn that keeps failing this way
must end the issue blocked after ``orchestration.max_failed_attempts``, each
retry after its backoff.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from structlog.testing import capture_logs

from orchestrator_sim.testing import SimWorld

from .harness import Flow, default_scenario, flow_for

POLICY = {
    "agent": {"max_retry_backoff_ms": 1000},
    "orchestration": {"max_failed_attempts": 2},
}


def run_until(flow: Flow, until: Callable[[], bool], timeout_s: float = 60.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not until():
        assert time.monotonic() < deadline, f"not reached; phases {flow.history[-10:]}"
        flow.step()
        time.sleep(0.1)


def planting(step: dict[str, Any]) -> dict[str, Any]:
    """The default scenario, whose implementing turn also plants ``step`` before it ends."""
    scenario = default_scenario()
    scenario["steps"] = [*scenario["steps"], {"special_file": step}]
    return scenario


@pytest.mark.parametrize("kind", ["symlink", "fifo"])
def test_a_planted_context_file_fails_the_next_turns_until_the_issue_blocks(
    tmp_path: Path, world: SimWorld, kind: str
) -> None:
    outside = tmp_path / "daemon-file.txt"
    outside.write_text("the daemon's own file\n")
    step: dict[str, Any] = {"path": ".orchestrator/context.json", "kind": kind}
    if kind == "symlink":
        step["target"] = str(outside)
    with (
        flow_for(tmp_path, world, scenario=planting(step), policy=POLICY) as flow,
        capture_logs() as logs,
    ):
        number = flow.open_issue()
        run_until(flow, lambda: flow.phase(number) == "blocked")

        assert outside.read_text() == "the daemon's own file\n"
        record = flow.record(number)
        assert record is not None and record.resume_phase is not None
        assert record.resume_phase.value == "reviewing"
        refusals = [e for e in logs if e.get("event") == "turn_not_run"]
        assert len(refusals) == 2
        described = "a symbolic link" if kind == "symlink" else "a FIFO"
        for refusal in refusals:
            assert refusal["outcome"] == "failed"
            assert ".orchestrator/context.json: is " + described in refusal["error"]
        # Only the implementing turn ran an agent; the refused ones never started one.
        assert [run.phase for run in flow.d.db.runs.for_issue(1)] == ["implementing"]


def test_a_5000_digit_integer_in_a_fix_summary_is_a_located_failure_of_that_turn(
    tmp_path: Path, world: SimWorld
) -> None:
    bad = '{"entries": [{"thread": ' + "9" * 5000 + ', "status": "fixed"}]}'
    scenario = default_scenario()
    scenario["steps"] = [
        *scenario["steps"],
        {"result_file": {"name": "fix-summary.json", "content": bad}},
    ]
    with flow_for(tmp_path, world, scenario=scenario, policy=POLICY) as flow:
        number = flow.open_issue()
        flow.step()
        [run] = flow.d.db.runs.for_issue(1)
        assert run.outcome == "invalid_results"
        assert run.error == (
            "fix-summary.json:1: entries[0].thread: integer has 5000 digits, more than 18"
        )
        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        assert record.last_outcome.run_id == run.run_id, "the turn was recorded"
