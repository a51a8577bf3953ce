"""Ticks on request, the scheduler, the status, a spent budget, and reloading the policy."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import flow_for
from tests.support.idle import wait_idle


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def wait_until(predicate, timeout_s: float = 20.0) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout_s
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_tick_requests_coalesce_into_one_pending_tick(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world) as flow:
        assert flow.d.request_tick() is True
        assert flow.d.request_tick() is False
        assert flow.d.request_tick() is False


def test_the_scheduler_ticks_and_a_request_runs_one_at_once(
    tmp_path: Path, world: SimWorld
) -> None:
    # A long interval: only the first tick and the requested one can run during the test.
    with flow_for(tmp_path, world, policy={"polling": {"interval_ms": 600_000}}) as flow:
        flow.d.run_scheduler()
        wait_until(lambda: flow.d.parts.poller.stats.ticks >= 1)
        number = flow.open_issue()
        flow.d.request_tick()
        wait_until(lambda: flow.phase(number) is not None)
        # The finished turn asks for the next tick itself: the flow keeps going.
        wait_until(lambda: flow.phase(number) == "waiting_for_checks", timeout_s=60)


def test_status_reports_ticks_budgets_and_running_turns(tmp_path: Path, world: SimWorld) -> None:
    scenario = {"steps": [{"session": "auto"}, {"events": {"count": 300, "interval_ms": 20}}]}
    with flow_for(tmp_path, world, scenario=scenario) as flow:
        flow.open_issue()
        flow.d.tick()
        # The live status sees an event before the run's row records the first one.
        wait_until(
            lambda: (
                any(turn.last_event for turn in flow.d.status().running)
                and any(run.first_event_at for run in flow.d.db.runs.running())
            )
        )
        status = flow.d.status()
        assert status.ticks == 1 and status.last_tick_at is not None
        assert status.rollout_mode == "merge"
        assert status.repos == (world.repo,) and status.leading == (world.repo,)
        assert status.github_units_spent > 0
        assert {budget.resource for budget in status.budgets} >= {"core"}
        turn = status.running[0]
        assert (turn.repo, turn.number, turn.phase, turn.attempt) == (
            world.repo,
            1,
            "implementing",
            1,
        )
        runs = flow.d.db.runs.running()
        assert [run.run_id for run in runs] == [turn.run_id]
        assert runs[0].first_event_at is not None
        assert "Implement" in (runs[0].prompt or "") or "implement" in (runs[0].prompt or "")
        flow.d.parts.pool.cancel_all("test over")
        assert wait_idle(flow.d, 20)


def test_a_spent_budget_defers_github_work_without_waiting(tmp_path: Path, world: SimWorld) -> None:
    with flow_for(tmp_path, world) as flow:
        flow.open_issue()
        world.control.set_rate_limit(
            login=world.bot.login, resource="core", remaining=0, reset_in=3600
        )
        assert flow.d.tick() is None
        until = flow.d.status().rate_limited_until
        assert until is not None
        requests = world.control.counters()
        assert flow.d.tick() is None, "the next tick is deferred until the reset"
        assert world.control.counters() == requests
        assert flow.d.db.runs.running() == []


def test_policy_edits_apply_at_the_next_tick_and_bad_ones_are_kept_out(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world) as flow:
        flow.step()
        flow.edit_policy({"rollout": {"mode": "observe"}})
        flow.step()
        assert flow.d.status().rollout_mode == "observe"

        text = flow.policy_path.read_text()
        flow.policy_path.write_text(text.replace('"interval_ms": 1000', '"interval_ms": "soon"'))
        flow.d.reload_policy()
        flow.step()
        status = flow.d.status()
        assert status.rollout_mode == "observe"
        assert status.policy_error is not None and "polling.interval_ms" in status.policy_error
        number = flow.open_issue()
        flow.idle_ticks(2)
        assert flow.pulls() == []
        assert "(observe only)" in flow.workpads(number)[0]["body"]


def test_a_turn_cancelled_before_its_agent_starts_runs_nothing(
    tmp_path: Path, world: SimWorld
) -> None:
    with flow_for(tmp_path, world, policy={"hooks": {"before_run": "sleep 0.3"}}) as flow:
        number = flow.open_issue()
        flow.d.tick()
        flow.d.parts.pool.cancel_all("operator")
        assert wait_idle(flow.d, 20)
        record = flow.record(number)
        assert record is not None and record.last_outcome is not None
        assert record.last_outcome.kind.value == "cancelled"
        # Cancelled while the workspace was prepared (no run yet) or during before_run.
        assert [run.outcome for run in flow.d.db.runs.for_issue(1)] in ([], ["cancelled"])
        assert record.last_outcome.head_after == record.last_outcome.head_before
