"""The grace period running turns get on SIGTERM: ``agent.shutdown_grace_ms``, or the flag."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from structlog.testing import capture_logs

from orchestrator.daemon.daemon import Daemon
from orchestrator.workflow import Policy, check_workflow
from orchestrator_sim.testing import SimWorld, running_world
from tests.e2e.harness import default_scenario, flow_for
from tests.workflow.conftest import ENV


@pytest.fixture
def world(tmp_path: Path) -> Iterator[SimWorld]:
    with running_world(tmp_path / "sim") as running:
        yield running


def slow_scenario() -> dict[str, object]:
    scenario = default_scenario()
    scenario["steps"] = [{"session": "auto"}, {"events": {"count": 1000, "interval_ms": 20}}]
    return scenario


def test_the_default_grace_is_the_schemas() -> None:
    daemon = Daemon("WORKFLOW.md")
    assert daemon.grace_s == Policy().agent.shutdown_grace_ms / 1000 == 30.0
    assert Daemon("WORKFLOW.md", grace_s=2.5).grace_s == 2.5


def test_a_stop_gives_running_turns_the_policys_grace(tmp_path: Path, world: SimWorld) -> None:
    policy = {"agent": {"shutdown_grace_ms": 1500}}
    with flow_for(tmp_path, world, scenario=slow_scenario(), policy=policy) as flow:
        daemon = flow.d
        assert daemon.grace_s == 1.5
        flow.open_issue()
        daemon.tick()
        deadline = time.monotonic() + 30
        while daemon.parts.pool.busy == 0:
            assert time.monotonic() < deadline, "no turn started"
            time.sleep(0.05)
        started = time.monotonic()
        with capture_logs() as logs:
            daemon.shutdown()
        elapsed = time.monotonic() - started
        flow.daemon = None
    stopping = next(e for e in logs if e["event"] == "daemon_stopping")
    assert stopping["grace_s"] == 1.5 and stopping["running"] == 1
    assert any(e["event"] == "turns_cancelled" and e["count"] == 1 for e in logs)
    assert elapsed >= 1.5


def test_the_flag_overrides_the_policy(tmp_path: Path, world: SimWorld) -> None:
    policy = {"agent": {"shutdown_grace_ms": 120_000}}
    with flow_for(tmp_path, world, policy=policy, start=False) as flow:
        daemon = Daemon(flow.policy_path, env=flow.env, grace_s=0.25)
        daemon.start()
        flow.daemon = daemon
        assert daemon.grace_s == 0.25


@pytest.mark.parametrize("value", ["-1", "3600001", "soon"])
def test_a_grace_out_of_bounds_is_refused_with_its_line(tmp_path: Path, value: str) -> None:
    policy = tmp_path / "WORKFLOW.md"
    policy.write_text(
        f"---\ntracker:\n  repo: acme/widgets\nagent:\n  shutdown_grace_ms: {value}\n---\nGo.\n"
    )
    check = check_workflow(policy, env=ENV)
    assert check.workflow is None
    assert any(
        "agent.shutdown_grace_ms" in str(p) and "WORKFLOW.md:5" in str(p) for p in check.errors
    ), [str(p) for p in check.errors]
