"""Watchdogs and cancellation with the scripted agent: distinct outcomes, no survivors."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

from orchestrator.agent import HookSettings, TurnOutcome, TurnRequest, TurnResult
from orchestrator.agent.process import session_members
from orchestrator.domain.phases import Phase
from orchestrator.domain.snapshot import OutcomeKind

from .conftest import Harness


def _alive(pid: int) -> bool:
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat[stat.rfind(")") + 2] not in "ZX"


def _wait_for(path: Path, timeout_s: float = 20.0) -> None:
    deadline = time.monotonic() + timeout_s
    while not path.exists() or not path.read_text():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


def test_a_silent_agent_ends_with_session_start_timeout(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"hang": True}]}, first_event_timeout_ms=400, turn_timeout_ms=60_000
    )
    assert result.outcome is TurnOutcome.SESSION_START_TIMEOUT
    assert "session start timeout" in result.message
    assert result.events == 0
    assert result.first_event_after_s is None
    assert result.exit_code is not None and result.exit_code != 0
    assert result.to_agent_outcome().kind is OutcomeKind.START_TIMEOUT


def test_a_late_first_event_within_budget_is_not_killed(harness: Harness) -> None:
    # First event after a pause, then steady work for longer than the budget.
    scenario = {
        "steps": [
            {"sleep_ms": 300},
            {"session": "auto"},
            {"events": {"count": 12, "interval_ms": 200}},
            {"message": "done"},
        ]
    }
    result = harness.run(scenario, first_event_timeout_ms=2_000, stall_timeout_ms=2_000)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.events == 14
    assert result.first_event_after_s is not None
    assert result.last_event_after_s is not None
    assert result.last_event_after_s > result.first_event_after_s


def test_silence_after_the_first_event_is_a_stall(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"stall_after": 3}]},
        first_event_timeout_ms=5_000,
        stall_timeout_ms=400,
        turn_timeout_ms=60_000,
    )
    assert result.outcome is TurnOutcome.STALLED
    assert result.events == 3
    assert "no event for 400 ms" in result.message
    assert result.to_agent_outcome().kind is OutcomeKind.TIMED_OUT


def test_without_a_first_event_watchdog_silence_is_a_stall(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"hang": True}]},
        first_event_timeout_ms=0,
        stall_timeout_ms=400,
        turn_timeout_ms=60_000,
    )
    assert result.outcome is TurnOutcome.STALLED
    assert result.events == 0


def test_a_busy_agent_that_runs_too_long_hits_the_turn_timeout(harness: Harness) -> None:
    result = harness.run(
        {"steps": [{"events": {"count": 200, "interval_ms": 50}}]},
        first_event_timeout_ms=5_000,
        stall_timeout_ms=5_000,
        turn_timeout_ms=2_000,
    )
    assert result.outcome is TurnOutcome.TURN_TIMEOUT
    assert 0 < result.events < 200


def test_a_sigterm_ignoring_agent_and_its_children_are_all_killed(
    harness: Harness, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids.json"
    scenario = {
        "steps": [
            {"ignore_sigterm": True},
            {"spawn": {"count": 2, "ignore_sigterm": True, "pids_file": str(pids_file)}},
            {"spawn": {"count": 1, "ignore_sigterm": True, "new_group": True}},
            {"stall_after": 1},
        ]
    }
    # Long enough for the agent's interpreter to start and write its children's ids on a
    # loaded machine: the stall is counted from the start until the first event.
    result = harness.run(scenario, stall_timeout_ms=4_000, turn_timeout_ms=60_000)
    assert result.outcome is TurnOutcome.STALLED
    pids = json.loads(pids_file.read_text())
    for pid in [pids["agent"], *pids["children"]]:
        assert not _alive(pid), f"process {pid} survived"


def test_cancellation_from_another_thread_leaves_no_process_alive(
    harness: Harness, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids.json"
    scenario = {
        "steps": [
            {"session": "auto"},
            {"ignore_sigterm": True},
            {"spawn": {"count": 3, "ignore_sigterm": True, "pids_file": str(pids_file)}},
            {"spawn": {"count": 1, "ignore_sigterm": True, "new_group": True}},
            {"events": {"count": 1000, "interval_ms": 100}},
        ]
    }
    agent = harness.agent(scenario, grace_period_ms=300)
    turn = harness.runner(agent).prepare(
        TurnRequest(workspace=harness.workspace(), prompt="go", phase=Phase.IMPLEMENTING)
    )
    outcome: list[TurnResult] = []
    worker = threading.Thread(target=lambda: outcome.append(turn.run()))
    worker.start()
    _wait_for(pids_file)
    pids = json.loads(pids_file.read_text())
    session = os.getsid(pids["agent"])
    turn.cancel("kill switch")
    worker.join(timeout=30)
    assert not worker.is_alive()
    (result,) = outcome
    assert result.outcome is TurnOutcome.CANCELLED
    assert result.to_agent_outcome().kind is OutcomeKind.CANCELLED
    assert "kill switch" in result.message
    assert session_members(session) == []
    for pid in [pids["agent"], *pids["children"]]:
        assert not _alive(pid), f"process {pid} survived"


def test_a_turn_cancelled_before_it_starts_never_spawns(harness: Harness, tmp_path: Path) -> None:
    marker = tmp_path / "started.json"
    hooks_ran = tmp_path / "hooks.txt"
    harness.hooks = HookSettings(
        before_run=f"echo before >> {hooks_ran}", after_run=f"echo after >> {hooks_ran}"
    )
    agent = harness.agent({"steps": [{"dump_env": str(marker)}]})
    turn = harness.runner(agent).prepare(
        TurnRequest(workspace=harness.workspace(), prompt="go", phase=Phase.IMPLEMENTING)
    )
    turn.cancel("shutdown")
    turn.cancel("again")
    result = turn.run()
    assert result.outcome is TurnOutcome.CANCELLED
    assert "shutdown" in result.message
    assert not marker.exists()
    assert not hooks_ran.exists()


def test_cancelling_during_before_run_is_a_cancellation(harness: Harness, tmp_path: Path) -> None:
    started = tmp_path / "hook-started"
    harness.hooks = HookSettings(before_run=f"touch {started}; sleep 30", timeout_ms=60_000)
    agent = harness.agent({"steps": [{"message": "never"}]})
    turn = harness.runner(agent).prepare(
        TurnRequest(workspace=harness.workspace(), prompt="go", phase=Phase.IMPLEMENTING)
    )
    outcome: list[TurnResult] = []
    worker = threading.Thread(target=lambda: outcome.append(turn.run()))
    worker.start()
    deadline = time.monotonic() + 20
    while not started.exists():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    turn.cancel("issue closed")
    worker.join(timeout=30)
    (result,) = outcome
    assert result.outcome is TurnOutcome.CANCELLED
    assert "issue closed" in result.message
    assert result.events == 0


def test_children_left_behind_by_a_finished_agent_are_cleaned_up(
    harness: Harness, tmp_path: Path
) -> None:
    pids_file = tmp_path / "pids.json"
    scenario = {
        "steps": [
            {"message": "working"},
            {"spawn": {"count": 2, "ignore_sigterm": True, "pids_file": str(pids_file)}},
            {"message": "done"},
        ]
    }
    result = harness.run(scenario)
    assert result.outcome is TurnOutcome.COMPLETED, result.message
    assert result.events == 2
    for pid in json.loads(pids_file.read_text())["children"]:
        assert not _alive(pid), f"straggler {pid} survived"
